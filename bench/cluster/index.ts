/**
 * bench/cluster: a cluster of 3 replica processes on PostgreSQL and Redis against one process on
 * PostgreSQL and one on SQLite, in one run, with the load average.
 *
 * 1. Throughput: `--sessions` sessions (default 100), each subscribed (`GET /events`) before its
 *    prompt; in the cluster each subscriber is on another replica than the one running the
 *    prompt. Events/s = events the subscribers received / time from the first prompt to the last
 *    `agent_end`. The model is faux/echo at 0 ms per word, `--words` words per answer.
 * 2. Control latency across replicas (cluster only): the run on A, the POST on C, the effect seen
 *    on a stream on B — steer (POST → its `queue_update` `queued`) and abort (POST → `agent_end`).
 *
 *   npx tsx bench/cluster/index.ts [--sessions 100] [--words 200] [--control 100] [--quick]
 *
 * Needs PostgreSQL (TEST_DATABASE_URL, default postgres://postgres@127.0.0.1:5432/test) and Redis
 * (TEST_REDIS_URL, default redis://127.0.0.1:6379); without them it says so and exits 0.
 */
import { type ChildProcess, spawn } from "node:child_process";
import { randomBytes } from "node:crypto";
import { mkdtempSync, rmSync } from "node:fs";
import { createServer } from "node:net";
import { loadavg, tmpdir } from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { Redis } from "ioredis";
import pg from "pg";

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../..");
const PG_URL = process.env.TEST_DATABASE_URL ?? "postgres://postgres@127.0.0.1:5432/test";
const REDIS_URL = process.env.TEST_REDIS_URL ?? "redis://127.0.0.1:6379";

const args = process.argv.slice(2);
const flag = (name: string, fallback: number) => {
	const at = args.indexOf(`--${name}`);
	return at >= 0 ? Number(args[at + 1]) : fallback;
};
const quick = args.includes("--quick");
const SESSIONS = flag("sessions", quick ? 20 : 100);
const WORDS = flag("words", quick ? 50 : 200);
const CONTROL = flag("control", quick ? 20 : 100);

const children = new Set<ChildProcess>();
process.on("exit", () => {
	for (const child of children) child.kill("SIGKILL");
});

async function reachable(): Promise<string | undefined> {
	const client = new pg.Client({ connectionString: PG_URL, connectionTimeoutMillis: 2000 });
	client.on("error", () => undefined);
	try {
		await client.connect();
		await client.end();
	} catch {
		return `no PostgreSQL at ${PG_URL}`;
	}
	const redis = new Redis(REDIS_URL, { lazyConnect: true, maxRetriesPerRequest: 0, retryStrategy: () => null });
	redis.on("error", () => undefined);
	try {
		await redis.connect();
		await redis.ping();
	} catch {
		return `no Redis at ${REDIS_URL}`;
	} finally {
		redis.disconnect();
	}
	return undefined;
}

async function freePort(): Promise<number> {
	const server = createServer().listen(0, "127.0.0.1");
	await new Promise((resolve) => server.once("listening", resolve));
	const { port } = server.address() as { port: number };
	server.close();
	return port;
}

/** Starts src/main.ts with `env`; resolves to its base URL once it listens. */
async function startServer(env: Record<string, string>): Promise<{ url: string; child: ChildProcess }> {
	const port = await freePort();
	const child = spawn(process.execPath, ["--import", "tsx", "src/main.ts"], {
		cwd: root,
		env: {
			PATH: process.env.PATH,
			PORT: String(port),
			HOST: "127.0.0.1",
			LOG_LEVEL: "info",
			WHEELHOUSE_FAUX_DELAY_MS: "0",
			WHEELHOUSE_HEARTBEAT_MS: "15000",
			WHEELHOUSE_MAX_SESSIONS: "100000",
			WHEELHOUSE_MAX_QUEUED: "100000",
			WHEELHOUSE_METRICS: "off",
			...env,
		},
		stdio: ["ignore", "pipe", "pipe"],
	});
	children.add(child);
	let output = "";
	await new Promise<void>((resolve, reject) => {
		const onData = (chunk: Buffer) => {
			output += chunk.toString();
			if (/listening on/i.test(output)) resolve();
		};
		child.stdout!.on("data", onData);
		child.stderr!.on("data", onData);
		child.once("exit", (code) => reject(new Error(`server exited with ${code}:\n${output}`)));
	});
	return { url: `http://127.0.0.1:${port}`, child };
}

async function stopServers(servers: { child: ChildProcess }[]): Promise<void> {
	await Promise.all(
		servers.map(
			({ child }) =>
				new Promise<void>((resolve) => {
					child.once("exit", () => resolve());
					child.kill("SIGTERM");
				}),
		),
	);
	for (const { child } of servers) children.delete(child);
}

async function post(url: string, body?: unknown): Promise<any> {
	const res = await fetch(url, {
		method: "POST",
		headers: body === undefined ? {} : { "content-type": "application/json" },
		body: body === undefined ? undefined : JSON.stringify(body),
	});
	const text = await res.text();
	if (res.status >= 300) throw new Error(`${url}: ${res.status} ${text}`);
	return text ? JSON.parse(text) : undefined;
}

/** A subscriber that counts event frames and calls `onFrame` with each one's type and data text. */
class Subscriber {
	events = 0;
	private controller = new AbortController();
	private buffer = "";
	private listeners: ((type: string, data: string, at: number) => void)[] = [];
	readonly opened: Promise<void>;

	constructor(url: string) {
		this.opened = this.run(url);
	}

	private async run(url: string): Promise<void> {
		const res = await fetch(url, { headers: { accept: "text/event-stream" }, signal: this.controller.signal });
		const reader = res.body!.getReader();
		const decoder = new TextDecoder();
		let first = true;
		const pump = async () => {
			try {
				for (;;) {
					const { value, done } = await reader.read();
					if (done) return;
					this.take(decoder.decode(value, { stream: true }));
				}
			} catch {
				// aborted
			}
		};
		void pump();
		await new Promise<void>((resolve) => {
			this.on((type) => {
				if (first && type === "session_snapshot") {
					first = false;
					resolve();
				}
			});
		});
	}

	private take(text: string): void {
		this.buffer += text;
		for (;;) {
			const end = this.buffer.indexOf("\n\n");
			if (end < 0) return;
			const frame = this.buffer.slice(0, end);
			this.buffer = this.buffer.slice(end + 2);
			const type = /^event: (.*)$/m.exec(frame)?.[1];
			const data = /^data: (.*)$/m.exec(frame)?.[1];
			if (!type || data === undefined) continue;
			if (type !== "session_snapshot") this.events++;
			const at = performance.now();
			for (const listener of [...this.listeners]) listener(type, data, at);
		}
	}

	on(listener: (type: string, data: string, at: number) => void): () => void {
		this.listeners.push(listener);
		return () => {
			this.listeners = this.listeners.filter((l) => l !== listener);
		};
	}

	/** Resolves with the time the first frame matching `match` arrives from now on. */
	next(match: (type: string, data: string) => boolean): Promise<number> {
		return new Promise((resolve) => {
			const off = this.on((type, data, at) => {
				if (!match(type, data)) return;
				off();
				resolve(at);
			});
		});
	}

	close(): void {
		this.controller.abort();
	}
}

const words = (n: number, tag: string) => Array.from({ length: n }, (_, i) => `${tag}${i}`).join(" ");

/** Throughput: sessions on `runOn(i)`, each watched on `watchOn(i)`. */
async function throughput(urls: string[], runOn: (i: number) => number, watchOn: (i: number) => number) {
	const ids: string[] = [];
	for (let i = 0; i < SESSIONS; i++) ids.push((await post(`${urls[runOn(i)]}/v1/sessions`, {})).id);
	const subscribers = ids.map((id, i) => new Subscriber(`${urls[watchOn(i)]}/v1/sessions/${id}/events`));
	await Promise.all(subscribers.map((s) => s.opened));
	const ends = subscribers.map((s) => s.next((type) => type === "agent_end"));
	const started = performance.now();
	await Promise.all(
		ids.map((id, i) => post(`${urls[runOn(i)]}/v1/sessions/${id}/prompt`, { message: words(WORDS, "w") })),
	);
	const last = Math.max(...(await Promise.all(ends)));
	const events = subscribers.reduce((sum, s) => sum + s.events, 0);
	for (const s of subscribers) s.close();
	const seconds = (last - started) / 1000;
	return { events, seconds, perSecond: events / seconds };
}

function percentile(values: number[], p: number): number {
	const sorted = [...values].sort((a, b) => a - b);
	return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))]!;
}

/** Control latency across replicas: the run on A, the POST on C, the effect on B's stream. */
async function control(urls: string[]) {
	const [A, B, C] = urls as [string, string, string];
	// Steering: a run held at an approval on A; each steer on C, its queue_update seen on B.
	const held = (await post(`${A}/v1/sessions`, { toolApprovals: { calculate: "always" } })).id;
	const watch = new Subscriber(`${B}/v1/sessions/${held}/events`);
	await watch.opened;
	const approval = watch.next((type) => type === "approval_requested");
	await post(`${A}/v1/sessions/${held}/prompt`, { message: '/tool calculate {"expression":"1+1"}' });
	await approval;
	const steer: number[] = [];
	for (let i = 0; i < CONTROL; i++) {
		const marker = `steer-${i}-${randomBytes(3).toString("hex")}`;
		const seen = watch.next((type, data) => type === "queue_update" && data.includes(marker));
		const t0 = performance.now();
		await post(`${C}/v1/sessions/${held}/steer`, { message: marker });
		steer.push((await seen) - t0);
	}
	watch.close();
	// Abort: a run on A held at an approval, aborted from C, its agent_end seen on B.
	const abort: number[] = [];
	const long = (await post(`${A}/v1/sessions`, { toolApprovals: { calculate: "always" } })).id;
	const watchLong = new Subscriber(`${B}/v1/sessions/${long}/events`);
	await watchLong.opened;
	for (let i = 0; i < Math.max(5, Math.floor(CONTROL / 4)); i++) {
		const waiting = watchLong.next((type) => type === "approval_requested");
		const ended = watchLong.next((type) => type === "agent_end");
		await post(`${A}/v1/sessions/${long}/prompt`, { message: '/tool calculate {"expression":"2+2"}' });
		await waiting;
		const t0 = performance.now();
		const answer = await post(`${C}/v1/sessions/${long}/abort`);
		if (!answer.aborted) throw new Error("abort on C found no run");
		abort.push((await ended) - t0);
	}
	watchLong.close();
	return { steer, abort };
}

async function dropSchema(schema: string): Promise<void> {
	const client = new pg.Client({ connectionString: PG_URL });
	await client.connect();
	await client.query(`DROP SCHEMA IF EXISTS ${schema} CASCADE`);
	await client.end();
}

async function main(): Promise<void> {
	const missing = await reachable();
	if (missing) {
		console.log(`bench/cluster: skipped, ${missing} (set TEST_DATABASE_URL / TEST_REDIS_URL)`);
		return;
	}
	const load0 = loadavg()[0]!;
	console.log(
		`bench/cluster: ${SESSIONS} sessions x ${WORDS} words, ${CONTROL} control rounds; load ${load0.toFixed(2)}`,
	);
	const tag = `bench_cluster_${process.pid}_${randomBytes(3).toString("hex")}`;
	const schemas = [`${tag}_c`, `${tag}_p`];
	const tmp = mkdtempSync(path.join(tmpdir(), "wheelhouse-bench-cluster-"));
	const rows: string[] = [];
	try {
		// One node, SQLite.
		console.error("one node, SQLite ...");
		const sqlite = [await startServer({ WHEELHOUSE_STORE: "sqlite", WHEELHOUSE_DB: path.join(tmp, "bench.db") })];
		const one = await throughput(
			sqlite.map((s) => s.url),
			() => 0,
			() => 0,
		);
		await stopServers(sqlite);
		// One node, PostgreSQL.
		console.error("one node, PostgreSQL ...");
		const pgEnv = { WHEELHOUSE_STORE: "postgres", WHEELHOUSE_DATABASE_URL: PG_URL };
		const pgOne = [await startServer({ ...pgEnv, WHEELHOUSE_DATABASE_SCHEMA: schemas[1]! })];
		const onePg = await throughput(
			pgOne.map((s) => s.url),
			() => 0,
			() => 0,
		);
		await stopServers(pgOne);
		// Three replicas.
		console.error("three replicas ...");
		const clusterEnv = {
			...pgEnv,
			WHEELHOUSE_DATABASE_SCHEMA: schemas[0]!,
			WHEELHOUSE_REDIS_URL: REDIS_URL,
			WHEELHOUSE_REDIS_PREFIX: `${tag}:`,
		};
		const first = await startServer(clusterEnv);
		const replicas = [first, ...(await Promise.all([startServer(clusterEnv), startServer(clusterEnv)]))];
		const urls = replicas.map((r) => r.url);
		const three = await throughput(
			urls,
			(i) => i % 3,
			(i) => (i + 1) % 3,
		);
		console.error("control latency ...");
		const latency = await control(urls);
		await stopServers(replicas);
		const load1 = loadavg()[0]!;

		const fmt = (n: number) => Math.round(n).toLocaleString("en-US");
		rows.push(
			"| setup | events | seconds | events/s | vs one node PostgreSQL | vs one node SQLite |",
			"|---|---|---|---|---|---|",
		);
		for (const [name, r] of [
			["one node, SQLite", one],
			["one node, PostgreSQL", onePg],
			["3 replicas (PostgreSQL + Redis), subscriber on another replica", three],
		] as const) {
			rows.push(
				`| ${name} | ${fmt(r.events)} | ${r.seconds.toFixed(2)} | ${fmt(r.perSecond)} | ${((r.perSecond / onePg.perSecond) * 100).toFixed(0)}% | ${((r.perSecond / one.perSecond) * 100).toFixed(0)}% |`,
			);
		}
		rows.push(
			"",
			"| control across replicas (POST on C, run on A, effect on B's stream) | n | p50 ms | p99 ms |",
			"|---|---|---|---|",
			`| steer → its queue_update | ${latency.steer.length} | ${percentile(latency.steer, 50).toFixed(1)} | ${percentile(latency.steer, 99).toFixed(1)} |`,
			`| abort → agent_end | ${latency.abort.length} | ${percentile(latency.abort, 50).toFixed(1)} | ${percentile(latency.abort, 99).toFixed(1)} |`,
			"",
			`load average (1 min): ${load0.toFixed(2)} at the start, ${load1.toFixed(2)} at the end; ${new Date().toISOString()}`,
		);
		console.log(rows.join("\n"));
	} finally {
		rmSync(tmp, { recursive: true, force: true });
		for (const schema of schemas) await dropSchema(schema).catch(() => undefined);
	}
}

await main();
process.exit(0);
