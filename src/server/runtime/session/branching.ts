/**
 * Branching a conversation: a fork is a new session with the parent's configuration and its
 * transcript up to a message, read through the parent's session port (so any replica can fork any
 * idle session, wherever its last run ran). The parent is not written to; the fork has its own event id space,
 * no queue and no pending interactions, and both go on independently. Message ids and the cut
 * rules are `transcript-cuts.ts`'.
 */
import type { AgentMessage } from "../../../agent/types.js";
import type { SessionConfig, SessionRecord } from "../../../store/types.js";
import type { LiveSession } from "./live-session.js";
import type { SessionManager } from "./manager.js";
import type { SessionPort } from "./port.js";
import { checkCut, checkIdle, indexOfMessage, transcriptMessageId } from "./transcript-cuts.js";

/** Metadata keys a fork carries: the session it was forked from, and after which message. */
export const FORKED_FROM_KEY = "wheelhouse.forkedFrom";
export const FORKED_AT_KEY = "wheelhouse.forkedAt";

const PAGE = 1000;

/** The session's whole stored transcript, in order. */
export async function readTranscript(session: SessionPort): Promise<AgentMessage[]> {
	const messages: AgentMessage[] = [];
	for (;;) {
		const page = await session.messages(messages.length, PAGE);
		if (page.messages.length === 0) return messages;
		messages.push(...page.messages);
		if (messages.length >= page.total) return messages;
	}
}

/** The configuration part of a stored session. */
function configOf(record: SessionRecord): SessionConfig {
	return {
		model: record.model,
		systemPrompt: record.systemPrompt,
		thinkingLevel: record.thinkingLevel,
		tools: record.tools,
		toolExecution: record.toolExecution,
		steeringMode: record.steeringMode,
		followUpMode: record.followUpMode,
		metadata: record.metadata,
		clientTools: record.clientTools,
		toolApprovals: record.toolApprovals,
		onInterrupt: record.onInterrupt,
		...(record.compaction ? { compaction: record.compaction } : {}),
		...(record.budget ? { budget: record.budget } : {}),
	};
}

export interface ForkDeps {
	sessions: SessionManager;
}

/** Forks `session` after message `atMessageId` (default: its last), as `ownerId`. */
export async function forkSession(
	deps: ForkDeps,
	session: SessionPort,
	ownerId: string | null,
	atMessageId: string | undefined,
): Promise<LiveSession> {
	checkIdle(session, "fork");
	const record = session.record;
	const messages = await readTranscript(session);
	const index =
		atMessageId === undefined ? messages.length - 1 : indexOfMessage(atMessageId, messages.length, "body.atMessageId");
	if (index >= 0) checkCut(messages, index, "body.atMessageId");
	const config = configOf(record);
	return deps.sessions.create(ownerId, {
		...config,
		metadata: {
			...config.metadata,
			[FORKED_FROM_KEY]: session.id,
			...(index >= 0 ? { [FORKED_AT_KEY]: transcriptMessageId(index) } : {}),
		},
		messages: messages.slice(0, index + 1),
	});
}
