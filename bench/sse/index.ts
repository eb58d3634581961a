/**
 * bench/sse: Wheelhouse's SSE fan-out against a raw node:http SSE writer, in one run.
 *
 *   npx tsx bench/sse/index.ts [--quick] [--metrics-only]   (BENCH_SSE_REPEATS=3, or 1 with --quick; BENCH_SSE_SESSIONS=100)
 *   npx tsx bench/sse/index.ts --compare <git ref> [--quick]   (BENCH_SSE_COMPARE_PAIRS=30, or 6 with --quick)
 *   npx tsx bench/sse/index.ts --tracing [--quick]   (BENCH_SSE_TRACING_PAIRS=32 rounds, or 8 with --quick)
 *   BENCH_SSE_TOKENS=1000: the concurrent sessions' answer length (default 200); OTEL_TRACES_SAMPLER
 *   and OTEL_TRACES_SAMPLER_ARG reach the tracing servers' SDK, as they would a deployed server's
 *   npx tsx bench/sse/index.ts --postgres-only [--quick]   (BENCH_PG_URL; BENCH_SSE_STORE_PAIRS)
 *
 * Three processes on loopback: this orchestrator, the server under test (server-process.ts: the
 * real server from buildApp with the faux/echo model at 0 ms delay — memory store, then SQLite —
 * or the raw writer), and the measuring client (client.ts). The raw writer replays the frames the
 * real server sent for the same prompt, byte for byte, one write per event: same events, same
 * bytes, no framework, no agent — the limit.
 *
 * Measured: events/s and bytes per text delta for one stream of 10,000 deltas and for 100
 * concurrent sessions of 200-token answers; wire bytes for 200 / 2,000 / 10,000-token answers;
 * with 100 concurrent sessions the slowest session's first delta against the wall time; server
 * RSS after 100 sessions; and the time from a `steer` POST during a running tool to the steering
 * message's `message_start` after the batch. Each throughput figure is the median of the repeats.
 * The price of persistence (SQLite store against memory store) is measured on its own, with both
 * servers up side by side and each repeat run on both back to back in alternating order
 * (`BENCH_SSE_STORE_PAIRS` pairs, default 30): the median of the per-pair ratios, so that load
 * drift on a shared machine cancels out instead of landing on one store. The cost of Prometheus
 * metrics is measured the same way: metrics off against metrics on, memory store
 * (`BENCH_SSE_METRICS_PAIRS`, default 30; `--metrics-only` runs only these pairs).
 * Also: server CPU per event (steadier than events/s on a loaded machine), fairness at a real
 * model's pace (10 ms per token), and the in-process floor of the agent pipeline itself
 * (`pipeline-floor.ts`).
 *
 * `--tracing` measures observability at full use: a server with Prometheus metrics and OpenTelemetry
 * tracing on (spans exported over OTLP/HTTP protobuf to a stand-in collector in a process of its own,
 * otlp-receiver.ts) against one with both off, memory store; in the same rounds, tracing alone and a
 * second server with both off (the A/A noise floor). Four servers up side by side, each round runs
 * the job on all four in a balanced order (each server first, and after each other server, once
 * every four rounds), and each figure is the median of the per-round ratios to
 * the first server; only these rounds run. The rounds are split over several sets of server
 * processes, each set started afresh in a rotated order, so that no variant keeps one process's
 * luck for the whole run.
 *
 * `--compare <ref>` measures a change instead: the server of commit `<ref>` (extracted with
 * `git archive` into a temporary folder that shares this checkout's node_modules) against this
 * tree's, for each store, in interleaved pairs as above; only those pairs run.
 *
 * `--postgres-only` measures the PostgreSQL store against the SQLite store the same way (SQLite the
 * base, PostgreSQL at `BENCH_PG_URL` in a schema of its own, dropped afterwards); only those pairs run.
 */
import { type ChildProcess, execFileSync, fork } from "node:child_process";
import { once } from "node:events";
import { mkdirSync, mkdtempSync, rmSync, symlinkSync } from "node:fs";
import { cpus, loadavg, tmpdir } from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { streamEvents } from "../../src/client/stream-events.js";
import type { ClientJob, ClientResult, StreamRequest } from "./client.js";
import { createSessions, deleteSessions, pinToCpu, promptRequest, words } from "./harness.js";
import type { ReceiverReply } from "./otlp-receiver.js";
import { pipelineFloorUsPerEvent } from "./pipeline-floor.js";
import type { ServerReply, ServerStart } from "./server-process.js";

const here = path.dirname(fileURLToPath(import.meta.url));
const REPEATS = Number(process.env.BENCH_SSE_REPEATS ?? (process.argv.includes("--quick") ? 1 : 3));
const SESSIONS = Number(process.env.BENCH_SSE_SESSIONS ?? 100);
/** The paced fairness run's delay between tokens (10 ms ≈ 100 tokens/s, a fast real model). */
const PACED_DELAY_MS = Number(process.env.BENCH_SSE_PACED_DELAY_MS ?? 10);
/**
 * Interleaved memory/SQLite pairs for the persistence cost (BENCH_SSE_STORE_PAIRS; 6 with --quick). One
 * 100-session round is short, so single pairs swing widely on a shared machine (results.md): 30 pairs.
 */
const STORE_PAIRS = Number(process.env.BENCH_SSE_STORE_PAIRS ?? (process.argv.includes("--quick") ? 6 : 30));
/** Interleaved metrics off/on pairs for the cost of metrics (BENCH_SSE_METRICS_PAIRS; 6 with --quick). */
const METRICS_PAIRS = Number(process.env.BENCH_SSE_METRICS_PAIRS ?? (process.argv.includes("--quick") ? 6 : 30));
/** `--metrics-only`: run only the metrics off/on pairs. */
const METRICS_ONLY = process.argv.includes("--metrics-only");
/** `--compare <ref>`: run only the pairs of that commit's server against this tree's. */
const COMPARE_REF = process.argv.includes("--compare")
	? process.argv[process.argv.indexOf("--compare") + 1]
	: undefined;
/** Interleaved before/after pairs per store and job for `--compare` (BENCH_SSE_COMPARE_PAIRS; 6 with --quick). */
const COMPARE_PAIRS = Number(
	process.env.BENCH_SSE_COMPARE_PAIRS ?? (process.argv.includes("--quick") ? 6 : STORE_PAIRS),
);
/** `--tracing`: run only the pairs of metrics and tracing on against both off. */
const TRACING_ONLY = process.argv.includes("--tracing");
/** Rounds of `--tracing` (BENCH_SSE_TRACING_PAIRS; 6 with --quick). */
const TRACING_PAIRS = Number(process.env.BENCH_SSE_TRACING_PAIRS ?? (process.argv.includes("--quick") ? 8 : 32));
/** Turns of the job each server runs after it starts, before its measured rounds (BENCH_SSE_WARMUP_TURNS). */
const WARMUP_TURNS = Number(process.env.BENCH_SSE_WARMUP_TURNS ?? 3);
/**
 * Sets of server processes the `--tracing` rounds are split over (BENCH_SSE_TRACING_GENERATIONS; 2
 * with --quick), each started afresh in a rotated order: one process can run several percent
 * slower than its identical twin for its whole life, whichever variant it serves.
 */
const TRACING_GENERATIONS = Number(
	process.env.BENCH_SSE_TRACING_GENERATIONS ?? (process.argv.includes("--quick") ? 2 : 4),
);
/**
 * Jobs back to back per server and round in `--tracing` (BENCH_SSE_TRACING_JOBS; 1 with --quick):
 * one 100-session job lasts ~150 ms, short enough for a scheduler hiccup to swing its figure by
 * half, so a round's figure is that of several jobs together.
 */
const TRACING_JOBS = Number(process.env.BENCH_SSE_TRACING_JOBS ?? (process.argv.includes("--quick") ? 1 : 4));
/** `--postgres-only`: run only the SQLite/PostgreSQL store pairs. */
const POSTGRES_ONLY = process.argv.includes("--postgres-only");
const PG_URL = process.env.BENCH_PG_URL ?? "postgres://postgres@127.0.0.1:5432/test";
/** The checkout this file is in. */
const REPO = path.resolve(here, "..", "..");
const SIZES = [200, 2_000, 10_000];
const LONG = 10_000;
/** The answer length of the concurrent sessions (BENCH_SSE_TOKENS, default 200). */
const SHORT = Number(process.env.BENCH_SSE_TOKENS ?? 200);

// --- child processes -------------------------------------------------------------------------

/** BENCH_SSE_CPU_PROF=<dir>: write a V8 CPU profile of each server child there (for finding hot spots). */
const CPU_PROF = process.env.BENCH_SSE_CPU_PROF;

/** Forks `file` of bench/sse, from the checkout at `root` (this one by default). */
function forkTs(file: string, profile = false, root = REPO): ChildProcess {
	return fork(path.join(root, "bench", "sse", file), [], {
		execArgv: ["--import", "tsx", ...(profile && CPU_PROF ? ["--cpu-prof", `--cpu-prof-dir=${CPU_PROF}`] : [])],
		stdio: ["ignore", "inherit", "inherit", "ipc"],
	});
}

export class ServerChild {
	private constructor(
		private readonly child: ChildProcess,
		readonly url: string,
	) {}

	/** Starts the server of the checkout at `root` (this one by default). */
	static async start(start: ServerStart, root?: string): Promise<ServerChild> {
		const child = forkTs("server-process.ts", true, root);
		child.send(start);
		const [reply] = (await once(child, "message")) as [ServerReply];
		if (reply.type !== "ready") throw new Error(`server child failed: ${JSON.stringify(reply)}`);
		return new ServerChild(child, reply.url);
	}

	/** Sends a command and waits for the reply of that type. */
	async ask<T extends ServerReply["type"]>(command: object, type: T): Promise<Extract<ServerReply, { type: T }>> {
		const reply = this.next(type);
		this.child.send(command);
		return reply;
	}

	next<T extends ServerReply["type"]>(type: T): Promise<Extract<ServerReply, { type: T }>> {
		return new Promise((resolve) => {
			const onMessage = (message: ServerReply) => {
				if (message.type !== type) return;
				this.child.off("message", onMessage);
				resolve(message as Extract<ServerReply, { type: T }>);
			};
			this.child.on("message", onMessage);
		});
	}

	send(command: object): void {
		this.child.send(command);
	}

	get pid(): number {
		return this.child.pid!;
	}

	/** The server's process CPU time so far, µs. */
	async cpu(): Promise<number> {
		return (await this.ask({ type: "cpu" }, "cpu")).micros;
	}

	/** Exports the spans the server has ended so far; throws when the export failed. */
	async flush(): Promise<void> {
		const { error } = await this.ask({ type: "flush" }, "flushed");
		if (error) throw new Error(`span export failed: ${error}`);
	}

	async stop(): Promise<void> {
		if (this.child.exitCode !== null || this.child.signalCode !== null) return;
		const exited = once(this.child, "exit");
		this.child.kill("SIGTERM");
		await exited;
	}
}

/** One client process for the whole run, so its code is warm (JIT) for every measured job. */
let clientChild: ChildProcess | undefined;

/** Ends the client process (at the end of a run). */
export function stopClient(): void {
	clientChild?.kill();
	clientChild = undefined;
}

function client(): ChildProcess {
	if (!clientChild) {
		clientChild = forkTs("client.ts");
		clientChild.unref();
		(clientChild as unknown as { channel?: { unref(): void } }).channel?.unref();
	}
	return clientChild;
}

export async function runClient(job: ClientJob): Promise<ClientResult> {
	const clientChild = client();
	clientChild.send(job);
	const [result] = (await once(clientChild, "message")) as [ClientResult];
	if (result.error) throw new Error(`client: ${result.error}`);
	for (const s of result.streams) if (s.status !== 200) throw new Error(`client: HTTP ${s.status}`);
	return result;
}

// --- the real server's requests ----------------------------------------------------------------

// --- measurements ------------------------------------------------------------------------------

interface Figures {
	events: number;
	eventsPerSec: number;
	bytesPerDelta: number;
	bytes: number;
	deltas: number;
	wallMs: number;
	slowestFirstDeltaMs?: number;
	medianFirstDeltaMs?: number;
	/** Server process CPU time per event (user + system), µs: steadier than events/s on a loaded machine. */
	serverCpuPerEventUs?: number;
}

function figures(result: ClientResult): Figures {
	let events = 0;
	let bytes = 0;
	let deltas = 0;
	for (const s of result.streams) {
		events += s.events;
		bytes += s.bytes;
		deltas += s.textDeltas;
	}
	return {
		events,
		eventsPerSec: events / (result.wallMs / 1000),
		bytesPerDelta: bytes / deltas,
		bytes,
		deltas,
		wallMs: result.wallMs,
		slowestFirstDeltaMs: Math.max(...result.streams.map((s) => s.firstDeltaMs)),
		medianFirstDeltaMs: med(result.streams.map((s) => s.firstDeltaMs)),
	};
}

function median(values: Figures[]): Figures {
	const sorted = [...values].sort((a, b) => a.eventsPerSec - b.eventsPerSec);
	return sorted[Math.floor(sorted.length / 2)];
}

type Jobs = (repeat: number) => Promise<ClientJob>;

/** Runs `job` and returns its figures with the server's CPU time per event. */
async function runMeasured(server: ServerChild, job: ClientJob): Promise<Figures> {
	const before = await server.cpu();
	const result = figures(await runClient(job));
	const after = await server.cpu();
	return { ...result, serverCpuPerEventUs: (after - before) / result.events };
}

/** The sessions a job's requests prompt. */
function sessionsOf(job: ClientJob): string[] {
	return job.requests.map((request) => {
		const match = /\/v1\/sessions\/([^/]+)\/prompt$/.exec(request.url);
		if (!match) throw new Error(`bench: not a prompt request: ${request.url}`);
		return match[1];
	});
}

/** Waits until `server` is quiet: its CPU time grows by less than 5% of the clock over 50 ms (at most 3 s). */
async function untilQuiet(server: ServerChild): Promise<void> {
	let last = await server.cpu();
	for (const deadline = Date.now() + 3_000; Date.now() < deadline; ) {
		await new Promise((resolve) => setTimeout(resolve, 50));
		const now = await server.cpu();
		if (now - last < 2_500) return;
		last = now;
	}
}

/**
 * One server's turn in {@link benchRounds}: `times` jobs back to back as one measurement (events,
 * bytes, wall and server CPU added up), holding the work the server defers for those jobs and none
 * of another turn's:
 * - the jobs are made first (their sessions created), outside the measurement, as in
 *   {@link runMeasured}, and the spans of that are exported before it starts;
 * - the measurement ends when the spans of its jobs are exported: the flush, which is what the
 *   batch span processor would do on its own a few seconds later, is counted with the jobs;
 * - then the jobs' sessions are deleted, so the server holds as many sessions in every round (a
 *   heap that grew round after round would make each collection dearer than the last), and the
 *   turn ends when the server is quiet: what it still does cannot land in the next server's turn.
 */
async function runMeasuredTimes(server: ServerChild, job: () => Promise<ClientJob>, times: number): Promise<Figures> {
	const jobs: ClientJob[] = [];
	for (let i = 0; i < times; i++) jobs.push(await job());
	await server.flush();
	await untilQuiet(server);
	const before = await server.cpu();
	let events = 0;
	let bytes = 0;
	let deltas = 0;
	let wallMs = 0;
	for (const prepared of jobs) {
		const f = figures(await runClient(prepared));
		events += f.events;
		bytes += f.bytes;
		deltas += f.deltas;
		wallMs += f.wallMs;
	}
	// The export of the jobs' spans: its CPU time is added to the wall time, as the batch span
	// processor would have taken that time from the streams had it exported during them (the server
	// is the bottleneck); its wait for the collector's answer is not.
	const beforeFlush = await server.cpu();
	await server.flush();
	const after = await server.cpu();
	wallMs += (after - beforeFlush) / 1000;
	await deleteSessions(server.url, jobs.flatMap(sessionsOf));
	await server.flush();
	await untilQuiet(server);
	return {
		events,
		eventsPerSec: events / (wallMs / 1000),
		bytes,
		deltas,
		bytesPerDelta: bytes / deltas,
		wallMs,
		serverCpuPerEventUs: (after - before) / events,
	};
}

async function measure(server: ServerChild, jobs: Jobs): Promise<Figures> {
	const runs: Figures[] = [];
	await runClient(await jobs(-1)); // warm-up: JIT of server and client, connection setup paths
	for (let r = 0; r < REPEATS; r++) runs.push(await runMeasured(server, await jobs(r)));
	return median(runs);
}

interface ServerRun {
	single: Figures;
	concurrent: Figures;
	sizes: Map<number, number>;
	rssMb: number;
	rssIdleMb: number;
	recorded: Map<string, string>;
}

/**
 * RSS of a fresh server process: idle after start, and after serving exactly one round of
 * SESSIONS concurrent sessions (the sessions stay in memory, as on a real server).
 */
async function measureRss(start: ServerStart, requests: (url: string) => Promise<StreamRequest[]>) {
	const server = await ServerChild.start(start);
	try {
		const idle = await server.ask({ type: "rss" }, "rss");
		await runClient({ requests: await requests(server.url) });
		const after = await server.ask({ type: "rss" }, "rss");
		return { rssIdleMb: idle.rss / 1024 / 1024, rssMb: after.rss / 1024 / 1024 };
	} finally {
		await server.stop();
	}
}

async function benchWheelhouse(store: "memory" | "sqlite", dbDir: string): Promise<ServerRun> {
	const server = await ServerChild.start({
		kind: "wheelhouse",
		store,
		dbPath: path.join(dbDir, `${store}.db`),
	});
	try {
		const url = server.url;
		// Warm-up and recording (for the raw writer): one prompt per size, one 200-token for the fan-out.
		const recorded = new Map<string, string>();
		const sizes = new Map<number, number>();
		for (const size of SIZES) {
			const [id] = await createSessions(url, 1);
			const result = await runClient({ requests: [promptRequest(url, id, words(size))], record: true });
			recorded.set(`tokens-${size}`, result.recorded!);
			sizes.set(size, result.streams[0].bytes);
		}
		const single = await measure(server, async () => {
			const [id] = await createSessions(url, 1);
			return { requests: [promptRequest(url, id, words(LONG))] };
		});
		const concurrent = await measure(server, async () => {
			const ids = await createSessions(url, SESSIONS);
			return { requests: ids.map((id) => promptRequest(url, id, words(SHORT))) };
		});
		await server.stop();
		const rss = await measureRss(
			{ kind: "wheelhouse", store, dbPath: path.join(dbDir, `${store}-rss.db`) },
			async (url) => (await createSessions(url, SESSIONS)).map((id) => promptRequest(url, id, words(SHORT))),
		);
		return { single, concurrent, sizes, ...rss, recorded };
	} finally {
		await server.stop();
	}
}

async function benchRaw(recorded: Map<string, string>): Promise<ServerRun> {
	const server = await ServerChild.start({ kind: "raw", streams: Object.fromEntries(recorded) });
	try {
		const url = server.url;
		const get = (name: string): StreamRequest => ({ method: "GET", url: `${url}/raw/${name}` });
		const sizes = new Map<number, number>();
		for (const size of SIZES) {
			const result = await runClient({ requests: [get(`tokens-${size}`)] });
			sizes.set(size, result.streams[0].bytes);
		}
		const single = await measure(server, async () => ({ requests: [get(`tokens-${LONG}`)] }));
		const concurrent = await measure(server, async () => ({
			requests: Array.from({ length: SESSIONS }, () => get(`tokens-${SHORT}`)),
		}));
		await server.stop();
		const rss = await measureRss({ kind: "raw", streams: Object.fromEntries(recorded) }, async (rawUrl) =>
			Array.from({ length: SESSIONS }, () => ({ method: "GET" as const, url: `${rawUrl}/raw/tokens-${SHORT}` })),
		);
		return { single, concurrent, sizes, ...rss, recorded };
	} finally {
		await server.stop();
	}
}

interface Pairs {
	/** Per pair: the variant's events/s as a fraction of the base's, and the base's CPU/event over the variant's. */
	eventsRatio: number[];
	cpuRatio: number[];
	base: Figures[];
	variant: Figures[];
}

/**
 * The price of a feature (persistence, metrics), measured so that load drift on a shared machine
 * cancels out: a base server and a variant server run side by side, and each repeat runs the same
 * job on both back to back, in alternating order; the figure is the median of the per-pair ratios.
 */
async function benchPairs(
	baseStart: ServerStart,
	variantStart: ServerStart,
	pairs: number,
	jobs: (url: string) => Promise<ClientJob>,
	baseRoot?: string,
): Promise<Pairs> {
	const base = await ServerChild.start(baseStart, baseRoot);
	const variant = await ServerChild.start(variantStart);
	try {
		const once = async (server: ServerChild) => runMeasured(server, await jobs(server.url));
		await once(base); // warm-up
		await once(variant);
		const out: Pairs = { eventsRatio: [], cpuRatio: [], base: [], variant: [] };
		for (let r = 0; r < pairs; r++) {
			let b: Figures;
			let v: Figures;
			if (r % 2 === 0) {
				b = await once(base);
				v = await once(variant);
			} else {
				v = await once(variant);
				b = await once(base);
			}
			out.base.push(b);
			out.variant.push(v);
			out.eventsRatio.push(v.eventsPerSec / b.eventsPerSec);
			out.cpuRatio.push(b.serverCpuPerEventUs! / v.serverCpuPerEventUs!);
		}
		return out;
	} finally {
		await base.stop();
		await variant.stop();
	}
}

/** Memory store against SQLite store, both with the default config. */
function benchStores(dbDir: string, jobs: (url: string) => Promise<ClientJob>): Promise<Pairs> {
	return benchPairs(
		{ kind: "wheelhouse", store: "memory" },
		{ kind: "wheelhouse", store: "sqlite", dbPath: path.join(dbDir, "pairs.db") },
		STORE_PAIRS,
		jobs,
	);
}

/**
 * Metrics off against metrics on (memory store, so that only the metrics differ). With
 * BENCH_SSE_METRICS_AA=1 both servers have metrics off: the spread of that A/A run is the noise
 * floor of the machine at the time.
 */
function benchMetrics(jobs: (url: string) => Promise<ClientJob>): Promise<Pairs> {
	return benchPairs(
		{ kind: "wheelhouse", store: "memory", metrics: "off" },
		{ kind: "wheelhouse", store: "memory", metrics: process.env.BENCH_SSE_METRICS_AA === "1" ? "off" : "on" },
		METRICS_PAIRS,
		jobs,
	);
}

/**
 * Fairness at a realistic pace: SESSIONS concurrent sessions whose model streams one token every
 * PACED_DELAY_MS (a fast real model; at 0 ms the wall time is mostly connection setup, so the
 * ratio says little). A server that serves sessions one after another would give the last one its
 * first delta near the end of the wall time; an interleaving one, near the start.
 */
async function benchPaced(): Promise<Figures> {
	const server = await ServerChild.start({ kind: "wheelhouse", store: "memory", fauxDelayMs: PACED_DELAY_MS });
	try {
		const ids = await createSessions(server.url, SESSIONS);
		return figures(await runClient({ requests: ids.map((id) => promptRequest(server.url, id, words(SHORT))) }));
	} finally {
		await server.stop();
	}
}

/** Time from a `steer` POST during a running tool to the steering message's `message_start`. */
async function benchSteer(): Promise<{ postToStartMs: number[]; batchEndToStartMs: number[] }> {
	const server = await ServerChild.start({ kind: "wheelhouse", store: "memory" });
	const postToStartMs: number[] = [];
	const batchEndToStartMs: number[] = [];
	try {
		for (let r = 0; r < Math.max(REPEATS, 5); r++) {
			const [id] = await createSessions(server.url, 1);
			const steerText = `steer now ${r}`;
			let postedAt = 0;
			let batchEndAt = 0;
			const toolStarted = server.next("tool_started");
			const stream = streamEvents({
				url: `${server.url}/v1/sessions/${id}/prompt`,
				init: {
					method: "POST",
					headers: { "content-type": "application/json" },
					body: JSON.stringify({ message: "/tool bench_wait {}" }),
				},
				resumeUrl: `${server.url}/v1/sessions/${id}/events`,
				until: (e) => e.type === "agent_end",
			});
			const steer = toolStarted.then(async () => {
				postedAt = performance.now();
				const res = await fetch(`${server.url}/v1/sessions/${id}/steer`, {
					method: "POST",
					headers: { "content-type": "application/json" },
					body: JSON.stringify({ message: steerText }),
				});
				if (res.status !== 202) throw new Error(`steer: ${res.status} ${await res.text()}`);
				// The tool ends only now, so the steering message is certainly queued during it.
				server.send({ type: "release" });
			});
			for await (const event of stream) {
				const data = event.data as any;
				if (event.type === "tool_execution_end") batchEndAt = performance.now();
				if (
					event.type === "message_start" &&
					data.message?.role === "user" &&
					JSON.stringify(data.message).includes(steerText)
				) {
					const now = performance.now();
					postToStartMs.push(now - postedAt);
					batchEndToStartMs.push(now - batchEndAt);
				}
			}
			await steer;
		}
	} finally {
		await server.stop();
	}
	return { postToStartMs, batchEndToStartMs };
}

// --- report ------------------------------------------------------------------------------------

const fmt = (n: number, digits = 0) =>
	n.toLocaleString("en-US", { maximumFractionDigits: digits, minimumFractionDigits: digits });
const pct = (a: number, b: number) => `${fmt((100 * a) / b, 1)}%`;
const med = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)];

function printTable(title: string, header: string[], rows: string[][]): void {
	const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => r[i].length)));
	const line = (cells: string[]) =>
		`| ${cells.map((c, i) => (i === 0 ? c.padEnd(widths[i]) : c.padStart(widths[i]))).join(" | ")} |`;
	console.log(`\n${title}`);
	console.log(line(header));
	console.log(`|${widths.map((w) => "-".repeat(w + 2)).join("|")}|`);
	for (const row of rows) console.log(line(row));
}

/** Bytes a naive server would send: the full partial message in every message_update (quadratic). */
function naiveBytes(tokens: number): number {
	let text = "";
	let total = 0;
	for (let i = 0; i < tokens; i++) {
		text += `w${i} `;
		total += 150 + 2 * JSON.stringify(text).length; // `message` and `assistantMessageEvent.partial`
	}
	return total;
}

/** The pair runs' jobs: SESSIONS concurrent sessions of SHORT-token answers, and one stream of LONG deltas. */
async function concurrentJob(url: string): Promise<ClientJob> {
	return { requests: (await createSessions(url, SESSIONS)).map((id) => promptRequest(url, id, words(SHORT))) };
}
async function singleJob(url: string): Promise<ClientJob> {
	return { requests: [promptRequest(url, (await createSessions(url, 1))[0], words(LONG))] };
}

/** Prints the pair figures of one comparison (both jobs). */
function printPairs(
	title: string,
	names: [base: string, variant: string],
	pairs: number,
	runs: { concurrent: Pairs; single: Pairs },
): void {
	const range = (values: number[]) =>
		`median ${pct(med(values), 1)} (${pct(Math.min(...values), 1)}–${pct(Math.max(...values), 1)})`;
	const [baseName, variantName] = names;
	const line = (name: string, p: Pairs) => {
		const baseEvents = med(p.base.map((f) => f.eventsPerSec));
		const variantEvents = med(p.variant.map((f) => f.eventsPerSec));
		const baseCpu = med(p.base.map((f) => f.serverCpuPerEventUs!));
		const variantCpu = med(p.variant.map((f) => f.serverCpuPerEventUs!));
		return (
			`  ${name}: events/s per pair ${range(p.eventsRatio)}, ratio of the medians ${pct(variantEvents, baseEvents)}; ` +
			`server CPU per event (${baseName} / ${variantName}) per pair ${range(p.cpuRatio)}, ratio of the medians ${pct(baseCpu, variantCpu)}; ` +
			`${baseName} ${fmt(baseEvents)} events/s at ${fmt(baseCpu, 2)} µs, ${variantName} ${fmt(variantEvents)} events/s at ${fmt(variantCpu, 2)} µs`
		);
	};
	console.log(
		`\n${title} (${pairs} interleaved pairs, both servers up side by side; the ratio of each pair, median and range):`,
	);
	console.log(line(`${SESSIONS} sessions x ${SHORT} tokens`, runs.concurrent));
	console.log(line(`one stream of ${fmt(LONG)} deltas`, runs.single));
}

/** The cost of metrics: off/on pairs for both jobs. */
async function metricsPairs(): Promise<{ concurrent: Pairs; single: Pairs }> {
	return { concurrent: await benchMetrics(concurrentJob), single: await benchMetrics(singleJob) };
}

/** `--metrics-only`: the metrics pairs alone, with their goal. */
async function mainMetricsOnly(): Promise<void> {
	console.log(
		`bench/sse --metrics-only — node ${process.version}, ${cpus().length} cores, load average ${loadavg()[0].toFixed(1)}, ` +
			`${SESSIONS} sessions`,
	);
	try {
		const pairs = await metricsPairs();
		printPairs("Metrics on vs off, memory store", ["off", "on"], METRICS_PAIRS, pairs);
		console.log(`\nload average at the end: ${loadavg()[0].toFixed(1)}`);
		console.log("\nGoals:");
		for (const [name, p] of [
			[`${SESSIONS} sessions`, pairs.concurrent],
			["one stream", pairs.single],
		] as const) {
			const ok = med(p.eventsRatio) >= 0.95;
			console.log(`  ${ok ? "met    " : "NOT met"}  metrics on ≥ 0.95x events/s of off (${name}, median pair)`);
		}
	} finally {
		clientChild?.kill();
	}
}

/** The checkout of `ref` in a temporary folder, with this checkout's node_modules; returns its path. */
export function checkoutOf(ref: string, into: string, name = "base"): string {
	const root = path.join(into, name);
	mkdirSync(root);
	execFileSync("sh", ["-c", `git -C "$0" archive "$1" | tar -x -C "$2"`, REPO, ref, root]);
	symlinkSync(path.join(REPO, "node_modules"), path.join(root, "node_modules"));
	return root;
}

/** `--compare <ref>`: that commit's server against this tree's, per store, with the goal (≥ 0.95x). */
async function mainCompare(ref: string): Promise<void> {
	const dir = mkdtempSync(path.join(tmpdir(), "wheelhouse-bench-compare-"));
	const commit = execFileSync("git", ["-C", REPO, "rev-parse", "--short", ref], { encoding: "utf8" }).trim();
	const head = execFileSync("git", ["-C", REPO, "rev-parse", "--short", "HEAD"], { encoding: "utf8" }).trim();
	try {
		const baseRoot = checkoutOf(ref, dir);
		console.log(
			`bench/sse --compare ${ref} (${commit}, before) against this tree (HEAD ${head} and its changes, after) — ` +
				`node ${process.version}, ${cpus().length} cores, load average ${loadavg()[0].toFixed(1)}, ${SESSIONS} sessions`,
		);
		const results: [string, { concurrent: Pairs; single: Pairs }][] = [];
		for (const store of ["memory", "sqlite"] as const) {
			const start = (name: string): ServerStart => ({
				kind: "wheelhouse",
				store,
				dbPath: path.join(dir, `${store}-${name}.db`),
			});
			const pairs = {
				concurrent: await benchPairs(start("before"), start("after"), COMPARE_PAIRS, concurrentJob, baseRoot),
				single: await benchPairs(start("before-1"), start("after-1"), COMPARE_PAIRS, singleJob, baseRoot),
			};
			results.push([store, pairs]);
			printPairs(
				`${store === "memory" ? "Memory" : "SQLite"} store, after vs before`,
				["before", "after"],
				COMPARE_PAIRS,
				pairs,
			);
		}
		console.log(`\nload average at the end: ${loadavg()[0].toFixed(1)}`);
		console.log("\nGoals (median pair):");
		for (const [store, pairs] of results) {
			for (const [job, p] of [
				[`${SESSIONS} sessions`, pairs.concurrent],
				["one stream", pairs.single],
			] as const) {
				const events = med(p.eventsRatio) >= 0.95;
				const cpu = med(p.cpuRatio) >= 0.95;
				console.log(`  ${events ? "met    " : "NOT met"}  ${store}, ${job}: events/s after ≥ 0.95x before`);
				console.log(`  ${cpu ? "met    " : "NOT met"}  ${store}, ${job}: server CPU per event after ≤ before / 0.95`);
			}
		}
	} finally {
		clientChild?.kill();
		rmSync(dir, { recursive: true, force: true });
	}
}

/** The stand-in collector of `--tracing`, in its own process. */
async function startReceiver(): Promise<{
	url: string;
	pid: number;
	count(): Promise<ReceiverReply>;
	stop(): void;
}> {
	const child = forkTs("otlp-receiver.ts");
	const [ready] = (await once(child, "message")) as [ReceiverReply];
	if (ready.type !== "ready") throw new Error(`receiver failed: ${JSON.stringify(ready)}`);
	return {
		url: ready.url,
		pid: child.pid!,
		async count() {
			child.send({ type: "count" });
			const [reply] = (await once(child, "message")) as [ReceiverReply];
			return reply;
		},
		stop: () => child.kill(),
	};
}

/**
 * The order of the servers in round `round`: a Williams design for an even number `n` of servers,
 * whose rows, taken in turn, put each server first, and right after each other server, once every
 * `n` rounds. What one server's turn leaves behind (a collection, a flush) then falls on each of the
 * others alike, where a plain rotation would always hand it to the same next server.
 */
export function roundOrder(round: number, n: number): number[] {
	// The first row 0, 1, n-1, 2, n-2, ...; every other row adds the row number to it (mod n).
	const first = [0];
	for (let i = 1, lo = 1, hi = n - 1; i < n; i++) first.push(i % 2 === 1 ? lo++ : hi--);
	const shift = round % n;
	return first.map((server) => (server + shift) % n);
}

/**
 * Servers measured in rounds, for comparisons of more than two: each round runs the same job on
 * every server, in the order of {@link roundOrder}. Returns each server's figures, round by round.
 */
async function benchRounds(
	starts: ServerStart[],
	rounds: number,
	jobs: (url: string) => Promise<ClientJob>,
	jobsPerRound = 1,
	pinned = false,
	generations = 1,
): Promise<{ rounds: Figures[][]; wholeCpuPerEventUs: number[] }> {
	const out: Figures[][] = starts.map(() => []);
	const cpuUs = starts.map(() => 0);
	let round = 0;
	for (let g = 0; g < generations; g++) {
		// Each generation starts its own processes, in an order rotated by one from the last: a server
		// process that is slower for its whole life (where it landed in memory, when it was started)
		// then weighs on every variant alike.
		const order = starts.map((_, k) => (g + k) % starts.length);
		const servers: ServerChild[] = [];
		try {
			for (const i of order) servers[i] = await ServerChild.start(starts[i]);
			if (pinned) for (const server of servers) pinToCpu(server.pid, 0);
			const once = (server: ServerChild) => runMeasuredTimes(server, () => jobs(server.url), jobsPerRound);
			// Warm-up: the JIT's optimized code, and a heap grown to its working size (a young process
			// collects more often until it is).
			for (let w = 0; w < WARMUP_TURNS; w++) for (const server of servers) await once(server);
			// Each server's CPU over all its rounds, whenever it was spent: work a server defers (a span
			// export, a collection) may fall outside its own measured windows, but not outside these.
			const cpuBefore = await Promise.all(servers.map((s) => s.cpu()));
			const end = Math.round((rounds * (g + 1)) / generations);
			for (; round < end; round++) {
				for (const i of roundOrder(round, servers.length)) out[i].push(await once(servers[i]));
			}
			const cpuAfter = await Promise.all(servers.map((s) => s.cpu()));
			servers.forEach((_, i) => {
				cpuUs[i] += cpuAfter[i] - cpuBefore[i];
			});
		} finally {
			for (const server of servers) await server?.stop();
		}
	}
	const wholeCpuPerEventUs = cpuUs.map((cpu, i) => cpu / out[i].reduce((sum, f) => sum + f.events, 0));
	return { rounds: out, wholeCpuPerEventUs };
}

/** The round-by-round ratios of `variant` to `base` (both from {@link benchRounds}). */
function pairsOf(base: Figures[], variant: Figures[]): Pairs {
	return {
		base,
		variant,
		eventsRatio: base.map((b, i) => variant[i].eventsPerSec / b.eventsPerSec),
		cpuRatio: base.map((b, i) => b.serverCpuPerEventUs! / variant[i].serverCpuPerEventUs!),
	};
}

/**
 * `--tracing`: metrics and tracing on (spans exported to a local collector) against both off, with
 * the goal; in the same rounds, tracing alone, and a second server with both off whose ratio to the
 * first is the noise floor of the machine at the time (an A/A comparison).
 */
async function mainTracing(): Promise<void> {
	const receiver = await startReceiver();
	try {
		// The servers on CPU 0, everything else (this process, the client, the collector) on CPU 1.
		// Left to the scheduler, whichever server was started first spent more CPU per event than its
		// identical twin in every run (bench/sse/results.md), and every comparison is made against
		// the first server.
		const pinned = [process.pid, client().pid!, receiver.pid].every((pid) => pinToCpu(pid, 1));
		const off: ServerStart = { kind: "wheelhouse", store: "memory", metrics: "off" };
		const variants: [string, ServerStart][] = [
			["off again (A/A)", off],
			["tracing", { ...off, otlpEndpoint: receiver.url }],
			["metrics+tracing", { ...off, metrics: "on", otlpEndpoint: receiver.url }],
		];
		console.log(
			`bench/sse --tracing — node ${process.version}, ${cpus().length} cores, ` +
				`load average ${loadavg()[0].toFixed(1)}, ${SESSIONS} sessions, ${TRACING_PAIRS} rounds of ${variants.length + 1} servers, ` +
				`over ${TRACING_GENERATIONS} sets of server processes started in rotated order, ${WARMUP_TURNS} warm-up turns each`,
		);
		const starts = [off, ...variants.map(([, start]) => start)];
		console.log(
			`each round: ${TRACING_JOBS} jobs back to back per server (${SESSIONS} sessions x ${SHORT} tokens), one job (one stream)`,
		);
		console.log(
			pinned
				? "the servers run on CPU 0; this process, the client and the collector on CPU 1"
				: "processes not bound to CPUs (taskset missing, one CPU, or BENCH_SSE_PIN=0)",
		);
		const sampler = process.env.OTEL_TRACES_SAMPLER;
		console.log(
			sampler
				? `tracing servers sample: OTEL_TRACES_SAMPLER=${sampler} OTEL_TRACES_SAMPLER_ARG=${process.env.OTEL_TRACES_SAMPLER_ARG ?? ""}`
				: "tracing servers keep every span (the SDK's default sampler)",
		);
		const concurrentRun = await benchRounds(
			starts,
			TRACING_PAIRS,
			concurrentJob,
			TRACING_JOBS,
			pinned,
			TRACING_GENERATIONS,
		);
		const singleRun = await benchRounds(starts, TRACING_PAIRS, singleJob, 1, pinned, TRACING_GENERATIONS);
		const concurrent = concurrentRun.rounds;
		const single = singleRun.rounds;
		const results = variants.map(([name], i) => {
			const runs = { concurrent: pairsOf(concurrent[0], concurrent[i + 1]), single: pairsOf(single[0], single[i + 1]) };
			printPairs(`${name} vs everything off, memory store`, ["off", name], TRACING_PAIRS, runs);
			const whole = (run: { wholeCpuPerEventUs: number[] }) =>
				`${fmt(run.wholeCpuPerEventUs[0], 2)} → ${fmt(run.wholeCpuPerEventUs[i + 1], 2)} µs (off / ${name} ${pct(run.wholeCpuPerEventUs[0], run.wholeCpuPerEventUs[i + 1])})`;
			console.log(
				`  server CPU per event over the whole run, deferred work included: ${SESSIONS} sessions ${whole(concurrentRun)}; one stream ${whole(singleRun)}`,
			);
			return [name, runs] as const;
		});
		// The servers were stopped (their last spans flushed at close): what reached the collector.
		const received = await receiver.count();
		if (received.type === "count") {
			console.log(
				`\nthe collector received ${fmt(received.requests)} OTLP requests, ${fmt(received.bytes)} bytes; ` +
					`${fmt(received.spanNames)} of them with invoke_agent spans`,
			);
		}
		console.log(`\nload average at the end: ${loadavg()[0].toFixed(1)}`);
		console.log("\nGoals (median round):");
		const [, both] = results[results.length - 1];
		for (const [name, p] of [
			[`${SESSIONS} sessions`, both.concurrent],
			["one stream", both.single],
		] as const) {
			const ok = med(p.eventsRatio) >= 0.95;
			console.log(`  ${ok ? "met    " : "NOT met"}  metrics+tracing ≥ 0.95x events/s of everything off (${name})`);
		}
	} finally {
		receiver.stop();
		clientChild?.kill();
	}
}

/** `--postgres-only`: SQLite store (base) against PostgreSQL store, interleaved pairs of both jobs. */
async function mainPostgres(): Promise<void> {
	const dbDir = mkdtempSync(path.join(tmpdir(), "wheelhouse-bench-pg-"));
	const { default: pg } = await import("pg");
	const schema = `bench_sse_${process.pid}`;
	const admin = async (sql: string) => {
		const client = new pg.Client({ connectionString: PG_URL });
		await client.connect();
		try {
			await client.query(sql);
		} finally {
			await client.end();
		}
	};
	console.log(
		`bench/sse --postgres-only — node ${process.version}, ${cpus().length} cores, load average ` +
			`${loadavg()
				.map((l) => l.toFixed(1))
				.join(", ")}, ${SESSIONS} sessions`,
	);
	try {
		const pairs = async (jobs: (url: string) => Promise<ClientJob>) =>
			benchPairs(
				{ kind: "wheelhouse", store: "sqlite", dbPath: path.join(dbDir, `pairs-${Date.now()}.db`) },
				{ kind: "wheelhouse", store: "postgres", databaseUrl: PG_URL, databaseSchema: schema },
				STORE_PAIRS,
				jobs,
			);
		const runs = { concurrent: await pairs(concurrentJob) };
		await admin(`DROP SCHEMA IF EXISTS ${schema} CASCADE`);
		const all = { ...runs, single: await pairs(singleJob) };
		printPairs("PostgreSQL vs SQLite store", ["SQLite", "PostgreSQL"], STORE_PAIRS, all);
		console.log(
			`\nload average at the end: ${loadavg()
				.map((l) => l.toFixed(1))
				.join(", ")}`,
		);
	} finally {
		clientChild?.kill();
		rmSync(dbDir, { recursive: true, force: true });
		await admin(`DROP SCHEMA IF EXISTS ${schema} CASCADE`).catch(() => undefined);
	}
}

export async function main(): Promise<void> {
	if (METRICS_ONLY) return mainMetricsOnly();
	if (TRACING_ONLY) return mainTracing();
	if (POSTGRES_ONLY) return mainPostgres();
	if (COMPARE_REF) return mainCompare(COMPARE_REF);
	const dbDir = mkdtempSync(path.join(tmpdir(), "wheelhouse-bench-sse-"));
	try {
		console.log(
			`bench/sse — node ${process.version}, ${cpus().length} cores, load average ${loadavg()[0].toFixed(1)}, ` +
				`${REPEATS} repeats (median), ${SESSIONS} sessions`,
		);
		const memory = await benchWheelhouse("memory", dbDir);
		const raw = await benchRaw(memory.recorded);
		let sqlite: ServerRun | undefined;
		try {
			sqlite = await benchWheelhouse("sqlite", dbDir);
		} catch (error) {
			console.log(`(SQLite store run skipped: ${(error as Error).message})`);
		}
		let storePairs: { single: Pairs; concurrent: Pairs } | undefined;
		if (sqlite) {
			storePairs = {
				concurrent: await benchStores(dbDir, concurrentJob),
				single: await benchStores(dbDir, singleJob),
			};
		}
		const metrics = await metricsPairs();
		const steer = await benchSteer();
		const paced = await benchPaced();
		const floorUs = await pipelineFloorUsPerEvent(LONG);

		const runs: [string, ServerRun][] = [
			["raw node:http (limit)", raw],
			["wheelhouse, memory store", memory],
		];
		if (sqlite) runs.push(["wheelhouse, SQLite store", sqlite]);

		printTable(
			`One stream of ${fmt(LONG)} text deltas`,
			["server", "events/s", "vs raw", "server CPU µs/event", "bytes/delta", "vs raw", "wall ms"],
			runs.map(([name, r]) => [
				name,
				fmt(r.single.eventsPerSec),
				pct(r.single.eventsPerSec, raw.single.eventsPerSec),
				fmt(r.single.serverCpuPerEventUs!, 2),
				fmt(r.single.bytesPerDelta, 1),
				`${fmt(r.single.bytesPerDelta / raw.single.bytesPerDelta, 2)}x`,
				fmt(r.single.wallMs, 1),
			]),
		);
		printTable(
			`${SESSIONS} concurrent sessions, ${SHORT}-token answers`,
			[
				"server",
				"events/s",
				"vs raw",
				"server CPU µs/event",
				"bytes/delta",
				"vs raw",
				"wall ms",
				"median 1st delta ms",
				"slowest 1st delta ms",
				"1st delta / wall",
				"RSS idle → after MB",
			],
			runs.map(([name, r]) => [
				name,
				fmt(r.concurrent.eventsPerSec),
				pct(r.concurrent.eventsPerSec, raw.concurrent.eventsPerSec),
				fmt(r.concurrent.serverCpuPerEventUs!, 2),
				fmt(r.concurrent.bytesPerDelta, 1),
				`${fmt(r.concurrent.bytesPerDelta / raw.concurrent.bytesPerDelta, 2)}x`,
				fmt(r.concurrent.wallMs, 1),
				fmt(r.concurrent.medianFirstDeltaMs!, 1),
				fmt(r.concurrent.slowestFirstDeltaMs!, 1),
				pct(r.concurrent.slowestFirstDeltaMs!, r.concurrent.wallMs),
				`${fmt(r.rssIdleMb, 1)} → ${fmt(r.rssMb, 1)}`,
			]),
		);
		printTable(
			"Wire bytes per answer (one stream)",
			[
				"server",
				...SIZES.map((s) => `${fmt(s)} tokens`),
				"bytes/token @200",
				"bytes/token @10k",
				"growth 200→10k (linear = 50x)",
			],
			[
				...runs.map(([name, r]) => [
					name,
					...SIZES.map((s) => fmt(r.sizes.get(s)!)),
					fmt(r.sizes.get(200)! / 200, 1),
					fmt(r.sizes.get(10_000)! / 10_000, 1),
					`${fmt(r.sizes.get(10_000)! / r.sizes.get(200)!, 1)}x`,
				]),
				[
					"naive full-partial updates (computed)",
					...SIZES.map((s) => fmt(naiveBytes(s))),
					fmt(naiveBytes(200) / 200, 1),
					fmt(naiveBytes(10_000) / 10_000, 1),
					`${fmt(naiveBytes(10_000) / naiveBytes(200), 1)}x`,
				],
			],
		);
		console.log(
			`\n${SESSIONS} concurrent sessions paced at ${PACED_DELAY_MS} ms per token (${SHORT}-token answers, memory store): ` +
				`wall ${fmt(paced.wallMs, 0)} ms, first delta median ${fmt(paced.medianFirstDeltaMs!, 1)} ms, slowest ` +
				`${fmt(paced.slowestFirstDeltaMs!, 1)} ms = ${pct(paced.slowestFirstDeltaMs!, paced.wallMs)} of wall ` +
				`(served one after another it would be ~${pct(SESSIONS - 1, SESSIONS)})`,
		);
		console.log(
			`\nIn-process floor (Agent + faux/echo at 0 ms, which yields to the event loop between deltas; no-op listener, ` +
				`no HTTP): ${fmt(floorUs, 2)} µs CPU/event = ${pct(floorUs, raw.single.serverCpuPerEventUs!)} of the raw writer's ` +
				`${fmt(raw.single.serverCpuPerEventUs!, 2)}; the server's ${fmt(memory.single.serverCpuPerEventUs!, 2)} µs/event ` +
				`(one stream, memory store) is that floor plus ${fmt(memory.single.serverCpuPerEventUs! - floorUs, 2)} µs of HTTP, SSE, JSON and event log`,
		);
		if (storePairs) printPairs("SQLite vs memory store", ["memory", "SQLite"], STORE_PAIRS, storePairs);
		printPairs("Metrics on vs off, memory store", ["off", "on"], METRICS_PAIRS, metrics);
		console.log(
			`\nSteer during a running tool (${steer.postToStartMs.length} runs): steer POST → its message_start median ` +
				`${fmt(med(steer.postToStartMs), 2)} ms (max ${fmt(Math.max(...steer.postToStartMs), 2)}); ` +
				`tool batch end → message_start median ${fmt(med(steer.batchEndToStartMs), 2)} ms`,
		);
		const goals = [
			[`events/s ≥ 70% of raw (one stream)`, memory.single.eventsPerSec >= 0.7 * raw.single.eventsPerSec],
			[
				`events/s ≥ 70% of raw (${SESSIONS} sessions)`,
				memory.concurrent.eventsPerSec >= 0.7 * raw.concurrent.eventsPerSec,
			],
			["wire bytes ≤ 1.5x raw", memory.single.bytesPerDelta <= 1.5 * raw.single.bytesPerDelta],
			["linear growth (10k/200 bytes ≤ 55x)", memory.sizes.get(10_000)! / memory.sizes.get(200)! <= 55],
			[
				"slowest first delta ≤ 10% of wall (0 ms pace)",
				memory.concurrent.slowestFirstDeltaMs! <= 0.1 * memory.concurrent.wallMs,
			],
			[
				`slowest first delta ≤ 10% of wall (${PACED_DELAY_MS} ms pace)`,
				paced.slowestFirstDeltaMs! <= 0.1 * paced.wallMs,
			],
		] as const;
		if (storePairs) {
			(goals as unknown as [string, boolean][]).push(
				[
					`SQLite ≥ 90% of memory events/s (${SESSIONS} sessions, median pair)`,
					med(storePairs.concurrent.eventsRatio) >= 0.9,
				],
				["SQLite ≥ 90% of memory events/s (one stream, median pair)", med(storePairs.single.eventsRatio) >= 0.9],
			);
		}
		(goals as unknown as [string, boolean][]).push(
			[
				`metrics on ≥ 95% of off events/s (${SESSIONS} sessions, median pair)`,
				med(metrics.concurrent.eventsRatio) >= 0.95,
			],
			["metrics on ≥ 95% of off events/s (one stream, median pair)", med(metrics.single.eventsRatio) >= 0.95],
		);
		console.log(`\nload average at the end: ${loadavg()[0].toFixed(1)} (figures on a loaded machine vary run to run)`);
		console.log("\nGoals:");
		for (const [name, ok] of goals) console.log(`  ${ok ? "met    " : "NOT met"}  ${name}`);
	} finally {
		clientChild?.kill();
		rmSync(dbDir, { recursive: true, force: true });
	}
}

if (process.argv[1] && fileURLToPath(import.meta.url) === path.resolve(process.argv[1])) {
	main().then(
		() => process.exit(0),
		(error) => {
			console.error(error);
			process.exit(1);
		},
	);
}
