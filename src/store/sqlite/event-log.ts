/**
 * The SQLite driver of the event log (`../sql/event-buffer.ts`): its reads, reservations written
 * at once when an id passes them, and the buffers as `event_batches` rows (one per session per
 * flush, `../sql/event-batch.ts`). When the buffers are written is the commit queue's business
 * (`commit-queue.ts`).
 */
import { EventBuffer, ID_RESERVATION, type LogRows } from "../sql/event-buffer.js";
import type { EventBatch } from "./event-writer.js";
import type { Statements } from "./statements.js";
import type { SessionState, WorkingSet } from "./working-set.js";

/** The log's reads as SQLite statements. */
function logRows(s: Statements, sessions: WorkingSet): LogRows {
	return {
		lastId: (sessionId) => sessions.idsOnDisk(sessionId)?.last,
		batches: (sessionId, after, limit) =>
			s.readBatches.all(sessionId, after, limit) as { first_id: number; last_id: number; data: string }[],
		firstId: (sessionId) => s.firstBatch.pluck().get(sessionId) as number | undefined,
		message: (sessionId, seq) => s.getMessage.get(sessionId, seq) as string | undefined,
	};
}

export class EventLog extends EventBuffer<SessionState> {
	protected readonly reserveAhead = 0;

	constructor(
		private readonly s: Statements,
		sessions: WorkingSet,
		maxEventsPerSession: number,
		/** Runs before an id reservation is written (the writer thread must not hold the write lock). */
		private readonly beforeReserve: () => void,
		/** Runs after an event went into a buffer (the commit queue decides when buffers are written). */
		afterBuffered: () => void,
	) {
		super(sessions, logRows(s, sessions), maxEventsPerSession, afterBuffered);
	}

	/** Writes the next block at once, before the id is handed out, so no restart can reuse it. */
	protected reserve(state: SessionState, id: number): void {
		this.beforeReserve();
		const reserved = id + ID_RESERVATION - 1;
		this.s.reserveIds.run(reserved, state.sessionId);
		state.reserved = reserved;
	}

	/** The sessions whose buffers a commit scoped to `scope` writes (every dirty one when omitted). */
	toWrite(scope: readonly string[] | undefined): SessionState[] {
		if (scope === undefined) return [...this.dirty];
		const states = new Set<SessionState>();
		for (const id of scope) {
			const state = this.sessions.get(id);
			if (state && this.dirty.has(state)) states.add(state);
		}
		return [...states];
	}

	/** The buffered events of `states` as one batch per session (nothing changes until `markWritten`). */
	batchesOf(states: SessionState[]): EventBatch[] {
		return states.map((state) => {
			const floor = state.last - this.maxEventsPerSession;
			return {
				sessionId: state.sessionId,
				first: state.pendingFirst,
				last: state.pendingLast,
				data: state.pending,
				trimFloor: floor > state.trimmedThrough + this.trimSlack ? floor : 0,
			};
		});
	}

	/** Empties the buffers of `states` once committed (inline) or handed to the writer thread. */
	markWritten(states: SessionState[]): void {
		for (const state of states) {
			state.written = state.last;
			this.bufferedCount -= state.pendingCount;
			state.pending = "";
			state.pendingCount = 0;
			const floor = state.written - this.maxEventsPerSession;
			if (floor > state.trimmedThrough + this.trimSlack) state.trimmedThrough = floor;
			this.dirty.delete(state);
		}
	}

	/** Drops the buffers of sessions about to be deleted (instead of writing them first). */
	drop(sessionIds: readonly string[]): void {
		const dropped: SessionState[] = [];
		for (const id of sessionIds) {
			const state = this.sessions.get(id);
			if (state && this.dirty.has(state)) dropped.push(state);
		}
		this.markWritten(dropped);
	}

	/** Inline mode: inserts one batch row per session; deletes batches that fell out of the cap. */
	writeBatches(batches: EventBatch[]): void {
		for (const b of batches) {
			this.s.insertBatch.run(b.sessionId, b.last, b.first, b.data);
			if (b.trimFloor > 0) this.s.trimBatches.run(b.sessionId, b.trimFloor);
		}
	}

	/**
	 * After a failed commit, id reservations made in it are undone with it: reserve again before the
	 * next id is handed out (a crash must never lead to an id being reused).
	 */
	forgetReservations(): void {
		for (const state of this.sessions.values()) state.reserved = Math.min(state.reserved, state.last);
	}

	/** At a clean close: gives back the unused reservations, so ids continue without a gap. */
	releaseReservations(): void {
		for (const state of this.sessions.values()) {
			if (state.reserved > state.last) this.s.releaseIds.run(state.last, state.written, state.sessionId);
		}
	}
}
