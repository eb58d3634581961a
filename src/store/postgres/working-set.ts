/**
 * The PostgreSQL store's working set: the write state of each session whose lease this store
 * holds (see "A synchronous working set" in `../types.ts`), loaded when the lease is taken. The
 * synchronous writes find their session here or write nothing. A session leaves it when it is
 * deleted, released, or lost (another store took its lease: its token is stale).
 */
import { type BufferState, newBufferState } from "../sql/event-buffer.js";
import { SessionStates, type Tally } from "../sql/working-set.js";
import type { LeaseRow } from "./leases.js";

/** Buffered events of one session written as one `event_batches` row. */
export interface EventBatch {
	sessionId: string;
	/** The lease token the events were appended under (a stale one writes nothing). */
	token: number;
	first: number;
	last: number;
	data: string;
	count: number;
	/** Delete this session's batches with `last_id <= trimFloor` (0: no trimming). */
	trimFloor: number;
}

/**
 * One session's write state: its event buffer (`../sql/event-buffer.ts`; no message references,
 * `refs` stays empty) and what follows.
 */
export interface SessionState extends BufferState {
	/** The fencing token of this store's lease on the session. */
	token: number;
	/** Ids up to this are durably reserved. */
	reservedDurable: number;
	/** Batches of a commit that failed: written first by the next one. */
	retry: EventBatch[];
	tally: Tally;
}

/** The state of a session whose lease was just taken (`row`: what the take read). */
export function stateFromLease(sessionId: string, row: LeaseRow): SessionState {
	const written = Math.max(row.batch_last ?? 0, row.last_event_id);
	const last = Math.max(written, row.event_id_reserved);
	return newBufferState(sessionId, written, last, last, {
		token: row.lease_token,
		reservedDurable: last,
		retry: [] as EventBatch[],
		tally: { messages: row.message_count, runId: row.current_run_id, running: row.status === "running" },
	});
}

export class WorkingSet extends SessionStates<SessionState> {}
