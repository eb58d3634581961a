import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { closeHttpPools } from "../../../src/ai/http.js";
import { streamSimple } from "../../../src/ai/stream.js";
import type { Context } from "../../../src/ai/types.js";
import { type ReplayServer, startReplayServer } from "../../helpers/replay-server.js";
import { checkProtocol, drain, testModel } from "./openai-protocol.js";

/**
 * A proxy or load balancer that cuts a provider's stream usually ends it cleanly (a last chunk,
 * then the end of the body): for every wire API, an answer without the provider's own end signal
 * is an error that keeps what was streamed, never a short answer that passes for a whole one.
 */
let server: ReplayServer;
beforeAll(async () => {
	server = await startReplayServer();
});
afterEach(() => server.reset());
afterAll(async () => {
	await server.close();
	await closeHttpPools();
});

const context: Context = { messages: [{ role: "user", content: "Tell me a story", timestamp: 0 }] };
const fast = { apiKey: "k", retryBaseDelayMs: 1, maxRetries: 0 };

const named = (type: string, payload: object) => `event: ${type}\ndata: ${JSON.stringify({ type, ...payload })}\n\n`;
const data = (payload: object) => `data: ${JSON.stringify(payload)}\n\n`;

interface WireCase {
	api: string;
	baseUrl: () => string;
	/** The body up to the cut: text "Once upon" streamed, nothing that says the answer is over. */
	cut: string;
	/** The same answer as the provider ends it. */
	whole: string;
	signal: string;
}

const completionsChunk = (delta: object, finish: string | null = null) =>
	data({ id: "chatcmpl-1", model: "m", choices: [{ index: 0, delta, finish_reason: finish }] });
const geminiChunk = (text: string, finishReason?: string) =>
	data({ candidates: [{ content: { role: "model", parts: [{ text }] }, ...(finishReason && { finishReason }) }] });
const anthropicStart = [
	named("message_start", { message: { id: "msg_1", usage: { input_tokens: 3, output_tokens: 1 } } }),
	named("content_block_start", { index: 0, content_block: { type: "text", text: "" } }),
	named("content_block_delta", { index: 0, delta: { type: "text_delta", text: "Once upon" } }),
].join("");
const responsesStart = [
	named("response.created", { response: { id: "resp_1" } }),
	named("response.output_item.added", { output_index: 0, item: { id: "msg_1", type: "message" } }),
	named("response.output_text.delta", { output_index: 0, delta: "Once upon" }),
].join("");

const cases: WireCase[] = [
	{
		api: "openai-completions",
		baseUrl: () => `${server.url}/v1`,
		cut: completionsChunk({ role: "assistant", content: "Once upon" }),
		whole: `${completionsChunk({ role: "assistant", content: "Once upon" })}${completionsChunk({}, "stop")}data: [DONE]\n\n`,
		signal: "finish_reason or [DONE]",
	},
	{
		api: "openai-responses",
		baseUrl: () => `${server.url}/v1`,
		cut: responsesStart,
		whole: `${responsesStart}${named("response.completed", { response: { id: "resp_1", status: "completed" } })}`,
		signal: "response.completed",
	},
	{
		api: "anthropic-messages",
		baseUrl: () => server.url,
		cut: anthropicStart,
		whole: `${anthropicStart}${named("content_block_stop", { index: 0 })}${named("message_delta", { delta: { stop_reason: "end_turn" }, usage: { output_tokens: 2 } })}${named("message_stop", {})}`,
		signal: "message_stop",
	},
	{
		api: "google-generative-ai",
		baseUrl: () => `${server.url}/v1beta`,
		cut: geminiChunk("Once upon"),
		whole: `${geminiChunk("Once upon")}${geminiChunk("", "STOP")}`,
		signal: "finishReason",
	},
];

describe.each(cases)(
	"$api: a stream that ends before the provider finished",
	({ api, baseUrl, cut, whole, signal }) => {
		const model = () => testModel(api, baseUrl());

		it("is an error naming the missing end signal, with the text so far", async () => {
			server.enqueue({ body: cut });
			const { events, message } = await drain(streamSimple(model(), context, fast));
			expect(message.stopReason).toBe("error");
			expect(message.errorMessage).toBe(
				`The stream ended before the provider finished the response (no ${signal}); the answer is incomplete`,
			);
			expect(message.content).toEqual([{ type: "text", text: "Once upon" }]);
			checkProtocol(events, message);
			expect(server.requests).toHaveLength(1);
		});

		it("is retried while nothing was streamed; the whole answer then ends normally", async () => {
			server.enqueue({ body: "" }, { body: whole });
			const { message } = await drain(streamSimple(model(), context, { ...fast, maxRetries: 1 }));
			expect(server.requests).toHaveLength(2);
			expect(message.stopReason).toBe("stop");
			expect(message.content).toEqual([{ type: "text", text: "Once upon" }]);
		});
	},
);

describe("openai-completions end signals", () => {
	const model = () => testModel("openai-completions", `${server.url}/v1`);

	it("a finish_reason without [DONE] is a whole answer, and so is [DONE] without a finish_reason", async () => {
		server.enqueue(
			{ body: `${completionsChunk({ content: "a" })}${completionsChunk({}, "length")}` },
			{ body: `${completionsChunk({ content: "b" })}data: [DONE]\n\n` },
		);
		const first = await drain(streamSimple(model(), context, fast));
		expect(first.message.stopReason).toBe("length");
		const second = await drain(streamSimple(model(), context, fast));
		expect(second.message.stopReason).toBe("stop");
		expect(second.message.content).toEqual([{ type: "text", text: "b" }]);
	});

	it("a cut inside a fast-path run of content chunks is still an error", async () => {
		const body = ["Once", " upon", " a", " time"].map((text) => completionsChunk({ content: text })).join("");
		server.enqueue({ body, split: "random", seed: 7 });
		const { message } = await drain(streamSimple(model(), context, fast));
		expect(message.stopReason).toBe("error");
		expect(message.errorMessage).toMatch(/^The stream ended before the provider finished the response/);
		expect(message.content).toEqual([{ type: "text", text: "Once upon a time" }]);
	});
});
