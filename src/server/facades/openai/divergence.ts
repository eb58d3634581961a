/**
 * An edited Chat Completions history as a fork: a request that names the session of an earlier
 * answer (`x-wheelhouse-session-id`, the header every answer carries) and sends its conversation
 * again, changed somewhere, makes its new session a fork of that one at the divergence — the
 * messages up to there are the earlier session's stored messages (with their usage, thinking and
 * tool call ids), the rest the request's, and its metadata names the parent and the cut as
 * `POST /v1/sessions/:id/fork` does. Without the header (or when nothing is shared) the request
 * starts from its own messages, as before.
 *
 * Two messages are the same when their role and what a model reads of them are: text and images
 * of a user message, text and tool calls of an assistant message, the call id and text of a tool
 * result (timestamps, usage and provider details are not compared: a client does not send them).
 */
import type { AgentMessage } from "../../../agent/types.js";
import { FORKED_AT_KEY, FORKED_FROM_KEY, readTranscript } from "../../runtime/session/branching.js";
import type { SessionPort } from "../../runtime/session/port.js";
import { transcriptMessageId } from "../../runtime/session/transcript-cuts.js";

type Block = { type?: string; text?: string; data?: string; id?: string; name?: string; arguments?: unknown };

/** What a model reads of a message, as one comparable string. */
function essence(message: AgentMessage): string {
	const m = message as { role?: string; content?: unknown; toolCallId?: string };
	const blocks: Block[] =
		typeof m.content === "string" ? [{ type: "text", text: m.content }] : ((m.content as Block[]) ?? []);
	const parts = blocks
		.map((b) => {
			if (b.type === "text") return `t:${b.text ?? ""}`;
			if (b.type === "image") return `i:${b.data ?? ""}`;
			if (b.type === "toolCall") return `c:${b.id}:${b.name}:${JSON.stringify(b.arguments ?? {})}`;
			return ""; // thinking and other blocks: a client does not send them back
		})
		.filter((p) => p !== "" && p !== "t:");
	return JSON.stringify([m.role, m.toolCallId ?? null, parts]);
}

/** How many leading messages of `a` and `b` are the same. */
export function sharedPrefix(a: readonly AgentMessage[], b: readonly AgentMessage[]): number {
	let n = 0;
	while (n < a.length && n < b.length && essence(a[n] as AgentMessage) === essence(b[n] as AgentMessage)) n++;
	return n;
}

/** The history and metadata of a request's new session: forked from `parent` where `history` leaves it. */
export interface ForkedHistory {
	messages: AgentMessage[];
	metadata: Record<string, string>;
}

/**
 * The request's `history` as a fork of `parent`: undefined when they share no message (the request
 * starts from scratch). A history that is the parent's whole transcript forks it after its last
 * message (Chat Completions is stateless: every request is a new session).
 */
export async function forkAtDivergence(
	parent: SessionPort,
	history: readonly AgentMessage[],
): Promise<ForkedHistory | undefined> {
	const stored = await readTranscript(parent);
	const shared = sharedPrefix(stored, history);
	if (shared === 0) return undefined;
	return {
		messages: [...stored.slice(0, shared), ...history.slice(shared)],
		metadata: { [FORKED_FROM_KEY]: parent.id, [FORKED_AT_KEY]: transcriptMessageId(shared - 1) },
	};
}
