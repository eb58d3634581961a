/**
 * A session's transcript as AG-UI messages (`MESSAGES_SNAPSHOT`), and the ids messages have on
 * the AG-UI side.
 *
 * Wheelhouse messages carry no ids, so a message's AG-UI id is its place in the transcript:
 * `wh-<index>`, and `wh-<index>.r<block>` for each thinking block of an assistant message (AG-UI
 * has a message of its own for reasoning). The transcript only grows, so an id names the same
 * message in the live stream, in every later snapshot and after a restart; and an id of this
 * form in a client's `RunAgentInput` tells the server the message is already in the session.
 */
import type { AgentMessage } from "../../../agent/types.js";
import type { AssistantMessage, ImageContent, TextContent, ToolResultMessage, UserMessage } from "../../../ai/types.js";
import type { SessionPort } from "../../runtime/session/port.js";
import { textOf } from "../text.js";
import type { AguiMessage, ContentPart, ToolCallWire } from "./events.js";

/** Messages per read of a stored transcript (the store's largest page). */
const PAGE = 1000;

const ID_PATTERN = /^wh-(\d{1,15})(?:\.r\d{1,6})?$/;

/** The AG-UI id of the transcript message at `index`. */
export function messageId(index: number): string {
	return `wh-${index}`;
}

/** The AG-UI id of the reasoning message of thinking block `block` of the assistant message at `index`. */
export function reasoningId(index: number, block: number): string {
	return `wh-${index}.r${block}`;
}

/** The transcript index an id of ours names, or undefined for an id the client made. */
export function indexOfId(id: string): number | undefined {
	const match = ID_PATTERN.exec(id);
	return match ? Number(match[1]) : undefined;
}

/** The session's whole stored transcript, read through its port a page at a time. */
export async function wholeTranscript(port: SessionPort): Promise<AgentMessage[]> {
	const messages: AgentMessage[] = [];
	for (;;) {
		const page = await port.messages(messages.length, PAGE);
		messages.push(...page.messages);
		if (page.messages.length === 0 || messages.length >= page.total) return messages;
	}
}

/** Text and inline images as AG-UI content: a plain string when there is only text. */
export function contentOf(blocks: string | readonly (TextContent | ImageContent)[]): string | ContentPart[] {
	if (typeof blocks === "string") return blocks;
	if (blocks.every((block) => block.type === "text")) return blocks.map((block) => block.text).join("");
	return blocks.map(
		(block): ContentPart =>
			block.type === "text"
				? { type: "text", text: block.text }
				: { type: "image", source: { type: "data", value: block.data, mimeType: block.mimeType } },
	);
}

/** An assistant message as AG-UI messages: one per thinking block, then the message (when it has text or calls). */
function assistantMessages(message: AssistantMessage, index: number): AguiMessage[] {
	const out: AguiMessage[] = [];
	let text = "";
	const toolCalls: ToolCallWire[] = [];
	message.content.forEach((block, i) => {
		if (block.type === "thinking") {
			if (block.thinking !== "") out.push({ id: reasoningId(index, i), role: "reasoning", content: block.thinking });
		} else if (block.type === "text") text += block.text;
		else
			toolCalls.push({
				id: block.id,
				type: "function",
				function: { name: block.name, arguments: JSON.stringify(block.arguments ?? {}) },
			});
	});
	if (text !== "" || toolCalls.length > 0) {
		out.push({
			id: messageId(index),
			role: "assistant",
			...(text !== "" ? { content: text } : {}),
			...(toolCalls.length > 0 ? { toolCalls } : {}),
		});
	}
	return out;
}

/** A tool result as an AG-UI tool message (a failed call's text is also its `error`). */
export function toolMessage(message: ToolResultMessage, index: number): AguiMessage {
	const content = contentOf(message.content);
	return {
		id: messageId(index),
		role: "tool",
		toolCallId: message.toolCallId,
		content,
		...(message.isError ? { error: textOf(message.content) || "The tool failed." } : {}),
	};
}

/**
 * The transcript as AG-UI messages. Messages of other roles (an application's own message types)
 * have no AG-UI form and are left out; so are assistant messages with neither text nor calls (a
 * failed or aborted model call that produced nothing).
 */
export function transcriptMessages(messages: readonly AgentMessage[]): AguiMessage[] {
	const out: AguiMessage[] = [];
	messages.forEach((message, index) => {
		switch ((message as { role?: string }).role) {
			case "user":
				out.push({ id: messageId(index), role: "user", content: contentOf((message as UserMessage).content) });
				break;
			case "assistant":
				out.push(...assistantMessages(message as AssistantMessage, index));
				break;
			case "toolResult":
				out.push(toolMessage(message as ToolResultMessage, index));
				break;
		}
	});
	return out;
}
