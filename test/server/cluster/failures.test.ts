/**
 * Cluster failures with real replica processes: a replica stalled past its lease (SIGSTOP) loses
 * its run to another and its late writes are refused; a killed replica's run is reclaimed, mid-answer
 * and mid-tool (a tool call in flight runs again only when its tool is declared idempotent); a
 * reader whose live messages are lost still gets the run's end from the store; Redis unreachable
 * turns /readyz 503 naming it, and requests that need no Redis go on.
 */
import { once } from "node:events";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterAll, afterEach, describe, expect, it } from "vitest";
import {
	createSession,
	haveClusterServices,
	NO_CLUSTER_SERVICES,
	type Replica,
	redisProxy,
	testCluster,
	waitUntil,
	words,
} from "../../helpers/cluster.js";
import { json, stopAll } from "../../helpers/main-process.js";
import { openSse, promptSse, type SseEvent } from "../../helpers/sse.js";

const ok = await haveClusterServices();
const cluster = testCluster("failures");
const T = 90_000;
const LEASE_TTL_MS = 1500;

/** The endpoint the HTTP tools call: counts calls; the first call of each tool never answers (its replica dies during it). */
async function toolEndpoint(): Promise<{ calls: string[]; url: string; close(): void }> {
	const calls: string[] = [];
	const server = createServer((req: IncomingMessage, res: ServerResponse) => {
		calls.push(req.url ?? "");
		if (calls.filter((c) => c === req.url).length === 1) return; // in flight until the replica is killed
		res.writeHead(200, { "content-type": "text/plain" }).end(`done ${calls.length}`);
	});
	server.listen(0, "127.0.0.1");
	await once(server, "listening");
	const { port } = server.address() as { port: number };
	return {
		calls,
		url: `http://127.0.0.1:${port}`,
		close: () => {
			server.closeAllConnections();
			server.close();
		},
	};
}

const idsOf = (events: SseEvent[]) => events.filter((e) => e.id !== undefined).map((e) => e.id as number);

function expectIncreasing(ids: number[]): void {
	for (let i = 1; i < ids.length; i++) expect(ids[i]).toBeGreaterThan(ids[i - 1]!);
}

describe.skipIf(!ok)("cluster failures", () => {
	afterEach(() => stopAll());
	afterAll(() => stopAll());

	it(
		"a replica stalled past its lease (SIGSTOP) loses the run; after SIGCONT its late writes are refused, nothing is doubled, its streams end",
		async () => {
			const [A, B, C] = (await cluster.start(3, { leaseTtlMs: LEASE_TTL_MS, fauxDelayMs: 20 })) as Replica[];
			// Stopped after the interruption: the next run is the test's own.
			const id = await createSession(A!, { onInterrupt: "stop" });
			const watch = await openSse(`${C!.url}/v1/sessions/${id}/events`);
			await watch.waitForType("session_snapshot", T);
			const run = await promptSse(A!.url, id, { message: words(300) });
			await watch.waitFor((e) => e.event === "message_update" && e.data.assistantMessageEvent?.delta !== undefined, T);
			A!.child.kill("SIGSTOP");
			const interrupted = await watch.waitForType("run_interrupted", T);
			expect(interrupted.data.runId).toBeTruthy();
			A!.child.kill("SIGCONT");
			// The stale owner finds its lease gone: its stream of the run ends without an agent_end.
			await run.waitForEnd(T);
			expect(run.types()).not.toContain("agent_end");
			await A!.waitForOutput(/lease lost|taken over/);

			// The session goes on elsewhere: a new run on B reaches the reader on C after the interruption.
			expect((await json(`${B!.url}/v1/sessions/${id}/prompt`, "POST", { message: "after the takeover" })).status).toBe(
				202,
			);
			await watch.waitFor((e) => e.event === "agent_end" && (e.id as number) > (interrupted.id as number), T);
			const seen = idsOf(watch.events);
			expectIncreasing(seen);
			const afterInterrupt = watch.events.filter((e) => (e.id as number) > (interrupted.id as number));
			expect(afterInterrupt[0]?.event).toBe("agent_start");

			// The log on disk: every id once, in order, one interruption, and nothing the stale owner wrote after it.
			const log = await openSse(`${C!.url}/v1/sessions/${id}/events?after=0`);
			await log.waitFor((e) => e.event === "agent_end" && (e.id as number) > (interrupted.id as number), T);
			const stored = idsOf(log.events);
			expectIncreasing(stored);
			expect(log.types().filter((t) => t === "run_interrupted")).toHaveLength(1);
			const afterStored = log.events.filter((e) => (e.id as number) > (interrupted.id as number));
			// The same events (the log keeps a message's deltas only while it streams).
			const kept = (events: SseEvent[]) => events.filter((e) => e.event !== "message_update").map((e) => e.id);
			expect(kept(afterStored)).toEqual(kept(afterInterrupt));
			// The transcript has no answer of the stale run: its message_end was refused.
			const messages = await json(`${B!.url}/v1/sessions/${id}/messages`);
			const assistants = messages.body.messages.filter((m: { role: string }) => m.role === "assistant");
			expect(assistants).toHaveLength(1);
			expect(JSON.stringify(assistants[0])).toContain("after the takeover");
			watch.close();
			log.close();
		},
		T,
	);

	it(
		"a killed replica's run is reclaimed by another: interrupted on every replica's stream, then continued there",
		async () => {
			const [A, B, C] = (await cluster.start(3, { leaseTtlMs: LEASE_TTL_MS, fauxDelayMs: 20 })) as Replica[];
			const id = await createSession(A!);
			const watch = await openSse(`${B!.url}/v1/sessions/${id}/events`);
			await watch.waitForType("session_snapshot", T);
			expect((await json(`${A!.url}/v1/sessions/${id}/prompt`, "POST", { message: words(300) })).status).toBe(202);
			await watch.waitFor((e) => e.event === "message_update", T);
			const killedAt = Date.now();
			A!.child.kill("SIGKILL");
			const interrupted = await watch.waitForType("run_interrupted", T);
			// Within the TTL plus a sweep and a margin for a loaded machine.
			expect(Date.now() - killedAt).toBeLessThan(LEASE_TTL_MS + 15_000);
			// onInterrupt "continue" (the default): the replica that took it over continues the run.
			await watch.waitFor((e) => e.event === "agent_start" && (e.id as number) > (interrupted.id as number), T);
			await watch.waitFor((e) => e.event === "agent_end" && (e.id as number) > (interrupted.id as number), T);
			expectIncreasing(idsOf(watch.events));
			const state = await waitUntil("idle after the continued run", async () => {
				const res = await json(`${C!.url}/v1/sessions/${id}`);
				return res.body.status === "idle" ? res : undefined;
			});
			expect(state.body.messageCount).toBeGreaterThanOrEqual(2);
			watch.close();
		},
		T,
	);

	it(
		"a replica killed mid-tool: another continues both runs; the idempotent tool is called again, the other is not and the model gets the error result",
		async () => {
			const endpoint = await toolEndpoint();
			const dir = mkdtempSync(path.join(tmpdir(), "wh-cluster-tools-"));
			try {
				const tool = (name: string, idempotent: boolean) => ({
					name,
					description: `calls the endpoint (${idempotent ? "idempotent" : "not idempotent"})`,
					method: "POST",
					url: `${endpoint.url}/${name}`,
					parameters: { type: "object", properties: {} },
					timeoutMs: 60_000,
					idempotent,
				});
				const config = path.join(dir, "config.json");
				writeFileSync(
					config,
					JSON.stringify({ tools: { httpTools: [tool("write_once", false), tool("read_again", true)] } }),
				);
				const [A, B, C] = (await cluster.start(3, {
					leaseTtlMs: LEASE_TTL_MS,
					env: { WHEELHOUSE_CONFIG: config },
				})) as Replica[];
				const runs = [];
				for (const name of ["write_once", "read_again"]) {
					const id = await createSession(A!);
					const watch = await openSse(`${B!.url}/v1/sessions/${id}/events`);
					await watch.waitForType("session_snapshot", T);
					expect(
						(await json(`${A!.url}/v1/sessions/${id}/prompt`, "POST", { message: `/tool ${name} {}` })).status,
					).toBe(202);
					await watch.waitForType("tool_execution_start", T);
					runs.push({ id, name, watch });
				}
				// Both calls reached the endpoint, which holds them: A dies with both in flight.
				await waitUntil("both tool calls in flight", async () => (endpoint.calls.length === 2 ? true : undefined));
				A!.child.kill("SIGKILL");

				for (const { id, name, watch } of runs) {
					const end = await watch.waitFor((e) => e.event === "agent_end", T);
					expectIncreasing(idsOf(watch.events));
					const types = watch.types();
					const toolEnd = watch.events.find((e) => e.event === "tool_execution_end")!;
					const interrupted = watch.events.find((e) => e.event === "run_interrupted")!;
					expect(toolEnd.data).toMatchObject({ toolName: name, isError: name === "write_once" });
					expect(interrupted.data).toMatchObject({ willContinue: true });
					// The tool call's end, then the interruption, then the continued run.
					expect(types.indexOf("tool_execution_end")).toBeLessThan(types.indexOf("run_interrupted"));
					expect(types.lastIndexOf("agent_start")).toBeGreaterThan(types.indexOf("run_interrupted"));
					const answer = end.data.messages.at(-1).content[0].text as string;
					if (name === "write_once") {
						expect(answer).toMatch(/^Tool results: write_once \(error\): The tool call was interrupted/);
					} else {
						expect(answer).toBe(`Tool results: read_again: done ${endpoint.calls.length}`);
					}
					const transcript = (await json(`${C!.url}/v1/sessions/${id}/messages`)).body.messages;
					expect(transcript.map((m: { role: string }) => m.role)).toEqual([
						"user",
						"assistant",
						"toolResult",
						"assistant",
					]);
					watch.close();
				}
				// Each tool as often as its declaration allows: the idempotent one twice, the other once.
				expect(endpoint.calls.filter((c) => c === "/write_once")).toHaveLength(1);
				expect(endpoint.calls.filter((c) => c === "/read_again")).toHaveLength(2);
			} finally {
				endpoint.close();
				rmSync(dir, { recursive: true, force: true });
			}
		},
		T,
	);

	it(
		"a reader whose live messages are lost gets the run's end from the store; Redis unreachable: /readyz 503 names it, other requests go on",
		async () => {
			const proxy = await redisProxy();
			try {
				const [A, , C] = (await cluster.start(3, {
					fauxDelayMs: 20,
					envOf: (name): Record<string, string> => (name === "C" ? { WHEELHOUSE_REDIS_URL: proxy.url } : {}),
				})) as Replica[];
				const id = await createSession(A!);
				const watch = await openSse(`${C!.url}/v1/sessions/${id}/events`);
				await watch.waitForType("session_snapshot", T);
				const run = await promptSse(A!.url, id, { message: words(60) });
				await watch.waitFor((e) => e.event === "message_update", T);
				// Everything Redis sends C from now on is lost, without C noticing.
				proxy.blackhole();
				const end = await run.waitForType("agent_end", T);
				const got = await watch.waitFor((e) => e.event === "agent_end", T);
				expect(got.id).toBe(end.id);
				expectIncreasing(idsOf(watch.events));

				await proxy.cut();
				const ready = await waitUntil("C unready", async () => {
					const res = await json(`${C!.url}/readyz`);
					return res.status === 503 ? res : undefined;
				});
				expect(ready.body.unavailable).toEqual(["redis"]);
				// What needs only the store still works on C.
				expect((await json(`${C!.url}/v1/sessions/${id}`)).status).toBe(200);
				expect((await json(`${C!.url}/v1/sessions/${id}/messages`)).status).toBe(200);
				expect((await json(`${A!.url}/readyz`)).status).toBe(200);
				await proxy.restore();
				await waitUntil("C ready again", async () =>
					(await json(`${C!.url}/readyz`)).status === 200 ? true : undefined,
				);
				watch.close();
			} finally {
				await proxy.close();
			}
		},
		T,
	);
});

describe.skipIf(ok)("cluster failures (no services)", () => {
	it(NO_CLUSTER_SERVICES, () => undefined);
});
