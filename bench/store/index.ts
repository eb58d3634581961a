/**
 * Session store benchmark: events/s appended through the SQLite store against the memory store,
 * in the same run, with the event sizes the server produces (compact `message_update` deltas of
 * ~100 bytes, full messages at `message_end`).
 *
 *   npx tsx bench/store/index.ts [--quick]
 *
 * Scenarios:
 * 1. raw: one session, appendEvent in a tight loop (store cost alone; the worst case for SQLite).
 * 2. server-paced, 1 stream: 10,000 deltas, one per `setImmediate` turn (the scripted model at
 *    0 ms delay yields between deltas), each serialised with JSON.stringify as the server does;
 *    message_start/message_end + a durable appendMessages per 200-delta message.
 * 3. server-paced, 100 concurrent sessions x 200 deltas, interleaved the same way.
 * Each scenario runs memory and SQLite alternately, 3 times; the median is reported, with the
 * event-loop delay p99/max seen during the SQLite runs (the cost of the batched flushes).
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { monitorEventLoopDelay } from "node:perf_hooks";
import type { AssistantMessage } from "../../src/ai/types.js";
import { createMemoryStore } from "../../src/store/memory.js";
import { openSqliteStore } from "../../src/store/sqlite/index.js";
import type { NewSession, SessionStore } from "../../src/store/types.js";

const quick = process.argv.includes("--quick");
const dir = mkdtempSync(join(tmpdir(), "wheelhouse-bench-store-"));
let dbCount = 0;

function session(id: string): NewSession {
	return {
		id,
		ownerId: null,
		model: "faux/echo",
		systemPrompt: "",
		thinkingLevel: "off",
		tools: [],
		toolExecution: "parallel",
		steeringMode: "one-at-a-time",
		followUpMode: "one-at-a-time",
		metadata: {},
		createdAt: Date.now(),
	};
}

function finalMessage(words: number): AssistantMessage {
	return {
		role: "assistant",
		content: [{ type: "text", text: "word ".repeat(words) }],
		api: "faux",
		provider: "faux",
		model: "echo",
		usage: {
			input: 10,
			output: words,
			cacheRead: 0,
			cacheWrite: 0,
			totalTokens: 10 + words,
			cost: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0, total: 0 },
		},
		stopReason: "stop",
		timestamp: Date.now(),
	};
}

type Kind = "memory" | "sqlite" | "sqlite-thread";

/** Opens a store as the server would at startup: opened, then warmed (writer thread booted) before traffic. */
async function openKind(kind: Kind): Promise<SessionStore> {
	if (kind === "memory") return createMemoryStore();
	const store = openSqliteStore({
		path: join(dir, `bench-${dbCount++}.db`),
		checkIntegrity: false,
		eventWriter: kind === "sqlite" ? "inline" : "thread",
		...(process.env.FLUSH_MS ? { flushIntervalMs: Number(process.env.FLUSH_MS) } : {}),
	});
	await store.createSession(session("warm-up"));
	store.appendEvent("warm-up", "agent_start", "{}");
	await store.flush();
	return store;
}

/** The bytes the server puts in `data:` for one text delta (delta only, no partial). */
const DELTA_EVENT = {
	type: "message_update",
	assistantMessageEvent: { type: "text_delta", contentIndex: 0, delta: "word " },
};

interface Result {
	events: number;
	ms: number;
	/** Main-thread busy time per event (event-loop utilisation): what persistence costs the streaming thread. */
	mainUs: number;
	/** Process CPU time (all threads) per event. */
	cpuUs: number;
	p99ms: number;
	maxms: number;
}

async function raw(kind: Kind, n: number): Promise<Result> {
	const store = await openKind(kind);
	await store.createSession(session("s"));
	const data = JSON.stringify(DELTA_EVENT).padEnd(100, " ");
	const probe = startProbe();
	for (let i = 0; i < n; i++) store.appendEvent("s", "message_update", data);
	await store.flush();
	const r = probe(n);
	await store.close();
	return r;
}

/** `sessions` streams of `deltas` each, one delta per session per event-loop turn, as the server would see them. */
async function paced(kind: Kind, sessions: number, deltas: number, perMessage = 200): Promise<Result> {
	const store = await openKind(kind);
	const ids = Array.from({ length: sessions }, (_, i) => `s${i}`);
	for (const id of ids) await store.createSession(session(id));
	const histogram = monitorEventLoopDelay({ resolution: 1 });
	let events = 0;
	const probe = startProbe();
	histogram.enable();
	await Promise.all(
		ids.map(async (id) => {
			store.appendEvent(id, "agent_start", '{"type":"agent_start"}');
			events++;
			for (let i = 0; i < deltas; i++) {
				if (i % perMessage === 0) {
					store.appendEvent(id, "message_start", JSON.stringify({ type: "message_start", message: finalMessage(0) }));
					events++;
				}
				store.appendEvent(id, "message_update", JSON.stringify(DELTA_EVENT));
				events++;
				if (i % perMessage === perMessage - 1 || i === deltas - 1) {
					const message = finalMessage(perMessage);
					store.appendEvent(id, "message_end", JSON.stringify({ type: "message_end", message }));
					store.appendMessages(id, [message]); // durable at the next barrier (here: the sync timer)
					events++;
				}
				await new Promise<void>((resolve) => setImmediate(resolve));
			}
			store.appendEvent(id, "agent_end", '{"type":"agent_end","messages":[]}');
			events++;
		}),
	);
	await store.flush();
	const r = probe(events);
	histogram.disable();
	await store.close();
	return { ...r, p99ms: histogram.percentile(99) / 1e6, maxms: histogram.max / 1e6 };
}

/** Starts measuring wall time, main-thread busy time and process CPU time; call the result with the event count. */
function startProbe(): (events: number) => Result {
	const t0 = performance.now();
	const elu0 = performance.eventLoopUtilization();
	const cpu0 = process.cpuUsage();
	return (events) => {
		const ms = performance.now() - t0;
		const elu = performance.eventLoopUtilization(elu0);
		const cpu = process.cpuUsage(cpu0);
		return {
			events,
			ms,
			mainUs: (elu.active * 1000) / events,
			cpuUs: (cpu.user + cpu.system) / events,
			p99ms: 0,
			maxms: 0,
		};
	};
}

function median(results: Result[]): Result {
	const sorted = [...results].sort((a, b) => a.events / a.ms - b.events / b.ms);
	return sorted[Math.floor(sorted.length / 2)] as Result;
}

async function compare(name: string, run: (kind: Kind) => Result | Promise<Result>): Promise<void> {
	const rounds = quick ? 1 : 3;
	const kinds: Kind[] = ["memory", "sqlite", "sqlite-thread"];
	const results = new Map<Kind, Result[]>(kinds.map((k) => [k, []]));
	await run("memory"); // warm-up (JIT, module init)
	for (let i = 0; i < rounds; i++) for (const k of kinds) results.get(k)?.push(await run(k));
	const rate = (r: Result) => Math.round((r.events / r.ms) * 1000);
	const m = median(results.get("memory") ?? []);
	const costs = (r: Result) =>
		`main thread ${r.mainUs.toFixed(2)} µs/ev (${((m.mainUs / r.mainUs) * 100).toFixed(1)}% of memory's ev per main-thread s), cpu ${r.cpuUs.toFixed(2)} µs/ev`;
	console.log(`${name}: memory ${rate(m)} ev/s, ${costs(m).replace(/ \(.*?\)/, "")}`);
	for (const k of ["sqlite", "sqlite-thread"] as const) {
		const s = median(results.get(k) ?? []);
		console.log(
			`  ${k === "sqlite" ? "sqlite (inline writes, default)" : "sqlite (writer thread)"}`.padEnd(36) +
				`${String(rate(s)).padStart(9)} ev/s   ${((rate(s) / rate(m)) * 100).toFixed(1)}% of memory   ${costs(s)}` +
				(s.maxms > 0 ? `   event-loop delay p99 ${s.p99ms.toFixed(1)} ms, max ${s.maxms.toFixed(1)} ms` : ""),
		);
	}
}

async function main(): Promise<void> {
	console.log(`store bench: node ${process.version}, ${quick ? "quick" : "3 rounds, median"}`);
	await compare("raw appendEvent, 1 session", (k) => raw(k, quick ? 50_000 : 200_000));
	await compare("paced, 1 stream x 10,000 deltas", (k) => paced(k, 1, quick ? 2_000 : 10_000));
	await compare("paced, 100 sessions x 200 deltas", (k) => paced(k, 100, 200));
	rmSync(dir, { recursive: true, force: true });
}

await main();
