/**
 * bench/cluster/remote-subscribers: events/s when every subscriber is on another replica than the
 * run, this tree against a base commit, in one run (rounds interleaved, so machine load hits both
 * alike), with the load average.
 *
 * Each round starts two replica processes (A runs the prompts, B serves the subscribers) on a
 * fresh PostgreSQL schema and Redis prefix, from either tree; `--sessions` sessions are created
 * on A and subscribed on B (`GET /events`, snapshot first), then all are prompted at once on A.
 * Events/s = events B's subscribers received / time from the first prompt to the last
 * `agent_end`. The model is faux/echo at 0 ms per word, `--words` words per answer. Every
 * subscriber must get every event of its run (the round fails otherwise).
 *
 *   npx tsx bench/cluster/remote-subscribers.ts [--base 0e5d29e] [--rounds 3] [--sessions 50] [--words 200]
 *
 * Needs PostgreSQL (TEST_DATABASE_URL) and Redis (TEST_REDIS_URL); without them it says so and exits 0.
 */
import { type ChildProcess, execFileSync, spawn } from "node:child_process";
import { randomBytes } from "node:crypto";
import { mkdtempSync, readFileSync, rmSync, symlinkSync } from "node:fs";
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
const option = (name: string, fallback: string) => {
	const at = args.indexOf(`--${name}`);
	return at >= 0 ? args[at + 1]! : fallback;
};
/** The commit before the cross-replica tail (what "today" was). */
const BASE = option("base", "0e5d29e");
const ROUNDS = Number(option("rounds", "3"));
const SESSIONS = Number(option("sessions", "50"));
const WORDS = Number(option("words", "200"));

const children = new Set<ChildProcess>();
process.on("exit", () => {
	for (const child of children) child.kill("SIGKILL");
});

async function servicesMissing(): Promise<string | undefined> {
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
		return undefined;
	} catch {
		return `no Redis at ${REDIS_URL}`;
	} finally {
		redis.disconnect();
	}
}

async function freePort(): Promise<number> {
	const server = createServer().listen(0, "127.0.0.1");
	await new Promise((resolve) => server.once("listening", resolve));
	const { port } = server.address() as { port: number };
	server.close();
	return port;
}

/** Starts `src/main.ts` of the tree at `cwd`; resolves once it listens. */
async function startReplica(cwd: string, env: Record<string, string>): Promise<{ url: string; child: ChildProcess }> {
	const port = await freePort();
	const child = spawn(process.execPath, ["--import", "tsx", "src/main.ts"], {
		cwd,
		env: {
			PATH: process.env.PATH,
			PORT: String(port),
			HOST: "127.0.0.1",
			LOG_LEVEL: "info",
			WHEELHOUSE_FAUX_DELAY_MS: "0",
			WHEELHOUSE_HEARTBEAT_MS: "15000",
			WHEELHOUSE_MAX_SESSIONS: "100000",
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
		child.once("exit", (code) => reject(new Error(`replica exited with ${code}:\n${output}`)));
	});
	return { url: `http://127.0.0.1:${port}`, child };
}

async function stop(replicas: { child: ChildProcess }[]): Promise<void> {
	await Promise.all(
		replicas.map(
			({ child }) =>
				new Promise<void>((resolve) => {
					if (child.exitCode !== null) return resolve();
					child.once("exit", () => resolve());
					child.kill("SIGTERM");
				}),
		),
	);
	for (const { child } of replicas) children.delete(child);
}

async function post(url: string, body?: unknown): Promise<any> {
	const res = await fetch(url, {
		method: "POST",
		headers: { "content-type": "application/json" },
		body: JSON.stringify(body ?? {}),
	});
	const text = await res.text();
	if (res.status >= 300) throw new Error(`${url}: ${res.status} ${text}`);
	return text ? JSON.parse(text) : undefined;
}

/** A subscriber: counts event frames (not the snapshot), notes the ids, resolves `ended` at `agent_end`. */
class Subscriber {
	events = 0;
	readonly ids: number[] = [];
	endedAt = 0;
	private readonly controller = new AbortController();
	private buffer = "";
	private onSnapshot!: () => void;
	private onEnd!: () => void;
	readonly subscribed = new Promise<void>((resolve) => {
		this.onSnapshot = resolve;
	});
	readonly ended = new Promise<void>((resolve) => {
		this.onEnd = resolve;
	});

	constructor(url: string) {
		void this.run(url);
	}

	private async run(url: string): Promise<void> {
		try {
			const res = await fetch(url, { headers: { accept: "text/event-stream" }, signal: this.controller.signal });
			const decoder = new TextDecoder();
			for await (const chunk of res.body!) this.take(decoder.decode(chunk as Uint8Array, { stream: true }));
		} catch {
			// closed
		}
	}

	private take(text: string): void {
		this.buffer += text;
		for (;;) {
			const end = this.buffer.indexOf("\n\n");
			if (end < 0) return;
			const frame = this.buffer.slice(0, end);
			this.buffer = this.buffer.slice(end + 2);
			const type = /^event: (.*)$/m.exec(frame)?.[1];
			if (!type) continue;
			if (type === "session_snapshot") {
				this.onSnapshot();
				continue;
			}
			this.events++;
			this.ids.push(Number(/^id: (.*)$/m.exec(frame)?.[1]));
			if (type === "agent_end") {
				this.endedAt = performance.now();
				this.onEnd();
			}
		}
	}

	close(): void {
		this.controller.abort();
	}
}

/** CPU seconds a process used so far (user + system, from /proc; 0 where there is none). */
function cpuSeconds(child: ChildProcess): number {
	try {
		const stat = readFileSync(`/proc/${child.pid}/stat`, "utf8");
		const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
		// utime and stime are fields 14 and 15 of the line (11 and 12 after the command name), in ticks.
		return (Number(fields[11]) + Number(fields[12])) / 100;
	} catch {
		return 0;
	}
}

/** CPU seconds the Redis server used so far (INFO cpu; the shared server: others' use included). */
async function redisCpuSeconds(): Promise<number> {
	const redis = new Redis(REDIS_URL);
	try {
		const info = await redis.info("cpu");
		const field = (name: string) => Number(new RegExp(`^${name}:([0-9.]+)`, "m").exec(info)?.[1] ?? 0);
		return field("used_cpu_user") + field("used_cpu_sys");
	} finally {
		redis.disconnect();
	}
}

/**
 * One round on the tree at `cwd`: events B's subscribers received, the seconds it took, and the
 * CPU seconds both replicas used meanwhile (what the machine's load does not change much).
 */
async function round(cwd: string): Promise<{ events: number; seconds: number; cpu: number; redisCpu: number }> {
	const schema = `bench_remote_${randomBytes(4).toString("hex")}`;
	const prefix = `wh-bench:${schema}:`;
	const env = {
		WHEELHOUSE_STORE: "postgres",
		WHEELHOUSE_DATABASE_URL: PG_URL,
		WHEELHOUSE_DATABASE_SCHEMA: schema,
		WHEELHOUSE_REDIS_URL: REDIS_URL,
		WHEELHOUSE_REDIS_PREFIX: prefix,
	};
	const a = await startReplica(cwd, env);
	const b = await startReplica(cwd, env);
	const subscribers: Subscriber[] = [];
	try {
		const ids: string[] = [];
		for (let i = 0; i < SESSIONS; i++) ids.push((await post(`${a.url}/v1/sessions`)).id);
		for (const id of ids) subscribers.push(new Subscriber(`${b.url}/v1/sessions/${id}/events`));
		await Promise.all(subscribers.map((s) => s.subscribed));
		const message = Array.from({ length: WORDS }, (_, i) => `w${i}`).join(" ");
		const cpuBefore = cpuSeconds(a.child) + cpuSeconds(b.child);
		const redisBefore = await redisCpuSeconds();
		const started = performance.now();
		await Promise.all(ids.map((id) => post(`${a.url}/v1/sessions/${id}/prompt`, { message })));
		await Promise.all(subscribers.map((s) => s.ended));
		const last = Math.max(...subscribers.map((s) => s.endedAt));
		const cpu = cpuSeconds(a.child) + cpuSeconds(b.child) - cpuBefore;
		const redisCpu = (await redisCpuSeconds()) - redisBefore;
		for (const s of subscribers) {
			// The echo model streams one delta per word: every one must have arrived, once, in order.
			if (s.ids.length < WORDS || s.ids.some((id, i) => i > 0 && id <= s.ids[i - 1]!)) {
				throw new Error(`a subscriber got ${s.ids.length} events, out of order or short`);
			}
		}
		return { events: subscribers.reduce((n, s) => n + s.events, 0), seconds: (last - started) / 1000, cpu, redisCpu };
	} finally {
		for (const s of subscribers) s.close();
		await stop([a, b]);
		await dropState(schema, prefix);
	}
}

async function dropState(schema: string, prefix: string): Promise<void> {
	const client = new pg.Client({ connectionString: PG_URL });
	await client.connect();
	await client.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`);
	await client.end();
	const redis = new Redis(REDIS_URL);
	let cursor = "0";
	do {
		const [next, keys] = await redis.scan(cursor, "MATCH", `${prefix}*`, "COUNT", 1000);
		cursor = next;
		if (keys.length > 0) await redis.del(...keys);
	} while (cursor !== "0");
	redis.disconnect();
}

/** The base commit's tree in a temporary directory, with this checkout's node_modules. */
function checkoutBase(): { dir: string; commit: string } {
	const commit = execFileSync("git", ["rev-parse", "--short", BASE], { cwd: root }).toString().trim();
	const dir = mkdtempSync(path.join(tmpdir(), "wh-bench-base-"));
	execFileSync("sh", ["-c", `git archive ${commit} | tar -x -C ${dir}`], { cwd: root });
	symlinkSync(path.join(root, "node_modules"), path.join(dir, "node_modules"));
	return { dir, commit };
}

const median = (values: number[]) => [...values].sort((x, y) => x - y)[Math.floor(values.length / 2)]!;

async function main(): Promise<void> {
	const missing = await servicesMissing();
	if (missing) {
		console.log(`bench/cluster/remote-subscribers: skipped (${missing})`);
		return;
	}
	const head = execFileSync("git", ["rev-parse", "--short", "HEAD"], { cwd: root }).toString().trim();
	const dirty = execFileSync("git", ["status", "--porcelain", "src"], { cwd: root }).toString().trim() !== "";
	const base = checkoutBase();
	const load = () =>
		loadavg()
			.map((l) => l.toFixed(2))
			.join(" ");
	console.log(
		`remote subscribers: ${SESSIONS} sessions x ${WORDS} words, ${ROUNDS} rounds each; base ${base.commit}, this tree ${head}${dirty ? " (with uncommitted changes)" : ""}; load at start ${load()}`,
	);
	const results: Record<"base" | "this", number[]> = { base: [], this: [] };
	const cpuPerEvent: Record<"base" | "this", number[]> = { base: [], this: [] };
	const rows: string[] = [];
	try {
		for (let r = 0; r < ROUNDS; r++) {
			// Alternate which goes first, so a load change during the run hits both alike.
			const order: ("base" | "this")[] = r % 2 === 0 ? ["base", "this"] : ["this", "base"];
			for (const which of order) {
				const { events, seconds, cpu, redisCpu } = await round(which === "base" ? base.dir : root);
				const rate = events / seconds;
				results[which].push(rate);
				cpuPerEvent[which].push((cpu * 1e6) / events);
				rows.push(
					`| ${r + 1} | ${which === "base" ? `base ${base.commit}` : `this tree ${head}`} | ${events} | ${seconds.toFixed(2)} | ${Math.round(rate)} | ${Math.round((cpu * 1e6) / events)} | ${Math.round((redisCpu * 1e6) / events)} |`,
				);
			}
		}
	} finally {
		rmSync(base.dir, { recursive: true, force: true });
	}
	console.log(
		"\n| round | tree | events | seconds | events/s | replicas' CPU µs per event | Redis CPU µs per event |\n| --- | --- | --- | --- | --- | --- | --- |",
	);
	for (const row of rows) console.log(row);
	const ratio = median(results.this) / median(results.base);
	console.log(
		`\nmedian events/s: base ${Math.round(median(results.base))}, this tree ${Math.round(median(results.this))}; ratio ${ratio.toFixed(2)} (goal >= 0.90: ${ratio >= 0.9 ? "met" : "NOT met"}); replicas' CPU µs per event: base ${Math.round(median(cpuPerEvent.base))}, this tree ${Math.round(median(cpuPerEvent.this))}; load at end ${load()}`,
	);
}

await main();
process.exit(0);
