/**
 * bench/sse guard: a short run (under 2 minutes) that compares this tree with the last recorded
 * release figures, so a drift is seen at the commit that causes it.
 *
 *   npm run bench:guard                      compare with bench/sse/release-figures.json; exit 1 when a
 *                                            ratio is worse than the recorded one by more than the tolerance
 *                                            (on a loaded machine, load average above the cores, only the
 *                                            CPU ratios are judged: wall times swing too much there)
 *   npm run bench:guard -- --record          measure and write release-figures.json (commit, date, load)
 *   npm run bench:guard -- --against <ref>   also that commit's servers (built from `git archive`), in
 *                                            the same rounds, for the drift since then; several refs
 *                                            separated by commas bisect a drift in one run
 *   npm run bench:guard -- --stores sqlite   only those stores' servers of the --against refs (memory,
 *                                            sqlite; both by default)
 *   npm run bench:guard -- --tree <ref> --record
 *                                            measure that commit instead of this tree: records a
 *                                            release's figures after the fact, on a quiet machine
 *   npm run bench:guard -- --pi              also pi-agent-core's Agent behind a bare node:http SSE
 *                                            endpoint with an echo model (bench/memory/reference-server.mjs,
 *                                            plain JavaScript): what the agent loop alone costs over the baseline
 *   BENCH_GUARD_CONFIGS='{"compaction off":{"compaction":"off"}}'
 *                                            also this tree's memory-store server with those settings
 *                                            (ServerConfig keys), one server per name, in the same rounds:
 *                                            what a feature costs per round
 *   BENCH_GUARD_ROUNDS (8), BENCH_GUARD_SINGLE (16 runs per store), BENCH_GUARD_TOLERANCE (0.2 = 20%)
 *
 * Every figure is a ratio of two servers measured in the same run, so the load of the machine
 * cancels out as far as it can; absolute times are printed but never compared. The servers:
 * - `baseline`: a bare Fastify server (fastify-baseline.ts) answering the same two requests with the
 *   frames the real server sent, one write per event, no agent loop;
 * - Wheelhouse on the memory store and on SQLite (the default), faux/echo model at 0 ms.
 * Figures:
 * - `concurrent.<store>`: wall time of SESSIONS concurrent clients, each creating a session and
 *   streaming one 200-token answer, over the baseline's wall time in the same round (median round;
 *   the servers take turns in a balanced order); `concurrentCpu.<store>`: the server's CPU time in
 *   those rounds over the baseline's;
 * - `firstToken.sqliteVsMemory`: one run at a time, time from the prompt request to its first text
 *   delta, SQLite over memory (medians of alternating runs);
 * - `toolRun.sqliteVsMemory`: one run with a tool round trip (`calculate`), prompt to end of stream,
 *   SQLite over memory.
 */
import { execFileSync } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { cpus, loadavg, tmpdir } from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import type { StreamRequest } from "./client.js";
import { createSessions, promptRequest, words } from "./harness.js";
import { checkoutOf, roundOrder, runClient, ServerChild, stopClient } from "./index.js";
import type { ServerStart } from "./server-process.js";

const here = path.dirname(fileURLToPath(import.meta.url));
const REPO = path.resolve(here, "..", "..");
const FIGURES_FILE = path.join(here, "release-figures.json");
const ROUNDS = Number(process.env.BENCH_GUARD_ROUNDS ?? 8);
const SINGLE = Number(process.env.BENCH_GUARD_SINGLE ?? 16);
const TOLERANCE = Number(process.env.BENCH_GUARD_TOLERANCE ?? 0.2);
const SESSIONS = Number(process.env.BENCH_SSE_SESSIONS ?? 100);
const TOKENS = 200;
const RECORD = process.argv.includes("--record");
const option = (name: string) =>
	process.argv.includes(name) ? process.argv[process.argv.indexOf(name) + 1] : undefined;
const AGAINST = option("--against")?.split(",").filter(Boolean) ?? [];
const TREE = option("--tree");
const STORES = (option("--stores") ?? "memory,sqlite").split(",");
const PI = process.argv.includes("--pi");
const CONFIGS = JSON.parse(process.env.BENCH_GUARD_CONFIGS ?? "{}") as Record<string, Record<string, unknown>>;
const TOOL_PROMPT = '/tool calculate {"expression":"6*7"}';

/** The figures a release records and the guard compares (all ratios; lower is better). */
export interface GuardFigures {
	"concurrent.memoryVsBaseline": number;
	"concurrent.sqliteVsBaseline": number;
	/** Server CPU time of the same rounds against the baseline's: steadier than wall time on a loaded machine. */
	"concurrentCpu.memoryVsBaseline": number;
	"concurrentCpu.sqliteVsBaseline": number;
	"firstToken.sqliteVsMemory": number;
	"toolRun.sqliteVsMemory": number;
}

/** release-figures.json: the figures of the last release, where and when they were measured. */
interface Recorded {
	commit: string;
	date: string;
	node: string;
	cores: number;
	loadAverage: number[];
	sessions: number;
	figures: GuardFigures;
}

const med = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)] as number;
const fmt = (n: number, digits = 2) => n.toFixed(digits);
const load = () =>
	loadavg()
		.map((l) => l.toFixed(1))
		.join(", ");

/** SESSIONS clients, each creating a session on `url` and streaming one TOKENS-token answer. */
function createAndStream(url: string): StreamRequest[] {
	return Array.from({ length: SESSIONS }, () => ({
		...promptRequest(url, "{id}", words(TOKENS)),
		create: { url: `${url}/v1/sessions`, body: JSON.stringify({ model: "faux/echo" }) },
	}));
}

/** The frames the real server sends for the TOKENS-token prompt, recorded from a memory-store server. */
async function recordAnswer(): Promise<string> {
	const server = await ServerChild.start({ kind: "wheelhouse", store: "memory" });
	try {
		const [id] = await createSessions(server.url, 1);
		const result = await runClient({
			requests: [promptRequest(server.url, id as string, words(TOKENS))],
			record: true,
		});
		return result.recorded as string;
	} finally {
		await server.stop();
	}
}

interface Variant {
	name: string;
	start: ServerStart;
	root?: string;
}

/** Each variant's wall time (ms) and server CPU time (ms) per round of the create+stream job, servers in a balanced order. */
async function concurrentRounds(variants: Variant[]): Promise<{ walls: number[][]; cpus: number[][] }> {
	const servers: ServerChild[] = [];
	try {
		for (const v of variants) servers.push(await ServerChild.start(v.start, v.root));
		const walls: number[][] = variants.map(() => []);
		const cpus: number[][] = variants.map(() => []);
		const turn = async (i: number) => {
			const server = servers[i] as ServerChild;
			const before = await server.cpu();
			const result = await runClient({ requests: createAndStream(server.url) });
			const cpuMs = ((await server.cpu()) - before) / 1000;
			for (const s of result.streams) {
				if (s.textDeltas !== TOKENS) throw new Error(`${variants[i]?.name}: ${s.textDeltas} deltas`);
			}
			return { wall: result.wallMs, cpu: cpuMs };
		};
		for (let i = 0; i < servers.length; i++) await turn(i); // warm-up
		// roundOrder balances an even number of servers; with an odd number one more slot is skipped.
		const n = servers.length % 2 === 0 ? servers.length : servers.length + 1;
		for (let r = 0; r < ROUNDS; r++) {
			for (const i of roundOrder(r, n)) {
				if (i >= servers.length) continue;
				const { wall, cpu } = await turn(i);
				walls[i]?.push(wall);
				cpus[i]?.push(cpu);
			}
		}
		return { walls, cpus };
	} finally {
		for (const server of servers) await server.stop();
	}
}

/** One run at a time on memory and SQLite, alternating: first text delta and end of stream (ms), per store. */
async function singleRuns(dbDir: string, root?: string) {
	const memory = await ServerChild.start({ kind: "wheelhouse", store: "memory" }, root);
	const sqlite = await ServerChild.start(
		{ kind: "wheelhouse", store: "sqlite", dbPath: path.join(dbDir, `single-${Date.now()}.db`) },
		root,
	);
	const out = {
		memory: { first: [] as number[], tool: [] as number[] },
		sqlite: { first: [] as number[], tool: [] as number[] },
	};
	try {
		const one = async (server: ServerChild, message: string) => {
			const [id] = await createSessions(server.url, 1);
			const result = await runClient({ requests: [promptRequest(server.url, id as string, message)] });
			return result.streams[0] as { firstDeltaMs: number; endMs: number };
		};
		for (let r = -2; r < SINGLE; r++) {
			const order: ["memory" | "sqlite", ServerChild][] =
				r % 2 === 0
					? [
							["memory", memory],
							["sqlite", sqlite],
						]
					: [
							["sqlite", sqlite],
							["memory", memory],
						];
			for (const [name, server] of order) {
				const text = await one(server, words(20));
				const tool = await one(server, TOOL_PROMPT);
				if (r < 0) continue; // warm-up
				out[name].first.push(text.firstDeltaMs);
				out[name].tool.push(tool.endMs);
			}
		}
		return out;
	} finally {
		await memory.stop();
		await sqlite.stop();
	}
}

function commitOf(ref: string): string {
	return execFileSync("git", ["-C", REPO, "rev-parse", "--short", ref], { encoding: "utf8" }).trim();
}

async function main(): Promise<number> {
	const dbDir = mkdtempSync(path.join(tmpdir(), "wheelhouse-bench-guard-"));
	const dirty = execFileSync("git", ["-C", REPO, "status", "--porcelain", "--untracked-files=no"], {
		encoding: "utf8",
	}).trim();
	const head = TREE ? commitOf(TREE) : `${commitOf("HEAD")}${dirty ? " + changes" : ""}`;
	const startedAt = Date.now();
	const loadedAtStart = loadavg()[0] > cpus().length;
	try {
		console.log(
			`bench:guard — this tree (${head}), node ${process.version}, ${cpus().length} cores, load average ${load()}, ` +
				`${SESSIONS} sessions x ${TOKENS} tokens, ${ROUNDS} rounds, ${SINGLE} single runs per store`,
		);
		const answer = await recordAnswer();
		// The measured tree: this checkout, or with --tree a commit built from `git archive`.
		const treeRoot = TREE ? checkoutOf(TREE, dbDir, "tree") : undefined;
		const storesOf = (at: string, root: string | undefined, suffix: string, stores = STORES): Variant[] =>
			[
				{ name: `memory${suffix}`, start: { kind: "wheelhouse", store: "memory" } as ServerStart, root },
				{
					name: `SQLite${suffix}`,
					start: { kind: "wheelhouse", store: "sqlite", dbPath: path.join(dbDir, `sqlite-${at}.db`) } as ServerStart,
					root,
				},
			].filter((v) => stores.includes(v.name.startsWith("memory") ? "memory" : "sqlite"));
		const variants: Variant[] = [
			{ name: "baseline (bare Fastify)", start: { kind: "fastify", prompts: { [words(TOKENS)]: answer } } },
			// Both stores of the measured tree always run: the recorded figures need both.
			...storesOf("tree", treeRoot, TREE ? ` at ${commitOf(TREE)}` : "", ["memory", "sqlite"]),
		];
		for (const [name, config] of Object.entries(CONFIGS)) {
			variants.push({
				name: `memory, ${name}`,
				start: { kind: "wheelhouse", store: "memory", config },
				root: treeRoot,
			});
		}
		if (PI) variants.push({ name: "pi-agent-core loop + node:http", start: { kind: "pi" } });
		for (const [i, ref] of AGAINST.entries()) {
			const at = commitOf(ref);
			variants.push(...storesOf(at, checkoutOf(ref, dbDir, `against-${i}`), ` at ${at}`));
		}
		const { walls, cpus: cpuMs } = await concurrentRounds(variants);
		const base = walls[0] as number[];
		const baseCpu = cpuMs[0] as number[];
		const ratios = walls.map((w) => med(w.map((ms, r) => ms / (base[r] as number))));
		const cpuRatios = cpuMs.map((c) => med(c.map((ms, r) => ms / (baseCpu[r] as number))));
		console.log(
			`\n${SESSIONS} concurrent clients, create + stream (${TOKENS} tokens), against the baseline in the same round ` +
				"(median round; server busy = server CPU time / wall time):",
		);
		console.log(
			"| server | median wall ms | wall vs baseline | range of rounds | server CPU ms | CPU vs baseline | server busy |",
		);
		console.log("|---|---|---|---|---|---|---|");
		variants.forEach((v, i) => {
			const perRound = (walls[i] as number[]).map((ms, r) => ms / (base[r] as number));
			const busy = med((cpuMs[i] as number[]).map((c, r) => c / ((walls[i] as number[])[r] as number)));
			console.log(
				`| ${v.name} | ${fmt(med(walls[i] as number[]), 0)} | ${fmt(ratios[i] as number)}x | ` +
					`${fmt(Math.min(...perRound))}–${fmt(Math.max(...perRound))}x | ${fmt(med(cpuMs[i] as number[]), 0)} | ` +
					`${fmt(cpuRatios[i] as number)}x | ${fmt(100 * busy, 0)}% |`,
			);
		});
		const single = await singleRuns(dbDir, treeRoot);
		const firstToken = med(single.sqlite.first) / med(single.memory.first);
		const toolRun = med(single.sqlite.tool) / med(single.memory.tool);
		console.log(
			`\nOne run at a time (${SINGLE} each, alternating): first text delta memory ${fmt(med(single.memory.first))} ms, ` +
				`SQLite ${fmt(med(single.sqlite.first))} ms (${fmt(firstToken)}x); tool run (prompt → end) memory ` +
				`${fmt(med(single.memory.tool))} ms, SQLite ${fmt(med(single.sqlite.tool))} ms (${fmt(toolRun)}x)`,
		);
		const figures: GuardFigures = {
			"concurrent.memoryVsBaseline": ratios[1] as number,
			"concurrent.sqliteVsBaseline": ratios[2] as number,
			"concurrentCpu.memoryVsBaseline": cpuRatios[1] as number,
			"concurrentCpu.sqliteVsBaseline": cpuRatios[2] as number,
			"firstToken.sqliteVsMemory": firstToken,
			"toolRun.sqliteVsMemory": toolRun,
		};
		const loaded = loadavg()[0] > cpus().length;
		console.log(
			`\nload average at the end: ${load()}${loaded ? ` — more than ${cpus().length} cores: the ratios are indicative only` : ""}; ` +
				`took ${fmt((Date.now() - startedAt) / 1000, 0)} s`,
		);
		if (RECORD) {
			const recorded: Recorded = {
				commit: head,
				date: new Date().toISOString().slice(0, 10),
				node: process.version,
				cores: cpus().length,
				loadAverage: loadavg().map((l) => Number(l.toFixed(1))),
				sessions: SESSIONS,
				figures,
			};
			// Arrays of numbers on one line, as the formatter (biome) keeps them.
			const json = JSON.stringify(recorded, null, "\t").replace(
				/\[\s+([^\]]*?)\s+\]/g,
				(_, inner: string) => `[${inner.split(/,\s+/).join(", ")}]`,
			);
			writeFileSync(FIGURES_FILE, `${json}\n`);
			console.log(`recorded in ${path.relative(REPO, FIGURES_FILE)}`);
			return 0;
		}
		const last = JSON.parse(readFileSync(FIGURES_FILE, "utf8")) as Recorded;
		console.log(
			`\nAgainst the recorded release figures (${last.commit}, ${last.date}, load ${last.loadAverage.join(", ")}), ` +
				`tolerance ${fmt(TOLERANCE * 100, 0)}%:`,
		);
		let worse = 0;
		for (const [name, now] of Object.entries(figures) as [keyof GuardFigures, number][]) {
			const then = last.figures[name];
			if (then === undefined) {
				console.log(`  new    ${name}: ${fmt(now)}x now, not recorded`);
				continue;
			}
			const drift = now / then;
			// Wall times swing with the machine's load far more than CPU times do (the same tree
			// twice at load 13: wall ratios 1.5-1.7x apart, CPU ratios within 4%), so on a loaded
			// machine only the CPU ratios can fail the guard.
			const judged = name.startsWith("concurrentCpu.") || !(loadedAtStart || loaded);
			const bad = judged && drift > 1 + TOLERANCE;
			if (bad) worse++;
			console.log(
				`  ${bad ? "WORSE" : judged ? "ok   " : "(not judged: loaded machine)"}  ${name}: ${fmt(now)}x now, ` +
					`${fmt(then)}x recorded (${fmt(drift)} of it)`,
			);
		}
		return worse > 0 ? 1 : 0;
	} finally {
		stopClient();
		rmSync(dbDir, { recursive: true, force: true });
	}
}

main().then(
	(code) => process.exit(code),
	(error) => {
		console.error(error);
		process.exit(2);
	},
);
