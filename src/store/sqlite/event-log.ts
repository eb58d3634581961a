/**
 * The SQLite store's event log in memory: appends into per-session buffers, id reservation, the
 * streaming window of the message in flight, and the reads that merge the buffer with the disk.
 * When the buffers are written is the commit queue's business (`commit-queue.ts`).
 *
 * Appends are the hot path (one per SSE event), so they are buffered per session as one string of
 * frames and written as one `event_batches` row per session per flush (`event-batch.ts`). The
 * deltas of a streaming message are not written at all: they stay in a per-session memory window
 * from the message's `message_start` to its `message_end` (`deltaRetention: "while-streaming"`),
 * and a batch records the ids they took with a skip frame. The cap per session applies at once to
 * what the reads return; on disk whole batches are deleted once all their ids fall out of it.
 *
 * Event ids must stay monotonic even when a crash loses buffered events, so ids are *reserved* on
 * disk ahead of use: when a session's next id passes its reservation, the log durably bumps
 * `event_id_reserved` by `ID_RESERVATION` (one tiny write per that many events), and a reopened
 * store continues after `max(last_event_id, event_id_reserved)`. A clean close releases the unused
 * reservation, so ids continue without a gap after a graceful restart.
 */
import type { EventPage } from "../shared.js";
import { decodeBatch, encodeEvent, encodeEventWithRefs, encodeSkip } from "../sql/event-batch.js";
import type { StoredEvent } from "../types.js";
import type { EventBatch } from "./event-writer.js";
import type { Statements } from "./statements.js";
import type { SessionState, WorkingSet } from "./working-set.js";

/** Event ids reserved on disk per bump; bounds the id gap a crash can leave. */
export const ID_RESERVATION = 1024;

/** The events whose data may repeat whole stored messages (written with references to them). */
const REF_EVENTS = new Set(["message_start", "message_end", "turn_end", "agent_end"]);

export class EventLog {
	/** Sessions with buffered events, and how many events are buffered in all. */
	private readonly dirty = new Set<SessionState>();
	private bufferedCount = 0;

	constructor(
		private readonly s: Statements,
		private readonly sessions: WorkingSet,
		readonly maxEventsPerSession: number,
		/** Runs before an id reservation is written (the writer thread must not hold the write lock). */
		private readonly beforeReserve: () => void,
		/** Runs after an event went into a buffer (the commit queue decides when buffers are written). */
		private readonly afterBuffered: () => void,
	) {}

	/** Events buffered in all sessions. */
	get buffered(): number {
		return this.bufferedCount;
	}

	/** Physical trimming runs once a quarter of the cap has fallen out of it, not on every flush. */
	private get trimSlack(): number {
		return Math.floor(this.maxEventsPerSession / 4);
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
		state.last = id;
		// The deltas of a streaming message live in memory only (resume within this process gets them
		// from `streaming`); what is written is the message's `message_start` and `message_end`, which
		// carries the whole message. This keeps most of the bytes of a streamed answer off the disk.
		if (type === "message_start") state.streaming = [];
		if (state.streaming) {
			state.streaming.push({ id, type, data, createdAt: at });
			// Its ids are consecutive: what is past the cap is outside the log anyway (reads apply the
			// cap by id). Cut in steps of a quarter so appends stay O(1).
			if (state.streaming.length > this.maxEventsPerSession + this.trimSlack) {
				state.streaming.splice(0, state.streaming.length - this.maxEventsPerSession);
			}
			if (type === "message_end") state.streaming = undefined;
			else if (type === "message_update") return id;
		}
		if (state.pending === "") {
			state.pendingFirst = id;
			this.dirty.add(state);
		} else if (id !== state.pendingLast + 1) {
			state.pending += encodeSkip(id - state.pendingLast - 1, at);
		}
		if (state.refs.length > 0 && REF_EVENTS.has(type)) {
			state.pending += encodeEventWithRefs(type, data, at, state.refs);
			if (type === "agent_end") state.refs = [];
		} else state.pending += encodeEvent(type, data, at);
		state.pendingLast = id;
		state.pendingCount++;
		this.bufferedCount++;
		this.afterBuffered();
		return id;
	}

	/**
	 * Retained events of a session after `afterId` (see `EventLogReader.readEvents`). The caller
	 * has committed the buffer first. `[]` for an unknown session.
	 */
	read(sessionId: string, afterId: number, page: EventPage): StoredEvent[] {
		const state = this.sessions.get(sessionId);
		const last = state?.last ?? this.sessions.idsOnDisk(sessionId)?.last;
		if (last === undefined) return [];
		// Ids at or below the cap's floor are outside the log even if their batch is still on disk.
		const from = Math.max(afterId, last - this.maxEventsPerSession);
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
		if (streaming && page.open) {
			for (const e of streaming) {
				if (e.id <= from) continue;
				if (!page.add({ ...e })) break;
			}
		}
		return page.events;
	}

	/** Lowest retained id (see `EventLogReader.oldestEventId`). The caller has committed the buffer first. */
	oldest(sessionId: string): number | undefined {
		const state = this.sessions.get(sessionId);
		const last = state?.last ?? this.sessions.idsOnDisk(sessionId)?.last;
		// Ids below the cap's floor are trimmed; every retained event at or above it is read back (the
		// deltas of ended messages were never retained: a resume from inside one is not a reset).
		if (last === undefined || last === 0) return undefined;
		const first = (this.s.firstBatch.pluck().get(sessionId) as number | undefined) ?? state?.streaming?.[0]?.id;
		if (first === undefined) return undefined;
		return Math.max(1, last - this.maxEventsPerSession + 1);
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
