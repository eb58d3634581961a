/**
 * The SQLite store's event log: id reservation, the buffers of `../sql/event-buffer.ts` as
 * `event_batches` rows (one per session per flush, `../sql/event-batch.ts`), and the reads that
 * merge the disk with the streaming window. When the buffers are written is the commit queue's
 * business (`commit-queue.ts`).
 *
 * Event ids must stay monotonic even when a crash loses buffered events, so ids are *reserved* on
 * disk ahead of use: when a session's next id passes its reservation, the log durably bumps
 * `event_id_reserved` by `ID_RESERVATION` (one tiny write per that many events), and a reopened
 * store continues after `max(last_event_id, event_id_reserved)`. A clean close releases the unused
 * reservation, so ids continue without a gap after a graceful restart.
 */
import type { EventPage } from "../shared.js";
import { decodeBatch } from "../sql/event-batch.js";
import { EventBuffer } from "../sql/event-buffer.js";
import type { StoredEvent } from "../types.js";
import type { EventBatch } from "./event-writer.js";
import type { Statements } from "./statements.js";
import type { SessionState, WorkingSet } from "./working-set.js";

/** Event ids reserved on disk per bump; bounds the id gap a crash can leave. */
export const ID_RESERVATION = 1024;

export class EventLog extends EventBuffer<SessionState> {
	constructor(
		private readonly s: Statements,
		private readonly sessions: WorkingSet,
		maxEventsPerSession: number,
		/** Runs before an id reservation is written (the writer thread must not hold the write lock). */
		private readonly beforeReserve: () => void,
		/** Runs after an event went into a buffer (the commit queue decides when buffers are written). */
		afterBuffered: () => void,
	) {
		super(maxEventsPerSession, afterBuffered);
	}

	/**
	 * Assigns the next id of `state`'s session and buffers the event (a delta of a streaming message
	 * stays in the window only). Returns the id.
	 */
	append(state: SessionState, type: string, data: string, at: number): number {
		const id = state.last + 1;
		if (id > state.reserved) {
			// Reserve before handing the id out, so no restart can reuse it.
			this.beforeReserve();
			const reserved = id + ID_RESERVATION - 1;
			this.s.reserveIds.run(reserved, state.sessionId);
			state.reserved = reserved;
		}
		return this.buffer(state, id, type, data, at);
	}

	/**
	 * Retained events of a session after `afterId` (see `EventLogReader.readEvents`). The caller
	 * has committed the buffer first. `[]` for an unknown session.
	 */
	read(sessionId: string, afterId: number, page: EventPage): StoredEvent[] {
		const state = this.sessions.get(sessionId);
		const last = state?.last ?? this.sessions.idsOnDisk(sessionId)?.last;
		if (last === undefined) return [];
		const from = this.readFrom(afterId, last);
		// From the streaming message's `message_start` on, the memory window has every event (the
		// disk has the same ones minus the deltas): the disk serves what is before it.
		const streaming = state?.streaming;
		const windowStart = streaming?.[0]?.id ?? Number.POSITIVE_INFINITY;
		if (from + 1 < windowStart) {
			const resolve = (seq: number) => this.s.getMessage.get(sessionId, seq) as string | undefined;
			const rows = this.s.readBatches.iterate(sessionId, from) as IterableIterator<{ first_id: number; data: string }>;
			for (const row of rows) {
				let done = false;
				decodeBatch(
					row.first_id,
					row.data,
					(e) => {
						if (e.id >= windowStart || !page.open) {
							done = true;
							return false;
						}
						if (e.id > from) page.add(e);
						return true;
					},
					resolve,
				);
				if (done || !page.open) break;
			}
		}
		this.readWindow(streaming, from, page);
		return page.events;
	}

	/** Lowest retained id (see `EventLogReader.oldestEventId`). The caller has committed the buffer first. */
	oldest(sessionId: string): number | undefined {
		const state = this.sessions.get(sessionId);
		const last = state?.last ?? this.sessions.idsOnDisk(sessionId)?.last;
		if (last === undefined || last === 0) return undefined;
		const first = (this.s.firstBatch.pluck().get(sessionId) as number | undefined) ?? state?.streaming?.[0]?.id;
		return this.oldestOf(last, first);
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
