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
import { clusterEnv, haveClusterServices, NO_CLUSTER_SERVICES, waitUntil, words } from "../helpers/cluster.js";
import { json, type MainProcess, startMain, stopAll } from "../helpers/main-process.js";
import { testSchemas } from "../helpers/postgres.js";
import { haveRedisServer, type PrivateRedis, startPrivateRedis } from "../helpers/redis-server.js";
import { type ReplayServer, startReplayServer } from "../helpers/replay-server.js";
import { openSse, promptSse, type SseEvent, type SseReader } from "../helpers/sse.js";

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

const deltas = (events: SseEvent[]) => events.filter((e) => e.event === "message_update").map((e) => e.id);

describe.skipIf(!enabled)("chaos: what replicas must keep under failures", () => {
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
