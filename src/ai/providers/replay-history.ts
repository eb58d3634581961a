import type { AssistantMessage, Message, Model, ToolResultMessage } from "../types.js";

/**
 * Shared history preparation for the Anthropic and Gemini providers: what every wire API needs done to
 * a conversation before it is converted, so replay of a long agent session never trips an API check.
 *
 * 1. Assistant turns that ended in `error`/`aborted` are dropped: they may hold half a tool call or
 *    unsigned thinking, and the model should continue from the last complete state.
 * 2. Blocks from another model (provider, api or id differ) lose what only their origin can read:
 *    thinking becomes plain text (redacted thinking is dropped), Gemini thought signatures are removed,
 *    and tool-call ids are rewritten by `normalizeToolCallId` (the matching tool results follow).
 * 3. A tool call without a result before the next user/assistant turn gets a synthetic error result
 *    ("No result provided"), since every API requires each call to be answered.
 * 4. Images sent to a model without image input become a short text placeholder.
 */
export function prepareMessagesForReplay(
	messages: Message[],
	model: Model<any>,
	normalizeToolCallId?: (id: string) => string,
): Message[] {
	const idMap = new Map<string, string>();
	const out: Message[] = [];
	let pending: { id: string; name: string }[] = [];
	const answered = new Set<string>();
	const answerPending = () => {
		for (const call of pending) {
			if (answered.has(call.id)) continue;
			out.push({
				role: "toolResult",
				toolCallId: call.id,
				toolName: call.name,
				content: [{ type: "text", text: "No result provided" }],
				isError: true,
				timestamp: Date.now(),
			} satisfies ToolResultMessage);
		}
		pending = [];
		answered.clear();
	};
	const visionOk = model.input.includes("image");

	for (const msg of messages) {
		if (msg.role === "user") {
			answerPending();
			if (!visionOk && Array.isArray(msg.content) && msg.content.some((c) => c.type === "image")) {
				out.push({ ...msg, content: replaceImages(msg.content, "(image omitted: model does not support images)") });
			} else {
				out.push(msg);
			}
		} else if (msg.role === "toolResult") {
			const id = idMap.get(msg.toolCallId) ?? msg.toolCallId;
			answered.add(id);
			const content =
				!visionOk && msg.content.some((c) => c.type === "image")
					? replaceImages(msg.content, "(tool image omitted: model does not support images)")
					: msg.content;
			out.push(id === msg.toolCallId && content === msg.content ? msg : { ...msg, toolCallId: id, content });
		} else {
			answerPending();
			if (msg.stopReason === "error" || msg.stopReason === "aborted") continue;
			const converted = adaptAssistant(msg, model, idMap, normalizeToolCallId);
			pending = converted.content.filter((b) => b.type === "toolCall").map((b) => ({ id: b.id, name: b.name }));
			out.push(converted);
		}
	}
	answerPending();
	return out;
}

function adaptAssistant(
	msg: AssistantMessage,
	model: Model<any>,
	idMap: Map<string, string>,
	normalizeToolCallId: ((id: string) => string) | undefined,
): AssistantMessage {
	const sameModel = msg.provider === model.provider && msg.api === model.api && msg.model === model.id;
	if (sameModel) return msg;
	const content: AssistantMessage["content"] = [];
	for (const block of msg.content) {
		if (block.type === "thinking") {
			if (block.redacted || block.thinking.trim() === "") continue;
			content.push({ type: "text", text: block.thinking });
		} else if (block.type === "text") {
			content.push({ type: "text", text: block.text });
		} else {
			const { thoughtSignature: _foreign, ...call } = block;
			const id = normalizeToolCallId ? normalizeToolCallId(call.id) : call.id;
			if (id !== call.id) idMap.set(call.id, id);
			content.push({ ...call, id });
		}
	}
	return { ...msg, content };
}

function replaceImages<T extends { type: string }>(content: T[], placeholder: string): any[] {
	const result: any[] = [];
	for (const block of content) {
		if (block.type !== "image") {
			result.push(block);
		} else if (result[result.length - 1]?.text !== placeholder) {
			result.push({ type: "text", text: placeholder });
		}
	}
	return result;
}

/**
 * Replaces unpaired UTF-16 surrogates (from a string cut mid-emoji) with U+FFFD: JSON.stringify
 * escapes them as `\udXXX`, which the providers reject as invalid UTF-8.
 */
export function sanitizeText(text: string): string {
	return LONE_SURROGATE.test(text) ? text.replace(LONE_SURROGATE_G, "\uFFFD") : text;
}

const LONE_SURROGATE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/;
const LONE_SURROGATE_G = new RegExp(LONE_SURROGATE.source, "g");
