/**
 * Where the CPU time and the allocations of metrics + tracing go, in a server's steady state: what
 * `--tracing` measures as a ratio, taken apart.
 *
 *   npx tsx bench/sse/observability-cost.ts   (BENCH_OBS_ROUNDS=20 jobs per server; BENCH_OBS_CPU_INTERVAL_US=250;
 *   BENCH_OBS_SAVE=<dir> keeps the profiles; BENCH_OBS_AGAINST=<checkout> adds a fourth server, metrics + tracing
 *   from that checkout, to compare a change with the code before it in the same run)
 *
 * Three servers up side by side (server-process.ts, memory store, bound to CPU 0 like `--tracing`'s):
 * everything off, a second one (what differs between the two is noise), and metrics + tracing on
 * with spans exported over OTLP/HTTP protobuf to the stand-in collector (otlp-receiver.ts). All are
 * warmed up; then V8's CPU profiler and its sampling heap profiler run in each over the measured jobs
 * only, run on each server in turn. A job
 * is a whole session's life, as a deployed server sees it: 100 sessions created, prompted at once
 * (200-token answers, streamed), deleted — three requests and five spans per session.
 *
 * Printed per session: server CPU time (process CPU, not the profile), and from the profiles the
 * busy time and the bytes allocated, split by who did the work. A sample is credited to the first
 * frame up its stack that is Wheelhouse's own code or an observability library; Node's and other
 * libraries' frames (fastify, the socket) count for the code that called them:
 *
 * - `OTLP export`: the exporter's encoding and sending (its frames are on the stack);
 * - `OpenTelemetry SDK`: the SDK's span work (start, attributes, end, the batch processor);
 * - `tracing hooks`: the rest of src/server/observability/tracing (request, run, model-call and tool spans);
 * - `metrics`: src/server/observability/metrics.ts and prom-client;
 * - `GC`: garbage collection (not attributable by the profile: compare the two servers);
 * - `server`: everything else.
 *
 * The profilers slow both servers alike; the per-session figures are for comparing the parts, the
 * ratios of `--tracing` are the throughput figures.
 */
import type { ChildProcess } from "node:child_process";
import { once } from "node:events";
import { writeFileSync } from "node:fs";
import { cpus } from "node:os";
import path from "node:path";
import type { ClientJob, ClientResult } from "./client.js";
import { ask, createSessions, deleteSessions, forkTs, next, pinToCpu, promptRequest, words } from "./harness.js";
import type { ReceiverReply } from "./otlp-receiver.js";
import type { ServerReply, ServerStart } from "./server-process.js";

const ROUNDS = Number(process.env.BENCH_OBS_ROUNDS ?? 20);
const CPU_INTERVAL_US = Number(process.env.BENCH_OBS_CPU_INTERVAL_US ?? 250);
/** BENCH_OBS_SAVE=<dir>: also write the profiles there (`.cpuprofile`, `.heapprofile`: Chrome DevTools opens both). */
const SAVE_DIR = process.env.BENCH_OBS_SAVE;
/** BENCH_OBS_AGAINST=<checkout>: a fourth server, metrics + tracing as that checkout has them (its own node_modules or a link). */
const AGAINST = process.env.BENCH_OBS_AGAINST;
const WARMUP_JOBS = 6;
const SESSIONS = 100;
const TOKENS = 200;

interface CallFrame {
	functionName: string;
	url: string;
}
interface CpuProfile {
	nodes: { id: number; callFrame: CallFrame; children?: number[] }[];
	samples: number[];
	timeDeltas: number[];
}
interface HeapNode {
	callFrame: CallFrame;
	selfSize: number;
	children: HeapNode[];
}

const PARTS = ["OTLP export", "OpenTelemetry SDK", "tracing hooks", "metrics", "GC", "server"] as const;
type Part = (typeof PARTS)[number];

/** The part a frame's code belongs to; undefined for Node's and other libraries' code (its caller decides). */
function partOfFrame(frame: CallFrame): Part | undefined {
	const { url, functionName } = frame;
	if (functionName === "(garbage collector)") return "GC";
	if (/@opentelemetry\/(otlp-|exporter-)/.test(url)) return "OTLP export";
	if (url.includes("@opentelemetry/")) return "OpenTelemetry SDK";
	if (url.includes("prom-client") || url.includes("/src/server/metrics")) return "metrics";
	if (url.includes("/src/server/observability/tracing/")) return "tracing hooks";
	if (url.includes("/src/") || url.includes("/bench/")) return "server";
	return undefined;
}

/** The part of a stack (leaf first): its first own frame, or export whenever the exporter is on it. */
function partOfStack(stack: CallFrame[]): Part {
	let part: Part | undefined;
	for (const frame of stack) {
		const own = partOfFrame(frame);
		if (own === "OTLP export") return own;
		part ??= own;
	}
	return part ?? "server";
}

function cpuByPart(profile: CpuProfile): Map<Part, number> {
	const nodes = new Map(profile.nodes.map((node) => [node.id, node]));
	const parent = new Map<number, number>();
	for (const node of profile.nodes) for (const child of node.children ?? []) parent.set(child, node.id);
	const byNode = new Map<number, Part | "idle">();
	const partOf = (id: number): Part | "idle" => {
		let part = byNode.get(id);
		if (part) return part;
		const name = nodes.get(id)!.callFrame.functionName;
		if (name === "(idle)") part = "idle";
		else {
			const stack: CallFrame[] = [];
			for (let at: number | undefined = id; at !== undefined; at = parent.get(at)) stack.push(nodes.get(at)!.callFrame);
			part = partOfStack(stack);
		}
		byNode.set(id, part);
		return part;
	};
	const out = new Map<Part, number>();
	for (let i = 0; i < profile.samples.length; i++) {
		const part = partOf(profile.samples[i]);
		if (part !== "idle") out.set(part, (out.get(part) ?? 0) + (profile.timeDeltas[i] ?? 0));
	}
	return out;
}

function heapByPart(head: HeapNode): Map<Part, number> {
	const out = new Map<Part, number>();
	const walk = (node: HeapNode, stack: CallFrame[]) => {
		const here = [node.callFrame, ...stack];
		if (node.selfSize > 0) {
			const part = partOfStack(here);
			out.set(part, (out.get(part) ?? 0) + node.selfSize);
		}
		for (const child of node.children) walk(child, here);
	};
	walk(head, []);
	return out;
}

// --- processes ---------------------------------------------------------------------------------

async function startServer(start: ServerStart, checkout?: string): Promise<{ child: ChildProcess; url: string }> {
	const child = forkTs("server-process.ts", checkout);
	child.send(start);
	const { url } = await next<Extract<ServerReply, { type: "ready" }>>(child, "ready");
	pinToCpu(child.pid!, 0);
	return { child, url };
}

const receiver = forkTs("otlp-receiver.ts");
const client = forkTs("client.ts");
const children: ChildProcess[] = [receiver, client];

async function runClient(job: ClientJob): Promise<ClientResult> {
	const result = once(client, "message") as Promise<[ClientResult]>;
	client.send(job);
	return (await result)[0];
}

/** One session life per session: created, prompted (all at once, streamed), deleted. Resolves to the events streamed. */
async function job(url: string): Promise<number> {
	const ids = await createSessions(url, SESSIONS);
	const message = words(TOKENS);
	const result = await runClient({ requests: ids.map((id) => promptRequest(url, id, message)) });
	if (result.error) throw new Error(`client: ${result.error}`);
	await deleteSessions(url, ids);
	return result.streams.reduce((sum, stream) => sum + stream.events, 0);
}

try {
	const { url: collector } = await next<Extract<ReceiverReply, { type: "ready" }>>(receiver, "ready");
	const off: ServerStart = { kind: "wheelhouse", store: "memory", metrics: "off" };
	const on: ServerStart = { ...off, metrics: "on", otlpEndpoint: collector };
	const variants: { name: string; start: ServerStart; checkout?: string }[] = [
		{ name: "everything off", start: off },
		{ name: "off again (A/A)", start: off },
		{ name: "metrics+tracing", start: on },
	];
	if (AGAINST) variants.push({ name: "m+t, against", start: on, checkout: path.resolve(AGAINST) });
	const servers: { name: string; child: ChildProcess; url: string; cpuUs: number; events: number }[] = [];
	for (const variant of variants) {
		const server = await startServer(variant.start, variant.checkout);
		children.push(server.child);
		servers.push({ ...variant, ...server, cpuUs: 0, events: 0 });
	}
	for (let w = 0; w < WARMUP_JOBS; w++) for (const server of servers) await job(server.url);
	for (const server of servers)
		await ask(server.child, { type: "profile-start", cpuIntervalUs: CPU_INTERVAL_US }, "profiling");
	for (let round = 0; round < ROUNDS; round++) {
		// Each server first, and after each other one, in turn.
		const order = servers.map((_, i) => servers[(round + (round % 2 === 0 ? i : servers.length - i)) % servers.length]);
		for (const server of order) {
			const before = (await ask(server.child, { type: "cpu" }, "cpu")).micros;
			server.events += await job(server.url);
			server.cpuUs += (await ask(server.child, { type: "cpu" }, "cpu")).micros - before;
		}
	}
	const sessions = ROUNDS * SESSIONS;
	console.log(
		`bench/sse observability-cost — node ${process.version}, ${cpus().length} cores; ${ROUNDS} jobs per server of ` +
			`${SESSIONS} sessions x ${TOKENS} tokens (created, streamed, deleted), profiled (CPU every ${CPU_INTERVAL_US} µs)\n`,
	);
	const rows: { name: string; cpu: Map<Part, number>; heap: Map<Part, number> }[] = [];
	for (const server of servers) {
		const { cpu, heap } = await ask(server.child, { type: "profile-stop" }, "profiled");
		if (SAVE_DIR) {
			const base = path.join(SAVE_DIR, server.name.replace(/[^a-z+]+/gi, "-"));
			writeFileSync(`${base}.cpuprofile`, JSON.stringify(cpu));
			writeFileSync(`${base}.heapprofile`, JSON.stringify(heap));
		}
		rows.push({
			name: server.name,
			cpu: cpuByPart(cpu as CpuProfile),
			heap: heapByPart((heap as { head: HeapNode }).head),
		});
		console.log(
			`${server.name.padEnd(16)} process CPU ${(server.cpuUs / sessions).toFixed(0)} µs per session ` +
				`(${(server.cpuUs / server.events).toFixed(2)} µs per event, ${(server.events / sessions).toFixed(0)} events per session)`,
		);
	}
	const offMean = (servers[0].cpuUs + servers[1].cpuUs) / 2;
	console.log(
		`process CPU against the mean of the two off servers: ${servers
			.slice(1)
			.map((server) => `${server.name} ${(server.cpuUs / offMean).toFixed(3)}`)
			.join(", ")}`,
	);
	const sum = (map: Map<Part, number>) => [...map.values()].reduce((a, b) => a + b, 0);
	console.log(`\nper session, from the profiles: busy µs | allocated KB`);
	console.log(`${"".padEnd(18)}${rows.map((row) => row.name.padStart(34)).join("")}`);
	for (const part of [...PARTS, "total"] as const) {
		const cells = rows.map((row) => {
			const us = part === "total" ? sum(row.cpu) : (row.cpu.get(part) ?? 0);
			const kb = part === "total" ? sum(row.heap) : (row.heap.get(part) ?? 0);
			return `${(us / sessions).toFixed(1).padStart(20)} | ${(kb / 1024 / sessions).toFixed(1).padStart(10)}`;
		});
		console.log(`${part.padEnd(18)}${cells.join("")}`);
	}
} finally {
	for (const child of children) child.kill();
}
