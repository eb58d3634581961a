import { describe, expect, it } from "vitest";
import {
	buildHeaders,
	buildParams,
	convertMessages,
	mapStopReason,
	messagesUrl,
	supportsAdaptiveThinking,
	toAnthropicOptions,
} from "../../../src/ai/providers/anthropic-messages.js";
import type { AssistantMessage, Context, Model, Usage } from "../../../src/ai/types.js";

const model: Model<"anthropic-messages"> = {
	id: "claude-sonnet-4-5-20250929",
	name: "Claude Sonnet 4.5",
	api: "anthropic-messages",
	provider: "anthropic",
	baseUrl: "https://api.anthropic.com",
	reasoning: true,
	input: ["text", "image"],
	cost: { input: 3, output: 15, cacheRead: 0.3, cacheWrite: 3.75 },
	contextWindow: 200_000,
	maxTokens: 64_000,
};

const zeroUsage: Usage = {
	input: 0,
	output: 0,
	cacheRead: 0,
	cacheWrite: 0,
	totalTokens: 0,
	cost: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0, total: 0 },
};

function assistant(content: AssistantMessage["content"], extra: Partial<AssistantMessage> = {}): AssistantMessage {
	return {
		role: "assistant",
		content,
		api: "anthropic-messages",
		provider: "anthropic",
		model: model.id,
		usage: zeroUsage,
		stopReason: "toolUse",
		timestamp: 1,
		...extra,
	};
}

const PNG = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg==";

/** A two-turn tool-using conversation with an image, signed and redacted thinking, and an image tool result. */
const conversation: Context = {
	systemPrompt: "You are terse.",
	messages: [
		{
			role: "user",
			content: [
				{ type: "text", text: "What is in this image, and the weather in Paris?" },
				{ type: "image", data: PNG, mimeType: "image/png" },
			],
			timestamp: 1,
		},
		assistant([
			{ type: "thinking", thinking: "Need the weather tool.", thinkingSignature: "c2lnLTE=" },
			{ type: "thinking", thinking: "[redacted]", thinkingSignature: "EqkECkYIBxgC", redacted: true },
			{ type: "text", text: "A red dot. Checking Paris." },
			{ type: "toolCall", id: "toolu_01A", name: "get_weather", arguments: { city: "Paris" } },
			{ type: "toolCall", id: "toolu_01B", name: "screenshot", arguments: {} },
		]),
		{
			role: "toolResult",
			toolCallId: "toolu_01A",
			toolName: "get_weather",
			content: [{ type: "text", text: "18°C, cloudy" }],
			isError: false,
			timestamp: 2,
		},
		{
			role: "toolResult",
			toolCallId: "toolu_01B",
			toolName: "screenshot",
			content: [{ type: "image", data: PNG, mimeType: "image/png" }],
			isError: false,
			timestamp: 3,
		},
		assistant([{ type: "text", text: "Paris: 18°C, cloudy." }], { stopReason: "stop" }),
		{ role: "user", content: "And Lyon?", timestamp: 4 },
	],
	tools: [
		{
			name: "get_weather",
			description: "Weather for a city",
			parameters: {
				type: "object",
				properties: { city: { type: "string" } },
				required: ["city"],
			} as any,
		},
		{ name: "screenshot", description: "Take a screenshot", parameters: { type: "object", properties: {} } as any },
	],
};

describe("anthropic-messages request body", () => {
	it("is exactly the expected JSON for a multi-turn conversation with images, tools and thinking replay", () => {
		const options = toAnthropicOptions(model, {
			reasoning: "medium",
			maxTokens: 4096,
			temperature: 0.2,
			metadata: { user_id: "user-42", other: "ignored" },
		});
		const body = JSON.parse(JSON.stringify(buildParams(model, conversation, options)));
		const cache = { type: "ephemeral" };
		expect(body).toEqual({
			model: "claude-sonnet-4-5-20250929",
			max_tokens: 4096 + 8192,
			stream: true,
			system: [{ type: "text", text: "You are terse.", cache_control: cache }],
			messages: [
				{
					role: "user",
					content: [
						{ type: "text", text: "What is in this image, and the weather in Paris?" },
						{ type: "image", source: { type: "base64", media_type: "image/png", data: PNG } },
					],
				},
				{
					role: "assistant",
					content: [
						{ type: "thinking", thinking: "Need the weather tool.", signature: "c2lnLTE=" },
						{ type: "redacted_thinking", data: "EqkECkYIBxgC" },
						{ type: "text", text: "A red dot. Checking Paris." },
						{ type: "tool_use", id: "toolu_01A", name: "get_weather", input: { city: "Paris" } },
						{ type: "tool_use", id: "toolu_01B", name: "screenshot", input: {} },
					],
				},
				{
					role: "user",
					content: [
						{ type: "tool_result", tool_use_id: "toolu_01A", content: "18°C, cloudy", is_error: false },
						{
							type: "tool_result",
							tool_use_id: "toolu_01B",
							content: [
								{ type: "text", text: "(see attached image)" },
								{ type: "image", source: { type: "base64", media_type: "image/png", data: PNG } },
							],
							is_error: false,
						},
					],
				},
				{ role: "assistant", content: [{ type: "text", text: "Paris: 18°C, cloudy." }] },
				{ role: "user", content: [{ type: "text", text: "And Lyon?", cache_control: cache }] },
			],
			tools: [
				{
					name: "get_weather",
					description: "Weather for a city",
					input_schema: { type: "object", properties: { city: { type: "string" } }, required: ["city"] },
					eager_input_streaming: true,
				},
				{
					name: "screenshot",
					description: "Take a screenshot",
					input_schema: { type: "object", properties: {} },
					eager_input_streaming: true,
					cache_control: cache,
				},
			],
			thinking: { type: "enabled", budget_tokens: 8192 },
			metadata: { user_id: "user-42" },
		});
	});

	it("sends temperature and disables thinking when no reasoning is asked for; cacheRetention none drops cache_control", () => {
		const body = buildParams(
			model,
			conversation,
			toAnthropicOptions(model, { temperature: 0.2, cacheRetention: "none" }),
		);
		expect(body.temperature).toBe(0.2);
		expect(body.thinking).toEqual({ type: "disabled" });
		expect(body.max_tokens).toBe(32000);
		expect(JSON.stringify(body)).not.toContain("cache_control");
	});

	it("uses thinkingBudgets overrides and keeps the budget under max_tokens", () => {
		const small = { ...model, maxTokens: 3000 };
		expect(
			toAnthropicOptions(model, { reasoning: "high", maxTokens: 2000, thinkingBudgets: { high: 5000 } }),
		).toMatchObject({ maxTokens: 7000, thinkingBudgetTokens: 5000, thinkingEnabled: true });
		const capped = toAnthropicOptions(small, { reasoning: "high", maxTokens: 1000 });
		expect(capped.maxTokens).toBe(3000);
		// At least 1024 tokens stay for the answer.
		expect(capped.thinkingBudgetTokens).toBe(3000 - 1024);
	});

	it("ignores reasoning for a model without it (no thinking, no budget, no beta header)", () => {
		const plain = { ...model, reasoning: false };
		const options = toAnthropicOptions(plain, { reasoning: "high", maxTokens: 1000, temperature: 0.5 });
		expect(options).toMatchObject({ maxTokens: 1000, thinkingEnabled: false });
		const body = buildParams(plain, conversation, options);
		expect(body.thinking).toBeUndefined();
		expect(body.temperature).toBe(0.5);
		expect(buildHeaders(plain, conversation, "k", options)["anthropic-beta"]).toBeUndefined();
	});

	it("knows which models need adaptive thinking", () => {
		for (const id of [
			"claude-opus-4-6",
			"claude-sonnet-4-6",
			"claude-opus-4-7",
			"claude-sonnet-5",
			"claude-opus-5-5",
			"claude-mythos-preview",
		]) {
			expect(supportsAdaptiveThinking(id), id).toBe(true);
		}
		for (const id of [
			"claude-sonnet-4-5-20250929",
			"claude-opus-4-1",
			"claude-haiku-4-5-20251001",
			"claude-3-7-sonnet-20250219",
			"claude-sonnet-4-0",
		]) {
			expect(supportsAdaptiveThinking(id), id).toBe(false);
		}
	});

	it("omits thinking (never sends disabled) for adaptive-only models without reasoning", () => {
		const adaptive = { ...model, id: "claude-sonnet-5" };
		expect(buildParams(adaptive, { messages: [] }, toAnthropicOptions(adaptive, {})).thinking).toBeUndefined();
	});

	it("uses adaptive thinking with an effort on the models that need it", () => {
		const adaptive = { ...model, id: "claude-opus-4-6" };
		const body = buildParams(adaptive, { messages: [] }, toAnthropicOptions(adaptive, { reasoning: "low" }));
		expect(body.thinking).toEqual({ type: "adaptive" });
		expect(body.output_config).toEqual({ effort: "low" });
	});

	it("replays only what the target model can read and answers orphaned tool calls", () => {
		const foreign: AssistantMessage = {
			...assistant([
				{ type: "thinking", thinking: "foreign thoughts", thinkingSignature: "opaque" },
				{ type: "thinking", thinking: "", thinkingSignature: "enc", redacted: true },
				{ type: "toolCall", id: "call|abc/1", name: "get_weather", arguments: { city: "Rome" } },
			]),
			api: "openai-responses",
			provider: "openai",
			model: "gpt-5",
		};
		const aborted = assistant([{ type: "text", text: "half" }], { stopReason: "aborted" });
		const unsigned = assistant([{ type: "thinking", thinking: "cut short" }], { stopReason: "stop" });
		const messages = convertMessages(
			[
				{ role: "user", content: "hi", timestamp: 1 },
				foreign,
				{ role: "user", content: "go on", timestamp: 2 },
				aborted,
				unsigned,
			],
			model,
		);
		expect(messages).toEqual([
			{ role: "user", content: "hi" },
			{
				role: "assistant",
				content: [
					{ type: "text", text: "foreign thoughts" },
					{ type: "tool_use", id: "call_abc_1", name: "get_weather", input: { city: "Rome" } },
				],
			},
			{
				role: "user",
				content: [{ type: "tool_result", tool_use_id: "call_abc_1", content: "No result provided", is_error: true }],
			},
			{ role: "user", content: "go on" },
			{ role: "assistant", content: [{ type: "text", text: "cut short" }] },
		]);
	});

	it("sends auth, version and beta headers, with caller headers winning", () => {
		const headers = buildHeaders({ ...model, headers: { "x-model": "m" } }, conversation, "sk-test", {
			...toAnthropicOptions(model, { reasoning: "low" }),
			headers: { "x-model": "caller" },
		});
		expect(headers).toMatchObject({
			"x-api-key": "sk-test",
			"anthropic-version": "2023-06-01",
			"anthropic-beta": "interleaved-thinking-2025-05-14",
			"x-model": "caller",
		});
		expect(messagesUrl("https://api.anthropic.com")).toBe("https://api.anthropic.com/v1/messages");
		expect(messagesUrl("http://127.0.0.1:9/v1/")).toBe("http://127.0.0.1:9/v1/messages");
	});

	it("maps every stop reason, including unknown ones", () => {
		expect(mapStopReason("end_turn")).toBe("stop");
		expect(mapStopReason("stop_sequence")).toBe("stop");
		expect(mapStopReason("pause_turn")).toBe("stop");
		expect(mapStopReason("max_tokens")).toBe("length");
		expect(mapStopReason("tool_use")).toBe("toolUse");
		expect(mapStopReason("refusal")).toBe("error");
		expect(mapStopReason("something_new")).toBe("stop");
		expect(mapStopReason(null)).toBe("stop");
	});
});
