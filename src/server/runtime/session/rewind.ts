/**
 * Rewinding a conversation: where a rewind, a regenerate or an edit cuts the transcript, checked
 * against the stored transcript before the session is claimed (the claimed run checks again that
 * the transcript did not change meanwhile, `LiveSession.rewind`). What follows the cut is never
 * deleted: the store keeps it as a superseded branch (docs/branching.md, "Rewind").
 *
 * - rewind `toMessageId`: the transcript ends with that message;
 * - regenerate: it ends with the last user message (the answer to it goes), then continues;
 * - edit `messageId` (a user message): it ends before that message, then prompts with the new one.
 */
import type { AgentMessage } from "../../../agent/types.js";
import type { MessagePage } from "../../../store/types.js";
import { sessionError } from "./errors.js";
import { checkCut, indexOfMessage } from "./transcript-cuts.js";

/** What the rewind's run does after the cut: nothing more, continue from it, or prompt. */
export type AfterRewind = { kind: "stop" } | { kind: "continue" } | { kind: "prompt"; messages: AgentMessage[] };

/** A cut to make, as a run. */
export interface RewindPlan {
	/** Messages the transcript keeps (the cut is before index `keep`). */
	keep: number;
	/** The transcript length the plan was made for: a transcript that changed since is not cut. */
	expectedCount: number;
	reason: "rewind" | "regenerate" | "edit";
	after: AfterRewind;
}

/** Reads a page of the stored transcript (the session port's `messages`). */
type ReadMessages = (offset: number, limit: number) => Promise<MessagePage>;

/** How many messages a regenerate reads from the end at a time, looking for the last user message. */
const TAIL_PAGE = 200;

function roleOf(message: AgentMessage | undefined): string | undefined {
	return (message as { role?: string } | undefined)?.role;
}

/** The rewind to `toMessageId`: it stays, what follows it is superseded. */
export async function planRewind(read: ReadMessages, toMessageId: string): Promise<RewindPlan> {
	const { total } = await read(0, 1);
	const index = indexOfMessage(toMessageId, total, "body.toMessageId");
	const page = await read(index, 2);
	checkCut(page.messages, 0, "body.toMessageId");
	return { keep: index + 1, expectedCount: total, reason: "rewind", after: { kind: "stop" } };
}

/** The regenerate: the last user message stays, its answer (everything after it) is superseded. */
export async function planRegenerate(read: ReadMessages): Promise<RewindPlan> {
	const { total } = await read(0, 1);
	for (let end = total; end > 0; end -= TAIL_PAGE) {
		const from = Math.max(0, end - TAIL_PAGE);
		const page = await read(from, end - from);
		for (let i = page.messages.length - 1; i >= 0; i--) {
			if (roleOf(page.messages[i]) !== "user") continue;
			const index = from + i;
			if (index === total - 1) break;
			return { keep: index + 1, expectedCount: total, reason: "regenerate", after: { kind: "continue" } };
		}
		if (page.messages.some((m) => roleOf(m) === "user")) break;
	}
	throw sessionError(
		"NOTHING_TO_REGENERATE",
		"The transcript has no answered user message to regenerate: its last user message has no answer yet (continue instead) or there is none.",
	);
}

/** The edit of user message `messageId`: it and what follows are superseded, `replacement` is prompted. */
export async function planEdit(read: ReadMessages, messageId: string, replacement: AgentMessage): Promise<RewindPlan> {
	const { total } = await read(0, 1);
	const index = indexOfMessage(messageId, total, "params.messageId");
	const page = await read(index, 1);
	if (roleOf(page.messages[0]) !== "user") {
		throw sessionError(
			"MESSAGE_NOT_FOUND",
			`params.messageId: "${messageId}" is not a user message (${roleOf(page.messages[0]) ?? "unknown"}); only user messages are edited.`,
		);
	}
	return { keep: index, expectedCount: total, reason: "edit", after: { kind: "prompt", messages: [replacement] } };
}
