/**
 * The compaction message: the custom transcript message (role `"compaction"`, added to
 * `CustomAgentMessages` by declaration merging) that records one compaction of a session's context.
 *
 * The transcript keeps every message; a compaction message is appended where the compaction
 * happened. From then on the model sees, in its place, the summary (as a user message, see
 * `view.ts`) followed by the messages from `firstKeptIndex` on, and nothing older.
 */
import type { Usage } from "../../../ai/types.js";
import type { CompactionReason } from "../../../wire/events.js";

export type { CompactionReason } from "../../../wire/events.js";

/** One compaction, as stored in the transcript. Plain JSON: it is persisted and served as is. */
export interface CompactionMessage {
	role: "compaction";
	/** The structured summary of every message before `firstKeptIndex` (earlier summaries folded in). */
	summary: string;
	/**
	 * Transcript index of the first message kept verbatim after the summary; equal to this message's
	 * own index when nothing older is kept. Never the index of a tool result (a tool call and its
	 * result are never separated).
	 */
	firstKeptIndex: number;
	reason: CompactionReason;
	/** Estimated tokens of the context before and after. */
	tokensBefore: number;
	tokensAfter: number;
	/** What the client asked the summary to focus on (manual compactions). */
	instructions?: string;
	/** `"provider/id"` of the model that wrote the summary, and what that call cost. */
	model: string;
	usage: Usage;
	timestamp: number;
}

declare module "../../../agent/types.js" {
	interface CustomAgentMessages {
		compaction: CompactionMessage;
	}
}

/** True for a compaction message (any transcript message may be passed). */
export function isCompaction(message: unknown): message is CompactionMessage {
	return (message as { role?: unknown } | undefined)?.role === "compaction";
}
