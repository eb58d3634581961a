/**
 * Provider stream-parsing benchmark: `npx tsx bench/providers/index.ts`
 *
 * Serves a 20,000-chunk Chat Completions stream and a 20,000-delta Anthropic Messages stream from a
 * local HTTP server running in a child process (its own CPU time and event loop), and measures in
 * the same run, as wall time and as this process's CPU time (steadier on a loaded machine):
 *   - raw:  a plain undici read of the same bytes (the limit: socket + HTTP, no parsing);
 *   - floor: the same bytes, already in memory and fed in 16 KiB pieces like the provider does,
 *           through TextDecoder + eventsource-parser + JSON.parse of each data payload, nothing
 *           else (no events emitted): the least any parser that JSON-parses every event must do;
 *   - ours: the provider (SSE + JSON + OutputBuilder events + final message), draining every event;
 *   - sdk:  the official `openai` SDK's streaming parse of the same Chat Completions stream, when
 *           OPENAI_SDK_PATH points at an installed `openai` package directory (install it outside
 *           the repo: `mkdir -p /tmp/sdkbench && cd /tmp/sdkbench && npm i openai@5`, then
 *           `OPENAI_SDK_PATH=/tmp/sdkbench/node_modules/openai`).
 * Goals: ours ≥ 2x the SDK's chunks/s, and within 3x of the raw read (each goal line says met / NOT met).
 *
 * Env: BENCH_RUNS (default 15; the median and the fastest run are reported), BENCH_CHUNKS (default 20000).
 */
import { spawn } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { pathToFileURL } from "node:url";
import { createParser } from "eventsource-parser";
import { request } from "undici";
import type { AssistantMessageEventStream } from "../../src/ai/event-stream.js";
import { closeHttpPools, getHttpDispatcher } from "../../src/ai/http.js";
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

/**
 * The server, in a child process (so `process.cpuUsage()` here counts the client alone): POST
 * /<name>/... answers with the body registered under that name.
 */
async function startServer(bodies: Record<string, string>): Promise<{ url: string; stop: () => Promise<void> }> {
	const dir = mkdtempSync(path.join(tmpdir(), "wheelhouse-bench-"));
	for (const [name, body] of Object.entries(bodies)) writeFileSync(path.join(dir, name), body);
	const code = `
		const fs = require("node:fs"), path = require("node:path"), http = require("node:http");
		const dir = process.argv[1];
		const bodies = Object.fromEntries(fs.readdirSync(dir).map((name) => [name, fs.readFileSync(path.join(dir, name))]));
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
		server.listen(0, "127.0.0.1", () => process.stdout.write(server.address().port + "\\n"));
		process.stdin.on("end", () => process.exit(0));
		process.stdin.resume();
	`;
	const child = spawn(process.execPath, ["-e", code, dir], { stdio: ["pipe", "pipe", "inherit"] });
	const port = await new Promise<number>((resolve, reject) => {
		child.once("error", reject);
		child.stdout!.once("data", (data: Buffer) => resolve(Number(data.toString().trim())));
	});
	return {
		url: `http://127.0.0.1:${port}`,
		stop: async () => {
			const exited = new Promise<void>((resolve) => child.once("exit", () => resolve()));
			child.stdin!.end();
			await exited;
			rmSync(dir, { recursive: true, force: true });
		},
	};
}

interface Result {
	label: string;
	/** Median wall time of one full stream. */
	ms: number;
	/** Fastest run (least disturbed by other load on the machine). */
	minMs: number;
	/** Median CPU time (user + system) this process spent on one stream. */
	cpuMs: number;
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
	const cpu = variants.map(() => [] as number[]);
	for (let round = 0; round < RUNS; round++) {
		for (let k = 0; k < variants.length; k++) {
			const index = (round + k) % variants.length;
			const start = process.hrtime.bigint();
			const cpuStart = process.cpuUsage();
			await variants[index]!.run();
			const used = process.cpuUsage(cpuStart);
			times[index]!.push(Number(process.hrtime.bigint() - start) / 1e6);
			cpu[index]!.push((used.user + used.system) / 1000);
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
			cpuMs: cpu[index]!.sort((a, b) => a - b)[Math.floor(sorted.length / 2)]!,
		};
	});
}

async function rawRead(url: string, expectedBytes: number): Promise<void> {
	const { body } = await request(url, { method: "POST", body: "{}", dispatcher: getHttpDispatcher(url) });
	let total = 0;
	for await (const chunk of body) total += (chunk as Buffer).length;
	if (total !== expectedBytes) throw new Error(`raw read got ${total} bytes, expected ${expectedBytes}`);
}

/** The body in the pieces the provider decodes at once (its MAX_DECODE_BYTES). */
function pieces(body: string): Buffer[] {
	const bytes = Buffer.from(body);
	const out: Buffer[] = [];
	for (let i = 0; i < bytes.length; i += 16_384) out.push(bytes.subarray(i, i + 16_384));
	return out;
}

/**
 * The floor: decode + SSE parse + `JSON.parse` of each data payload (empty data and `[DONE]`
 * skipped, like the provider), and nothing else. Synchronous, from memory: no socket.
 */
function floorParse(chunks: Buffer[], expectedEvents: number): void {
	const decoder = new TextDecoder("utf-8");
	let parsed = 0;
	const parser = createParser({
		onEvent: (message) => {
			const data = message.data;
			if (data === "" || data === "[DONE]") return;
			if (JSON.parse(data) !== null) parsed++;
		},
	});
	for (const chunk of chunks) parser.feed(decoder.decode(chunk, { stream: true }));
	const rest = decoder.decode();
	if (rest) parser.feed(rest);
	parser.reset({ consume: true });
	if (parsed !== expectedEvents) throw new Error(`floor parsed ${parsed} events, expected ${expectedEvents}`);
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
	console.log(
		`  ${"".padEnd(32)} ${"wall median".padStart(11)} ${"(fastest)".padStart(10)} ${"chunks/s".padStart(10)} ${"MB/s".padStart(7)} ${"CPU ms".padStart(8)}  vs raw (wall / CPU)`,
	);
	for (const r of results) {
		const chunksPerSec = r.chunks / (r.ms / 1000);
		const mbPerSec = r.bytes / 1e6 / (r.ms / 1000);
		const vsRaw = r === raw ? "" : `${(r.ms / raw.ms).toFixed(2)}x / ${(r.cpuMs / raw.cpuMs).toFixed(2)}x`;
		console.log(
			`  ${r.label.padEnd(32)} ${`${r.ms.toFixed(1)} ms`.padStart(11)} ${`(${r.minMs.toFixed(1)})`.padStart(10)} ${Math.round(chunksPerSec).toLocaleString("en-US").padStart(10)} ${mbPerSec.toFixed(1).padStart(7)} ${r.cpuMs.toFixed(1).padStart(8)}  ${vsRaw}`,
		);
	}
}

/** "met" or "NOT met" for a ratio against a goal of at most `limit`. */
function verdict(ratio: number, limit: number): string {
	return ratio <= limit ? "met" : "NOT met";
}

/** The comparison lines: the floor vs the raw read, ours vs the floor, ours vs the raw read (goal ≤ 3x). */
function report(raw: Result, floor: Result, ours: Result | undefined, oursNote = ""): void {
	console.log(
		`  → floor vs raw read: ${(floor.ms / raw.ms).toFixed(2)}x the raw time (CPU: ${(floor.cpuMs / raw.cpuMs).toFixed(2)}x; decode + SSE + JSON.parse alone, from memory)`,
	);
	if (!ours) return;
	console.log(
		`  → wheelhouse vs floor: ${(ours.ms / floor.ms).toFixed(2)}x the floor time (CPU: ${(ours.cpuMs / floor.cpuMs).toFixed(2)}x)${oursNote}`,
	);
	const wall = ours.ms / raw.ms;
	const cpu = ours.cpuMs / raw.cpuMs;
	console.log(
		`  → wheelhouse vs raw read: ${wall.toFixed(2)}x the raw time (CPU: ${cpu.toFixed(2)}x; goal ≤ 3x: ${verdict(wall, 3)}, CPU ${verdict(cpu, 3)})`,
	);
}

async function main(): Promise<void> {
	const chat = chatCompletionsBody(CHUNKS);
	const anthropic = anthropicBody(CHUNKS);
	const server = await startServer({ chat, anthropic });
	const context: Context = { messages: [{ role: "user", content: "bench", timestamp: 0 }] };
	const chatBytes = Buffer.byteLength(chat);
	const anthropicBytes = Buffer.byteLength(anthropic);
	const chatPieces = pieces(chat);
	const anthropicPieces = pieces(anthropic);
	const expectText = Math.floor(CHUNKS * 3);
	console.log(`Node ${process.version}, ${CHUNKS.toLocaleString("en-US")} chunks per stream, median of ${RUNS} runs\n`);

	// ---- Chat Completions ----
	console.log(`Chat Completions stream (${(chatBytes / 1e6).toFixed(2)} MB):`);
	const chatModel = model("openai-completions", `${server.url}/chat`);
	const chatVariants: Variant[] = [
		{ label: "raw undici read", chunks: CHUNKS, bytes: chatBytes, run: () => rawRead(`${server.url}/chat`, chatBytes) },
		{
			label: "floor: decode + SSE + JSON.parse",
			chunks: CHUNKS,
			bytes: chatBytes,
			run: async () => floorParse(chatPieces, CHUNKS),
		},
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
	const [chatRaw, chatFloor, ours, sdk] = chatResults as [Result, Result, Result, Result | undefined];
	print(chatResults, chatRaw);
	if (sdk) {
		const speedup = sdk.ms / ours.ms;
		console.log(
			`  → wheelhouse vs SDK: ${speedup.toFixed(2)}x the SDK's chunks/s (CPU: ${(sdk.cpuMs / ours.cpuMs).toFixed(2)}x; goal ≥ 2x: ${speedup >= 2 ? "met" : "NOT met"})`,
		);
	} else console.log("  → openai SDK: skipped (set OPENAI_SDK_PATH to an installed `openai` package directory)");
	report(chatRaw, chatFloor, ours);
	console.log();

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
		{
			label: "floor: decode + SSE + JSON.parse",
			chunks: CHUNKS,
			bytes: anthropicBytes,
			// message_start, content_block_start, ping, the deltas, content_block_stop, message_delta, message_stop.
			run: async () => floorParse(anthropicPieces, CHUNKS + 6),
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
	const [anthropicRaw, anthropicFloor, anthropicOurs] = anthropicResults as [Result, Result, Result | undefined];
	print(anthropicResults, anthropicRaw);
	report(anthropicRaw, anthropicFloor, anthropicOurs);
	if (!anthropicOurs) {
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
