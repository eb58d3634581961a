/**
 * What a chaos run of replicas broke, each with real replica processes, PostgreSQL, and a private
 * redis-server where Redis goes away (never the shared one):
 *
 * - a replica stalled past its lease (SIGSTOP) while it streams a `POST /prompt`: after SIGCONT
 *   its client gets no event the store does not have (no delta of after the stall, no
 *   `message_end`, `turn_end` or `agent_end` of the refused message) and the stream ends with
 *   `stream_dropped` pointing at `/events`; the stalled replica starts no tool and no model call;
 * - an abort posted on a replica that does not run the session while Redis is down, and while the
 *   replica running it has just died: the run stops, or the answer says the abort was not delivered;
 * - a reader that subscribes while Redis is down gets live deltas again within one heartbeat of
 *   Redis coming back.
 */
import { randomBytes } from "node:crypto";
import { once } from "node:events";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterAll, afterEach, describe, expect, it } from "vitest";
import { clusterEnv, haveClusterServices, NO_CLUSTER_SERVICES, waitUntil, words } from "../../helpers/cluster.js";
import { json, type MainProcess, startMain, stopAll } from "../../helpers/main-process.js";
import { testSchemas } from "../../helpers/postgres.js";
import { haveRedisServer, type PrivateRedis, startPrivateRedis } from "../../helpers/redis-server.js";
import { type ReplayServer, startReplayServer } from "../../helpers/replay-server.js";
import { openSse, promptSse, type SseEvent, type SseReader } from "../../helpers/sse.js";

const enabled = (await haveClusterServices()) && haveRedisServer();
const schemas = testSchemas("chaos");
const T = 90_000;
const HEARTBEAT_MS = 1000;

const cleanups: (() => Promise<void> | void)[] = [];
afterEach(async () => {
	stopAll();
	for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});
afterAll(() => stopAll());

/** Starts `n` replicas on a fresh schema and prefix (`env` added to each), the first one alone. */
async function replicas(n: number, options: Parameters<typeof clusterEnv>[2], env: Record<string, string> = {}) {
	const schema = schemas.next();
	const all = {
		...clusterEnv(schema, `wh-test:${schema}:${randomBytes(3).toString("hex")}:`, options),
		...env,
		LOG_LEVEL: "info",
	};
	const start = () => startMain({ db: "/nonexistent/unused.db", env: all });
	const first = await start();
	return [first, ...(await Promise.all(Array.from({ length: n - 1 }, start)))];
}

async function privateRedis(): Promise<PrivateRedis> {
	const redis = await startPrivateRedis();
	cleanups.push(() => redis.close());
	return redis;
}

async function watch(url: string): Promise<SseReader> {
	const reader = await openSse(url);
	cleanups.push(() => reader.close());
	return reader;
}

const ready = (replica: MainProcess, status: number) =>
	waitUntil(`${replica.url} /readyz ${status}`, async () =>
		(await json(`${replica.url}/readyz`)).status === status ? true : undefined,
	);

/** The endpoint an HTTP tool calls: counts the calls. */
async function toolEndpoint(): Promise<{ calls: string[]; url: string; close(): void }> {
	const calls: string[] = [];
	const server = createServer((req: IncomingMessage, res: ServerResponse) => {
		calls.push(req.url ?? "");
		res.writeHead(200, { "content-type": "text/plain" }).end("recorded");
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

/** One Chat Completions stream chunk. */
const chunk = (choice: object, extra: object = {}) =>
	`data: ${JSON.stringify({ id: "c1", object: "chat.completion.chunk", created: 1, model: "tiny", choices: [{ index: 0, ...choice }], ...extra })}\n\n`;

/** Deltas of text, one chunk per word. */
const textChunks = (tag: string, n: number) =>
	Array.from({ length: n }, (_, i) => chunk({ delta: { content: `${tag}${i} ` }, finish_reason: null })).join("");

/** The end of an answer that calls `tool` with `{}`. */
const toolCallEnd = (tool: string) =>
	chunk({
		delta: { tool_calls: [{ index: 0, id: "call_1", type: "function", function: { name: tool, arguments: "{}" } }] },
		finish_reason: null,
	}) +
	chunk({ delta: {}, finish_reason: "tool_calls" }) +
	"data: [DONE]\n\n";

/** A whole answer with `text`. */
const answer = (text: string) =>
	chunk({ delta: { role: "assistant", content: text }, finish_reason: null }) +
	chunk({ delta: {}, finish_reason: "stop" }) +
	"data: [DONE]\n\n";

/** A config file with the model played by `replay` (`local/tiny`) and an HTTP tool `record_call` calling `endpoint`. */
function configFile(replay: ReplayServer, endpoint: string): string {
	const dir = mkdtempSync(path.join(tmpdir(), "wh-chaos-"));
	cleanups.push(() => rmSync(dir, { recursive: true, force: true }));
	const file = path.join(dir, "config.json");
	writeFileSync(
		file,
		JSON.stringify({
			models: [{ provider: "local", id: "tiny", baseUrl: `${replay.url}/v1`, contextWindow: 100_000, maxTokens: 1000 }],
			tools: {
				httpTools: [
					{
						name: "record_call",
						description: "records that it was called",
						method: "POST",
						url: `${endpoint}/record`,
						parameters: { type: "object", properties: {} },
					},
				],
			},
		}),
	);
	return file;
}

/** The stored log of a session from its start up to the first event `last` matches. */
async function storedLog(base: string, id: string, last: (e: SseEvent) => boolean): Promise<SseEvent[]> {
	const log = await watch(`${base}/v1/sessions/${id}/events?after=0`);
	await log.waitFor(last, T);
	log.close();
	return log.events.filter((e) => e.id !== undefined);
}

const deltas = (events: SseEvent[]) => events.filter((e) => e.event === "message_update").map((e) => e.id);

describe.skipIf(!enabled)("chaos: what replicas must keep under failures", () => {
	it(
		"a replica stalled past its lease (SIGSTOP) while streaming a prompt: after SIGCONT its client gets no event the store refused, the stream points at /events, and no tool or model call starts",
		async () => {
			const replay = await startReplayServer();
			cleanups.push(() => replay.close());
			const endpoint = await toolEndpoint();
			cleanups.push(() => endpoint.close());
			const config = configFile(replay, endpoint.url);
			const [A, B] = await replicas(2, { leaseTtlMs: 1500, heartbeatMs: 500 }, { WHEELHOUSE_CONFIG: config });
			const created = await json(`${A!.url}/v1/sessions`, "POST", {
				model: "local/tiny",
				tools: ["record_call"],
				onInterrupt: "stop",
			});
			expect(created.status).toBe(201);
			const id = created.body.id as string;
			// The answer's first words reach A; the rest of it (more words, then a tool call) arrives
			// while A is stopped. A second model call would get "second call".
			const first = chunk({ delta: { role: "assistant", content: "" }, finish_reason: null }) + textChunks("a", 10);
			let resume!: () => void;
			replay.enqueue(
				{
					body: first + textChunks("b", 10) + toolCallEnd("record_call"),
					stallAfterBytes: Buffer.byteLength(first),
					resumeWhen: new Promise<void>((resolve) => {
						resume = resolve;
					}),
				},
				{ body: answer("second call") },
			);
			const onB = await watch(`${B!.url}/v1/sessions/${id}/events`);
			await onB.waitForType("session_snapshot", T);
			const run = await promptSse(A!.url, id, { message: "go" });
			cleanups.push(() => run.close());
			await run.waitFor((e) => e.event === "message_update" && e.data.assistantMessageEvent?.delta === "a9 ", T);

			A!.child.kill("SIGSTOP");
			cleanups.push(() => void A!.child.kill("SIGCONT"));
			resume();
			const interrupted = await onB.waitForType("run_interrupted", T);
			A!.child.kill("SIGCONT");
			await run.waitForEnd(T);
			await A!.waitForOutput(/lease lost|taken over/);
			// Time for whatever the stalled replica would still do (a tool call, a model call) to happen.
			await new Promise((resolve) => setTimeout(resolve, 1500));

			// No tool call and no second model call: the stalled replica started nothing after its lease was gone.
			expect(endpoint.calls).toEqual([]);
			expect(replay.requests).toHaveLength(1);

			// The client got nothing of the answer after the stall, and no event of the refused message.
			const got = run.events;
			const afterStall = got.filter(
				(e) => e.event === "message_update" && /^b/.test(e.data.assistantMessageEvent?.delta ?? ""),
			);
			expect(afterStall).toEqual([]);
			for (const type of ["message_end", "turn_end", "agent_end", "tool_execution_start", "tool_execution_end"]) {
				expect(got.filter((e) => e.event === type && e.data.message?.role !== "user").map((e) => e.event)).toEqual([]);
			}
			// Every event it got with an id (but the deltas of the message that never ended) is in the store.
			const stored = await storedLog(B!.url, id, (e) => e.event === "run_interrupted");
			const storedById = new Map(stored.map((e) => [e.id, e.event]));
			for (const e of got.filter((e) => e.id !== undefined && e.event !== "message_update")) {
				expect(storedById.get(e.id), `event ${e.id} (${e.event})`).toBe(e.event);
			}
			expect(Math.max(...got.map((e) => e.id ?? 0))).toBeLessThan(interrupted.id!);
			// Nor did a reader on the other replica get any of it.
			const late = onB.events.filter(
				(e) => e.event === "message_update" && /^b/.test(e.data.assistantMessageEvent?.delta ?? ""),
			);
			expect(late).toEqual([]);
			const seenOnB = onB.ids();
			for (let i = 1; i < seenOnB.length; i++) expect(seenOnB[i]).toBeGreaterThan(seenOnB[i - 1]!);
			// The stream ends telling the client where to go on: the session's /events, after the last id it got.
			const last = got.at(-1)!;
			expect(last.event).toBe("stream_dropped");
			expect(last.data.reason).toBe("lease_lost");
			expect(last.data.message).toContain(`/v1/sessions/${id}/events`);
			expect(last.data.lastEventId).toBe(Math.max(...got.map((e) => e.id ?? 0)));
			// The transcript has the prompt only: the stalled replica's answer was refused.
			const messages = (await json(`${B!.url}/v1/sessions/${id}/messages`)).body.messages;
			expect(messages.map((m: { role: string }) => m.role)).toEqual(["user"]);
		},
		T,
	);
	it(
		"an abort posted on a replica that does not run the session while Redis is down: the answer says it was not delivered, and the run stops anyway",
		async () => {
			const redis = await privateRedis();
			const [A, B] = await replicas(
				2,
				{ fauxDelayMs: 20, heartbeatMs: HEARTBEAT_MS, leaseTtlMs: 3000 },
				{ WHEELHOUSE_REDIS_URL: redis.url },
			);
			const id = (await json(`${A!.url}/v1/sessions`, "POST", {})).body.id as string;
			// 600 words, one every 20 ms: 12 s unless aborted.
			const run = await promptSse(A!.url, id, { message: words(600) });
			cleanups.push(() => run.close());
			await run.waitForType("message_update", T);
			await redis.kill();
			await ready(B!, 503);
			const answer = await json(`${B!.url}/v1/sessions/${id}/abort`, "POST");
			const end = await run.waitForType("agent_end", T);
			const stop = end.data.messages.at(-1).stopReason;
			if (answer.status === 200) {
				expect(answer.body.aborted).toBe(true);
				expect(stop).toBe("aborted");
			} else {
				expect(answer.status).toBe(503);
				expect(answer.body.error.code).toBe("ABORT_NOT_DELIVERED");
			}
			// Stored before the answer, the abort is found by the replica running the run: it stops long before its end.
			expect(stop).toBe("aborted");
			expect(deltas(run.events).length).toBeLessThan(600);
		},
		T,
	);

	it(
		"an abort posted while the replica running the session has just died: the replica taking the run over does not continue it",
		async () => {
			const [A, B] = await replicas(2, { fauxDelayMs: 20, heartbeatMs: 500, leaseTtlMs: 1500 });
			const id = (await json(`${A!.url}/v1/sessions`, "POST", {})).body.id as string;
			const onB = await watch(`${B!.url}/v1/sessions/${id}/events`);
			await onB.waitForType("session_snapshot", T);
			expect((await json(`${A!.url}/v1/sessions/${id}/prompt`, "POST", { message: words(300) })).status).toBe(202);
			await onB.waitForType("message_update", T);
			A!.child.kill("SIGKILL");
			await A!.exited;
			const answer = await json(`${B!.url}/v1/sessions/${id}/abort`, "POST");
			expect([200, 503]).toContain(answer.status);
			const interrupted = await onB.waitForType("run_interrupted", T);
			// Aborted, whatever the answer: the run does not go on (onInterrupt is "continue", the default).
			expect(interrupted.data.willContinue).toBe(false);
			expect(interrupted.data.message).toMatch(/abort/);
			await new Promise((resolve) => setTimeout(resolve, 1500));
			expect(onB.events.filter((e) => e.id! > interrupted.id! && e.event === "agent_start")).toEqual([]);
			const state = await json(`${B!.url}/v1/sessions/${id}`);
			expect(state.body.status).toBe("interrupted");
			const messages = (await json(`${B!.url}/v1/sessions/${id}/messages`)).body.messages;
			expect(messages.filter((m: { role: string }) => m.role === "assistant")).toEqual([]);
		},
		T,
	);

	it(
		"a reader that subscribes while Redis is down gets live deltas again within one heartbeat of Redis coming back",
		async () => {
			const redis = await privateRedis();
			const [A, B] = await replicas(
				2,
				{ fauxDelayMs: 20, heartbeatMs: HEARTBEAT_MS, leaseTtlMs: 3000 },
				{ WHEELHOUSE_REDIS_URL: redis.url },
			);
			const id = (await json(`${A!.url}/v1/sessions`, "POST", {})).body.id as string;
			await redis.kill();
			await ready(B!, 503);
			// The first reader of the session on B subscribes while Redis is away; a second one finds it.
			const first = await watch(`${B!.url}/v1/sessions/${id}/events`);
			await first.waitForType("session_snapshot", T);
			const second = await watch(`${B!.url}/v1/sessions/${id}/events`);
			await second.waitForType("session_snapshot", T);
			await redis.start();
			await ready(A!, 200);
			await ready(B!, 200);
			// Within one heartbeat of Redis being back, the readers on B are live again.
			await new Promise((resolve) => setTimeout(resolve, HEARTBEAT_MS));
			const run = await promptSse(A!.url, id, { message: words(40) });
			cleanups.push(() => run.close());
			await run.waitForType("agent_end", T);
			const produced = deltas(run.events);
			expect(produced.length).toBeGreaterThan(30);
			for (const reader of [first, second]) {
				await reader.waitForType("agent_end", T);
				// Deltas reach a reader on another replica only live (the store keeps none of an ended message).
				expect(deltas(reader.events)).toEqual(produced);
			}
		},
		T,
	);
});

describe.skipIf(enabled)("chaos (no services)", () => {
	it(haveRedisServer() ? NO_CLUSTER_SERVICES : "skipped: no redis-server", () => undefined);
});
