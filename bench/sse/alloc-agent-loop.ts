/**
 * What the agent loop alone allocates per streamed delta: an `Agent` with one synchronous listener
 * (as the server has) runs a model that streams DELTAS text deltas, one per `setImmediate` (as
 * faux/echo does), under V8's sampling heap profiler (collected objects counted, a fine interval).
 * The server's share of a delta is bench/sse/alloc-per-event.ts's; this one needs no server and
 * isolates the loop (`streamAssistantResponse`, the event stream, `Agent.processEvent`).
 *
 *   npx tsx bench/sse/alloc-agent-loop.ts
 *
 * The profile credits an allocation to the physical frame: what an inlined function allocates
 * shows under its caller (run node with `--no-turbo-inlining` to see each under its own name).
 * The model's own objects (its events, the timers) are listed too, under its frames.
 */
import { Session } from "node:inspector/promises";
import { Agent } from "../../src/agent/agent.js";
import { createAssistantMessage } from "../../src/ai/assistant-message.js";
import { AssistantMessageEventStream } from "../../src/ai/event-stream.js";
import type { AssistantMessage, Model, TextContent } from "../../src/ai/types.js";

const DELTAS = 2000;
const WARMUP_RUNS = 5;
const RUNS = 20;
const TOP = 15;

const model: Model<any> = {
	id: "m",
	name: "m",
	api: "bench",
	provider: "bench",
	baseUrl: "",
	reasoning: false,
	input: [],
	cost: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0 },
	contextWindow: 1e6,
	maxTokens: 1e6,
};

/** A text answer of DELTAS deltas, grown in place like a real provider's partial. */
function streamFn(): AssistantMessageEventStream {
	const stream = new AssistantMessageEventStream();
	const partial: AssistantMessage = createAssistantMessage(model);
	const block: TextContent = { type: "text", text: "" };
	let sent = 0;
	const step = () => {
		block.text += "w ";
		stream.push({ type: "text_delta", contentIndex: 0, delta: "w ", partial });
		if (++sent < DELTAS) {
			setImmediate(step);
			return;
		}
		stream.push({ type: "text_end", contentIndex: 0, content: block.text, partial });
		stream.push({ type: "done", reason: "stop", message: { ...partial, content: [{ ...block }] } });
	};
	stream.push({ type: "start", partial });
	partial.content.push(block);
	stream.push({ type: "text_start", contentIndex: 0, partial });
	setImmediate(step);
	return stream;
}

interface HeapNode {
	callFrame: { functionName: string; url: string };
	selfSize: number;
	children: HeapNode[];
}

const agent = new Agent({ initialState: { model }, streamFn });
let events = 0;
agent.subscribe(() => {
	events++;
});
const inspector = new Session();
inspector.connect();
await inspector.post("HeapProfiler.enable");
for (let i = 0; i < WARMUP_RUNS; i++) await agent.prompt("go");
events = 0;
// Every allocation counts, also of objects the collections already freed (V8's flags, newer than Node's types of them).
await inspector.post("HeapProfiler.startSampling", {
	samplingInterval: 64,
	includeObjectsCollectedByMajorGC: true,
	includeObjectsCollectedByMinorGC: true,
} as never);
for (let i = 0; i < RUNS; i++) await agent.prompt("go");
const { profile } = await inspector.post("HeapProfiler.stopSampling");
inspector.disconnect();

const byFunction = new Map<string, number>();
const walk = (node: HeapNode) => {
	const { functionName, url } = node.callFrame;
	const key = `${functionName || "(anonymous)"} ${url.replace(/^.*?\/(src|bench)\//, "$1/")}`;
	byFunction.set(key, (byFunction.get(key) ?? 0) + node.selfSize);
	for (const child of node.children) walk(child);
};
walk((profile as unknown as { head: HeapNode }).head);
const deltas = RUNS * DELTAS;
const total = [...byFunction.values()].reduce((a, b) => a + b, 0);
console.log(
	`agent loop: ${RUNS} runs x ${DELTAS} deltas (${events} events to the listener), ` +
		`${(total / deltas).toFixed(0)} B per delta in all`,
);
for (const [fn, bytes] of [...byFunction].sort((a, b) => b[1] - a[1]).slice(0, TOP)) {
	console.log(`${(bytes / deltas).toFixed(1).padStart(9)} B/delta  ${fn}`);
}
