/**
 * Where the server's time goes during the 100-stream round: a V8 CPU profile of the server process
 * over the measured jobs only (the profiler started and stopped around them through
 * server-process.ts), split into idle (the event loop waiting: on timers, on I/O, or for the CPU
 * on a loaded machine), garbage collection, and the self time of the files named on the command
 * line (e.g. the overflow relay) — for this tree's server and, with `--against <ref>`, that
 * commit's, in turns.
 *
 *   npx tsx bench/sse/idle-profile.ts [--store memory|sqlite] [--against <ref>] [file-fragment ...]
 *   BENCH_IDLE_JOBS (4 jobs of 100 clients creating a session and streaming 200 tokens, per server);
 *   BENCH_IDLE_REVERSE=1 profiles the `--against` server first
 */
import { mkdtempSync, rmSync } from "node:fs";
import { cpus, loadavg, tmpdir } from "node:os";
import path from "node:path";
import { promptRequest, words } from "./harness.js";
import { checkoutOf, runClient, ServerChild, stopClient } from "./index.js";

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

async function profileOf(root?: string, dbPath?: string): Promise<Record<string, number>> {
	const server = await ServerChild.start({ kind: "wheelhouse", store: STORE, dbPath }, root);
	try {
		for (let w = 0; w < 3; w++) await runClient(job(server.url)); // warm-up
		await server.ask({ type: "profile-start", cpuIntervalUs: 100 }, "profiling");
		for (let j = 0; j < JOBS; j++) await runClient(job(server.url));
		const { cpu } = await server.ask({ type: "profile-stop" }, "profiled");
		return shares(cpu as Profile);
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
	const servers: [string, string | undefined][] = [["this tree", undefined]];
	if (AGAINST) servers.push([AGAINST, checkoutOf(AGAINST, dir)]);
	// The first server profiled showed more idle time than its identical twin after it (an A/A run):
	// BENCH_IDLE_REVERSE=1 profiles the other one first.
	if (process.env.BENCH_IDLE_REVERSE === "1") servers.reverse();
	for (const [name, root] of servers) {
		const s = await profileOf(root, path.join(dir, `${name.replace(/\W/g, "_")}.db`));
		console.log(
			`  ${name}: ${Object.entries(s)
				.map(([k, v]) => `${k} ${(100 * v).toFixed(2)}%`)
				.join(", ")}`,
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
