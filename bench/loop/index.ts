/**
 * Events per second through `agentLoop`, ours and (when installed) pi-agent-core 0.73.1's.
 *
 *   npx tsx --expose-gc bench/loop/index.ts
 *   REF_AGENT_CORE=/path/to/node_modules/@mariozechner/pi-agent-core npx tsx --expose-gc bench/loop/index.ts
 *
 * Scenarios (no-op consumer, scripted stream functions, no I/O):
 *   (a) one response of 10,000 text deltas;
 *   (b) 200 turns of 4 parallel tool calls each (no-op tools), then a final text turn.
 * Each implementation runs with its own stack's assistant-event stream class (ours / pi-ai's);
 * the reference is also run with our stream class to separate loop cost from stream cost.
 * The reference is the dev dependency @mariozechner/pi-agent-core 0.73.1 (with the pi-ai installed
 * beside it); REF_AGENT_CORE points at another install instead. Figures: bench/loop/results.md.
 */
import { existsSync } from "node:fs";
import { createRequire } from "node:module";
import { dirname, join } from "node:path";
import { pathToFileURL } from "node:url";
import { agentLoop } from "../../src/agent/loop.js";
import type { AgentTool } from "../../src/agent/types.js";
import { AssistantMessageEventStream } from "../../src/ai/event-stream.js";
import type { AssistantMessage, Model } from "../../src/ai/types.js";

type AnyStream = { push(event: unknown): void; end(result?: unknown): void };
type StreamFactory = () => AnyStream;
type LoopFn = (
	prompts: any[],
	context: any,
	config: any,
	signal?: AbortSignal,
	streamFn?: any,
) => AsyncIterable<unknown>;

const DELTAS = 10_000;
const TOOL_TURNS = 200;
const CALLS_PER_TURN = 4;
/** Shared 2-core machines are noisy: many interleaved rounds, medians and bests reported. */
const WARMUP = 5;
const ROUNDS = 25;

const model: Model<"bench"> = {
	id: "bench",
	name: "bench",
	api: "bench",
	provider: "bench",
	baseUrl: "",
	reasoning: false,
	input: ["text"],
	cost: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0 },
	contextWindow: 1_000_000,
	maxTokens: 1_000,
};

function emptyMessage(): AssistantMessage {
	return {
		role: "assistant",
		content: [],
		api: "bench",
		provider: "bench",
		model: "bench",
		usage: {
			input: 0,
			output: 0,
			cacheRead: 0,
			cacheWrite: 0,
			totalTokens: 0,
			cost: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0, total: 0 },
		},
		stopReason: "stop",
		timestamp: Date.now(),
	};
}

/** Like a real provider: one mutable `partial`, pushed with every event. */
function textResponse(createStream: StreamFactory, deltas: number): AnyStream {
	const stream = createStream();
	const partial = emptyMessage();
	stream.push({ type: "start", partial });
	const block = { type: "text" as const, text: "" };
	partial.content.push(block);
	stream.push({ type: "text_start", contentIndex: 0, partial });
	for (let i = 0; i < deltas; i++) {
		const delta = i % 2 === 0 ? "word " : "token ";
		block.text += delta;
		stream.push({ type: "text_delta", contentIndex: 0, delta, partial });
	}
	stream.push({ type: "text_end", contentIndex: 0, content: block.text, partial });
	stream.push({ type: "done", reason: "stop", message: partial });
	return stream;
}

function toolResponse(createStream: StreamFactory, turn: number): AnyStream {
	const stream = createStream();
	const partial = emptyMessage();
	stream.push({ type: "start", partial });
	for (let i = 0; i < CALLS_PER_TURN; i++) {
		const call = { type: "toolCall" as const, id: `t${turn}_${i}`, name: "noop", arguments: {} as Record<string, any> };
		partial.content.push(call);
		stream.push({ type: "toolcall_start", contentIndex: i, partial });
		stream.push({ type: "toolcall_delta", contentIndex: i, delta: `{"i":${i}}`, partial });
		call.arguments = { i };
		stream.push({ type: "toolcall_end", contentIndex: i, toolCall: call, partial });
	}
	partial.stopReason = "toolUse";
	stream.push({ type: "done", reason: "toolUse", message: partial });
	return stream;
}

const noopTool: AgentTool<any> = {
	name: "noop",
	label: "noop",
	description: "does nothing",
	parameters: { type: "object", properties: { i: { type: "number" } }, required: ["i"] } as any,
	execute: async () => ({ content: [{ type: "text", text: "ok" }], details: {} }),
};

interface Scenario {
	name: string;
	run(loop: LoopFn, createStream: StreamFactory): Promise<number>;
}

async function drive(loop: LoopFn, streamFn: unknown, tools: AgentTool<any>[]): Promise<number> {
	const prompt = { role: "user", content: "go", timestamp: Date.now() };
	const context = { systemPrompt: "", messages: [], tools };
	const config = { model, convertToLlm: (messages: unknown[]) => messages };
	let events = 0;
	for await (const _event of loop([prompt], context, config, undefined, streamFn)) events++;
	return events;
}

const scenarios: Scenario[] = [
	{
		name: `(a) 1 response x ${DELTAS.toLocaleString("en")} text deltas`,
		run: (loop, createStream) => drive(loop, () => textResponse(createStream, DELTAS), []),
	},
	{
		name: `(b) ${TOOL_TURNS} turns x ${CALLS_PER_TURN} parallel tool calls`,
		run: (loop, createStream) => {
			let turn = 0;
			const streamFn = () => (turn++ < TOOL_TURNS ? toolResponse(createStream, turn) : textResponse(createStream, 1));
			return drive(loop, streamFn, [noopTool]);
		},
	},
];

interface Contender {
	name: string;
	loop: LoopFn;
	createStream: StreamFactory;
}

const gc = (globalThis as { gc?: () => void }).gc;

interface Measurement {
	eventsPerSecond: number;
	events: number;
	ms: number;
	heapUsedMB: number;
}

/** Heap still live after a full collection (needs --expose-gc), i.e. what the runs retained. */
function retainedHeapMB(): string {
	if (!gc) return "n/a (run with --expose-gc)";
	gc();
	return `${(process.memoryUsage().heapUsed / 1024 / 1024).toFixed(1)} MB`;
}

async function measure(scenario: Scenario, contender: Contender): Promise<Measurement> {
	// No forced gc() here: a full collection before every run makes V8 re-warm and slows the runs
	// down many times over (results.md).
	const start = process.hrtime.bigint();
	const events = await scenario.run(contender.loop, contender.createStream);
	const ms = Number(process.hrtime.bigint() - start) / 1e6;
	// Heap right after the run, before collection: what the run left live plus its garbage.
	const heapUsedMB = process.memoryUsage().heapUsed / 1024 / 1024;
	return { eventsPerSecond: (events / ms) * 1000, events, ms, heapUsedMB };
}

function median(values: number[]): number {
	const sorted = [...values].sort((a, b) => a - b);
	return sorted[Math.floor(sorted.length / 2)] as number;
}

/** The dev dependency's folder, or undefined when it is not installed. */
function installedReference(): string | undefined {
	try {
		return dirname(createRequire(import.meta.url).resolve("@mariozechner/pi-agent-core/package.json"));
	} catch {
		return undefined;
	}
}

async function loadReference(): Promise<Contender[]> {
	const dir = process.env.REF_AGENT_CORE ?? installedReference();
	if (!dir) {
		console.log(
			"Reference comparison skipped: @mariozechner/pi-agent-core@0.73.1 is not installed (npm ci with dev dependencies), and REF_AGENT_CORE is not set\n",
		);
		return [];
	}
	const entry = join(dir, "dist/index.js");
	const piAiEntry = join(dir, "..", "pi-ai", "dist", "index.js");
	if (!existsSync(entry)) {
		console.log(`Reference comparison skipped: ${entry} does not exist.\n`);
		return [];
	}
	const ref = await import(pathToFileURL(entry).href);
	const contenders: Contender[] = [];
	if (existsSync(piAiEntry)) {
		const piAi = await import(pathToFileURL(piAiEntry).href);
		contenders.push({
			name: "reference (pi-ai stream)",
			loop: ref.agentLoop,
			createStream: () => piAi.createAssistantMessageEventStream(),
		});
	}
	contenders.push({
		name: "reference (our stream)",
		loop: ref.agentLoop,
		createStream: () => new AssistantMessageEventStream(),
	});
	return contenders;
}

async function main(): Promise<void> {
	const ours: Contender = {
		name: "wheelhouse",
		loop: agentLoop as LoopFn,
		createStream: () => new AssistantMessageEventStream(),
	};
	const contenders = [ours, ...(await loadReference())];
	console.log(
		`node ${process.version}, ${WARMUP} warm-up + ${ROUNDS} measured rounds per scenario, medians; heap = heapUsed right after a run;\nbest = least-disturbed run, the steadier figure on a loaded machine\n`,
	);
	for (const scenario of scenarios) {
		console.log(scenario.name);
		// Warm-up, then interleave contenders round by round so drift hits all of them alike.
		for (let i = 0; i < WARMUP; i++) for (const contender of contenders) await measure(scenario, contender);
		const results = new Map<string, Measurement[]>(contenders.map((c) => [c.name, []]));
		for (let round = 0; round < ROUNDS; round++) {
			for (const contender of contenders) results.get(contender.name)?.push(await measure(scenario, contender));
		}
		const medians = new Map<string, number>();
		const bests = new Map<string, number>();
		for (const contender of contenders) {
			const runs = results.get(contender.name) ?? [];
			const eps = median(runs.map((r) => r.eventsPerSecond));
			const best = Math.max(...runs.map((r) => r.eventsPerSecond));
			medians.set(contender.name, eps);
			bests.set(contender.name, best);
			console.log(
				`  ${contender.name.padEnd(26)} ${Math.round(eps).toLocaleString("en").padStart(11)} events/s` +
					` (best ${Math.round(best).toLocaleString("en")})` +
					`  ${median(runs.map((r) => r.ms))
						.toFixed(1)
						.padStart(8)} ms  ${runs[0]?.events} events` +
					`  heap ${median(runs.map((r) => r.heapUsedMB)).toFixed(1)} MB`,
			);
		}
		console.log(`  heap retained after all runs (after gc): ${retainedHeapMB()}`);
		const oursEps = medians.get(ours.name) ?? 0;
		for (const contender of contenders.slice(1)) {
			const ratio = oursEps / (medians.get(contender.name) ?? Number.NaN);
			const bestRatio = (bests.get(ours.name) ?? 0) / (bests.get(contender.name) ?? Number.NaN);
			console.log(`  wheelhouse / ${contender.name}: ${ratio.toFixed(2)}x (medians), ${bestRatio.toFixed(2)}x (bests)`);
		}
		console.log("");
	}
}

await main();
