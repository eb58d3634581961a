import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { closeHttpPools } from "../../../src/ai/http.js";
import { buildParams, resolveCompat } from "../../../src/ai/providers/openai-completions.js";
import { streamSimple } from "../../../src/ai/stream.js";
import type { AssistantMessage, Model } from "../../../src/ai/types.js";
import { type ReplayServer, startReplayServer } from "../../helpers/replay-server.js";
import { conversation, TOOL_PARAMETERS } from "./openai-conversation.js";
import { drain, testModel } from "./openai-protocol.js";

/** The exact JSON body the Chat Completions provider sends, per compat record. */
let server: ReplayServer;
beforeAll(async () => {
	server = await startReplayServer();
});
afterAll(async () => {
	await server.close();
	await closeHttpPools();
});
afterEach(() => server.reset());

const OK =
	'data: {"id":"chatcmpl-1","choices":[{"index":0,"delta":{"content":"ok"},"finish_reason":"stop"}]}\n\ndata: [DONE]\n\n';
const DATA_URL = "data:image/png;base64,aGVsbG8=";

async function send(
	model: Model<any>,
	context = conversation(model, { thinking: "reasoning_content", toolCallId: "call_1" }),
	options = {},
) {
	server.enqueue({ body: OK });
	const { message } = await drain(
		streamSimple(model, context, {
			apiKey: "sk-test",
			maxTokens: 1000,
			temperature: 0.2,
			sessionId: "sess-1",
			reasoning: "high",
			...options,
		}),
	);
	expect(message.stopReason).toBe("stop");
	return server.requests[0]!;
}

describe("openai-completions request", () => {
	it("OpenAI: developer role, store false, max_completion_tokens, images, tool calls, tool results, reasoning replay", async () => {
		const model = testModel("openai-completions", `${server.url}/v1`, { reasoning: true });
		const request = await send(model);
		expect(request.method).toBe("POST");
		expect(request.url).toBe("/v1/chat/completions");
		expect(request.headers.authorization).toBe("Bearer sk-test");
		expect(request.headers.accept).toBe("text/event-stream");
		expect(request.json).toEqual({
			model: "gpt-test",
			messages: [
				{ role: "developer", content: "You are terse." },
				{
					role: "user",
					content: [
						{ type: "text", text: "What is in this image?" },
						{ type: "image_url", image_url: { url: DATA_URL } },
					],
				},
				{
					role: "assistant",
					content: "A cat. Checking the weather.",
					reasoning_content: "Look closely",
					tool_calls: [
						{ id: "call_1", type: "function", function: { name: "get_weather", arguments: '{"city":"Paris"}' } },
					],
				},
				{ role: "tool", tool_call_id: "call_1", content: "18°C" },
				{
					role: "user",
					content: [
						{ type: "text", text: "Images returned by the tool calls above:" },
						{ type: "image_url", image_url: { url: DATA_URL } },
					],
				},
				{ role: "user", content: "Thanks. And now?" },
			],
			stream: true,
			stream_options: { include_usage: true },
			store: false,
			max_completion_tokens: 1000,
			temperature: 0.2,
			tools: [
				{
					type: "function",
					function: {
						name: "get_weather",
						description: "Weather for a city",
						parameters: TOOL_PARAMETERS,
						strict: false,
					},
				},
			],
			prompt_cache_key: "sess-1",
			reasoning_effort: "high",
		});
	});

	it("a local OpenAI-compatible server gets the conservative defaults", async () => {
		const model = testModel("openai-completions", `${server.url}/v1`, {
			provider: "ollama",
			id: "qwen3:8b",
			reasoning: true,
			input: ["text"],
		});
		const request = await send(model);
		expect(request.headers.authorization).toBe("Bearer sk-test");
		const body = request.json;
		expect(body.messages[0]).toEqual({ role: "system", content: "You are terse." });
		// No image input: images become a placeholder, and tool images are not forwarded.
		expect(body.messages[1]).toEqual({
			role: "user",
			content: [
				{ type: "text", text: "What is in this image?" },
				{ type: "text", text: "(image omitted: model does not support images)" },
			],
		});
		expect(body.messages[3]).toEqual({
			role: "tool",
			tool_call_id: "call_1",
			content: "18°C\n(tool image omitted: model does not support images)",
		});
		expect(JSON.stringify(body.messages)).not.toContain("data:image");
		expect(body.max_tokens).toBe(1000);
		expect(body.max_completion_tokens).toBeUndefined();
		expect(body.store).toBeUndefined();
		expect(body.prompt_cache_key).toBeUndefined();
		expect(body.tools[0].function.strict).toBeUndefined();
		expect(body.reasoning_effort).toBe("high");
	});

	it("applies each compat field", async () => {
		const model = testModel("openai-completions", `${server.url}/v1`, {
			provider: "vllm",
			reasoning: true,
			compat: {
				supportsUsageInStreaming: false,
				maxTokensField: "max_tokens",
				requiresToolResultName: true,
				requiresAssistantAfterToolResult: true,
				requiresThinkingAsText: true,
				supportsDeveloperRole: true,
				thinkingFormat: "qwen-chat-template",
			},
		});
		const body = (await send(model)).json;
		expect(body.stream_options).toBeUndefined();
		expect(body.messages[0].role).toBe("developer");
		expect(body.messages[2]).toEqual({
			role: "assistant",
			content: "Look closely\n\nA cat. Checking the weather.",
			tool_calls: [
				{ id: "call_1", type: "function", function: { name: "get_weather", arguments: '{"city":"Paris"}' } },
			],
		});
		expect(body.messages[3]).toEqual({ role: "tool", tool_call_id: "call_1", name: "get_weather", content: "18°C" });
		// tool images, then the synthetic assistant turn before the next user message
		expect(body.messages.slice(4).map((m: any) => m.role)).toEqual(["user", "assistant", "user"]);
		expect(body.messages[5]).toEqual({ role: "assistant", content: "I have processed the tool results." });
		expect(body.chat_template_kwargs).toEqual({ enable_thinking: true });
		expect(body.reasoning_effort).toBeUndefined();
	});

	it("maps reasoning per thinkingFormat (OpenRouter, DeepSeek) and leaves it out when off", async () => {
		const openrouter = testModel("openai-completions", `${server.url}/v1`, { provider: "openrouter", reasoning: true });
		expect(resolveCompat(openrouter).thinkingFormat).toBe("openrouter");
		expect((await send(openrouter)).json.reasoning).toEqual({ effort: "high" });
		server.reset();
		const deepseek = testModel("openai-completions", `${server.url}/v1`, { provider: "deepseek", reasoning: true });
		const body = (await send(deepseek, undefined, { reasoning: undefined })).json;
		expect(body.thinking).toEqual({ type: "disabled" });
		// DeepSeek wants reasoning_content on every assistant message.
		expect(body.messages[2].reasoning_content).toBe("Look closely");
		const plain = buildParams(
			testModel("openai-completions", "http://x/v1", { reasoning: false }),
			{ messages: [] },
			{ reasoningEffort: "high" },
		);
		expect(plain.reasoning_effort).toBeUndefined();
	});

	it("replays another model's turn as plain text with a normalised tool-call id", async () => {
		const model = testModel("openai-completions", `${server.url}/v1`, { reasoning: true });
		const other = conversation(
			{ ...model, provider: "anthropic", api: "anthropic-messages", id: "claude" },
			{
				thinking: "sig-abc",
				toolCallId: "call_abc|fc_0123456789012345678901234567890123456789",
			},
		);
		const body = (await send(model, other)).json;
		const assistant = body.messages[2];
		// Its thinking (signature useless here) arrives as text.
		expect(assistant.content).toBe("Look closely\n\nA cat. Checking the weather.");
		expect(assistant.reasoning_content).toBeUndefined();
		const id = assistant.tool_calls[0].id;
		expect(id.length).toBeLessThanOrEqual(40);
		expect(id).toMatch(/^[A-Za-z0-9_-]+$/);
		expect(body.messages[3].tool_call_id).toBe(id);
	});

	it("onPayload replaces the body", async () => {
		const model = testModel("openai-completions", `${server.url}/v1`);
		const seen: unknown[] = [];
		const request = await send(
			model,
			{ messages: [{ role: "user", content: "hi", timestamp: 0 }] },
			{
				onPayload: (payload: any) => {
					seen.push(payload);
					return { ...payload, seed: 7 };
				},
			},
		);
		expect(seen).toHaveLength(1);
		expect(request.json.seed).toBe(7);
		expect(request.json.messages).toEqual([{ role: "user", content: "hi" }]);
	});

	it("skips an assistant turn that has neither text nor tool calls", () => {
		const model = testModel("openai-completions", "http://x/v1");
		const empty: AssistantMessage = {
			role: "assistant",
			content: [{ type: "text", text: "  " }],
			api: model.api,
			provider: model.provider,
			model: model.id,
			usage: {
				input: 0,
				output: 0,
				cacheRead: 0,
				cacheWrite: 0,
				totalTokens: 0,
				cost: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0, total: 0 },
			},
			stopReason: "stop",
			timestamp: 0,
		};
		const params = buildParams(model, { messages: [{ role: "user", content: "a", timestamp: 0 }, empty] });
		expect(params.messages).toEqual([{ role: "user", content: "a" }]);
	});
});
