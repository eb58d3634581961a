/**
 * The PostgreSQL store's working set: the write state of each session whose lease this store
 * holds (see "A synchronous working set" in `../types.ts`), loaded when the lease is taken. The
 * synchronous writes find their session here or write nothing. A session leaves it when it is
 * deleted, released, or lost (another store took its lease: its token is stale).
 */
import type { StoredEvent } from "../types.js";
import type { LeaseRow } from "./leases.js";

/** A session's message count, current run, and whether a run is active, as the queued writes leave them. */
export interface Tally {
	messages: number;
	runId: string | null;
	running: boolean;
}

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

/** One session's write state. */
export interface SessionState {
	sessionId: string;
	/** The fencing token of this store's lease on the session. */
	token: number;
	/** Highest event id assigned. */
	last: number;
	/** Ids up to this are reserved (durably once `reservedDurable` reaches it). */
	reserved: number;
	/** Ids up to this are durably reserved. */
	reservedDurable: number;
	/** Highest id on disk. */
	written: number;
	/** Batches with `last_id` up to this have been deleted by trimming. */
	trimmedThrough: number;
	/** Frames of the buffered events `pendingFirst..pendingLast`; empty when nothing is buffered. */
	pending: string;
	pendingFirst: number;
	pendingLast: number;
	pendingCount: number;
	/** Batches of a commit that failed: written first by the next one. */
	retry: EventBatch[];
	/** Every event since the `message_start` of the message still streaming, or undefined (see `event-log.ts`). */
	streaming: StoredEvent[] | undefined;
	tally: Tally;
}

/** The state of a session whose lease was just taken (`row`: what the take read). */
export function stateFromLease(sessionId: string, row: LeaseRow): SessionState {
	const written = Math.max(row.batch_last ?? 0, row.last_event_id);
	const last = Math.max(written, row.event_id_reserved);
	return {
		sessionId,
		token: row.lease_token,
		last,
		reserved: last,
		reservedDurable: last,
		written,
		trimmedThrough: 0,
		pending: "",
		pendingFirst: 0,
		pendingLast: 0,
		pendingCount: 0,
		retry: [],
		streaming: undefined,
		tally: { messages: row.message_count, runId: row.current_run_id, running: row.status === "running" },
	};
}

export class WorkingSet {
	private readonly states = new Map<string, SessionState>();

	get(sessionId: string): SessionState | undefined {
		return this.states.get(sessionId);
	}

	set(state: SessionState): void {
		this.states.set(state.sessionId, state);
	}

	/** The session leaves the working set; true if it was in it. */
	delete(sessionId: string): boolean {
		return this.states.delete(sessionId);
	}

	/** True when `state` is the session's current state (not replaced by a later join, not removed). */
	holds(state: SessionState): boolean {
		return this.states.get(state.sessionId) === state;
	}

	values(): IterableIterator<SessionState> {
		return this.states.values();
	}

	get size(): number {
		return this.states.size;
	}
}
