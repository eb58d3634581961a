/**
 * bench/cluster: Wheelhouse as three replicas on PostgreSQL and Redis against one node, in one run.
 *
 *   npx tsx bench/cluster/index.ts [--quick]
 *   (BENCH_CLUSTER_ROUNDS=5, or 2 with --quick; BENCH_CLUSTER_SESSIONS=100; BENCH_CLUSTER_CONTROL=30, or 10)
 *
 * Every server is the real server process (src/main.ts, configured by its environment as in
 * production) with the faux/echo model at 0 ms per token; the measuring client is bench/sse's
 * (a separate process). PostgreSQL and Redis are the machine's (127.0.0.1:5432 database `test`,
 * 127.0.0.1:6379), in a schema and a key prefix of this run, dropped at the end.
 *
 * Measured:
 * - Fan-out: SESSIONS concurrent sessions, each answering 200 tokens, each watched by one
 *   `GET /events` subscriber. Cluster: the run on replica i mod 3, its subscriber on replica
 *   i+1 mod 3 (every event crosses Redis). One node: run and subscriber on the same process,
 *   PostgreSQL store and SQLite store. events/s as the subscribers receive them, and the CPU
 *   time of all server processes per event. The topologies take turns round by round (so load
 *   drift on a shared machine spreads over all of them); the figure is the median round.
 * - Control across replicas: the run on replica A waits in a tool; `POST /steer` or
 *   `POST /abort` goes to replica B; the effect is seen by a subscriber on replica C: for steer
 *   the steering message's `message_start` after the tool is released right after the steer's
 *   `202` (as bench/sse measures it on one node), for abort the run's `agent_end`.
 * - PostgreSQL store against SQLite on one node: from the fan-out rounds above.
 */
import { type ChildProcess, execFileSync, fork, spawn } from "node:child_process";
import { once } from "node:events";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { cpus, loadavg, tmpdir } from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { streamEvents } from "../../src/client/stream-events.js";
import type { ClientJob, ClientResult, StreamRequest } from "../sse/client.js";

const here = path.dirname(fileURLToPath(import.meta.url));
const REPO = path.resolve(here, "..", "..");
const QUICK = process.argv.includes("--quick");
const ROUNDS = Number(process.env.BENCH_CLUSTER_ROUNDS ?? (QUICK ? 2 : 5));
const SESSIONS = Number(process.env.BENCH_CLUSTER_SESSIONS ?? 100);
const CONTROL = Number(process.env.BENCH_CLUSTER_CONTROL ?? (QUICK ? 10 : 30));
const TOKENS = 200;
const PG_URL = process.env.BENCH_DATABASE_URL ?? "postgres://postgres@127.0.0.1:5432/test";
const REDIS_URL = process.env.BENCH_REDIS_URL ?? "redis://127.0.0.1:6379";
const RUN_ID = `${process.pid}_${Date.now().toString(36)}`;
/** BENCH_CLUSTER_TOPOLOGIES=sqlite,pg,cluster (default all): which topologies run. */
const TOPOLOGIES = new Set((process.env.BENCH_CLUSTER_TOPOLOGIES ?? "sqlite,pg,cluster").split(","));

// --- server processes --------------------------------------------------------------------------

const CLOCK_TICKS = Number(execFileSync("getconf", ["CLK_TCK"]).toString().trim()) || 100;

/** A server process (src/main.ts) configured by `env`. */
class Replica {
	private constructor(
		readonly child: ChildProcess,
		readonly url: string,
		readonly name: string,
	) {}

	static async start(name: string, env: Record<string, string>): Promise<Replica> {
		const port = await freePort();
		const child = spawn(process.execPath, ["--import", "tsx", "src/main.ts"], {
			cwd: REPO,
			env: {
				PATH: process.env.PATH,
				HOST: "127.0.0.1",
				PORT: String(port),
				LOG_LEVEL: "warn",
				LOG_FORMAT: "json",
				WHEELHOUSE_FAUX_DELAY_MS: "0",
				WHEELHOUSE_HEARTBEAT_MS: "0",
				WHEELHOUSE_TOOL_MODULES: path.join(here, "tools.ts"),
				...env,
			},
			stdio: ["ignore", "pipe", "pipe"],
		});
		let output = "";
		const collect = (chunk: Buffer) => {
			output += chunk.toString();
		};
		child.stdout!.on("data", collect);
		child.stderr!.on("data", collect);
		const url = `http://127.0.0.1:${port}`;
		// LOG_LEVEL=warn hides the "listening" line: ask /healthz until it answers.
		for (const deadline = Date.now() + 60_000; ; ) {
			if (child.exitCode !== null)
				throw new Error(`${name} exited with ${child.exitCode} before listening:\n${output}`);
			const ok = await fetch(`${url}/healthz`).then(
				(res) => res.ok,
				() => false,
			);
			if (ok) break;
			if (Date.now() > deadline) throw new Error(`${name} did not listen within 60 s:\n${output}`);
			await new Promise((resolve) => setTimeout(resolve, 100));
		}
		child.stdout!.off("data", collect);
		child.stderr!.off("data", collect);
		// From now on only warnings and errors reach the output, which a benchmark must not hide.
		child.stdout!.on("data", (chunk: Buffer) => process.stderr.write(`[${name}] ${chunk}`));
		child.stderr!.on("data", (chunk: Buffer) => process.stderr.write(`[${name}] ${chunk}`));
		return new Replica(child, url, name);
	}

	/** CPU time (user + system) of the process so far, in µs. */
	cpuMicros(): number {
		const stat = readFileSync(`/proc/${this.child.pid}/stat`, "utf8");
		const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
		// Fields 14 and 15 of /proc/<pid>/stat (utime, stime); index 0 here is field 3.
		return ((Number(fields[11]) + Number(fields[12])) * 1_000_000) / CLOCK_TICKS;
	}

	async stop(): Promise<void> {
		if (this.child.exitCode !== null || this.child.signalCode !== null) return;
		const exited = once(this.child, "exit");
		this.child.kill("SIGTERM");
		await exited;
	}
}

async function freePort(): Promise<number> {
	const { createServer } = await import("node:net");
	const server = createServer().listen(0, "127.0.0.1");
	await once(server, "listening");
	const { port } = server.address() as { port: number };
	server.close();
	return port;
}

/** One client process for the whole run (bench/sse's), so its code is warm for every measured job. */
let clientChild: ChildProcess | undefined;

async function runClient(job: ClientJob): Promise<ClientResult> {
	if (!clientChild) {
		clientChild = fork(path.join(REPO, "bench", "sse", "client.ts"), [], {
			execArgv: ["--import", "tsx"],
			stdio: ["ignore", "inherit", "inherit", "ipc"],
		});
		clientChild.unref();
		(clientChild as unknown as { channel?: { unref(): void } }).channel?.unref();
	}
	clientChild.send(job);
	const [result] = (await once(clientChild, "message")) as [ClientResult];
	if (result.error) throw new Error(`client: ${result.error}`);
	for (const s of result.streams) if (s.status !== 200) throw new Error(`client: HTTP ${s.status}`);
	return result;
}

// --- topologies ----------------------------------------------------------------------------------

interface Topology {
	name: string;
	replicas: Replica[];
}

const dataDir = mkdtempSync(path.join(tmpdir(), "wh-bench-cluster-"));

/** The environment of a server on the PostgreSQL store in `schema` (and, with `redisPrefix`, in cluster mode). */
function postgresEnv(schema: string, redisPrefix?: string): Record<string, string> {
	return {
		WHEELHOUSE_STORE: "postgres",
		WHEELHOUSE_DATABASE_URL: PG_URL,
		WHEELHOUSE_DATABASE_SCHEMA: schema,
		...(redisPrefix ? { WHEELHOUSE_REDIS_URL: REDIS_URL, WHEELHOUSE_REDIS_PREFIX: redisPrefix } : {}),
	};
}

async function startTopologies(): Promise<Topology[]> {
	const topologies: Topology[] = [];
	if (TOPOLOGIES.has("sqlite")) {
		topologies.push({
			name: "one node, SQLite store",
			replicas: [
				await Replica.start("sqlite", { WHEELHOUSE_STORE: "sqlite", WHEELHOUSE_DB: path.join(dataDir, "wh.db") }),
			],
		});
	}
	if (TOPOLOGIES.has("pg")) {
		topologies.push({
			name: "one node, PostgreSQL store",
			replicas: [await Replica.start("pg", postgresEnv(`bench_one_${RUN_ID}`))],
		});
	}
	if (TOPOLOGIES.has("cluster")) {
		const clusterEnv = postgresEnv(`bench_cluster_${RUN_ID}`, `bench_cluster_${RUN_ID}:`);
		const cluster: Replica[] = [];
		for (const name of ["A", "B", "C"]) cluster.push(await Replica.start(name, clusterEnv));
		topologies.push({ name: "3 replicas, PostgreSQL + Redis", replicas: cluster });
	}
	return topologies;
}

async function dropSchemas(): Promise<void> {
	const { default: pg } = await import("pg");
	const client = new pg.Client({ connectionString: PG_URL });
	await client.connect();
	try {
		for (const schema of [`bench_one_${RUN_ID}`, `bench_cluster_${RUN_ID}`]) {
			await client.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`);
		}
	} finally {
		await client.end();
	}
}

// --- requests --------------------------------------------------------------------------------------

function words(n: number): string {
	return Array.from({ length: n }, (_, i) => `w${i}`).join(" ");
}

async function post(url: string, body: unknown, expected: number): Promise<any> {
	const res = await fetch(url, {
		method: "POST",
		headers: { "content-type": "application/json" },
		body: JSON.stringify(body),
	});
	const text = await res.text();
	if (res.status !== expected) throw new Error(`POST ${url}: ${res.status} ${text}`);
	return text ? JSON.parse(text) : undefined;
}

async function createSessions(url: string, count: number): Promise<string[]> {
	const ids: string[] = [];
	for (let i = 0; i < count; i++) ids.push((await post(`${url}/v1/sessions`, { model: "faux/echo" }, 201)).id);
	return ids;
}

/** Session i runs on replica i mod n; its subscriber listens on replica i+1 mod n (the same one on one node). */
async function fanOutJob(topology: Topology): Promise<ClientJob> {
	const { replicas } = topology;
	const ids = await createSessions(replicas[0]!.url, SESSIONS);
	const n = replicas.length;
	const requests: StreamRequest[] = ids.map((id, i) => ({
		method: "GET",
		url: `${replicas[(i + 1) % n]!.url}/v1/sessions/${id}/events?after=0`,
	}));
	const triggers: StreamRequest[] = ids.map((id, i) => ({
		method: "POST",
		url: `${replicas[i % n]!.url}/v1/sessions/${id}/prompt`,
		headers: { "content-type": "application/json" },
		body: JSON.stringify({ message: words(TOKENS) }),
	}));
	return { requests, triggers, endNeedle: "event: agent_end" };
}

// --- measurements ----------------------------------------------------------------------------------

interface Round {
	events: number;
	eventsPerSec: number;
	cpuPerEventUs: number;
	wallMs: number;
	slowestFirstDeltaMs: number;
}

async function fanOutRound(topology: Topology): Promise<Round> {
	const job = await fanOutJob(topology);
	const cpuBefore = topology.replicas.reduce((sum, r) => sum + r.cpuMicros(), 0);
	const result = await runClient(job);
	const cpuAfter = topology.replicas.reduce((sum, r) => sum + r.cpuMicros(), 0);
	const events = result.streams.reduce((sum, s) => sum + s.events, 0);
	const deltas = result.streams.reduce((sum, s) => sum + s.textDeltas, 0);
	if (deltas !== SESSIONS * TOKENS) {
		throw new Error(`${topology.name}: ${deltas} text deltas arrived, ${SESSIONS * TOKENS} expected`);
	}
	return {
		events,
		eventsPerSec: events / (result.wallMs / 1000),
		cpuPerEventUs: (cpuAfter - cpuBefore) / events,
		wallMs: result.wallMs,
		slowestFirstDeltaMs: Math.max(...result.streams.map((s) => s.firstDeltaMs)),
	};
}

/**
 * Steer or abort posted on replica B for a run on replica A waiting in `bench_wait`, seen by a
 * subscriber on replica C. Returns the latency in ms of each try.
 */
async function controlLatency(cluster: Replica[], kind: "steer" | "abort"): Promise<number[]> {
	const [a, b, c] = cluster as [Replica, Replica, Replica];
	const latencies: number[] = [];
	for (let i = 0; i < CONTROL; i++) {
		const [id] = await createSessions(a.url, 1);
		const steerText = `steer ${i}`;
		let postedAt = 0;
		let seenAt = 0;
		const events = streamEvents({
			url: `${c.url}/v1/sessions/${id}/events?after=0`,
			until: (e) => e.type === "agent_end",
		});
		const next = () => events.next();
		// The subscription is open before the run starts: its first frame is the retry/first event.
		const first = next();
		await post(`${a.url}/v1/sessions/${id}/prompt`, { message: "/tool bench_wait {}" }, 202);
		let step = await first;
		while (!step.done && step.value.type !== "tool_execution_start") step = await next();
		postedAt = performance.now();
		if (kind === "steer") {
			await post(`${b.url}/v1/sessions/${id}/steer`, { message: steerText }, 202);
			a.child.kill("SIGUSR2");
		} else {
			await post(`${b.url}/v1/sessions/${id}/abort`, {}, 200);
		}
		for (step = await next(); !step.done; step = await next()) {
			const event = step.value;
			const data = event.data as any;
			if (
				(kind === "steer" &&
					event.type === "message_start" &&
					data.message?.role === "user" &&
					JSON.stringify(data.message).includes(steerText)) ||
				(kind === "abort" && event.type === "agent_end")
			) {
				seenAt = performance.now();
				break;
			}
		}
		if (seenAt === 0) throw new Error(`${kind} ${i}: its effect never reached the subscriber on ${c.name}`);
		latencies.push(seenAt - postedAt);
		await events.return(undefined);
		if (kind === "steer") {
			// Let the run end (the echo answers the steering message) before the next try.
			await waitIdle(a.url, id);
		}
	}
	return latencies;
}

async function waitIdle(url: string, id: string): Promise<void> {
	for (let i = 0; i < 500; i++) {
		const res = await fetch(`${url}/v1/sessions/${id}`);
		const session = (await res.json()) as { status?: string };
		if (session.status !== "running") return;
		await new Promise((resolve) => setTimeout(resolve, 10));
	}
	throw new Error(`session ${id} still running`);
}

// --- report ------------------------------------------------------------------------------------------

const fmt = (n: number, digits = 0) =>
	n.toLocaleString("en-US", { maximumFractionDigits: digits, minimumFractionDigits: digits });
const sorted = (values: number[]) => [...values].sort((x, y) => x - y);
const quantile = (values: number[], q: number) =>
	sorted(values)[Math.min(values.length - 1, Math.floor(q * values.length))]!;
const medianRound = (rounds: Round[]) =>
	[...rounds].sort((x, y) => x.eventsPerSec - y.eventsPerSec)[Math.floor(rounds.length / 2)]!;

function printTable(header: string[], rows: string[][]): void {
	const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => r[i]!.length)));
	const line = (cells: string[]) =>
		`| ${cells.map((c, i) => (i === 0 ? c.padEnd(widths[i]!) : c.padStart(widths[i]!))).join(" | ")} |`;
	console.log(line(header));
	console.log(`|${widths.map((w) => "-".repeat(w + 2)).join("|")}|`);
	for (const row of rows) console.log(line(row));
}

async function main(): Promise<void> {
	const loadStart = loadavg()[0]!;
	const topologies = await startTopologies();
	try {
		// Warm-up: JIT of servers and client, pools, prepared statements.
		for (const topology of topologies) await fanOutRound(topology);
		const rounds = new Map<Topology, Round[]>(topologies.map((t) => [t, []]));
		for (let r = 0; r < ROUNDS; r++) {
			const order = r % 2 === 0 ? topologies : [...topologies].reverse();
			for (const topology of order) rounds.get(topology)!.push(await fanOutRound(topology));
		}
		// Control latency on the cluster (or, without it, on the last topology: one node).
		const cluster = topologies.at(-1)!.replicas;
		const control = cluster.length === 3 ? cluster : [cluster[0]!, cluster[0]!, cluster[0]!];
		const steer = await controlLatency(control, "steer");
		const abort = await controlLatency(control, "abort");
		const loadEnd = loadavg()[0]!;

		console.log(
			`bench/cluster — node ${process.version}, ${cpus().length} cores, load average ${fmt(loadStart, 1)} at the start, ${fmt(loadEnd, 1)} at the end; ` +
				`${SESSIONS} sessions x ${TOKENS} tokens, ${ROUNDS} rounds (median round)\n`,
		);
		const sqlite = medianRound(rounds.get(topologies[0]!)!);
		printTable(
			[
				"topology",
				"events/s",
				"vs SQLite one node",
				"server CPU µs/event (all processes)",
				"wall ms",
				"slowest 1st delta ms",
				"events/s range",
			],
			topologies.map((t) => {
				const all = rounds.get(t)!;
				const m = medianRound(all);
				const range = sorted(all.map((x) => x.eventsPerSec));
				return [
					t.name,
					fmt(m.eventsPerSec),
					`${fmt((100 * m.eventsPerSec) / sqlite.eventsPerSec, 1)}%`,
					fmt(m.cpuPerEventUs, 2),
					fmt(m.wallMs, 1),
					fmt(m.slowestFirstDeltaMs, 1),
					`${fmt(range[0]!)}–${fmt(range.at(-1)!)}`,
				];
			}),
		);
		console.log("\nCluster: each session's subscriber is on another replica than its run (every event crosses Redis).");
		console.log(`\nControl across replicas (${CONTROL} tries each; run on A, POST on B, effect seen on C):`);
		printTable(
			["control", "p50 ms", "p99 ms", "max ms"],
			[
				[
					"steer → its message_start (tool released after the 202)",
					fmt(quantile(steer, 0.5), 2),
					fmt(quantile(steer, 0.99), 2),
					fmt(Math.max(...steer), 2),
				],
				["abort → agent_end", fmt(quantile(abort, 0.5), 2), fmt(quantile(abort, 0.99), 2), fmt(Math.max(...abort), 2)],
			],
		);
	} finally {
		for (const topology of topologies) for (const replica of topology.replicas) await replica.stop();
		await dropSchemas().catch((error) => console.error(`dropping the bench schemas: ${error}`));
		rmSync(dataDir, { recursive: true, force: true });
	}
}

await main();
