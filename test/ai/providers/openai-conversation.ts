import type { AssistantMessage, Context, Model, Usage } from "../../../src/ai/types.js";

/** A PNG's bytes don't matter to the request shape; any base64 will do. */
export const IMAGE = { type: "image" as const, data: "aGVsbG8=", mimeType: "image/png" };

const usage = (): Usage => ({
	input: 1,
	output: 1,
	cacheRead: 0,
	cacheWrite: 0,
	totalTokens: 2,
	cost: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0, total: 0 },
});

/**
 * A multi-turn conversation with an image, thinking (with the given signature), text (with the
 * given text signature), a tool call and its result (text + image), an aborted turn (must not be
 * replayed), and a follow-up question. The assistant turns are from `model` itself.
 */
export function conversation(
	model: Model<any>,
	signatures: { thinking: string; text?: string; toolCallId: string },
): Context {
	const assistant: AssistantMessage = {
		role: "assistant",
		content: [
			{ type: "thinking", thinking: "Look closely", thinkingSignature: signatures.thinking },
			{
				type: "text",
				text: "A cat. Checking the weather.",
				...(signatures.text ? { textSignature: signatures.text } : {}),
			},
			{ type: "toolCall", id: signatures.toolCallId, name: "get_weather", arguments: { city: "Paris" } },
		],
		api: model.api,
		provider: model.provider,
		model: model.id,
		usage: usage(),
		stopReason: "toolUse",
		timestamp: 1,
	};
	const aborted: AssistantMessage = {
		...assistant,
		content: [{ type: "text", text: "half an answer" }],
		stopReason: "aborted",
		errorMessage: "Request was aborted",
	};
	return {
		systemPrompt: "You are terse.",
		messages: [
			{ role: "user", content: [{ type: "text", text: "What is in this image?" }, IMAGE], timestamp: 0 },
			assistant,
			{
				role: "toolResult",
				toolCallId: signatures.toolCallId,
				toolName: "get_weather",
				content: [{ type: "text", text: "18°C" }, IMAGE],
				isError: false,
				timestamp: 2,
			},
			aborted,
			{ role: "user", content: "Thanks. And now?", timestamp: 3 },
		],
		tools: [
			{
				name: "get_weather",
				description: "Weather for a city",
				parameters: { type: "object", properties: { city: { type: "string" } }, required: ["city"] } as any,
			},
		],
	};
}

export const TOOL_PARAMETERS = { type: "object", properties: { city: { type: "string" } }, required: ["city"] };
