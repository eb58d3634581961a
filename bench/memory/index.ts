/**
 * bench/memory: the resident memory (RSS) of the Wheelhouse server process idle and after
 * concurrent SSE streams, against `@mariozechner/pi-agent-core` behind a bare `node:http` SSE
 * endpoint (reference-server.mjs), in one run on one machine.
 *
 *   npx tsx bench/memory/index.ts [--quick]   (then the per-unit figures of per-unit.ts)
 *   npx tsx bench/memory/index.ts --per-unit   only the memory per unit of work (per-unit.ts)
 *     BENCH_MEMORY_STREAMS=100  BENCH_MEMORY_TOKENS=200  BENCH_MEMORY_DELAY_MS=10
 *     BENCH_MEMORY_IDLE_MS=5000  BENCH_MEMORY_SETTLE_MS=12000  BENCH_MEMORY_REPEATS=3 (1 with --quick)
 *     BENCH_MEMORY_BASELINE=/path/to/another/checkout   adds that checkout's built server (its
 *       dist/main.js, with its own node_modules) as a row, e.g. the commit before a change
 *
 * Every server is a fresh `node <entry>` process: ours is dist/main.js with the default
 * configuration (built first when missing or older than src/, as `npm start` does), the reference
 * is plain JavaScript, and the floor is node:http alone; so no TypeScript loader sits in a
 * measured process. Each answers with the same stand-in model (the prompt streamed back one word
 * per text delta, `BENCH_MEMORY_DELAY_MS` apart).
 *
 * Measured per server: RSS `BENCH_MEMORY_IDLE_MS` after it answered its first health check
 * (idle) and `BENCH_MEMORY_SETTLE_MS` after it (idle, settled); the highest RSS while
 * `BENCH_MEMORY_STREAMS` sessions stream a `BENCH_MEMORY_TOKENS`-word answer at once (peak); RSS
 * one second after the last stream ended (after) and `BENCH_MEMORY_SETTLE_MS` after it (after,
 * settled), the sessions kept as a server keeps them. The goals are checked on the settled figures.
 * Repeats start fresh processes in rotating order; the median is shown.
 */
import { type ChildProcess, execFileSync, spawn } from "node:child_process";
import { once } from "node:events";
import { mkdtempSync, rmSync } from "node:fs";
import { cpus, loadavg, tmpdir } from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { freePort, median, readStream, rssMb } from "./helpers.js";
import { runPerUnit } from "./per-unit.js";

const here = path.dirname(fileURLToPath(import.meta.url));
const repoRoot = path.resolve(here, "../..");
const quick = process.argv.includes("--quick");
const STREAMS = Number(process.env.BENCH_MEMORY_STREAMS ?? 100);
const TOKENS = Number(process.env.BENCH_MEMORY_TOKENS ?? 200);
const DELAY_MS = Number(process.env.BENCH_MEMORY_DELAY_MS ?? 10);
const IDLE_MS = Number(process.env.BENCH_MEMORY_IDLE_MS ?? 5000);
const SETTLE_MS = Math.max(IDLE_MS, Number(process.env.BENCH_MEMORY_SETTLE_MS ?? 12_000));
const REPEATS = Number(process.env.BENCH_MEMORY_REPEATS ?? (quick ? 1 : 3));
/** The goals: our server idle, and after the streams. */
const GOAL_IDLE_MB = 90;
const GOAL_AFTER_MB = 110;

/** How one kind of server is started and spoken to. */
interface ServerKind {
	name: string;
	entry: string;
	/** Where the process runs (default: this repository). */
	cwd?: string;
	env: (port: number, dir: string) => Record<string, string>;
	/** Creates a session; returns the path its prompt is POSTed to (undefined: the server streams without one). */
	createSession?: (url: string) => Promise<string>;
	/** The path of a stream without a session (the floor). */
	streamPath?: string;
}

const FLOOR_SERVER = `
const http = require("node:http");
const words = Number(process.env.TOKENS), delay = Number(process.env.FAUX_DELAY_MS);
http.createServer((req, res) => {
	if (req.url === "/healthz") return res.end("ok");
	req.resume();
	res.writeHead(200, { "content-type": "text/event-stream" });
	let i = 0;
	const step = () => {
		if (i === words) return res.end();
		res.write("id: " + i + "\\nevent: message_update\\ndata: " + JSON.stringify({ type: "message_update", assistantMessageEvent: { type: "text_delta", contentIndex: 0, delta: "w" + i++ + " " } }) + "\\n\\n");
		delay > 0 ? setTimeout(step, delay) : setImmediate(step);
	};
	step();
}).listen(Number(process.env.PORT), "127.0.0.1");
process.on("SIGTERM", () => process.exit(0));
`;

async function postJson(url: string, body: unknown): Promise<{ status: number; json: any }> {
	const res = await fetch(url, {
		method: "POST",
		headers: { "content-type": "application/json" },
		body: JSON.stringify(body),
	});
	return { status: res.status, json: await res.json() };
}

async function createWheelhouseSession(url: string): Promise<string> {
	const { status, json } = await postJson(`${url}/v1/sessions`, { model: "faux/echo" });
	if (status !== 201) throw new Error(`POST /v1/sessions: ${status}`);
	return `/v1/sessions/${json.id}/prompt`;
}

/** Our server with its default configuration, from the checkout at `root`. */
function wheelhouseDefaults(name: string, root: string): ServerKind {
	return {
		name,
		entry: path.join(root, "dist/main.js"),
		cwd: root,
		env: (port, dir) => ({
			PORT: String(port),
			HOST: "127.0.0.1",
			WHEELHOUSE_DB: path.join(dir, "wheelhouse.db"),
			WHEELHOUSE_FAUX_DELAY_MS: String(DELAY_MS),
		}),
		createSession: createWheelhouseSession,
	};
}

const BASELINE = process.env.BENCH_MEMORY_BASELINE;

const KINDS: ServerKind[] = [
	wheelhouseDefaults("wheelhouse (defaults: SQLite store, metrics on)", repoRoot),
	...(BASELINE ? [wheelhouseDefaults(`baseline ${path.basename(path.resolve(BASELINE))} (defaults)`, BASELINE)] : []),
	{
		name: "wheelhouse, memory store",
		entry: path.join(repoRoot, "dist/main.js"),
		env: (port) => ({
			PORT: String(port),
			HOST: "127.0.0.1",
			WHEELHOUSE_STORE: "memory",
			WHEELHOUSE_FAUX_DELAY_MS: String(DELAY_MS),
		}),
		createSession: createWheelhouseSession,
	},
	{
		name: "pi-agent-core 0.73.1 + node:http",
		entry: path.join(here, "reference-server.mjs"),
		env: (port) => ({ PORT: String(port), FAUX_DELAY_MS: String(DELAY_MS) }),
		createSession: async (url) => {
			const { status, json } = await postJson(`${url}/sessions`, {});
			if (status !== 201) throw new Error(`POST /sessions: ${status}`);
			return `/sessions/${json.id}/prompt`;
		},
	},
	{
		name: "node:http alone (floor)",
		entry: "",
		env: (port) => ({ PORT: String(port), FAUX_DELAY_MS: String(DELAY_MS), TOKENS: String(TOKENS) }),
		streamPath: "/stream",
	},
];

async function waitHealthy(url: string, child: ChildProcess): Promise<void> {
	const deadline = Date.now() + 60_000;
	for (;;) {
		if (child.exitCode !== null) throw new Error(`server exited with ${child.exitCode} before answering`);
		try {
			const res = await fetch(`${url}/healthz`);
			await res.arrayBuffer();
			if (res.ok) return;
		} catch {
			// not listening yet
		}
		if (Date.now() > deadline) throw new Error(`${url}/healthz did not answer within 60 s`);
		await new Promise((resolve) => setTimeout(resolve, 100));
	}
}

/** One SSE stream read to its end; resolves with the number of events. */
interface Sample {
	idleMb: number;
	idleSettledMb: number;
	peakMb: number;
	afterMb: number;
	afterSettledMb: number;
	events: number;
}

async function measure(kind: ServerKind): Promise<Sample> {
	const port = await freePort();
	const dir = mkdtempSync(path.join(tmpdir(), "wheelhouse-bench-memory-"));
	const args = kind.entry ? [kind.entry] : ["-e", FLOOR_SERVER];
	const child = spawn(process.execPath, args, {
		cwd: kind.cwd ?? repoRoot,
		env: { PATH: process.env.PATH ?? "", HOME: process.env.HOME ?? "", ...kind.env(port, dir) },
		stdio: ["ignore", "ignore", "inherit"],
	});
	const url = `http://127.0.0.1:${port}`;
	try {
		await waitHealthy(url, child);
		await new Promise((resolve) => setTimeout(resolve, IDLE_MS));
		const idleMb = rssMb(child.pid!);
		await new Promise((resolve) => setTimeout(resolve, SETTLE_MS - IDLE_MS));
		const idleSettledMb = rssMb(child.pid!);
		const prompt = Array.from({ length: TOKENS }, (_, i) => `w${i}`).join(" ");
		const paths: string[] = [];
		for (let i = 0; i < STREAMS; i++) paths.push(kind.createSession ? await kind.createSession(url) : kind.streamPath!);
		let peakMb = rssMb(child.pid!);
		const sampler = setInterval(() => {
			peakMb = Math.max(peakMb, rssMb(child.pid!));
		}, 25);
		const counts = await Promise.all(
			paths.map((p) => readStream(`${url}${p}`, kind.createSession ? JSON.stringify({ message: prompt }) : undefined)),
		);
		clearInterval(sampler);
		peakMb = Math.max(peakMb, rssMb(child.pid!));
		await new Promise((resolve) => setTimeout(resolve, 1000));
		const afterMb = rssMb(child.pid!);
		await new Promise((resolve) => setTimeout(resolve, SETTLE_MS - 1000));
		const afterSettledMb = rssMb(child.pid!);
		return { idleMb, idleSettledMb, peakMb, afterMb, afterSettledMb, events: counts.reduce((sum, n) => sum + n, 0) };
	} finally {
		child.kill("SIGTERM");
		if (child.exitCode === null) await once(child, "exit");
		rmSync(dir, { recursive: true, force: true });
	}
}

execFileSync(process.execPath, [path.join(repoRoot, "scripts/ensure-built.mjs")], { cwd: repoRoot, stdio: "inherit" });
if (process.argv.includes("--per-unit")) {
	await runPerUnit();
	process.exit(0);
}

console.log(`load average at the start: ${loadavg()[0]!.toFixed(1)}`);
const samples = new Map<string, Sample[]>(KINDS.map((kind) => [kind.name, []]));
for (let r = 0; r < REPEATS; r++) {
	// Rotate the order, so a machine that gets busier during the run does not always hit the same server.
	for (let i = 0; i < KINDS.length; i++) {
		const kind = KINDS[(i + r) % KINDS.length]!;
		const sample = await measure(kind);
		samples.get(kind.name)!.push(sample);
		console.log(
			`  ${kind.name}: idle ${sample.idleMb.toFixed(1)} → ${sample.idleSettledMb.toFixed(1)} MB, peak ${sample.peakMb.toFixed(1)} MB, after ${sample.afterMb.toFixed(1)} → ${sample.afterSettledMb.toFixed(1)} MB (${sample.events} events)`,
		);
	}
}

const rows = KINDS.map((kind) => {
	const runs = samples.get(kind.name)!;
	const range = (pick: (s: Sample) => number) =>
		`${Math.min(...runs.map(pick)).toFixed(1)}–${Math.max(...runs.map(pick)).toFixed(1)}`;
	return {
		name: kind.name,
		idle: median(runs.map((s) => s.idleMb)),
		idleSettled: median(runs.map((s) => s.idleSettledMb)),
		peak: median(runs.map((s) => s.peakMb)),
		after: median(runs.map((s) => s.afterMb)),
		afterSettled: median(runs.map((s) => s.afterSettledMb)),
		range: `${range((s) => s.idleSettledMb)} / ${range((s) => s.afterSettledMb)}`,
	};
});
const width = Math.max(...rows.map((row) => row.name.length));
const rangeWidth = Math.max(26, ...rows.map((row) => row.range.length));
const idleS = `${IDLE_MS / 1000} s`;
const settleS = `${SETTLE_MS / 1000} s`;
console.log(
	`\nbench/memory — node ${process.version}, ${cpus().length} cores, load average ${loadavg()[0]!.toFixed(1)}, ${REPEATS} repeat(s) (median), ${STREAMS} streams x ${TOKENS} tokens at ${DELAY_MS} ms; idle at ${idleS} and ${settleS} after the first health check, after at 1 s and ${settleS} after the last stream\n`,
);
const heads = [
	`idle ${idleS} MB`,
	`idle ${settleS} MB`,
	"peak during streams MB",
	"after 1 s MB",
	`after ${settleS} MB`,
];
console.log(
	`| ${"server".padEnd(width)} | ${heads.join(" | ")} | ${"range idle / after (settled)".padEnd(rangeWidth)} |`,
);
console.log(
	`|${"-".repeat(width + 2)}|${heads.map((h) => "-".repeat(h.length + 2)).join("|")}|${"-".repeat(rangeWidth + 2)}|`,
);
for (const row of rows) {
	const cells = [row.idle, row.idleSettled, row.peak, row.after, row.afterSettled].map((v, i) =>
		v.toFixed(1).padStart(heads[i]!.length),
	);
	console.log(`| ${row.name.padEnd(width)} | ${cells.join(" | ")} | ${row.range.padEnd(rangeWidth)} |`);
}
const ours = rows[0]!;
console.log("\nGoals (our server with its defaults, settled figures; the earlier sample points in brackets):");
console.log(
	`  ${ours.idleSettled <= GOAL_IDLE_MB ? "met    " : "NOT met"}  idle ≤ ${GOAL_IDLE_MB} MB (${ours.idleSettled.toFixed(1)}; at ${idleS}: ${ours.idle.toFixed(1)})`,
);
console.log(
	`  ${ours.afterSettled <= GOAL_AFTER_MB ? "met    " : "NOT met"}  after ${STREAMS} streams ≤ ${GOAL_AFTER_MB} MB (${ours.afterSettled.toFixed(1)}; at 1 s: ${ours.after.toFixed(1)})`,
);
console.log(`load average at the end: ${loadavg()[0]!.toFixed(1)}`);
await runPerUnit();
