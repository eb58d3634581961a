/**
 * The OpenTelemetry GenAI semantic conventions as Wheelhouse uses them: attribute names, the
 * provider names the conventions know, finish reasons, and — only when message content is to be
 * recorded — messages in the conventions' JSON shape (`gen_ai.input.messages`,
 * `gen_ai.output.messages`: `{role, parts: [{type, ...}]}`).
 *
 * https://opentelemetry.io/docs/specs/semconv/gen-ai/gen-ai-spans/ and gen-ai-agent-spans/.
 * Images are recorded by MIME type only: a base64 image in every model call's input (the whole
 * context is sent each time) would make spans of megabytes.
 */
import type { Attributes } from "@opentelemetry/api";
import type { AssistantMessage, Context, Message, StopReason, Usage } from "../../../ai/types.js";

export const ATTR = {
	operationName: "gen_ai.operation.name",
	providerName: "gen_ai.provider.name",
	requestModel: "gen_ai.request.model",
	requestMaxTokens: "gen_ai.request.max_tokens",
	requestTemperature: "gen_ai.request.temperature",
	responseId: "gen_ai.response.id",
	responseModel: "gen_ai.response.model",
	finishReasons: "gen_ai.response.finish_reasons",
	inputTokens: "gen_ai.usage.input_tokens",
	outputTokens: "gen_ai.usage.output_tokens",
	cacheReadTokens: "gen_ai.usage.cache_read.input_tokens",
	cacheWriteTokens: "gen_ai.usage.cache_creation.input_tokens",
	conversationId: "gen_ai.conversation.id",
	agentName: "gen_ai.agent.name",
	toolName: "gen_ai.tool.name",
	toolCallId: "gen_ai.tool.call.id",
	toolType: "gen_ai.tool.type",
	toolArguments: "gen_ai.tool.call.arguments",
	toolResult: "gen_ai.tool.call.result",
	inputMessages: "gen_ai.input.messages",
	outputMessages: "gen_ai.output.messages",
	systemInstructions: "gen_ai.system_instructions",
	errorType: "error.type",
	runId: "wheelhouse.run.id",
	runStatus: "wheelhouse.run.status",
} as const;

/** Our provider names that the conventions spell differently; any other name is used as it is. */
const PROVIDER_NAMES: Record<string, string> = {
	google: "gcp.gemini",
	"google-vertex": "gcp.vertex_ai",
	"amazon-bedrock": "aws.bedrock",
	"azure-openai-responses": "azure.ai.openai",
	mistral: "mistral_ai",
	xai: "x_ai",
};

/** `gen_ai.provider.name` of one of our providers. */
export function providerName(provider: string): string {
	return PROVIDER_NAMES[provider] ?? provider;
}

/** `gen_ai.response.finish_reasons` values of our stop reasons (the conventions' OpenAI-like names). */
export function finishReason(stopReason: StopReason): string {
	switch (stopReason) {
		case "toolUse":
			return "tool_call";
		default:
			return stopReason;
	}
}

/**
 * `error.type` of a failed model call: the provider's error type when its HTTP answer named one
 * (`rate_limit_error`), else the HTTP status, else `_OTHER` (the conventions' fallback).
 */
export function modelErrorType(message: AssistantMessage): string {
	for (const diagnostic of message.diagnostics ?? []) {
		if (diagnostic.type !== "http_error") continue;
		if (typeof diagnostic.errorType === "string" && diagnostic.errorType) return diagnostic.errorType;
		if (typeof diagnostic.status === "number") return String(diagnostic.status);
	}
	return "_OTHER";
}

/** The usage attributes of `usage` (cache counts only when the provider reported any). */
export function usageAttributes(usage: Usage | undefined): Attributes {
	if (!usage) return {};
	const attributes: Attributes = { [ATTR.inputTokens]: usage.input, [ATTR.outputTokens]: usage.output };
	if (usage.cacheRead) attributes[ATTR.cacheReadTokens] = usage.cacheRead;
	if (usage.cacheWrite) attributes[ATTR.cacheWriteTokens] = usage.cacheWrite;
	return attributes;
}

type Part = Record<string, unknown>;

function partsOf(message: Message): Part[] {
	if (typeof message.content === "string") return [{ type: "text", content: message.content }];
	const parts: Part[] = [];
	for (const block of message.content) {
		switch (block.type) {
			case "text":
				parts.push({ type: "text", content: block.text });
				break;
			case "thinking":
				parts.push({ type: "reasoning", content: block.thinking });
				break;
			case "toolCall":
				parts.push({ type: "tool_call", id: block.id, name: block.name, arguments: block.arguments });
				break;
			case "image":
				parts.push({ type: "image", mime_type: block.mimeType });
				break;
		}
	}
	return parts;
}

function chatMessage(message: Message): Record<string, unknown> {
	if (message.role === "toolResult") {
		return {
			role: "tool",
			parts: [{ type: "tool_call_response", id: message.toolCallId, response: partsOf(message) }],
		};
	}
	return { role: message.role, parts: partsOf(message) };
}

/** The content attributes of a model call's input: its system prompt and messages. */
export function inputContentAttributes(context: Context): Attributes {
	const attributes: Attributes = { [ATTR.inputMessages]: JSON.stringify(context.messages.map(chatMessage)) };
	if (context.systemPrompt) {
		attributes[ATTR.systemInstructions] = JSON.stringify([{ type: "text", content: context.systemPrompt }]);
	}
	return attributes;
}

/** The content attribute of a model call's answer. */
export function outputContentAttributes(message: AssistantMessage): Attributes {
	return {
		[ATTR.outputMessages]: JSON.stringify([
			{ role: "assistant", parts: partsOf(message), finish_reason: finishReason(message.stopReason) },
		]),
	};
}

/** A tool's arguments or result as an attribute value (JSON unless it is already text). */
export function jsonAttribute(value: unknown): string {
	if (typeof value === "string") return value;
	try {
		return JSON.stringify(value) ?? "";
	} catch {
		return String(value);
	}
}
