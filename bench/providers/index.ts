/**
 * Provider stream-parsing benchmark: `npx tsx bench/providers/index.ts`
 *
 * Serves a 20,000-chunk Chat Completions stream and a 20,000-delta Anthropic Messages stream from a
 * local HTTP server running in a worker thread (its own event loop, so it does not steal the
 * parser's), and measures in the same run:
 *   - raw:  a plain undici read of the same bytes (the limit: socket + HTTP, no parsing);
 *   - ours: the provider (SSE + JSON + OutputBuilder events + final message), draining every event;
 *   - sdk:  the official `openai` SDK's streaming parse of the same Chat Completions stream, when
 *           OPENAI_SDK_PATH points at an installed `openai` package directory (install it outside
 *           the repo: `mkdir -p /tmp/sdkbench && cd /tmp/sdkbench && npm i openai@5`, then
 *           `OPENAI_SDK_PATH=/tmp/sdkbench/node_modules/openai`).
 * Goals: ours ≥ 2x the SDK's chunks/s, and within 3x of the raw read.
 *
 * Env: BENCH_RUNS (default 15; the median and the fastest run are reported), BENCH_CHUNKS (default 20000).
 */
import path from "node:path";
import { pathToFileURL } from "node:url";
import { Worker } from "node:worker_threads";
import { request } from "undici";
import type { AssistantMessageEventStream } from "../../src/ai/event-stream.js";
import { closeHttpPools, getHttpPool } from "../../src/ai/http.js";
import { streamOpenAICompletions } from "../../src/ai/providers/openai-completions.js";
import type { Context, Model } from "../../src/ai/types.js";

const CHUNKS = Number(process.env.BENCH_CHUNKS ?? 20_000);
const RUNS = Number(process.env.BENCH_RUNS ?? 15);
const WORDS = [
	"The",
	" quick",
	" brown",
	" fox",
	" jumps",
	" over",
	" the",
	" lazy",
	" dog",
	",",
	" naïve",
	" café",
	" —",
	" 👋",
];

function chatCompletionsBody(chunks: number): string {
	const parts: string[] = [];
	const head = {
		id: "chatcmpl-bench",
		object: "chat.completion.chunk",
		created: 1754688929,
		model: "gpt-4o-2024-08-06",
		service_tier: "default",
		system_fingerprint: "fp_07871e2ad8",
	};
	parts.push(
		`data: ${JSON.stringify({ ...head, choices: [{ index: 0, delta: { role: "assistant", content: "", refusal: null }, logprobs: null, finish_reason: null }], usage: null, obfuscation: "oouykO51ovJROe" })}\n\n`,
	);
	for (let i = 0; i < chunks - 3; i++) {
		const content = WORDS[i % WORDS.length];
		parts.push(
			`data: ${JSON.stringify({ ...head, choices: [{ index: 0, delta: { content }, logprobs: null, finish_reason: null }], usage: null, obfuscation: "Qk5ENocFq" })}\n\n`,
		);
	}
	parts.push(
		`data: ${JSON.stringify({ ...head, choices: [{ index: 0, delta: {}, logprobs: null, finish_reason: "stop" }], usage: null, obfuscation: "x" })}\n\n`,
	);
	parts.push(
		`data: ${JSON.stringify({ ...head, choices: [], usage: { prompt_tokens: 14, completion_tokens: chunks, total_tokens: chunks + 14 }, obfuscation: "y" })}\n\n`,
	);
	parts.push("data: [DONE]\n\n");
	return parts.join("");
}

function anthropicBody(deltas: number): string {
	const ev = (type: string, data: object) => `event: ${type}\ndata: ${JSON.stringify({ type, ...data })}\n\n`;
	const parts = [
		ev("message_start", {
			message: {
				model: "claude-sonnet-4-5-20250929",
				id: "msg_bench",
				type: "message",
				role: "assistant",
				content: [],
				stop_reason: null,
				stop_sequence: null,
				usage: { input_tokens: 12, cache_creation_input_tokens: 0, cache_read_input_tokens: 0, output_tokens: 1 },
			},
		}),
		ev("content_block_start", { index: 0, content_block: { type: "text", text: "" } }),
		ev("ping", {}),
	];
	for (let i = 0; i < deltas; i++)
		parts.push(ev("content_block_delta", { index: 0, delta: { type: "text_delta", text: WORDS[i % WORDS.length] } }));
	parts.push(ev("content_block_stop", { index: 0 }));
	parts.push(
		ev("message_delta", { delta: { stop_reason: "end_turn", stop_sequence: null }, usage: { output_tokens: deltas } }),
	);
	parts.push(ev("message_stop", {}));
	return parts.join("");
}

/** The server, in a worker thread: GET/POST /<name> answers with the body registered under that name. */
async function startServer(bodies: Record<string, string>): Promise<{ url: string; stop: () => Promise<number> }> {
	const code = `
		const { parentPort, workerData } = require("node:worker_threads");
		const http = require("node:http");
		const bodies = Object.fromEntries(Object.entries(workerData).map(([k, v]) => [k, Buffer.from(v, "utf8")]));
		const server = http.createServer((req, res) => {
			req.resume();
			req.on("end", () => {
				const body = bodies[req.url.split("/").filter(Boolean)[0]];
				if (!body) { res.writeHead(404); res.end(); return; }
				res.writeHead(200, { "content-type": "text/event-stream", "content-length": body.length });
				// 16 KiB writes, like a TLS record stream from a real provider.
				for (let i = 0; i < body.length; i += 16384) res.write(body.subarray(i, i + 16384));
				res.end();
			});
		});
		server.keepAliveTimeout = 60000;
		server.on("connection", (socket) => socket.setNoDelay(true));
		server.listen(0, "127.0.0.1", () => parentPort.postMessage(server.address().port));
		parentPort.on("message", () => server.close(() => process.exit(0)));
	`;
	const worker = new Worker(code, { eval: true, workerData: bodies });
	const port = await new Promise<number>((resolve) => worker.once("message", resolve));
	return {
		url: `http://127.0.0.1:${port}`,
		stop: () => {
			worker.postMessage("stop");
			return new Promise((resolve) => worker.once("exit", resolve));
		},
	};
}

interface Result {
	label: string;
	/** Median wall time of one full stream. */
	ms: number;
	/** Fastest run (least disturbed by other load on the machine). */
	minMs: number;
	chunks: number;
	bytes: number;
}

interface Variant {
	label: string;
	chunks: number;
	bytes: number;
	run: () => Promise<void>;
}

/**
 * Runs every variant once per round, rotating the order, for RUNS rounds after a warm-up round,
 * and reports each one's median: the machine's load then weighs on all variants alike.
 */
async function measure(variants: Variant[]): Promise<Result[]> {
	for (const variant of variants) await variant.run(); // warm-up (JIT, connection)
	const times = variants.map(() => [] as number[]);
	for (let round = 0; round < RUNS; round++) {
		for (let k = 0; k < variants.length; k++) {
			const index = (round + k) % variants.length;
			const start = process.hrtime.bigint();
			await variants[index]!.run();
			times[index]!.push(Number(process.hrtime.bigint() - start) / 1e6);
		}
	}
	return variants.map((variant, index) => {
		const sorted = times[index]!.sort((a, b) => a - b);
		return {
			label: variant.label,
			chunks: variant.chunks,
			bytes: variant.bytes,
			ms: sorted[Math.floor(sorted.length / 2)]!,
			minMs: sorted[0]!,
		};
	});
}

async function rawRead(url: string, expectedBytes: number): Promise<void> {
	const { body } = await request(url, { method: "POST", body: "{}", dispatcher: getHttpPool(url) });
	let total = 0;
	for await (const chunk of body) total += (chunk as Buffer).length;
	if (total !== expectedBytes) throw new Error(`raw read got ${total} bytes, expected ${expectedBytes}`);
}

async function drainStream(stream: AssistantMessageEventStream, expectText: number): Promise<void> {
	let events = 0;
	for await (const _event of stream) events++;
	const message = await stream.result();
	if (message.stopReason !== "stop")
		throw new Error(`provider ended with ${message.stopReason}: ${message.errorMessage}`);
	const text = message.content[0];
	if (text?.type !== "text" || text.text.length < expectText) throw new Error("provider lost text");
	if (events < CHUNKS - 10) throw new Error(`only ${events} events`);
}

function model(api: string, baseUrl: string): Model<any> {
	return {
		id: "bench",
		name: "bench",
		api,
		provider: "bench",
		baseUrl,
		reasoning: false,
		input: ["text"],
		cost: { input: 1, output: 1, cacheRead: 0, cacheWrite: 0 },
		contextWindow: 128_000,
		maxTokens: 16_000,
	};
}

function print(results: Result[], raw: Result): void {
	for (const r of results) {
		const chunksPerSec = r.chunks / (r.ms / 1000);
		const mbPerSec = r.bytes / 1e6 / (r.ms / 1000);
		const vsRaw =
			r === raw ? "" : `  (${(r.ms / raw.ms).toFixed(2)}x raw; fastest runs ${(r.minMs / raw.minMs).toFixed(2)}x)`;
		console.log(
			`  ${r.label.padEnd(32)} ${r.ms.toFixed(1).padStart(7)} ms (min ${r.minMs.toFixed(1).padStart(6)})  ${Math.round(chunksPerSec).toLocaleString("en-US").padStart(10)} chunks/s  ${mbPerSec.toFixed(1).padStart(6)} MB/s${vsRaw}`,
		);
	}
}

async function main(): Promise<void> {
	const chat = chatCompletionsBody(CHUNKS);
	const anthropic = anthropicBody(CHUNKS);
	const server = await startServer({ chat, anthropic });
	const context: Context = { messages: [{ role: "user", content: "bench", timestamp: 0 }] };
	const chatBytes = Buffer.byteLength(chat);
	const anthropicBytes = Buffer.byteLength(anthropic);
	const expectText = Math.floor(CHUNKS * 3);
	console.log(`Node ${process.version}, ${CHUNKS.toLocaleString("en-US")} chunks per stream, median of ${RUNS} runs\n`);

	// ---- Chat Completions ----
	console.log(`Chat Completions stream (${(chatBytes / 1e6).toFixed(2)} MB):`);
	const chatModel = model("openai-completions", `${server.url}/chat`);
	const chatVariants: Variant[] = [
		{ label: "raw undici read", chunks: CHUNKS, bytes: chatBytes, run: () => rawRead(`${server.url}/chat`, chatBytes) },
		{
			label: "wheelhouse openai-completions",
			chunks: CHUNKS,
			bytes: chatBytes,
			run: () => drainStream(streamOpenAICompletions(chatModel, context, { apiKey: "k" }), expectText),
		},
	];
	const sdkPath = process.env.OPENAI_SDK_PATH;
	if (sdkPath) {
		const pkg = await import(pathToFileURL(path.join(sdkPath, "package.json")).href, { with: { type: "json" } });
		const mod = await import(pathToFileURL(path.join(sdkPath, "index.js")).href);
		const OpenAI = mod.default?.default ?? mod.default ?? mod.OpenAI;
		const client = new OpenAI({ apiKey: "k", baseURL: `${server.url}/chat`, maxRetries: 0 });
		chatVariants.push({
			label: `openai SDK ${pkg.default.version}`,
			chunks: CHUNKS,
			bytes: chatBytes,
			run: async () => {
				const stream = await client.chat.completions.create({
					model: "bench",
					messages: [{ role: "user", content: "bench" }],
					stream: true,
				});
				let count = 0;
				let text = "";
				for await (const chunk of stream) {
					count++;
					text += chunk.choices[0]?.delta?.content ?? "";
				}
				if (count !== CHUNKS || text.length < expectText) throw new Error(`SDK saw ${count} chunks`);
			},
		});
	}
	const chatResults = await measure(chatVariants);
	const [chatRaw, ours, sdk] = chatResults as [Result, Result, Result | undefined];
	print(chatResults, chatRaw);
	if (sdk) {
		console.log(
			`  → wheelhouse vs SDK: ${(sdk.ms / ours.ms).toFixed(2)}x the SDK's chunks/s (fastest runs ${(sdk.minMs / ours.minMs).toFixed(2)}x; goal ≥ 2x)`,
		);
	} else console.log("  → openai SDK: skipped (set OPENAI_SDK_PATH to an installed `openai` package directory)");
	console.log(
		`  → wheelhouse vs raw read: ${(ours.ms / chatRaw.ms).toFixed(2)}x the raw time (fastest runs ${(ours.minMs / chatRaw.minMs).toFixed(2)}x; goal ≤ 3x)\n`,
	);

	// ---- Anthropic Messages ----
	console.log(`Anthropic Messages stream (${(anthropicBytes / 1e6).toFixed(2)} MB):`);
	let anthropicStream:
		| ((model: Model<any>, context: Context, options: object) => AssistantMessageEventStream)
		| undefined;
	try {
		const mod = await import("../../src/ai/providers/anthropic-messages.js");
		anthropicStream = (mod as any).streamAnthropicMessages;
	} catch {
		anthropicStream = undefined;
	}
	const anthropicVariants: Variant[] = [
		{
			label: "raw undici read",
			chunks: CHUNKS,
			bytes: anthropicBytes,
			run: () => rawRead(`${server.url}/anthropic`, anthropicBytes),
		},
	];
	if (anthropicStream) {
		const anthropicModel = model("anthropic-messages", `${server.url}/anthropic`);
		anthropicVariants.push({
			label: "wheelhouse anthropic-messages",
			chunks: CHUNKS,
			bytes: anthropicBytes,
			run: () => drainStream(anthropicStream!(anthropicModel, context, { apiKey: "k" }), expectText),
		});
	}
	const anthropicResults = await measure(anthropicVariants);
	print(anthropicResults, anthropicResults[0]!);
	if (anthropicResults[1]) {
		console.log(
			`  → wheelhouse vs raw read: ${(anthropicResults[1].ms / anthropicResults[0]!.ms).toFixed(2)}x the raw time (goal ≤ 3x)`,
		);
	} else {
		console.log(
			"  → anthropic-messages provider: skipped (src/ai/providers/anthropic-messages.ts has no streamAnthropicMessages yet)",
		);
	}

	await closeHttpPools();
	await server.stop();
}

main().catch((err) => {
	console.error(err);
	process.exit(1);
});
