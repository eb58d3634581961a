/**
 * What the server allocates per streamed delta: the bytes a text delta costs on its way from the
 * model's stream to the socket (the agent loop, the session's log, the observers, the SSE writer).
 *
 *   npx tsx bench/sse/alloc-per-event.ts   (BENCH_ALLOC_ROUNDS=8 jobs per shape; BENCH_ALLOC_TOP=25 functions
 *   listed; BENCH_ALLOC_AGAINST=<checkout> adds a second server from that checkout, measured in the same run)
 *
 * The server (server-process.ts, memory store, metrics on unless BENCH_ALLOC_METRICS=off, bound to CPU 0) runs jobs of the guard's
 * shape — 100 sessions created, prompted at once with streamed answers, deleted — under V8's sampling
 * heap profiler with the objects the collections freed counted, twice: with long answers (LONG
 * tokens) and with short ones (SHORT tokens). Everything but the deltas is the same in both, so the
 * difference of the bytes, over the difference of the events streamed, is what one delta allocates.
 * The functions listed are those that allocated the most in the long jobs (self bytes per event).
 */
import type { ChildProcess } from "node:child_process";
import { once } from "node:events";
import path from "node:path";
import type { ClientJob, ClientResult } from "./client.js";
import { ask, createSessions, deleteSessions, forkTs, next, pinToCpu, promptRequest, words } from "./harness.js";
import type { ServerReply, ServerStart } from "./server-process.js";

const ROUNDS = Number(process.env.BENCH_ALLOC_ROUNDS ?? 8);
const TOP = Number(process.env.BENCH_ALLOC_TOP ?? 25);
const AGAINST = process.env.BENCH_ALLOC_AGAINST;
/** BENCH_ALLOC_METRICS=off: the server without Prometheus metrics (on by default, as the guard runs it). */
const METRICS = process.env.BENCH_ALLOC_METRICS === "off" ? "off" : "on";
const WARMUP_JOBS = 4;
const SESSIONS = 100;
const LONG = 200;
const SHORT = 10;

interface CallFrame {
	functionName: string;
	url: string;
	lineNumber: number;
}
interface HeapNode {
	callFrame: CallFrame;
	selfSize: number;
	children: HeapNode[];
}

/**
 * BENCH_ALLOC_NODE_FLAGS: more flags for the server's node, e.g. `--no-turbo-inlining`: the profile
 * credits an allocation to the physical frame, so what an inlined function allocates shows under its
 * caller; without inlining it shows under its own name (escape analysis then removes less: the
 * totals are those of the default run).
 */
const NODE_FLAGS = (process.env.BENCH_ALLOC_NODE_FLAGS ?? "").split(" ").filter((flag) => flag !== "");

const client = forkTs("client.ts");
const children: ChildProcess[] = [client];

async function job(url: string, tokens: number): Promise<number> {
	const ids = await createSessions(url, SESSIONS);
	const result = once(client, "message") as Promise<[ClientResult]>;
	client.send({ requests: ids.map((id) => promptRequest(url, id, words(tokens))) } satisfies ClientJob);
	const [done] = await result;
	if (done.error) throw new Error(`client: ${done.error}`);
	await deleteSessions(url, ids);
	return done.streams.reduce((sum, stream) => sum + stream.events, 0);
}

function totalBytes(node: HeapNode): number {
	let bytes = node.selfSize;
	for (const child of node.children) bytes += totalBytes(child);
	return bytes;
}

/** Self bytes by function (name, file, line), the file relative to its checkout. */
function bytesByFunction(head: HeapNode): Map<string, number> {
	const out = new Map<string, number>();
	const walk = (node: HeapNode) => {
		if (node.selfSize > 0) {
			const { functionName, url, lineNumber } = node.callFrame;
			const file = url.replace(/^.*?\/(src|bench|node_modules)\//, "$1/");
			const key = `${functionName || "(anonymous)"} ${file}:${lineNumber + 1}`;
			out.set(key, (out.get(key) ?? 0) + node.selfSize);
		}
		for (const child of node.children) walk(child);
	};
	walk(head);
	return out;
}

/** Profiles `ROUNDS` jobs of `tokens`-token answers: the bytes allocated, the events streamed, the heap profile. */
async function profiled(
	server: ChildProcess,
	url: string,
	tokens: number,
): Promise<{ bytes: number; events: number; head: HeapNode }> {
	await ask(server, { type: "profile-start", cpuIntervalUs: 100_000 }, "profiling");
	let events = 0;
	for (let round = 0; round < ROUNDS; round++) events += await job(url, tokens);
	const { heap } = await ask(server, { type: "profile-stop" }, "profiled");
	const head = (heap as { head: HeapNode }).head;
	return { bytes: totalBytes(head), events, head };
}

try {
	const variants: { name: string; checkout?: string }[] = [{ name: "this checkout" }];
	if (AGAINST) variants.push({ name: path.resolve(AGAINST), checkout: path.resolve(AGAINST) });
	for (const variant of variants) {
		const child = forkTs("server-process.ts", variant.checkout, NODE_FLAGS);
		children.push(child);
		child.send({ kind: "wheelhouse", store: "memory", metrics: METRICS } satisfies ServerStart);
		const { url } = await next<Extract<ServerReply, { type: "ready" }>>(child, "ready");
		pinToCpu(child.pid!, 0);
		for (let w = 0; w < WARMUP_JOBS; w++) await job(url, LONG);
		const long = await profiled(child, url, LONG);
		const short = await profiled(child, url, SHORT);
		const perDelta = (long.bytes - short.bytes) / (long.events - short.events);
		console.log(
			`\n${variant.name}: ${ROUNDS} jobs x ${SESSIONS} sessions, ${LONG} vs ${SHORT} tokens: ` +
				`${(long.bytes / long.events).toFixed(0)} B per event in the long jobs (${long.events} events), ` +
				`${perDelta.toFixed(0)} B per added delta`,
		);
		const rows = [...bytesByFunction(long.head)].sort((a, b) => b[1] - a[1]).slice(0, TOP);
		for (const [fn, bytes] of rows) console.log(`${(bytes / long.events).toFixed(1).padStart(9)} B/event  ${fn}`);
	}
} finally {
	for (const child of children) child.kill();
}
