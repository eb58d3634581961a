/**
 * The model's view of a compacted transcript, and the conversion of a compaction message into
 * what the model reads.
 *
 * The transcript keeps every message; the view is the latest compaction's summary followed by the
 * messages from its first kept one on (older compaction messages among them left out). Which
 * messages those are is remembered by object, not by index, because the agent loop works on its
 * own copy of the transcript: a compaction made during a run is in the session's transcript but
 * not in that run's copy, so indexes differ between the two while object identities do not.
 * Finding them searches from the end, so it costs the size of the view, never of the transcript.
 */
import type { AgentMessage } from "../../../agent/types.js";
import type { Message } from "../../../ai/types.js";
import { type CompactionMessage, isCompaction } from "./types.js";

/** What the model reads in place of the messages a compaction replaced. */
export const SUMMARY_PREFIX =
	"The conversation history before this point was compacted into the following summary:\n\n<summary>\n";
export const SUMMARY_SUFFIX = "\n</summary>";

/** The user message a compaction becomes for the model. */
export function summaryMessage(compaction: CompactionMessage): Message {
	return {
		role: "user",
		content: [{ type: "text", text: `${SUMMARY_PREFIX}${compaction.summary}${SUMMARY_SUFFIX}` }],
		timestamp: compaction.timestamp,
	};
}

/**
 * `convertToLlm` of a session with compaction: a compaction message becomes its summary as a user
 * message; user, assistant and tool-result messages pass; other custom messages are dropped (the
 * Agent's default).
 */
export function convertWithSummaries(messages: AgentMessage[]): Message[] {
	const out: Message[] = [];
	for (const message of messages) {
		if (isCompaction(message)) out.push(summaryMessage(message));
		else if (message.role === "user" || message.role === "assistant" || message.role === "toolResult")
			out.push(message);
	}
	return out;
}

/** The latest compaction of a session, anchored to message objects of its transcript. */
export interface Anchor {
	compaction: CompactionMessage;
	/** The first message kept verbatim; undefined when the summary replaced everything up to `boundary`. */
	firstKept: AgentMessage | undefined;
	/**
	 * The last message that existed when the compaction was made (the compaction message itself when
	 * it is in the transcript before any later message): answers after it measured a compacted context.
	 */
	boundary: AgentMessage;
}

/** A view of a context for one model call. */
export interface ContextView {
	/** What the model is sent, before `convertToLlm`. */
	messages: AgentMessage[];
	/** Index in `messages` from which answers measured the compacted context (see `ContextMeter`). */
	trustFrom: number;
	/** The context the view was made from (the loop's copy of the transcript). */
	context: AgentMessage[];
}

/** Index of `target` in `messages`, searching from the end; -1 when absent. */
export function lastIndexOf(messages: readonly AgentMessage[], target: AgentMessage): number {
	for (let i = messages.length - 1; i >= 0; i--) if (messages[i] === target) return i;
	return -1;
}

/**
 * The view of `context` under `anchor` (no anchor: the context itself). Returns undefined when the
 * anchor's messages are not in `context`, which would mean the context is not this session's.
 */
export function viewOf(context: AgentMessage[], anchor: Anchor | undefined): ContextView | undefined {
	if (!anchor) return { messages: context, trustFrom: 0, context };
	const boundaryAt = lastIndexOf(context, anchor.boundary);
	if (boundaryAt < 0) return undefined;
	let start: number;
	if (anchor.firstKept === undefined) start = boundaryAt + 1;
	else {
		start = boundaryAt;
		while (start >= 0 && context[start] !== anchor.firstKept) start--;
		if (start < 0) return undefined;
	}
	const messages: AgentMessage[] = [anchor.compaction];
	let trustFrom = 1;
	for (let i = start; i < context.length; i++) {
		const message = context[i] as AgentMessage;
		if (!isCompaction(message)) messages.push(message);
		if (i === boundaryAt) trustFrom = messages.length;
	}
	return { messages, trustFrom, context };
}

/**
 * The anchor of the latest compaction in a transcript window (read once when a session is loaded):
 * `transcript` holds the messages from index `base` of the whole transcript on.
 */
export function anchorOf(transcript: readonly AgentMessage[], base = 0): Anchor | undefined {
	for (let i = transcript.length - 1; i >= 0; i--) {
		const message = transcript[i];
		if (!isCompaction(message)) continue;
		const kept = message.firstKeptIndex - base;
		const keeps = message.firstKeptIndex >= 0 && kept >= 0 && kept < i;
		return {
			compaction: message,
			firstKept: keeps ? transcript[kept] : undefined,
			boundary: message,
		};
	}
	return undefined;
}
