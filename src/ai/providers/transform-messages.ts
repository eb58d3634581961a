/**
 * Makes a conversation fit for the model it is sent to, before a provider encodes it (see
 * transformMessages), and splits a tool result into the text and images every provider encodes.
 */
import type { Api, AssistantMessage, ImageContent, Message, Model, TextContent, ToolResultMessage } from "../types.js";

/**
 * Shared conversion of a conversation before a provider turns it into its wire format.
 *
 * {@link transformMessages}:
 * 1. Drops assistant turns that ended in `error` or `aborted` (incomplete: half a tool call, reasoning
 *    without its answer; replaying them makes APIs reject the request) and the tool results that
 *    answer their tool calls.
 * 2. For a message from another model (provider, api or id differ): thinking becomes plain text
 *    (signatures are only valid for the model that made them), redacted thinking is dropped, Gemini
 *    `thoughtSignature`s are removed, and tool-call ids are normalised if the API needs it (the
 *    matching tool results follow).
 * 3. Replaces images with a text placeholder for a model without image input.
 * 4. Adds an error tool result for every tool call that has none before the next user or assistant
 *    message (APIs reject a tool call without a result).
 */
export function transformMessages(
	messages: Message[],
	model: Model<Api>,
	normalizeToolCallId?: (id: string) => string,
): Message[] {
	const dropped = new Set<string>();
	const renamed = new Map<string, string>();
	const result: Message[] = [];
	let pending: { id: string; name: string }[] = [];
	const answered = new Set<string>();

	const closePending = () => {
		for (const call of pending) {
			if (answered.has(call.id)) continue;
			result.push({
				role: "toolResult",
				toolCallId: call.id,
				toolName: call.name,
				content: [{ type: "text", text: "No result provided" }],
				isError: true,
				timestamp: Date.now(),
			});
		}
		pending = [];
		answered.clear();
	};

	for (const message of messages) {
		if (message.role === "user") {
			closePending();
			result.push(model.input.includes("image") ? message : withoutUserImages(message));
			continue;
		}
		if (message.role === "toolResult") {
			if (dropped.has(message.toolCallId)) continue;
			const id = renamed.get(message.toolCallId) ?? message.toolCallId;
			answered.add(id);
			let converted: ToolResultMessage = id === message.toolCallId ? message : { ...message, toolCallId: id };
			if (!model.input.includes("image") && converted.content.some((block) => block.type === "image")) {
				converted = { ...converted, content: replaceImages(converted.content, TOOL_IMAGE_PLACEHOLDER) };
			}
			result.push(converted);
			continue;
		}
		closePending();
		if (message.stopReason === "error" || message.stopReason === "aborted") {
			for (const block of message.content) if (block.type === "toolCall") dropped.add(block.id);
			continue;
		}
		const converted = convertAssistant(message, model, normalizeToolCallId, renamed);
		for (const block of converted.content)
			if (block.type === "toolCall") pending.push({ id: block.id, name: block.name });
		result.push(converted);
	}
	closePending();
	return result;
}

/** True when `message` was produced by `model` itself (its signatures can be replayed). */
export function isSameModel(message: AssistantMessage, model: Model<Api>): boolean {
	return message.provider === model.provider && message.api === model.api && message.model === model.id;
}

function convertAssistant(
	message: AssistantMessage,
	model: Model<Api>,
	normalizeToolCallId: ((id: string) => string) | undefined,
	renamed: Map<string, string>,
): AssistantMessage {
	if (isSameModel(message, model)) return message;
	const content: AssistantMessage["content"] = [];
	for (const block of message.content) {
		if (block.type === "thinking") {
			if (block.redacted || block.thinking.trim() === "") continue;
			content.push({ type: "text", text: block.thinking });
		} else if (block.type === "text") {
			content.push({ type: "text", text: block.text });
		} else {
			const { thoughtSignature: _signature, ...call } = block;
			const id = normalizeToolCallId ? normalizeToolCallId(call.id) : call.id;
			if (id !== call.id) renamed.set(call.id, id);
			content.push({ ...call, id });
		}
	}
	return { ...message, content };
}

const USER_IMAGE_PLACEHOLDER = "(image omitted: model does not support images)";
const TOOL_IMAGE_PLACEHOLDER = "(tool image omitted: model does not support images)";

function withoutUserImages(message: Extract<Message, { role: "user" }>): Message {
	if (typeof message.content === "string" || !message.content.some((block) => block.type === "image")) return message;
	return { ...message, content: replaceImages(message.content, USER_IMAGE_PLACEHOLDER) };
}

function replaceImages(content: (TextContent | ImageContent)[], placeholder: string): (TextContent | ImageContent)[] {
	const out: (TextContent | ImageContent)[] = [];
	for (const block of content) {
		if (block.type !== "image") out.push(block);
		else if (out.at(-1)?.type !== "text" || (out.at(-1) as TextContent).text !== placeholder) {
			out.push({ type: "text", text: placeholder });
		}
	}
	return out;
}

/**
 * Makes a tool-call id acceptable to strict APIs (Anthropic: `^[a-zA-Z0-9_-]+$`, at most 64 chars;
 * OpenAI Chat Completions: at most 40): other characters become `_`, and a long id is cut and given a
 * short hash of the original so two long ids stay distinct. Deterministic.
 */
export function normalizeToolCallId(id: string, maxLength = 64): string {
	const clean = id.replace(/[^a-zA-Z0-9_-]/g, "_");
	if (clean.length <= maxLength) return clean;
	const hash = fnv1a(id).toString(36);
	return `${clean.slice(0, maxLength - hash.length - 1)}_${hash}`;
}

function fnv1a(text: string): number {
	let hash = 0x811c9dc5;
	for (let i = 0; i < text.length; i++) {
		hash ^= text.charCodeAt(i);
		hash = Math.imul(hash, 0x01000193) >>> 0;
	}
	return hash;
}

/** A tool result's text blocks joined by line breaks, and its images. */
export function toolResultParts(content: ToolResultMessage["content"]): { text: string; images: ImageContent[] } {
	const text = content
		.filter((block): block is TextContent => block.type === "text")
		.map((block) => block.text)
		.join("\n");
	const images = content.filter((block): block is ImageContent => block.type === "image");
	return { text, images };
}
