/**
 * A cluster of real replica processes (src/main.ts through test/helpers/main-process.ts) on one
 * PostgreSQL schema and one Redis key prefix of the test file's own. Where PostgreSQL or Redis is
 * missing the tests skip with one line; with `TEST_REQUIRE_ALL=1` (CI) that is an error instead.
 */
import { randomBytes } from "node:crypto";
import { Redis } from "ioredis";
import { json, type MainProcess, startMain } from "./main-process.js";
import { havePostgres, PG_URL, testSchemas } from "./postgres.js";

export const REDIS_URL = process.env.TEST_REDIS_URL ?? "redis://127.0.0.1:6379";

let redisReachable: Promise<boolean> | undefined;

async function probeRedis(): Promise<boolean> {
	const client = new Redis(REDIS_URL, { lazyConnect: true, maxRetriesPerRequest: 0, retryStrategy: () => null });
	client.on("error", () => undefined);
	try {
		await client.connect();
		return (await client.ping()) === "PONG";
	} catch {
		return false;
	} finally {
		client.disconnect();
	}
}

/** Whether Redis answers; throws when it does not and `TEST_REQUIRE_ALL=1`. */
export async function haveRedis(): Promise<boolean> {
	redisReachable ??= probeRedis();
	const ok = await redisReachable;
	if (!ok && process.env.TEST_REQUIRE_ALL === "1") {
		throw new Error(`TEST_REQUIRE_ALL=1 and no Redis at ${REDIS_URL} (start it or set TEST_REDIS_URL)`);
	}
	return ok;
}

/** Whether both PostgreSQL and Redis answer (throws under `TEST_REQUIRE_ALL=1` when one does not). */
export async function haveClusterServices(): Promise<boolean> {
	const [pg, redis] = await Promise.all([havePostgres(), haveRedis()]);
	return pg && redis;
}

/** The skip line of a cluster test. */
export const NO_CLUSTER_SERVICES = `skipped: cluster tests need PostgreSQL at ${PG_URL} and Redis at ${REDIS_URL} (start both, or set TEST_DATABASE_URL / TEST_REDIS_URL)`;

export interface Replica extends MainProcess {
	name: string;
}

export interface ClusterOptions {
	/** Lease TTL of every replica (short in tests, so a stalled replica's sessions are taken over soon). */
	leaseTtlMs?: number;
	fauxDelayMs?: number;
	heartbeatMs?: number;
	env?: Record<string, string>;
	/** Extra environment of one replica, by its name (`A`, `B`, ...). */
	envOf?: (name: string) => Record<string, string>;
}

/**
 * The cluster of one test file: `start(n)` starts replicas on the file's schema and Redis prefix
 * (a fresh pair per call); the schemas are dropped after the file (testSchemas). `dropRedisKeys()`
 * deletes the keys the replicas left under the file's prefixes (the sessions' event tails, which
 * would otherwise expire by themselves).
 */
export function testCluster(file: string) {
	const schemas = testSchemas(file);
	const prefixes: string[] = [];
	return {
		async dropRedisKeys(): Promise<void> {
			const client = new Redis(REDIS_URL, { lazyConnect: true, maxRetriesPerRequest: 1 });
			client.on("error", () => undefined);
			try {
				await client.connect();
				for (const prefix of prefixes.splice(0)) {
					let cursor = "0";
					do {
						const [next, keys] = await client.scan(cursor, "MATCH", `${prefix}*`, "COUNT", 1000);
						cursor = next;
						if (keys.length > 0) await client.del(...keys);
					} while (cursor !== "0");
				}
			} finally {
				client.disconnect();
			}
		},
		async start(n: number, options: ClusterOptions = {}): Promise<Replica[]> {
			const schema = schemas.next();
			const prefix = `wh-test:${schema}:${randomBytes(3).toString("hex")}:`;
			prefixes.push(prefix);
			const env = clusterEnv(schema, prefix, options);
			// One first: it creates the schema; the others then start together.
			const envFor = (name: string) => ({ ...env, ...options.envOf?.(name) });
			const first = await startReplica("A", envFor("A"));
			const rest = await Promise.all(
				Array.from({ length: n - 1 }, (_, i) => String.fromCharCode(66 + i)).map((name) =>
					startReplica(name, envFor(name)),
				),
			);
			return [first, ...rest];
		},
	};
}

/** The environment of a replica on `schema` and `prefix`. */
export function clusterEnv(schema: string, prefix: string, options: ClusterOptions = {}): Record<string, string> {
	return {
		WHEELHOUSE_STORE: "postgres",
		WHEELHOUSE_DATABASE_URL: PG_URL,
		WHEELHOUSE_DATABASE_SCHEMA: schema,
		WHEELHOUSE_REDIS_URL: REDIS_URL,
		WHEELHOUSE_REDIS_PREFIX: prefix,
		WHEELHOUSE_LEASE_TTL_MS: String(options.leaseTtlMs ?? 3000),
		WHEELHOUSE_FAUX_DELAY_MS: String(options.fauxDelayMs ?? 20),
		WHEELHOUSE_HEARTBEAT_MS: String(options.heartbeatMs ?? 500),
		WHEELHOUSE_SHUTDOWN_GRACE_MS: "1000",
		LOG_LEVEL: "warn",
		...options.env,
	};
}

async function startReplica(name: string, env: Record<string, string>): Promise<Replica> {
	// `db` is the SQLite path main-process.ts sets; the postgres store ignores it.
	const proc = await startMain({ db: "/nonexistent/unused.db", env: { ...env, LOG_LEVEL: "info" } });
	return Object.assign(proc, { name });
}

/** Creates a session on `replica`; resolves to its id. */
export async function createSession(replica: Replica, body: Record<string, unknown> = {}): Promise<string> {
	const res = await json(`${replica.url}/v1/sessions`, "POST", body);
	if (res.status !== 201) throw new Error(`create on ${replica.name}: ${res.status} ${JSON.stringify(res.body)}`);
	return res.body.id as string;
}

/** Polls `check` until it returns a value other than undefined; throws after `timeoutMs`. */
export async function waitUntil<T>(
	what: string,
	check: () => Promise<T | undefined>,
	timeoutMs = 20_000,
	everyMs = 50,
): Promise<T> {
	const deadline = Date.now() + timeoutMs;
	for (;;) {
		const value = await check();
		if (value !== undefined) return value;
		if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
		await new Promise((resolve) => setTimeout(resolve, everyMs));
	}
}

/** `text` of `n` words: the echo model streams one per `WHEELHOUSE_FAUX_DELAY_MS`. */
export function words(n: number, tag = "w"): string {
	return Array.from({ length: n }, (_, i) => `${tag}${i}`).join(" ");
}

/**
 * A TCP proxy in front of Redis for one replica, to break its link on purpose: `blackhole()`
 * drops everything Redis sends it while the connections stay open (published messages are lost
 * without the replica noticing), `cut()` closes every connection and refuses new ones (Redis
 * unreachable), `restore()` undoes either (for new connections).
 */
export async function redisProxy(): Promise<{
	url: string;
	blackhole(): void;
	cut(): Promise<void>;
	restore(): Promise<void>;
	close(): Promise<void>;
}> {
	const { createServer, connect } = await import("node:net");
	const target = new URL(REDIS_URL);
	const sockets = new Set<import("node:net").Socket>();
	let dropping = false;
	let refusing = false;
	const server = createServer((client) => {
		if (refusing) {
			client.destroy();
			return;
		}
		const upstream = connect(Number(target.port || 6379), target.hostname);
		sockets.add(client);
		sockets.add(upstream);
		client.on("data", (chunk) => upstream.write(chunk));
		upstream.on("data", (chunk) => {
			if (!dropping) client.write(chunk);
		});
		const end = () => {
			client.destroy();
			upstream.destroy();
			sockets.delete(client);
			sockets.delete(upstream);
		};
		client.on("close", end);
		upstream.on("close", end);
		client.on("error", end);
		upstream.on("error", end);
	});
	await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
	const { port } = server.address() as { port: number };
	return {
		url: `redis://127.0.0.1:${port}`,
		blackhole() {
			dropping = true;
		},
		async cut() {
			refusing = true;
			for (const socket of sockets) socket.destroy();
			sockets.clear();
		},
		async restore() {
			refusing = false;
			dropping = false;
		},
		async close() {
			refusing = true;
			for (const socket of sockets) socket.destroy();
			await new Promise<void>((resolve) => server.close(() => resolve()));
		},
	};
}
