/**
 * Reading a session's transcript window from the store, and the whole transcript when a reader
 * needs more than the window.
 *
 * A live session holds the messages the next model call can read: from the latest compaction's
 * first kept message on (its compaction message itself when it kept nothing), or all of them when
 * the session was never compacted. Older messages stay in the store; a reader of the whole
 * transcript (`GET /v1/sessions/:id/messages` pages, an AG-UI `MESSAGES_SNAPSHOT`) reads them from
 * there. Loading reads pages from the end back to the window's start (growing pages), so a session
 * with a long compacted history holds about its window while it loads, not its history.
 */
import type { AgentMessage } from "../../../agent/types.js";
import type { SessionStore } from "../../../store/types.js";
import { isCompaction } from "../compaction/types.js";

/** Messages per store read (the store's largest page). */
const PAGE = 1000;
/**
 * Messages of the first read from the end when loading a window; each further read doubles, up to
 * `PAGE`. The window usually starts a few messages from the end, and a read past its start holds
 * messages that are then dropped: small first reads keep that waste small.
 */
const FIRST_BACKWARD_PAGE = 8;

/** The part of a transcript a live session holds: `messages` are the stored ones from index `base` on. */
export interface TranscriptWindow {
	base: number;
	messages: AgentMessage[];
}

/**
 * Index where the window starts given the compaction message at `index`: its first kept message,
 * or itself when it kept none (the same rule as `anchorOf` in compaction/view.ts).
 */
function windowStart(compaction: { firstKeptIndex: number }, index: number): number {
	const kept = compaction.firstKeptIndex;
	return kept >= 0 && kept < index ? kept : index;
}

/**
 * The window of session `id` as stored: read from the end until the latest compaction and the first
 * message it kept. Undefined for an unknown session.
 */
export async function loadWindow(store: SessionStore, id: string): Promise<TranscriptWindow | undefined> {
	const total = await store.countMessages(id);
	if (total === undefined) return undefined;
	const pages: AgentMessage[][] = [];
	let offset = total;
	let start = 0;
	let found = false;
	for (let size = FIRST_BACKWARD_PAGE; offset > start; size = Math.min(PAGE, size * 2)) {
		const from = Math.max(start, offset - size);
		const page = await store.listMessages(id, { offset: from, limit: offset - from });
		if (!page || page.messages.length === 0) break;
		const messages = page.messages as AgentMessage[];
		if (!found) {
			for (let i = messages.length - 1; i >= 0; i--) {
				const message = messages[i];
				if (!isCompaction(message)) continue;
				found = true;
				start = windowStart(message, from + i);
				break;
			}
		}
		pages.unshift(from < start ? messages.slice(start - from) : messages);
		offset = from;
	}
	return { base: found ? start : offset, messages: pages.flat() };
}

/** The stored messages before index `base` (what a window starting there leaves in the store). */
export async function readBefore(store: SessionStore, id: string, base: number): Promise<AgentMessage[]> {
	const older: AgentMessage[] = [];
	while (older.length < base) {
		const page = await store.listMessages(id, { offset: older.length, limit: Math.min(PAGE, base - older.length) });
		if (!page || page.messages.length === 0) break;
		older.push(...(page.messages as AgentMessage[]));
	}
	return older;
}
