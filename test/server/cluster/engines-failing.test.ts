/**
 * The engines failing under a cluster of three replica processes, without touching the shared
 * engines: a private redis-server killed mid-run and started again (empty); a private
 * redis-server short of memory, which evicts keys and disconnects a subscriber that falls behind;
 * and PostgreSQL made unreachable for seconds by a TCP proxy between the replicas and it. While an engine is away
 * every answer is a success or a 503 with the error envelope (no 500, no other 5xx), /readyz names
 * the engine; nothing that was acknowledged is lost; the run in flight ends, its stream (resumed
 * with Last-Event-ID) has every event once, and the cluster streams across replicas again after.
 */
import { randomBytes } from "node:crypto";
import { Redis } from "ioredis";
import { afterAll, afterEach, describe, expect, it } from "vitest";
import { readSse } from "../../../src/client/sse-parser.js";
import { ERRORS } from "../../../src/server/http/errors.js";
import { clusterEnv, haveClusterServices, NO_CLUSTER_SERVICES, waitUntil, words } from "../../helpers/cluster.js";
import { json, type MainProcess, startMain, stopAll } from "../../helpers/main-process.js";
import { PG_URL, testSchemas } from "../../helpers/postgres.js";
import { haveRedisServer, type PrivateRedis, startPrivateRedis } from "../../helpers/redis-server.js";
import { startTcpProxy, type TcpProxy } from "../../helpers/tcp-proxy.js";

const enabled = (await haveClusterServices()) && haveRedisServer();
const schemas = testSchemas("engines-failing");
const T = 180_000;

const cleanups: (() => Promise<void> | void)[] = [];
afterEach(async () => {
	stopAll();
	for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});
afterAll(() => stopAll());

interface Seen {
	id: number | undefined;
	type: string;
	data: any;
}

/**
 * A client that keeps one session's event stream open on one replica: it reconnects after every
 * end or error with `Last-Event-ID`, and records every event as it arrives, with no
 * de-duplication of its own.
 */
function follow(base: string, id: string): { events: Seen[]; stop(): Promise<void> } {
	const events: Seen[] = [];
	const controller = new AbortController();
	let lastId = 0;
	const loop = (async () => {
		while (!controller.signal.aborted) {
			try {
				const res = await fetch(`${base}/v1/sessions/${id}/events`, {
					headers: { accept: "text/event-stream", "last-event-id": String(lastId) },
					signal: controller.signal,
				});
				if (res.ok && res.body) {
					for await (const message of readSse(res.body)) {
						const eventId = message.id ? Number(message.id) : undefined;
						events.push({ id: eventId, type: message.event, data: JSON.parse(message.data) });
						if (eventId !== undefined) lastId = eventId;
					}
				} else {
					await res.text();
				}
			} catch {
				// Cut: resume below.
			}
			if (!controller.signal.aborted) await new Promise((resolve) => setTimeout(resolve, 100));
		}
	})();
	return {
		events,
		async stop() {
			controller.abort();
			await loop;
		},
	};
}

async function waitForEvent(client: { events: Seen[] }, what: string, predicate: (e: Seen) => boolean): Promise<Seen> {
	return waitUntil(what, async () => client.events.find(predicate), 60_000, 20);
}

/**
 * Calls each request on each replica while an engine is away and checks every answer: a success,
 * or a 503 whose body is the error envelope with a code of the table (never a 500 or a bare
 * body). Returns the answers by request.
 */
async function probeDuringOutage(
	replicas: MainProcess[],
	requests: { method: string; path: string; body?: unknown }[],
): Promise<{ status: number; body: any; method: string; path: string }[]> {
	const answers: { status: number; body: any; method: string; path: string }[] = [];
	for (const replica of replicas) {
		for (const { method, path, body } of requests) {
			const res = await json(`${replica.url}${path}`, method, body);
			answers.push({ ...res, method, path });
			if (res.status >= 500) {
				expect(res.status, `${method} ${path}: ${JSON.stringify(res.body)}`).toBe(503);
				expect(Object.keys(ERRORS), `${method} ${path}`).toContain(res.body?.error?.code);
				expect(typeof res.body.error.message).toBe("string");
			}
		}
	}
	return answers;
}

/** The stored log of a session up to its `runs`-th agent_end: ids and types. */
async function storedLog(base: string, id: string, runs: number): Promise<Seen[]> {
	const controller = new AbortController();
	const res = await fetch(`${base}/v1/sessions/${id}/events?after=0`, {
		headers: { accept: "text/event-stream" },
		signal: controller.signal,
	});
	const log: Seen[] = [];
	let ends = 0;
	for await (const message of readSse(res.body!)) {
		if (!message.id) continue;
		log.push({ id: Number(message.id), type: message.event, data: undefined });
		if (message.event === "agent_end" && ++ends === runs) break;
	}
	controller.abort();
	return log;
}

/** Every event once, in order, and every stored event among them. */
function expectExactlyOnce(client: { events: Seen[] }, log: Seen[]): void {
	const ids = client.events.filter((e) => e.id !== undefined).map((e) => e.id!);
	expect(new Set(ids).size, "no event twice").toBe(ids.length);
	for (let k = 1; k < ids.length; k++) expect(ids[k]).toBeGreaterThan(ids[k - 1]!);
	expect(
		log.filter((e) => !ids.includes(e.id!)).map((e) => `${e.id}:${e.type}`),
		"stored events the client never got",
	).toEqual([]);
}

async function startReplicas(env: Record<string, string>): Promise<MainProcess[]> {
	const start = () => startMain({ db: "/nonexistent/unused.db", env: { ...env, LOG_LEVEL: "info" } });
	const first = await start();
	return [first, ...(await Promise.all([start(), start()]))];
}

const answerText = (messages: { role: string; content: { text?: string }[] }[]) =>
	messages.filter((m) => m.role === "assistant").map((m) => m.content.map((c) => c.text ?? "").join(""));

describe.skipIf(!enabled)("engines failing under three replicas", () => {
	it(
		"Redis restarted mid-run: clear 503s meanwhile, the run ends, its stream has every event once, streams cross replicas again",
		async () => {
			const redis: PrivateRedis = await startPrivateRedis();
			cleanups.push(() => redis.close());
			const schema = schemas.next();
			const [A, B, C] = await startReplicas({
				...clusterEnv(schema, `wh-test:${schema}:${randomBytes(3).toString("hex")}:`, {
					fauxDelayMs: 20,
					heartbeatMs: 500,
					leaseTtlMs: 5000,
				}),
				WHEELHOUSE_REDIS_URL: redis.url,
			});
			const created = await json(`${A!.url}/v1/sessions`, "POST", {});
			const id = created.body.id as string;
			const watcher = follow(B!.url, id);
			cleanups.push(() => watcher.stop());
			const prompt = await json(`${A!.url}/v1/sessions/${id}/prompt`, "POST", { message: words(120) });
			expect(prompt.status).toBe(202);
			await waitForEvent(watcher, "the first delta on B", (e) => e.type === "message_update");

			await redis.kill();
			const unready = await waitUntil("a replica names redis on /readyz", async () => {
				const res = await json(`${C!.url}/readyz`);
				return res.status === 503 ? res : undefined;
			});
			expect(unready.body.unavailable).toContain("redis");
			const answers = await probeDuringOutage(
				[A!, B!, C!],
				[
					{ method: "GET", path: `/v1/sessions/${id}` },
					{ method: "GET", path: `/v1/sessions/${id}/messages` },
					{ method: "POST", path: "/v1/sessions", body: {} },
				],
			);
			await redis.start();

			// The run ends and the reader on B, resuming as it must, has every event once.
			await waitForEvent(watcher, "agent_end on B", (e) => e.type === "agent_end");
			const log = await storedLog(C!.url, id, 1);
			expectExactlyOnce(watcher, log);
			const messages = await json(`${C!.url}/v1/sessions/${id}/messages`);
			expect(answerText(messages.body.messages)).toEqual([words(120)]);
			// Sessions acknowledged while Redis was away are there.
			for (const answer of answers.filter((a) => a.method === "POST" && a.status === 201)) {
				expect((await json(`${B!.url}/v1/sessions/${answer.body.id}`)).status).toBe(200);
			}

			// Ready again everywhere, and a new run on C streams live to B.
			for (const replica of [A!, B!, C!]) {
				await waitUntil(`${replica.url} ready`, async () =>
					(await json(`${replica.url}/readyz`)).status === 200 ? true : undefined,
				);
			}
			expect((await json(`${C!.url}/v1/sessions/${id}/prompt`, "POST", { message: "after redis" })).status).toBe(202);
			await waitForEvent(
				watcher,
				"the second run's end on B",
				(e) => e.type === "agent_end" && e.id! > log.at(-1)!.id!,
			);
			expectExactlyOnce(watcher, await storedLog(C!.url, id, 2));
		},
		T,
	);

	it(
		"Redis under memory pressure drops a stalled replica's subscriber: its reader still gets every event once, from the store, and nothing of the cluster was a key to evict",
		async () => {
			// Keys are evicted as soon as memory is short, and a subscriber whose unread messages pass
			// 32 KB is disconnected at once: the two ways a Redis under pressure loses live data.
			const redis: PrivateRedis = await startPrivateRedis([
				"--maxmemory",
				"4mb",
				"--maxmemory-policy",
				"allkeys-lru",
				"--client-output-buffer-limit",
				"pubsub",
				"32kb",
				"16kb",
				"1",
			]);
			cleanups.push(() => redis.close());
			const admin = new Redis(redis.url, { maxRetriesPerRequest: 1 });
			cleanups.push(() => admin.disconnect());
			const schema = schemas.next();
			const prefix = `wh-test:${schema}:${randomBytes(3).toString("hex")}:`;
			const [A, B, C] = await startReplicas({
				...clusterEnv(schema, prefix, { fauxDelayMs: 1, heartbeatMs: 500, leaseTtlMs: 5000 }),
				WHEELHOUSE_REDIS_URL: redis.url,
			});
			let filled = 0;
			const fill = async (n: number) => {
				for (let i = 0; i < n; i++) await admin.set(`filler:${filled++}`, "x".repeat(64 * 1024));
			};
			await fill(100);
			const evicted = async () => Number(/evicted_keys:(\d+)/.exec(await admin.info("stats"))![1]);
			expect(await evicted(), "memory is short: keys are being evicted").toBeGreaterThan(0);

			const id = (await json(`${A!.url}/v1/sessions`, "POST", {})).body.id as string;
			const watcher = follow(B!.url, id);
			cleanups.push(() => watcher.stop());
			// ~100 KB: the user message's own event is more than a subscriber may have pending.
			const answer = words(1500, "x".repeat(60));
			expect((await json(`${A!.url}/v1/sessions/${id}/prompt`, "POST", { message: answer })).status).toBe(202);
			await waitForEvent(watcher, "the first delta on B", (e) => e.type === "message_update");

			const subscribers = async () =>
				((await admin.call("CLIENT", "LIST", "TYPE", "pubsub")) as string)
					.split("\n")
					.filter((line) => / name=wheelhouse-sub /.test(line))
					.map((line) => /^id=(\d+)/.exec(line)![1]!);
			// One subscriber connection per replica (a replica opens its own when it starts; on a loaded
			// machine under Redis memory pressure the last may still be connecting here).
			await expect.poll(async () => (await subscribers()).length, { timeout: 15_000 }).toBe(3);
			const before = await subscribers();
			expect(before).toHaveLength(3);
			// B reads nothing for 3 s while A publishes the answer, and keys keep being evicted.
			B!.child.kill("SIGSTOP");
			cleanups.push(() => void B!.child.kill("SIGCONT"));
			const stalledUntil = Date.now() + 3000;
			while (Date.now() < stalledUntil) await fill(10);
			B!.child.kill("SIGCONT");

			await waitForEvent(watcher, "agent_end on B", (e) => e.type === "agent_end");
			expect(redis.log(), "Redis dropped a subscriber for its output buffer").toMatch(
				/name=wheelhouse-sub.*output buffer limits/,
			);
			const after = await waitUntil("B subscribed again", async () => {
				const now = await subscribers();
				return now.length === 3 ? now : undefined;
			});
			expect(
				before.filter((subscriber) => after.includes(subscriber)),
				"A's and C's subscribers kept",
			).toHaveLength(2);
			expectExactlyOnce(watcher, await storedLog(C!.url, id, 1));
			expect(answerText((await json(`${C!.url}/v1/sessions/${id}/messages`)).body.messages)).toEqual([answer]);
			// Nothing the cluster keeps is a key that pressure could evict without loss: what Redis may
			// still hold is this session's tail and high-water mark, caches that expire (whether the
			// pressure evicted them yet depends on how much of the answer came after the filling).
			for (const key of await admin.keys(`${prefix}*`)) {
				expect([`${prefix}tail:${id}`, `${prefix}published:${id}`], "only the session's tail and mark").toContain(key);
				expect(await admin.pttl(key), `${key} expires`).toBeGreaterThan(0);
			}
			expect(await evicted()).toBeGreaterThan(0);

			// Live across replicas again: a run on C streams to B.
			expect((await json(`${C!.url}/v1/sessions/${id}/prompt`, "POST", { message: "after pressure" })).status).toBe(
				202,
			);
			await waitUntil("the second run's end on B", async () =>
				watcher.events.filter((e) => e.type === "agent_end").length >= 2 ? true : undefined,
			);
			expectExactlyOnce(watcher, await storedLog(C!.url, id, 2));
		},
		T,
	);

	it(
		"PostgreSQL unreachable for seconds: clear 503s meanwhile, acknowledged writes kept, the run and its stream recover",
		async () => {
			const proxy: TcpProxy = await startTcpProxy({
				host: new URL(PG_URL).hostname,
				port: Number(new URL(PG_URL).port || 5432),
			});
			cleanups.push(() => proxy.close());
			const viaProxy = new URL(PG_URL);
			viaProxy.hostname = "127.0.0.1";
			viaProxy.port = String(proxy.port);
			const schema = schemas.next();
			const [A, B, C] = await startReplicas({
				...clusterEnv(schema, `wh-test:${schema}:${randomBytes(3).toString("hex")}:`, {
					fauxDelayMs: 20,
					heartbeatMs: 500,
					// Longer than the outage: the run's holder keeps it.
					leaseTtlMs: 15_000,
				}),
				WHEELHOUSE_DATABASE_URL: viaProxy.toString(),
			});
			const id = (await json(`${A!.url}/v1/sessions`, "POST", {})).body.id as string;
			const watcher = follow(B!.url, id);
			cleanups.push(() => watcher.stop());
			expect((await json(`${A!.url}/v1/sessions/${id}/prompt`, "POST", { message: words(150) })).status).toBe(202);
			await waitForEvent(watcher, "the first delta on B", (e) => e.type === "message_update");

			proxy.cut();
			const unready = await waitUntil("a replica names postgres on /readyz", async () => {
				const res = await json(`${C!.url}/readyz`);
				return res.status === 503 ? res : undefined;
			});
			expect(unready.body.unavailable).toContain("postgres");
			const answers = await probeDuringOutage(
				[A!, B!, C!],
				[
					{ method: "GET", path: `/v1/sessions/${id}` },
					{ method: "POST", path: "/v1/sessions", body: {} },
					{ method: "POST", path: `/v1/sessions/${id}/follow-up`, body: { message: "queued while away" } },
				],
			);
			// The outage is seen: what needs the database says so.
			expect(answers.filter((a) => a.status === 503).map((a) => a.body.error.code)).toContain("STORE_UNAVAILABLE");
			await new Promise((resolve) => setTimeout(resolve, 2000));
			proxy.restore();

			for (const replica of [A!, B!, C!]) {
				await waitUntil(
					`${replica.url} ready`,
					async () => ((await json(`${replica.url}/readyz`)).status === 200 ? true : undefined),
					30_000,
				);
			}
			// The run ends; every follow-up acknowledged meanwhile runs after it.
			const acknowledgedFollowUps = answers.filter((a) => a.path.endsWith("/follow-up") && a.status === 202).length;
			await waitUntil(
				"the run and the acknowledged follow-ups end",
				async () => {
					const state = await json(`${C!.url}/v1/sessions/${id}`);
					const ends = watcher.events.filter((e) => e.type === "agent_end").length;
					return state.body.status !== "running" && ends >= 1 ? true : undefined;
				},
				60_000,
			);
			const messages = await json(`${C!.url}/v1/sessions/${id}/messages`);
			expect(messages.status).toBe(200);
			const texts = answerText(messages.body.messages);
			expect(texts[0]).toBe(words(150));
			const users = messages.body.messages.filter((m: { role: string }) => m.role === "user");
			expect(
				users.filter((m: { content: unknown }) => JSON.stringify(m.content).includes("queued while away")),
			).toHaveLength(acknowledgedFollowUps);
			for (const answer of answers.filter((a) => a.method === "POST" && a.status === 201)) {
				expect((await json(`${B!.url}/v1/sessions/${answer.body.id}`)).status).toBe(200);
			}
			const runs = watcher.events.filter((e) => e.type === "agent_end").length;
			expectExactlyOnce(watcher, await storedLog(C!.url, id, runs));
		},
		T,
	);
});

if (!enabled) {
	it.skip(`engines failing under three replicas: ${haveRedisServer() ? NO_CLUSTER_SERVICES : "skipped, no redis-server"}`, () => {});
}
