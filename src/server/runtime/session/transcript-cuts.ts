/**
 * Naming transcript messages and checking where a transcript may be cut: shared by a fork (a new
 * session from a prefix) and a rewind (the session's own transcript cut back). Messages are named
 * as the AG-UI facade names them: `wh-<index>`, the message's place in the transcript (`GET
 * /v1/sessions/:id/messages` pages by the same index).
 */
import type { AgentMessage } from "../../../agent/types.js";
import { sessionError } from "./errors.js";

const ID_PATTERN = /^wh-(\d{1,9})$/;

/** The `wh-<index>` id of the transcript message at `index`. */
export function transcriptMessageId(index: number): string {
	return `wh-${index}`;
}

/** The transcript index `id` names; 404 `MESSAGE_NOT_FOUND` when it names none of `length` messages. */
export function indexOfMessage(id: string, length: number, field: string): number {
	const match = ID_PATTERN.exec(id);
	const index = match ? Number(match[1]) : -1;
	if (index < 0 || index >= length) {
		throw sessionError(
			"MESSAGE_NOT_FOUND",
			`${field}: "${id}" names no message of the transcript (${length} messages: wh-0 to wh-${Math.max(0, length - 1)}).`,
		);
	}
	return index;
}

/** 409 `AGENT_BUSY` while the session runs, here or (in a cluster) on another replica. */
export function checkIdle(session: { id: string; record: { status: string } }, what: string): void {
	if (session.record.status === "running") {
		throw sessionError(
			"AGENT_BUSY",
			`Session ${session.id} is running; ${what} applies to an idle session (abort it or wait).`,
		);
	}
}

/**
 * A cut after `index` must not separate an assistant's tool calls from their results: the
 * transcript would hold calls nobody answers.
 */
export function checkCut(messages: AgentMessage[], index: number, field: string): void {
	const at = messages[index] as { role?: string; content?: unknown } | undefined;
	const next = messages[index + 1] as { role?: string } | undefined;
	const calls = at?.role === "assistant" && Array.isArray(at.content) && at.content.some((b) => b?.type === "toolCall");
	if ((calls && next?.role === "toolResult") || (at?.role === "toolResult" && next?.role === "toolResult")) {
		throw sessionError(
			"VALIDATION_FAILED",
			`${field}: the cut falls inside a tool call round (its results follow); cut at the round's last tool result instead.`,
		);
	}
}
