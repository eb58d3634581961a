import { describe, expect, it } from "vitest";
import {
	buildHeaders,
	buildParams,
	convertTools,
	mapStopReason,
	streamUrl,
	toGeminiOptions,
} from "../../../src/ai/providers/google-gemini.js";
import type { AssistantMessage, Context, Model, Usage } from "../../../src/ai/types.js";

const model: Model<"google-generative-ai"> = {
	id: "gemini-2.5-flash",
	name: "Gemini 2.5 Flash",
	api: "google-generative-ai",
	provider: "google",
	baseUrl: "https://generativelanguage.googleapis.com/v1beta",
	reasoning: true,
	input: ["text", "image"],
	cost: { input: 0.3, output: 2.5, cacheRead: 0.075, cacheWrite: 0 },
	contextWindow: 1_048_576,
	maxTokens: 65_536,
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
		api: "google-generative-ai",
		provider: "google",
		model: model.id,
		usage: zeroUsage,
		stopReason: "toolUse",
		timestamp: 1,
		...extra,
	};
}

const PNG = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg==";
const SIG_A = "CiMBjz1rX25KieIB";
const SIG_B = "EqADCp0DAQw51sct";

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
			{ type: "thinking", thinking: "**Checking**\nNeed the weather tool.", thinkingSignature: SIG_A },
			{ type: "text", text: "A red dot." },
			{
				type: "toolCall",
				id: "get_weather_1",
				name: "get_weather",
				arguments: { city: "Paris" },
				thoughtSignature: SIG_B,
			},
			{ type: "toolCall", id: "screenshot_2", name: "screenshot", arguments: {} },
		]),
		{
			role: "toolResult",
			toolCallId: "get_weather_1",
			toolName: "get_weather",
			content: [{ type: "text", text: "18°C, cloudy" }],
			isError: false,
			timestamp: 2,
		},
		{
			role: "toolResult",
			toolCallId: "screenshot_2",
			toolName: "screenshot",
			content: [{ type: "image", data: PNG, mimeType: "image/png" }],
			isError: true,
			timestamp: 3,
		},
		assistant(
			[
				{ type: "text", text: "", textSignature: SIG_A },
				{ type: "text", text: "Paris: 18°C." },
			],
			{
				stopReason: "stop",
			},
		),
		{ role: "user", content: "And Lyon?", timestamp: 4 },
	],
	tools: [
		{
			name: "get_weather",
			description: "Weather for a city",
			parameters: {
				$schema: "http://json-schema.org/draft-07/schema#",
				type: "object",
				properties: { city: { type: "string" }, unit: { anyOf: [{ const: "C" }, { const: "F" }] } },
				required: ["city"],
			} as any,
		},
		{ name: "screenshot", description: "Take a screenshot", parameters: { type: "object", properties: {} } as any },
	],
};

describe("google-generative-ai request body", () => {
	it("is exactly the expected JSON for a multi-turn conversation with images, tools and signature replay", () => {
		const options = toGeminiOptions(model, { reasoning: "medium", maxTokens: 2048, temperature: 0.3 });
		const body = JSON.parse(JSON.stringify(buildParams(model, conversation, { ...options, toolChoice: "auto" })));
		expect(body).toEqual({
			contents: [
				{
					role: "user",
					parts: [
						{ text: "What is in this image, and the weather in Paris?" },
						{ inlineData: { mimeType: "image/png", data: PNG } },
					],
				},
				{
					role: "model",
					parts: [
						{ thought: true, text: "**Checking**\nNeed the weather tool.", thoughtSignature: SIG_A },
						{ text: "A red dot." },
						{ functionCall: { name: "get_weather", args: { city: "Paris" } }, thoughtSignature: SIG_B },
						{ functionCall: { name: "screenshot", args: {} } },
					],
				},
				{
					role: "user",
					parts: [
						{ functionResponse: { name: "get_weather", response: { output: "18°C, cloudy" } } },
						{ functionResponse: { name: "screenshot", response: { error: "(see attached image)" } } },
					],
				},
				// Gemini 2.5 does not take images inside functionResponse: they follow in a user turn.
				{ role: "user", parts: [{ text: "Tool result image:" }, { inlineData: { mimeType: "image/png", data: PNG } }] },
				{ role: "model", parts: [{ text: "", thoughtSignature: SIG_A }, { text: "Paris: 18°C." }] },
				{ role: "user", parts: [{ text: "And Lyon?" }] },
			],
			systemInstruction: { parts: [{ text: "You are terse." }] },
			tools: [
				{
					functionDeclarations: [
						{
							name: "get_weather",
							description: "Weather for a city",
							parametersJsonSchema: {
								$schema: "http://json-schema.org/draft-07/schema#",
								type: "object",
								properties: { city: { type: "string" }, unit: { anyOf: [{ const: "C" }, { const: "F" }] } },
								required: ["city"],
							},
						},
						{
							name: "screenshot",
							description: "Take a screenshot",
							parametersJsonSchema: { type: "object", properties: {} },
						},
					],
				},
			],
			toolConfig: { functionCallingConfig: { mode: "AUTO" } },
			generationConfig: {
				temperature: 0.3,
				maxOutputTokens: 2048,
				thinkingConfig: { includeThoughts: true, thinkingBudget: 8192 },
			},
		});
	});

	it("puts tool-result images inside functionResponse for Gemini 3 and uses thinkingLevel", () => {
		const g3 = { ...model, id: "gemini-3-pro-preview" };
		const body = buildParams(g3, conversation, toGeminiOptions(g3, { reasoning: "low" }));
		// Signatures were made by gemini-2.5-flash: another model cannot read them.
		expect(JSON.stringify(body)).not.toContain("thoughtSignature");
		expect(body.contents[2].parts[1]).toEqual({
			functionResponse: {
				name: "screenshot",
				response: { error: "(see attached image)" },
				parts: [{ inlineData: { mimeType: "image/png", data: PNG } }],
			},
		});
		expect(body.contents).toHaveLength(5);
		expect(body.generationConfig?.thinkingConfig).toEqual({ includeThoughts: true, thinkingLevel: "LOW" });
	});

	it("maps reasoning levels to budgets with overrides, and turns thinking off where the model allows", () => {
		expect(toGeminiOptions(model, { reasoning: "high", thinkingBudgets: { high: 1234 } }).thinking).toEqual({
			enabled: true,
			budgetTokens: 1234,
		});
		expect(toGeminiOptions({ ...model, id: "gemini-2.5-pro" }, { reasoning: "minimal" }).thinking?.budgetTokens).toBe(
			128,
		);
		expect(
			toGeminiOptions({ ...model, id: "gemini-2.5-flash-lite" }, { reasoning: "minimal" }).thinking?.budgetTokens,
		).toBe(512);
		expect(toGeminiOptions({ ...model, id: "gemini-3-flash-preview" }, { reasoning: "xhigh" }).thinking).toEqual({
			enabled: true,
			level: "HIGH",
		});
		const mappedModel = { ...model, id: "gemini-3-pro-preview", thinkingLevelMap: { medium: null, xhigh: "HIGH" } };
		expect(toGeminiOptions(mappedModel, { reasoning: "xhigh" }).thinking).toEqual({ enabled: true, level: "HIGH" });
		expect(toGeminiOptions(mappedModel, { reasoning: "medium" }).thinking).toEqual({ enabled: true, level: "HIGH" });
		expect(toGeminiOptions(mappedModel, { reasoning: "minimal" }).thinking).toEqual({ enabled: true, level: "LOW" });
		const off = buildParams(model, { messages: [] }, toGeminiOptions(model, {}));
		expect(off.generationConfig?.thinkingConfig).toEqual({ thinkingBudget: 0 });
		const pro = { ...model, id: "gemini-2.5-pro" };
		expect(
			buildParams(pro, { messages: [] }, toGeminiOptions(pro, {})).generationConfig?.thinkingConfig,
		).toBeUndefined();
	});

	it("can send a sanitized OpenAPI `parameters` schema instead", () => {
		const [group] = convertTools(conversation.tools!, true);
		expect(group.functionDeclarations[0].parameters).toEqual({
			type: "object",
			properties: { city: { type: "string" }, unit: { anyOf: [{ const: "C" }, { const: "F" }] } },
			required: ["city"],
		});
	});

	it("builds the endpoint and auth header", () => {
		expect(streamUrl(model.baseUrl, model.id)).toBe(
			"https://generativelanguage.googleapis.com/v1beta/models/gemini-2.5-flash:streamGenerateContent?alt=sse",
		);
		expect(streamUrl("http://127.0.0.1:8080", "models/gemini-2.0-flash")).toBe(
			"http://127.0.0.1:8080/v1beta/models/gemini-2.0-flash:streamGenerateContent?alt=sse",
		);
		expect(buildHeaders(model, "key-1", { headers: { "x-goog-api-key": "override" } })["x-goog-api-key"]).toBe(
			"override",
		);
		expect(buildHeaders(model, "key-1")["x-goog-api-key"]).toBe("key-1");
	});

	it("maps finish reasons, unknown ones included", () => {
		expect(mapStopReason("STOP")).toBe("stop");
		expect(mapStopReason("MAX_TOKENS")).toBe("length");
		for (const reason of ["SAFETY", "RECITATION", "MALFORMED_FUNCTION_CALL", "BLOCKLIST", "SOMETHING_NEW", undefined]) {
			expect(mapStopReason(reason)).toBe("error");
		}
	});
});
