import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from "vitest";
import { closeHttpPools } from "../../../src/ai/http.js";
import { buildParams, streamGoogleGemini, toGeminiOptions } from "../../../src/ai/providers/google-gemini.js";
import { streamSimple } from "../../../src/ai/stream.js";
import type { Context, Model } from "../../../src/ai/types.js";
import { type ReplayServer, startReplayServer } from "../../helpers/replay-server.js";
import { collect, expectProtocol } from "./event-protocol.js";

/** Gemini over a real local HTTP server: what is sent, and every failure ending in an `error` event. */
let server: ReplayServer;
beforeAll(async () => {
	server = await startReplayServer();
});
afterEach(() => {
	server.reset();
	vi.unstubAllEnvs();
});
afterAll(async () => {
	await server.close();
	await closeHttpPools();
});

function model(): Model<"google-generative-ai"> {
	return {
		id: "gemini-2.5-flash",
		name: "Gemini 2.5 Flash",
		api: "google-generative-ai",
		provider: "google",
		baseUrl: `${server.url}/v1beta`,
		reasoning: true,
		input: ["text", "image"],
		cost: { input: 0.3, output: 2.5, cacheRead: 0.075, cacheWrite: 0 },
		contextWindow: 1_048_576,
		maxTokens: 65_536,
	};
}

const context: Context = { systemPrompt: "Be brief.", messages: [{ role: "user", content: "Hello", timestamp: 1 }] };

/** A Gemini SSE body (CRLF framing, as the live API sends). */
function sse(...chunks: unknown[]): string {
	return chunks.map((chunk) => `data: ${JSON.stringify(chunk)}\r\n\r\n`).join("");
}
function textChunk(text: string, finishReason?: string, extra: Record<string, unknown> = {}) {
	return {
		candidates: [{ content: { role: "model", parts: [{ text }] }, ...(finishReason && { finishReason }), ...extra }],
		usageMetadata: { promptTokenCount: 5, candidatesTokenCount: 3, totalTokenCount: 8 },
		modelVersion: "gemini-2.5-flash",
		responseId: "resp-1",
	};
}
const okBody = sse(textChunk("Hi "), textChunk("there", "STOP"));
const fast = { retryBaseDelayMs: 1 };

describe("google-generative-ai over HTTP", () => {
	it("POSTs buildParams to models/{id}:streamGenerateContent?alt=sse with x-goog-api-key; streamSimple dispatches here", async () => {
		server.enqueue({ body: okBody });
		const options = { apiKey: "g-key", reasoning: "high" as const, temperature: 0.1 };
		const { events, message } = await collect(streamSimple(model(), context, options));
		expectProtocol(events, message);
		expect(message).toMatchObject({
			stopReason: "stop",
			content: [{ type: "text", text: "Hi there" }],
			responseId: "resp-1",
			usage: { input: 5, output: 3, totalTokens: 8 },
		});
		const [request] = server.requests;
		expect(request.url).toBe("/v1beta/models/gemini-2.5-flash:streamGenerateContent?alt=sse");
		expect(request.headers["x-goog-api-key"]).toBe("g-key");
		expect(request.json).toEqual(
			JSON.parse(JSON.stringify(buildParams(model(), context, toGeminiOptions(model(), options)))),
		);
		expect(request.json.generationConfig).toEqual({
			temperature: 0.1,
			maxOutputTokens: 32000,
			thinkingConfig: { includeThoughts: true, thinkingBudget: 24576 },
		});
	});

	it("takes the key from GEMINI_API_KEY or GOOGLE_API_KEY, and fails without a request when there is none", async () => {
		vi.stubEnv("GEMINI_API_KEY", "");
		vi.stubEnv("GOOGLE_API_KEY", "google-key");
		server.enqueue({ body: okBody });
		await collect(streamGoogleGemini(model(), context));
		expect(server.requests[0].headers["x-goog-api-key"]).toBe("google-key");

		vi.stubEnv("GOOGLE_API_KEY", "");
		const { events, message } = await collect(streamGoogleGemini(model(), context));
		expect(events.map((e) => e.type)).toEqual(["error"]);
		expect(message.errorMessage).toContain("GEMINI_API_KEY");
		expect(server.requests).toHaveLength(1);
	});

	it("turns a Gemini error body into errorMessage with the status and Google's message", async () => {
		server.enqueue({
			status: 400,
			body: JSON.stringify({
				error: { code: 400, message: "API key not valid. Please pass a valid API key.", status: "INVALID_ARGUMENT" },
			}),
		});
		const { message } = await collect(streamGoogleGemini(model(), context, { apiKey: "bad", ...fast }));
		expect(message.stopReason).toBe("error");
		expect(message.errorMessage).toBe("HTTP 400: API key not valid. Please pass a valid API key.");
		expect(server.requests).toHaveLength(1);
	});

	it("retries 429 RESOURCE_EXHAUSTED (array-wrapped body, RetryInfo delay), then streams", async () => {
		const exhausted = JSON.stringify([
			{
				error: {
					code: 429,
					message: "Resource has been exhausted (e.g. check quota).",
					status: "RESOURCE_EXHAUSTED",
					details: [{ "@type": "type.googleapis.com/google.rpc.RetryInfo", retryDelay: "0.01s" }],
				},
			},
		]);
		server.enqueue({ status: 429, body: exhausted }, { body: okBody });
		const { message } = await collect(streamGoogleGemini(model(), context, { apiKey: "k", ...fast }));
		expect(message.stopReason).toBe("stop");
		expect(server.requests).toHaveLength(2);
		expect(message.diagnostics?.find((d) => d.type === "retries")).toMatchObject({
			retries: [{ status: 429, delayMs: 10, error: "HTTP 429: Resource has been exhausted (e.g. check quota)." }],
		});
	});

	it("fails on an error chunk mid-stream, keeping the text so far, without retrying after output", async () => {
		const errorChunk = {
			error: { code: 503, message: "The model is overloaded. Please try again later.", status: "UNAVAILABLE" },
		};
		server.enqueue({ body: sse(textChunk("Partial"), errorChunk) }, { body: okBody });
		const { events, message } = await collect(streamGoogleGemini(model(), context, { apiKey: "k", ...fast }));
		expectProtocol(events, message);
		expect(message.stopReason).toBe("error");
		expect(message.errorMessage).toBe(
			"Gemini stream error (UNAVAILABLE): The model is overloaded. Please try again later.",
		);
		expect(message.content).toEqual([{ type: "text", text: "Partial" }]);
		expect(server.requests).toHaveLength(1);
	});

	it("retries an error chunk that came before any output", async () => {
		const errorChunk = { error: { code: 503, message: "The model is overloaded.", status: "UNAVAILABLE" } };
		server.enqueue({ body: sse(errorChunk) }, { body: okBody });
		const { message } = await collect(streamGoogleGemini(model(), context, { apiKey: "k", ...fast }));
		expect(message.stopReason).toBe("stop");
		expect(server.requests).toHaveLength(2);
	});

	it("maps MAX_TOKENS to length, and SAFETY to an error that keeps the text", async () => {
		server.enqueue({ body: sse(textChunk("Long answer", "MAX_TOKENS")) });
		const length = await collect(streamGoogleGemini(model(), context, { apiKey: "k" }));
		expect(length.message.stopReason).toBe("length");
		expect(length.events.at(-1)?.type).toBe("done");

		server.enqueue({ body: sse(textChunk("Some", "SAFETY", { finishMessage: "Blocked: dangerous content" })) });
		const safety = await collect(streamGoogleGemini(model(), context, { apiKey: "k" }));
		expect(safety.message.stopReason).toBe("error");
		expect(safety.message.errorMessage).toBe("Gemini stopped with finishReason SAFETY: Blocked: dangerous content");
		expect(safety.message.content).toEqual([{ type: "text", text: "Some" }]);
	});

	it("fails when the prompt is blocked", async () => {
		server.enqueue({
			body: sse({
				promptFeedback: { blockReason: "PROHIBITED_CONTENT" },
				usageMetadata: { promptTokenCount: 9, totalTokenCount: 9 },
			}),
		});
		const { message } = await collect(streamGoogleGemini(model(), context, { apiKey: "k" }));
		expect(message.stopReason).toBe("error");
		expect(message.errorMessage).toBe("Gemini blocked the prompt: PROHIBITED_CONTENT");
		expect(message.usage.input).toBe(9);
	});

	it("fails when the stream ends without a finishReason", async () => {
		server.enqueue({ body: sse(textChunk("Cut")) });
		const { message } = await collect(streamGoogleGemini(model(), context, { apiKey: "k", maxRetries: 0 }));
		expect(message.stopReason).toBe("error");
		expect(message.errorMessage).toBe(
			"The stream ended before the provider finished the response (no finishReason); the answer is incomplete",
		);
		expect(message.content).toEqual([{ type: "text", text: "Cut" }]);
	});

	it("splits parallel function calls in one chunk into separate tool calls with distinct ids (STOP → toolUse)", async () => {
		server.enqueue({
			body: sse({
				candidates: [
					{
						content: {
							role: "model",
							parts: [
								{ functionCall: { name: "get_weather", args: { city: "Paris" } }, thoughtSignature: "c2ln" },
								{ functionCall: { name: "get_weather", args: { city: "Lyon" } } },
							],
						},
						finishReason: "STOP",
					},
				],
			}),
		});
		const { events, message } = await collect(streamGoogleGemini(model(), context, { apiKey: "k" }));
		expectProtocol(events, message);
		expect(message.stopReason).toBe("toolUse");
		expect(message.content).toMatchObject([
			{ type: "toolCall", name: "get_weather", arguments: { city: "Paris" }, thoughtSignature: "c2ln" },
			{ type: "toolCall", name: "get_weather", arguments: { city: "Lyon" } },
		]);
		const ids = message.content.map((b) => (b.type === "toolCall" ? b.id : ""));
		expect(new Set(ids).size).toBe(2);
	});

	it("aborts mid-stream: stopReason aborted, content so far kept", async () => {
		const first = sse(textChunk("Hi "));
		server.enqueue({ body: first + sse(textChunk("there", "STOP")), stallAfterBytes: Buffer.byteLength(first) });
		const controller = new AbortController();
		const stream = streamGoogleGemini(model(), context, { apiKey: "k", signal: controller.signal });
		const types: string[] = [];
		for await (const event of stream) {
			types.push(event.type);
			if (event.type === "text_delta") controller.abort();
		}
		const message = await stream.result();
		expect(types).toEqual(["start", "text_start", "text_delta", "error"]);
		expect(message.stopReason).toBe("aborted");
		expect(message.content).toEqual([{ type: "text", text: "Hi " }]);
	});

	it("replays a streamed turn's thought summary, signatures and function call into the next request", async () => {
		const turn1 = sse(
			{ candidates: [{ content: { role: "model", parts: [{ text: "**Plan**", thought: true }] } }] },
			{
				candidates: [
					{ content: { role: "model", parts: [{ text: " call it", thought: true, thoughtSignature: "AAAA" }] } },
				],
			},
			{
				candidates: [
					{
						content: {
							role: "model",
							parts: [{ functionCall: { name: "get_weather", args: { city: "Paris" } }, thoughtSignature: "BBBB" }],
						},
						finishReason: "STOP",
					},
				],
				usageMetadata: { promptTokenCount: 20, candidatesTokenCount: 5, thoughtsTokenCount: 30, totalTokenCount: 55 },
			},
		);
		server.enqueue({ body: turn1 }, { body: okBody });
		const first = await collect(streamGoogleGemini(model(), context, { apiKey: "k" }));
		expect(first.message.stopReason).toBe("toolUse");
		expect(first.message.usage).toMatchObject({ input: 20, output: 35, totalTokens: 55 });
		const call = first.message.content[1];
		expect(call).toMatchObject({
			type: "toolCall",
			name: "get_weather",
			arguments: { city: "Paris" },
			thoughtSignature: "BBBB",
		});
		const next: Context = {
			...context,
			messages: [
				...context.messages,
				first.message,
				{
					role: "toolResult",
					toolCallId: call.type === "toolCall" ? call.id : "",
					toolName: "get_weather",
					content: [{ type: "text", text: "sunny" }],
					isError: false,
					timestamp: 2,
				},
			],
		};
		await collect(streamGoogleGemini(model(), next, { apiKey: "k" }));
		expect(server.requests[1].json.contents.slice(1)).toEqual([
			{
				role: "model",
				parts: [
					{ thought: true, text: "**Plan** call it", thoughtSignature: "AAAA" },
					{ functionCall: { name: "get_weather", args: { city: "Paris" } }, thoughtSignature: "BBBB" },
				],
			},
			{ role: "user", parts: [{ functionResponse: { name: "get_weather", response: { output: "sunny" } } }] },
		]);
	});

	it("ends in error when the provider goes silent for timeoutMs", async () => {
		const first = sse(textChunk("Hi "));
		server.enqueue({ body: first + sse(textChunk("there", "STOP")), stallAfterBytes: Buffer.byteLength(first) });
		const { message } = await collect(streamGoogleGemini(model(), context, { apiKey: "k", timeoutMs: 150 }));
		expect(message.stopReason).toBe("error");
		expect(message.errorMessage).toBe("Request timed out: no data from the provider for 150 ms");
		expect(message.content).toEqual([{ type: "text", text: "Hi " }]);
	});

	it("keeps each signature with its own text part (a second signed part starts a new block)", async () => {
		const part = (text: string, thoughtSignature?: string) => ({
			candidates: [{ content: { role: "model", parts: [{ text, ...(thoughtSignature && { thoughtSignature }) }] } }],
		});
		server.enqueue({ body: sse(part("A", "c2lnMQ=="), part("B"), part("C", "c2lnMg=="), textChunk("", "STOP")) });
		const { events, message } = await collect(streamGoogleGemini(model(), context, { apiKey: "k" }));
		expectProtocol(events, message);
		expect(message.content).toEqual([
			{ type: "text", text: "AB", textSignature: "c2lnMQ==" },
			{ type: "text", text: "C", textSignature: "c2lnMg==" },
		]);
	});
});
