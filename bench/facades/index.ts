/**
 * bench/facades: what each streaming API of the server costs for the same answer, against the
 * native `/v1` SSE stream, in one run: tokens/s, events/s, bytes per token and server CPU per token.
 *
 *   npx tsx bench/facades/index.ts [--quick]
 *     BENCH_FACADES_REPEATS (pairs per facade, default 7, 2 with --quick), BENCH_FACADES_TOKENS (one stream, default 2000),
 *     BENCH_FACADES_STREAMS (concurrent streams, default 100) of BENCH_FACADES_SHORT tokens (default 200)
 *
 * Every facade is a driver in drivers/ (see driver.ts); adding one is adding a file there. Three
 * processes on loopback, as in bench/sse (whose server and client processes this reuses): this
 * orchestrator, one real server (buildApp, memory store, the stand-in `faux/echo` at 0 ms, which
 * repeats the prompt one word per delta, `WHEELHOUSE_PI_PROXY=on`), and the measuring client, which
 * counts events and deltas in the bytes without parsing. Each facade is measured in pairs with the
 * native stream, back to back in alternating order, and its "vs native" figures are the median of
 * the per-pair ratios, so that load drift on a shared machine cancels out instead of landing on one
 * facade; the absolute figures are medians over all runs. Bytes per token do not depend on load.
 * Setup requests (the native stream's session) are not timed; the AG-UI and OpenAI facades create
 * their session inside the timed request, as their clients would. bench/facades/agui.ts, beside
 * this, reads one AG-UI run and its native stream at once and times the encoders alone.
 */
import { type ChildProcess, fork } from "node:child_process";
import { once } from "node:events";
import { readdirSync } from "node:fs";
import { cpus, loadavg } from "node:os";
import path from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import type { ClientJob, ClientResult } from "../sse/client.js";
import type { ServerReply, ServerStart } from "../sse/server-process.js";
import type { FacadeDriver } from "./driver.js";

const here = path.dirname(fileURLToPath(import.meta.url));
const sseDir = path.join(here, "../sse");
const QUICK = process.argv.includes("--quick");
const REPEATS = Number(process.env.BENCH_FACADES_REPEATS ?? (QUICK ? 2 : 7));
const LONG = Number(process.env.BENCH_FACADES_TOKENS ?? 2000);
const STREAMS = Number(process.env.BENCH_FACADES_STREAMS ?? 100);
const SHORT = Number(process.env.BENCH_FACADES_SHORT ?? 200);

function forkTs(file: string): ChildProcess {
	return fork(file, [], { execArgv: ["--import", "tsx"], stdio: ["ignore", "inherit", "inherit", "ipc"] });
}

/** Every driver in drivers/, the baseline first, the rest by name. */
async function loadDrivers(): Promise<FacadeDriver[]> {
	const dir = path.join(here, "drivers");
	const files = readdirSync(dir).filter((f) => f.endsWith(".ts"));
	const drivers: FacadeDriver[] = [];
	for (const file of files.sort()) {
		const mod = (await import(pathToFileURL(path.join(dir, file)).href)) as { driver?: FacadeDriver };
		if (!mod.driver) throw new Error(`bench/facades/drivers/${file} exports no \`driver\``);
		drivers.push(mod.driver);
	}
	const baselines = drivers.filter((d) => d.baseline);
	if (baselines.length !== 1) throw new Error("exactly one driver must be the baseline");
	return [...baselines, ...drivers.filter((d) => !d.baseline)];
}

function words(n: number): string {
	return Array.from({ length: n }, (_, i) => `w${i}`).join(" ");
}

// --- the server and client processes ------------------------------------------------------------

const server = forkTs(path.join(sseDir, "server-process.ts"));
const client = forkTs(path.join(sseDir, "client.ts"));

function ask<T extends ServerReply["type"]>(
	command: object | undefined,
	type: T,
): Promise<Extract<ServerReply, { type: T }>> {
	return new Promise((resolve, reject) => {
		const onMessage = (message: ServerReply) => {
			if (message.type === "error") reject(new Error(message.message));
			if (message.type !== type) return;
			server.off("message", onMessage);
			resolve(message as Extract<ServerReply, { type: T }>);
		};
		server.on("message", onMessage);
		if (command) server.send(command);
	});
}

async function runClient(job: ClientJob): Promise<ClientResult> {
	client.send(job);
	const [result] = (await once(client, "message")) as [ClientResult];
	if (result.error) throw new Error(`client: ${result.error}`);
	for (const s of result.streams) if (s.status !== 200) throw new Error(`client: HTTP ${s.status}`);
	return result;
}

// --- measurements -------------------------------------------------------------------------------

interface Figures {
	tokensPerSec: number;
	eventsPerSec: number;
	eventsPerToken: number;
	bytesPerToken: number;
	cpuUsPerToken: number;
	/** Deltas counted against the tokens asked for (1 when every token arrived as one delta). */
	deltaRatio: number;
}

/** Runs `count` streams of `tokens` tokens through `driver` at once. */
async function measure(url: string, driver: FacadeDriver, count: number, tokens: number): Promise<Figures> {
	const prompt = words(tokens);
	const requests = await Promise.all(Array.from({ length: count }, () => driver.prepare(url, prompt)));
	const before = await ask({ type: "cpu" }, "cpu");
	const result = await runClient({ requests, deltaNeedle: driver.deltaNeedle });
	const after = await ask({ type: "cpu" }, "cpu");
	let events = 0;
	let bytes = 0;
	let deltas = 0;
	for (const s of result.streams) {
		events += s.events;
		bytes += s.bytes;
		deltas += s.textDeltas;
	}
	const seconds = result.wallMs / 1000;
	return {
		tokensPerSec: deltas / seconds,
		eventsPerSec: events / seconds,
		eventsPerToken: events / deltas,
		bytesPerToken: bytes / deltas,
		cpuUsPerToken: (after.micros - before.micros) / deltas,
		deltaRatio: deltas / (count * tokens),
	};
}

function median(values: number[]): number {
	const sorted = [...values].sort((a, b) => a - b);
	return sorted[Math.floor(sorted.length / 2)]!;
}

function medians(runs: Figures[]): Figures {
	const pick = (key: keyof Figures) => median(runs.map((r) => r[key]));
	return {
		tokensPerSec: pick("tokensPerSec"),
		eventsPerSec: pick("eventsPerSec"),
		eventsPerToken: pick("eventsPerToken"),
		bytesPerToken: pick("bytesPerToken"),
		cpuUsPerToken: pick("cpuUsPerToken"),
		deltaRatio: pick("deltaRatio"),
	};
}

const fmt = (n: number, digits = 0) =>
	n.toLocaleString("en-US", { minimumFractionDigits: digits, maximumFractionDigits: digits });
const pct = (n: number) => `${(n * 100).toFixed(1)}%`;
const times = (n: number) => `${n.toFixed(2)}x`;

/** One facade's results: every run of it, and its ratios to the native run it was paired with. */
interface Results {
	runs: Figures[];
	/** Per pair: the facade's figure divided by the native stream's. */
	ratios: Figures[];
}

function ratio(facade: Figures, native: Figures): Figures {
	return {
		tokensPerSec: facade.tokensPerSec / native.tokensPerSec,
		eventsPerSec: facade.eventsPerSec / native.eventsPerSec,
		eventsPerToken: facade.eventsPerToken / native.eventsPerToken,
		bytesPerToken: facade.bytesPerToken / native.bytesPerToken,
		cpuUsPerToken: facade.cpuUsPerToken / native.cpuUsPerToken,
		deltaRatio: facade.deltaRatio / native.deltaRatio,
	};
}

function table(title: string, drivers: FacadeDriver[], results: Results[]): string {
	const rows = drivers.map((driver, i) => {
		const f = medians(results[i]!.runs);
		const r = driver.baseline ? ratio(f, f) : medians(results[i]!.ratios);
		const all = Math.min(...results[i]!.runs.map((run) => run.deltaRatio));
		return [
			driver.name,
			fmt(f.tokensPerSec),
			pct(r.tokensPerSec),
			fmt(f.eventsPerSec),
			pct(r.eventsPerSec),
			fmt(f.eventsPerToken, 2),
			fmt(f.bytesPerToken, 1),
			times(r.bytesPerToken),
			fmt(f.cpuUsPerToken, 2),
			times(r.cpuUsPerToken),
			all === 1 ? "yes" : `NO (${all.toFixed(3)})`,
		];
	});
	const head = [
		"facade",
		"tokens/s",
		"vs native",
		"events/s",
		"vs native",
		"events/token",
		"bytes/token",
		"vs native",
		"server CPU µs/token",
		"vs native",
		"all tokens",
	];
	const widths = head.map((h, c) => Math.max(h.length, ...rows.map((r) => r[c]!.length)));
	const line = (cells: string[]) =>
		`| ${cells.map((cell, c) => (c === 0 ? cell.padEnd(widths[c]!) : cell.padStart(widths[c]!))).join(" | ")} |`;
	return [title, line(head), `|${widths.map((w) => "-".repeat(w + 2)).join("|")}|`, ...rows.map(line)].join("\n");
}

async function main(): Promise<void> {
	const drivers = await loadDrivers();
	const start: ServerStart = { kind: "wheelhouse", store: "memory", piProxy: "on" };
	server.send(start);
	const { url } = await ask(undefined, "ready");

	// Warm-up: every path once, so the first measured facade does not pay the JIT for all.
	for (const driver of drivers) await measure(url, driver, 4, SHORT);

	const scenarios = [
		{ title: `One stream of ${fmt(LONG)} tokens`, count: 1, tokens: LONG },
		{ title: `${STREAMS} concurrent streams of ${fmt(SHORT)} tokens`, count: STREAMS, tokens: SHORT },
	];
	const others = drivers.slice(1);
	const results = scenarios.map(() => drivers.map((): Results => ({ runs: [], ratios: [] })));
	for (let repeat = 0; repeat < REPEATS; repeat++) {
		for (let k = 0; k < others.length; k++) {
			const i = 1 + ((k + repeat) % others.length);
			for (const [s, scenario] of scenarios.entries()) {
				// One pair: the facade and the native stream back to back, which one first alternating.
				const nativeFirst = (repeat + k) % 2 === 0;
				const first = await measure(url, nativeFirst ? drivers[0]! : drivers[i]!, scenario.count, scenario.tokens);
				const second = await measure(url, nativeFirst ? drivers[i]! : drivers[0]!, scenario.count, scenario.tokens);
				const [native, facade] = nativeFirst ? [first, second] : [second, first];
				results[s]![0]!.runs.push(native);
				results[s]![i]!.runs.push(facade);
				results[s]![i]!.ratios.push(ratio(facade, native));
			}
		}
	}

	console.log(
		`bench/facades — node ${process.version}, ${cpus().length} cores, load average ${loadavg()[0]!.toFixed(1)}, ${REPEATS} pairs per facade with the native stream, faux/echo at 0 ms`,
	);
	console.log("(absolute figures: median of all runs; vs native: median of the per-pair ratios)");
	for (const [s, scenario] of scenarios.entries()) {
		console.log();
		console.log(table(scenario.title, drivers, results[s]!));
	}
	console.log();
	console.log(`load average at the end: ${loadavg()[0]!.toFixed(1)}`);
}

try {
	await main();
} finally {
	server.kill("SIGTERM");
	client.kill("SIGTERM");
}
