/**
 * Exact resume on any replica, mid-message too: three replica processes on PostgreSQL + Redis,
 * no sticky routing. A client that reconnects with `Last-Event-ID` at any event of a run — a
 * delta of the message still streaming included — to any replica gets every later event of the
 * run once, in order, with the ids, types and data the run's own stream had.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
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
import { openSse, promptSse, type SseEvent, type SseReader } from "../../helpers/sse.js";

const ok = await haveClusterServices();
const cluster = testCluster("resume-any-replica");
const T = 120_000;

/** An event as compared: id, type and data (the data as the server wrote it, re-serialised). */
const shape = (e: SseEvent) => `${e.id} ${e.event} ${JSON.stringify(e.data)}`;

/** The events of `reader` up to and including the run's `agent_end` (nothing after the run). */
function upToEnd(events: SseEvent[], endId: number): SseEvent[] {
	return events.filter((e) => e.id !== undefined && e.id <= endId);
}

/** The reference's events after `cursor`. */
function after(reference: SseEvent[], cursor: number): string[] {
	return reference.filter((e) => (e.id as number) > cursor).map(shape);
}

const pick = <T>(items: T[]): T => items[Math.floor(Math.random() * items.length)]!;

async function idle(replica: Replica, id: string): Promise<void> {
	await waitUntil(
		`session ${id} idle`,
		async () => ((await json(`${replica.url}/v1/sessions/${id}`)).body?.status === "idle" ? true : undefined),
		T,
	);
}

/** Closes every reader and waits for each to end. */
async function closeAll(readers: SseReader[]): Promise<void> {
	for (const r of readers) r.close();
	await Promise.all(readers.map((r) => r.waitForEnd(10_000).catch(() => undefined)));
}

describe.skipIf(!ok)("cluster: resume at any event on any replica", () => {
	let replicas: Replica[];
	beforeAll(async () => {
		replicas = await cluster.start(3, { fauxDelayMs: 40 });
	}, T);
	afterAll(async () => {
		stopAll();
		await cluster.dropRedisKeys();
	});

	it(
		"while the run streams: Last-Event-ID at every event (deltas included), on each replica, gets the rest once, in order, with the run's ids",
		async () => {
			const [A, B, C] = replicas as [Replica, Replica, Replica];
			const id = await createSession(B);
			const run = await promptSse(C.url, id, { message: words(30) });
			const resumed: { cursor: number; on: Replica; reader: SseReader }[] = [];
			const opening: Promise<void>[] = [];
			// Resume at each event as soon as the run's own stream has it (mid-message for every delta).
			let seen = 0;
			while (!run.events.some((e) => e.event === "agent_end")) {
				await run.waitFor(() => run.events.length > seen, T).catch(() => undefined);
				for (; seen < run.events.length; seen++) {
					const cursor = run.events[seen]!.id;
					if (cursor === undefined) continue;
					for (const on of [A, B, C]) {
						opening.push(
							openSse(`${on.url}/v1/sessions/${id}/events`, { headers: { "last-event-id": String(cursor) } }).then(
								(reader) => {
									resumed.push({ cursor, on, reader });
								},
							),
						);
					}
				}
				if (run.ended) break;
			}
			await Promise.all(opening);
			const reference = run.events.filter((e) => e.id !== undefined);
			const end = reference.find((e) => e.event === "agent_end")!;
			expect(end).toBeDefined();
			expect(reference.filter((e) => e.event === "message_update").length).toBeGreaterThanOrEqual(30);
			expect(resumed.length).toBe(reference.length * 3);

			for (const { cursor, reader } of resumed) {
				if (cursor < (end.id as number)) {
					await reader.waitFor((e) => e.id === end.id, T).catch(() => undefined);
				}
			}
			await idle(A, id);
			// Anything a reader would wrongly send after the run's end has had time to arrive.
			await new Promise((resolve) => setTimeout(resolve, 300));
			const wrong: string[] = [];
			for (const { cursor, on, reader } of resumed) {
				const got = upToEnd(reader.events, end.id as number).map(shape);
				const want = after(reference, cursor);
				if (JSON.stringify(got) !== JSON.stringify(want)) {
					const missing = want.filter((w) => !got.includes(w)).map((w) => w.split(" ").slice(0, 2).join(" "));
					const extra = got.filter((g) => !want.includes(g)).map((g) => g.split(" ").slice(0, 2).join(" "));
					wrong.push(
						`on ${on.name} after ${cursor}: ${got.length} events, want ${want.length}; missing [${missing.join(", ")}] extra [${extra.join(", ")}]`,
					);
				}
			}
			await closeAll(resumed.map((r) => r.reader));
			expect(wrong).toEqual([]);
		},
		T,
	);

	it(
		"after the run: Last-Event-ID at every event of it, on each replica, replays the rest with every delta",
		async () => {
			const [A, B, C] = replicas as [Replica, Replica, Replica];
			const id = await createSession(A);
			const run = await promptSse(B.url, id, { message: words(20, "p") });
			const end = await run.waitForType("agent_end", T);
			const reference = run.events.filter((e) => e.id !== undefined);
			await idle(C, id);
			const wrong: string[] = [];
			for (const on of [A, B, C]) {
				const readers = await Promise.all(
					reference.map((e) =>
						openSse(`${on.url}/v1/sessions/${id}/events`, { headers: { "last-event-id": String(e.id) } }),
					),
				);
				for (const [i, reader] of readers.entries()) {
					const cursor = reference[i]!.id as number;
					if (cursor < (end.id as number)) await reader.waitFor((e) => e.id === end.id, T).catch(() => undefined);
					const got = upToEnd(reader.events, end.id as number).map(shape);
					if (JSON.stringify(got) !== JSON.stringify(after(reference, cursor))) {
						wrong.push(`on ${on.name} after ${cursor}: got ${got.length} of ${after(reference, cursor).length}`);
					}
				}
				await closeAll(readers);
			}
			expect(wrong).toEqual([]);
		},
		T,
	);

	it(
		"a client hopping between replicas mid-message (each reconnect to a random one) gets the run's stream exactly",
		async () => {
			const id = await createSession(pick(replicas));
			const runOn = pick(replicas);
			const run = await promptSse(runOn.url, id, { message: words(40, "h") });
			const first = await run.waitForType("agent_start", T);
			// Read a few events, drop the connection, reconnect elsewhere with the last id; until agent_end.
			const got: SseEvent[] = [first];
			let hops = 0;
			while (!got.some((e) => e.event === "agent_end")) {
				const on = pick(replicas);
				const last = got.at(-1)!.id as number;
				const reader = await openSse(`${on.url}/v1/sessions/${id}/events`, {
					headers: { "last-event-id": String(last) },
				});
				const take = 1 + Math.floor(Math.random() * 4);
				await reader
					.waitFor(() => reader.events.length >= take || reader.events.some((e) => e.event === "agent_end"), T)
					.catch(() => undefined);
				const events = reader.events.filter((e) => e.id !== undefined);
				const cut = events.findIndex((e) => e.event === "agent_end");
				got.push(...events.slice(0, cut >= 0 ? cut + 1 : take));
				reader.close();
				hops++;
			}
			await run.waitForType("agent_end", T);
			const reference = run.events.filter((e) => e.id !== undefined);
			const start = reference.findIndex((e) => e.id === first.id);
			expect(hops).toBeGreaterThan(5);
			expect(got.map(shape)).toEqual(reference.slice(start).map(shape));
		},
		T,
	);
});

describe.skipIf(!ok)("cluster: resume while the running replica cannot reach Redis", () => {
	afterAll(async () => {
		stopAll();
		await cluster.dropRedisKeys();
	});

	it(
		"events the running replica could not publish reach a reader on another replica within seconds, not a heartbeat later",
		async () => {
			const proxy = await redisProxy();
			try {
				// A heartbeat far longer than the test: only the reader's own handling can bring the events.
				const [A, B] = (await cluster.start(2, {
					heartbeatMs: 60_000,
					fauxDelayMs: 5,
					envOf: (name): Record<string, string> => (name === "A" ? { WHEELHOUSE_REDIS_URL: proxy.url } : {}),
				})) as [Replica, Replica];
				const id = await createSession(A);
				const first = await promptSse(A.url, id, { message: words(10, "a") });
				const firstEnd = await first.waitForType("agent_end", T);
				await idle(A, id);
				// A loses Redis: its next run is stored but never published (the tail's mark stays behind).
				await proxy.cut();
				expect((await json(`${A.url}/v1/sessions/${id}/prompt`, "POST", { message: words(10, "b") })).status).toBe(202);
				await idle(A, id);
				const log = await openSse(`${A.url}/v1/sessions/${id}/events?after=${firstEnd.id}`);
				const end = await log.waitForType("agent_end", T);
				log.close();
				const started = Date.now();
				const reader = await openSse(`${B.url}/v1/sessions/${id}/events`, {
					headers: { "last-event-id": String(firstEnd.id) },
				});
				const got = await reader.waitFor((e) => e.id === end.id, 10_000);
				expect(got.event).toBe("agent_end");
				expect(Date.now() - started).toBeLessThan(10_000);
				const ids = reader.ids();
				expect(new Set(ids).size).toBe(ids.length);
				expect(ids).toEqual([...ids].sort((x, y) => x - y));
				reader.close();
			} finally {
				await proxy.close();
			}
		},
		T,
	);
});

describe.skipIf(ok)("cluster: resume at any event on any replica (no services)", () => {
	it(NO_CLUSTER_SERVICES, () => undefined);
});
