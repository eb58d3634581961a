/**
 * bench/cluster/steer-elsewhere: the latency of a steer posted on a replica that does not run the
 * session — `POST /v1/sessions/:id/steer` on B until its `202`, the run on A — with the machine's
 * load average. Two replica processes on PostgreSQL and Redis; the run on A is held by a tool
 * call that waits for an approval, so it stays running for the whole bench and every steer goes
 * to a run on another replica. The queue is cleared (on B) every `--batch` steers so that it never
 * fills; those clears are not timed.
 *
 *   npx tsx bench/cluster/steer-elsewhere.ts [--steers 1000] [--batch 50] [--warmup 50] [--history 0]
 *
 * `--history N`: the session starts with N earlier messages (user and assistant, about 200 bytes
 * each), what a replica that builds the session for a steer would read.
 *
 * Needs PostgreSQL (TEST_DATABASE_URL, default postgres://postgres@127.0.0.1:5432/test) and Redis
 * (TEST_REDIS_URL, default redis://127.0.0.1:6379); without them it says so and exits 0.
 */
import { type ChildProcess, spawn } from "node:child_process";
import { randomBytes } from "node:crypto";
import { createServer } from "node:net";
import { loadavg } from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import pg from "pg";

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../..");
const PG_URL = process.env.TEST_DATABASE_URL ?? "postgres://postgres@127.0.0.1:5432/test";
const REDIS_URL = process.env.TEST_REDIS_URL ?? "redis://127.0.0.1:6379";

const args = process.argv.slice(2);
const flag = (name: string, fallback: number) => {
	const at = args.indexOf(`--${name}`);
	return at >= 0 ? Number(args[at + 1]) : fallback;
};
const STEERS = flag("steers", 1000);
const BATCH = flag("batch", 50);
const WARMUP = flag("warmup", 50);
const HISTORY = flag("history", 0);

/** `n` earlier messages, user and assistant in turn. */
function history(n: number): unknown[] {
	const text = "an earlier message of this conversation, long enough to weigh like a real one ".repeat(2);
	return Array.from({ length: n }, (_, i) =>
		i % 2 === 0
			? { role: "user", content: `${i}: ${text}`, timestamp: i }
			: {
					role: "assistant",
					content: [{ type: "text", text: `${i}: ${text}` }],
					api: "faux",
					provider: "faux",
					model: "echo",
					usage: {
						input: 0,
						output: 0,
						cacheRead: 0,
						cacheWrite: 0,
						totalTokens: 0,
						cost: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0, total: 0 },
					},
					stopReason: "stop",
					timestamp: i,
				},
	);
}

const children = new Set<ChildProcess>();
process.on("exit", () => {
	for (const child of children) child.kill("SIGKILL");
});

async function freePort(): Promise<number> {
	const server = createServer().listen(0, "127.0.0.1");
	await new Promise((resolve) => server.once("listening", resolve));
	const { port } = server.address() as { port: number };
	server.close();
	return port;
}

/** Starts src/main.ts with `env`; resolves to its base URL once it listens. */
async function startReplica(env: Record<string, string>): Promise<{ url: string; child: ChildProcess }> {
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
			WHEELHOUSE_METRICS: "off",
			WHEELHOUSE_APPROVAL_TIMEOUT_MS: "3600000",
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

async function request(method: string, url: string, body?: unknown): Promise<{ status: number; body: any }> {
	const res = await fetch(url, {
		method,
		headers: body === undefined ? {} : { "content-type": "application/json" },
		body: body === undefined ? undefined : JSON.stringify(body),
	});
	const text = await res.text();
	return { status: res.status, body: text ? JSON.parse(text) : undefined };
}

const at = (sorted: number[], q: number) => sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))]!;

async function main(): Promise<void> {
	const client = new pg.Client({ connectionString: PG_URL, connectionTimeoutMillis: 2000 });
	client.on("error", () => undefined);
	try {
		await client.connect();
	} catch {
		console.log(`skipped: no PostgreSQL at ${PG_URL}`);
		return;
	}
	const schema = `bench_steer_${process.pid}_${randomBytes(3).toString("hex")}`;
	const env = {
		WHEELHOUSE_STORE: "postgres",
		WHEELHOUSE_DATABASE_URL: PG_URL,
		WHEELHOUSE_DATABASE_SCHEMA: schema,
		WHEELHOUSE_REDIS_URL: REDIS_URL,
		WHEELHOUSE_REDIS_PREFIX: `wh-bench:${schema}:`,
	};
	const loadBefore = loadavg()[0]!;
	try {
		const A = await startReplica(env);
		const B = await startReplica(env);
		console.error("replicas listening");
		const created = await request("POST", `${A.url}/v1/sessions`, {
			toolApprovals: { calculate: "always" },
			...(HISTORY > 0 ? { messages: history(HISTORY) } : {}),
		});
		if (created.status !== 201) throw new Error(`create: ${created.status} ${JSON.stringify(created.body)}`);
		const id = created.body.id as string;
		// The run on A waits for an approval: it stays running while B is asked to steer it.
		const prompt = await request("POST", `${A.url}/v1/sessions/${id}/prompt`, {
			message: '/tool calculate {"expression":"6*7"}',
		});
		if (prompt.status !== 202) throw new Error(`prompt: ${prompt.status} ${JSON.stringify(prompt.body)}`);
		for (let i = 0; ; i++) {
			const state = await request("GET", `${A.url}/v1/sessions/${id}`);
			if ((state.body.pendingApprovals ?? []).length > 0) break;
			if (i > 400) throw new Error("the run never asked for its approval");
			await new Promise((resolve) => setTimeout(resolve, 25));
		}
		console.error("run on A waits for its approval; steering on B");
		const times: number[] = [];
		for (let i = 0; i < WARMUP + STEERS; i++) {
			if (i % BATCH === 0) await request("DELETE", `${B.url}/v1/sessions/${id}/queue`);
			const started = process.hrtime.bigint();
			const res = await request("POST", `${B.url}/v1/sessions/${id}/steer`, { message: `steer ${i}` });
			const ms = Number(process.hrtime.bigint() - started) / 1e6;
			if (res.status !== 202 || res.body.idle !== false) {
				throw new Error(`steer ${i}: ${res.status} ${JSON.stringify(res.body)} (the run must be on A, running)`);
			}
			if (i >= WARMUP) times.push(ms);
		}
		times.sort((a, b) => a - b);
		const loadAfter = loadavg()[0]!;
		console.log(
			`steer on B, run on A (POST → 202), n = ${times.length}, batch ${BATCH}, warmup ${WARMUP}, history ${HISTORY} messages`,
		);
		console.log(
			`  p50 ${at(times, 0.5).toFixed(2)} ms  p90 ${at(times, 0.9).toFixed(2)} ms  p99 ${at(times, 0.99).toFixed(2)} ms  max ${times.at(-1)!.toFixed(2)} ms`,
		);
		console.log(`  load average (1 min) ${loadBefore.toFixed(2)} → ${loadAfter.toFixed(2)}, ${process.platform}`);
		await request("POST", `${A.url}/v1/sessions/${id}/abort`);
		for (const { child } of [A, B]) {
			child.kill("SIGTERM");
			children.delete(child);
		}
	} finally {
		await client.query(`DROP SCHEMA IF EXISTS ${schema} CASCADE`).catch(() => undefined);
		await client.end();
	}
}

await main();
process.exit(0);
