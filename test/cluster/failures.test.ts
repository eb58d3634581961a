/**
 * Cluster failures with real replica processes: a replica stalled past its lease (SIGSTOP) loses
 * its run to another and its late writes are refused; a killed replica's run is reclaimed; a
 * reader whose live messages are lost still gets the run's end from the store; Redis unreachable
 * turns /readyz 503 naming it, and requests that need no Redis go on.
 */
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
} from "../helpers/cluster.js";
import { json, stopAll } from "../helpers/main-process.js";
import { openSse, promptSse, type SseEvent } from "../helpers/sse.js";

const ok = await haveClusterServices();
const cluster = testCluster("failures");
const T = 90_000;
const LEASE_TTL_MS = 1500;

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
			const id = await createSession(A!);
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
		"a killed replica's run is reclaimed by another: interrupted on every replica's stream, and the session runs again",
		async () => {
			const [A, B, C] = (await cluster.start(3, { leaseTtlMs: LEASE_TTL_MS, fauxDelayMs: 20 })) as Replica[];
			const id = await createSession(A!);
			const watch = await openSse(`${B!.url}/v1/sessions/${id}/events`);
			await watch.waitForType("session_snapshot", T);
			expect((await json(`${A!.url}/v1/sessions/${id}/prompt`, "POST", { message: words(300) })).status).toBe(202);
			await watch.waitFor((e) => e.event === "message_update", T);
			const killedAt = Date.now();
			A!.child.kill("SIGKILL");
			await watch.waitForType("run_interrupted", T);
			// Within the TTL plus a sweep and a margin for a loaded machine.
			expect(Date.now() - killedAt).toBeLessThan(LEASE_TTL_MS + 15_000);
			const state = await json(`${C!.url}/v1/sessions/${id}`);
			expect(state.body.status).toBe("interrupted");
			const resumed = await json(`${C!.url}/v1/sessions/${id}/continue`, "POST");
			expect(resumed.status).toBe(202);
			await watch.waitFor((e) => e.event === "agent_end", T);
			expectIncreasing(idsOf(watch.events));
			watch.close();
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
