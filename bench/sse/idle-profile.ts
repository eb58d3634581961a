/**
 * Where the server's time goes during the 100-stream round: a V8 CPU profile of the server process
 * over the measured jobs only (the profiler started and stopped around them through
 * server-process.ts), split into idle (the event loop waiting: on timers, on I/O, or for the CPU
 * on a loaded machine), garbage collection, and the self time of the files named on the command
 * line (e.g. the overflow relay) — for this tree's server and, with `--against <ref>`, that
 * commit's, in turns.
 *
 *   npx tsx bench/sse/idle-profile.ts [--store memory|sqlite] [--against <ref>] [--baseline] [file-fragment ...]
 *   --baseline also profiles the guard's bare Fastify server (fastify-baseline.ts) answering the same
 *   requests with the recorded frames: the idle share of a server with no agent loop, no store and no
 *   timers, that is, what the client sharing the machine's cores leaves the server waiting for
 *   BENCH_IDLE_JOBS (4 jobs of 100 clients creating a session and streaming 200 tokens, per server);
 *   BENCH_IDLE_REVERSE=1 profiles the `--against` server first
 *   BENCH_IDLE_TOP=N also prints, per server, the N files (and GC) with the most self time in ms per
 *   job, with the other server's figure beside it: where a drift between two trees went
 *   BENCH_IDLE_SAVE=<dir> also writes each server's profile there (`<server>.cpuprofile`, for Chrome
 *   DevTools or any V8 profile viewer)
 */
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { cpus, loadavg, tmpdir } from "node:os";
import path from "node:path";
import { promptRequest, words } from "./harness.js";
import { checkoutOf, runClient, ServerChild, stopClient } from "./index.js";
import type { ServerStart } from "./server-process.js";

interface ProfileNode {
	id: number;
	callFrame: { functionName: string; url: string };
}
interface Profile {
	nodes: ProfileNode[];
	samples: number[];
	timeDeltas: number[];
}

const JOBS = Number(process.env.BENCH_IDLE_JOBS ?? 4);
const SESSIONS = 100;
const arg = (name: string) => (process.argv.includes(name) ? process.argv[process.argv.indexOf(name) + 1] : undefined);
const STORE = (arg("--store") ?? "memory") as "memory" | "sqlite";
const AGAINST = arg("--against");
const BASELINE = process.argv.includes("--baseline");
const TOP = Number(process.env.BENCH_IDLE_TOP ?? 0);
const SAVE = process.env.BENCH_IDLE_SAVE;
const FRAGMENTS = process.argv.slice(2).filter((a, i, all) => !a.startsWith("--") && !all[i - 1]?.startsWith("--"));

function job(url: string) {
	return {
		requests: Array.from({ length: SESSIONS }, () => ({
			...promptRequest(url, "{id}", words(200)),
			create: { url: `${url}/v1/sessions`, body: JSON.stringify({ model: "faux/echo" }) },
		})),
	};
}

/** Shares of the profiled time: idle, GC, and the self time of functions in files matching each fragment. */
function shares(profile: Profile): Record<string, number> {
	const nodes = new Map(profile.nodes.map((n) => [n.id, n]));
	const out: Record<string, number> = { idle: 0, GC: 0 };
	for (const f of FRAGMENTS) out[f] = 0;
	let total = 0;
	for (let i = 0; i < profile.samples.length; i++) {
		const micros = profile.timeDeltas[i] ?? 0;
		total += micros;
		const { functionName, url } = (nodes.get(profile.samples[i] as number) as ProfileNode).callFrame;
		if (functionName === "(idle)") out.idle = (out.idle ?? 0) + micros;
		else if (functionName === "(garbage collector)") out.GC = (out.GC ?? 0) + micros;
		for (const f of FRAGMENTS) if (url.includes(f)) out[f] = (out[f] ?? 0) + micros;
	}
	for (const k of Object.keys(out)) out[k] = (out[k] as number) / total;
	return out;
}

/** Self time per file (ms per job), files named from src/ or node_modules/ on, GC and the program apart. */
function perFile(profile: Profile): Map<string, number> {
	const nodes = new Map(profile.nodes.map((n) => [n.id, n]));
	const out = new Map<string, number>();
	for (let i = 0; i < profile.samples.length; i++) {
		const { functionName, url } = (nodes.get(profile.samples[i] as number) as ProfileNode).callFrame;
		if (functionName === "(idle)") continue;
		const key = url
			? url.replace(/^.*?\/(src|node_modules)\//, "$1/").replace(/^node_modules\/((@[^/]+\/)?[^/]+)\/.*$/, "$1")
			: functionName;
		out.set(key, (out.get(key) ?? 0) + (profile.timeDeltas[i] ?? 0) / 1000 / JOBS);
	}
	return out;
}

/** The frames this tree's memory server sends for the job's prompt, for the bare Fastify server to replay. */
async function recordAnswer(): Promise<string> {
	const server = await ServerChild.start({ kind: "wheelhouse", store: "memory" });
	try {
		const created = job(server.url).requests[0]?.create;
		const res = await fetch(created?.url as string, {
			method: "POST",
			body: created?.body,
			headers: { "content-type": "application/json" },
		});
		const { id } = (await res.json()) as { id: string };
		const result = await runClient({ requests: [promptRequest(server.url, id, words(200))], record: true });
		return result.recorded as string;
	} finally {
		await server.stop();
	}
}

async function profileOf(
	name: string,
	start: ServerStart,
	root?: string,
): Promise<{ shares: Record<string, number>; files: Map<string, number> }> {
	const server = await ServerChild.start(start, root);
	try {
		for (let w = 0; w < 3; w++) await runClient(job(server.url)); // warm-up
		// A tree older than the profiler commands never answers: say so instead of waiting for ever.
		const started = server.ask({ type: "profile-start", cpuIntervalUs: 100 }, "profiling");
		const silent = setTimeout(() => {
			console.error(
				`${name}: its server-process.ts does not answer profile-start (a tree older than the command); ` +
					"profile such a commit with BENCH_SSE_CPU_PROF=<dir> and bench/sse/guard.ts --against <ref> instead",
			);
			process.exit(1);
		}, 30_000);
		await started;
		clearTimeout(silent);
		for (let j = 0; j < JOBS; j++) await runClient(job(server.url));
		const { cpu } = await server.ask({ type: "profile-stop" }, "profiled");
		if (SAVE) {
			mkdirSync(SAVE, { recursive: true });
			writeFileSync(path.join(SAVE, `${name.replace(/\W/g, "_")}.cpuprofile`), JSON.stringify(cpu));
		}
		return { shares: shares(cpu as Profile), files: perFile(cpu as Profile) };
	} finally {
		await server.stop();
	}
}

const dir = mkdtempSync(path.join(tmpdir(), "wheelhouse-bench-idle-"));
try {
	console.log(
		`bench/sse idle-profile — ${STORE} store, ${JOBS} jobs of ${SESSIONS} clients (create + 200-token stream), ` +
			`${cpus().length} cores, load average ${loadavg()
				.map((l) => l.toFixed(1))
				.join(", ")}`,
	);
	const dbPath = (name: string) => path.join(dir, `${name.replace(/\W/g, "_")}.db`);
	const servers: [string, ServerStart, string | undefined][] = [
		["this tree", { kind: "wheelhouse", store: STORE, dbPath: dbPath("this tree") }, undefined],
	];
	if (AGAINST) {
		servers.push([AGAINST, { kind: "wheelhouse", store: STORE, dbPath: dbPath(AGAINST) }, checkoutOf(AGAINST, dir)]);
	}
	if (BASELINE) {
		servers.push([
			"baseline (bare Fastify)",
			{ kind: "fastify", prompts: { [words(200)]: await recordAnswer() } },
			undefined,
		]);
	}
	// The first server profiled showed more idle time than its identical twin after it (an A/A run):
	// BENCH_IDLE_REVERSE=1 profiles the other one first.
	if (process.env.BENCH_IDLE_REVERSE === "1") servers.reverse();
	const files: Map<string, number>[] = [];
	for (const [name, start, root] of servers) {
		const profiled = await profileOf(name, start, root);
		const s = profiled.shares;
		files.push(profiled.files);
		console.log(
			`  ${name}: ${Object.entries(s)
				.map(([k, v]) => `${k} ${(100 * v).toFixed(2)}%`)
				.join(", ")}`,
		);
	}
	for (const [i, [name]] of servers.entries()) {
		if (!TOP) break;
		const mine = files[i] as Map<string, number>;
		const o = i === 0 ? 1 : 0;
		const other = files[o];
		const otherName = servers[o]?.[0];
		console.log(`\n  ${name}: self time, ms per job${other ? ` (${otherName} beside it)` : ""}`);
		for (const [file, ms] of [...mine].sort((a, b) => b[1] - a[1]).slice(0, TOP)) {
			console.log(
				`    ${ms.toFixed(2).padStart(8)}${other ? ` ${(other.get(file) ?? 0).toFixed(2).padStart(8)}` : ""}  ${file}`,
			);
		}
		const total = [...mine.values()].reduce((a, b) => a + b, 0);
		const otherTotal = other ? [...other.values()].reduce((a, b) => a + b, 0) : 0;
		console.log(
			`    ${total.toFixed(2).padStart(8)}${other ? ` ${otherTotal.toFixed(2).padStart(8)}` : ""}  busy in all`,
		);
	}
	console.log(
		`  load average at the end: ${loadavg()
			.map((l) => l.toFixed(1))
			.join(", ")}`,
	);
} finally {
	stopClient();
	rmSync(dir, { recursive: true, force: true });
}
process.exit(0);
