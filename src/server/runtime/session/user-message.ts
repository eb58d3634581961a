/**
 * A prompt's or a queued message's `message` as the transcript's UserMessage: the request body's
 * text or full user message, with the request's images appended. The routes and the scheduler both
 * turn what they were given into the message a run is prompted with, so this lives with the
 * sessions, not with the HTTP layer.
 */
import type { AgentMessage } from "../../../agent/types.js";
import type { ImageContent, UserMessage } from "../../../ai/types.js";

/** A `message` as a request carries it: its text, or a user message (validated by the route's schema). */
export type MessageBody = string | { content: unknown; timestamp?: number };

/** `message` (+ `images`) as a UserMessage; a full message keeps its timestamp, else now. */
export function toUserMessage(message: MessageBody, images?: ImageContent[]): AgentMessage {
	if (typeof message === "string") {
		const content: UserMessage["content"] = [{ type: "text", text: message }, ...(images ?? [])];
		return { role: "user", content, timestamp: Date.now() };
	}
	let content = message.content as UserMessage["content"];
	if (images && images.length > 0) {
		content = typeof content === "string" ? [{ type: "text", text: content }, ...images] : [...content, ...images];
	}
	return { role: "user", content, timestamp: message.timestamp ?? Date.now() };
}
