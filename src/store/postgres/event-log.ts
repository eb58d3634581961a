/**
 * The PostgreSQL store's event log: id reservation, the buffers of `../sql/event-buffer.ts` taken
 * and restored around commits, and the reads that merge the rows with the streaming window. When
 * buffers are written is the commit queue's business (`commit.ts`).
 *
 * The on-disk format is the one the SQLite store writes too (`../sql/event-batch.ts`: one row per
 * session per flush, frames concatenated, skip frames for the ids of dropped deltas), without
 * message references.
 *
 * Ids are reserved in blocks in the session's row ahead of use (`event_id_reserved`): when the
 * next id comes within half a block of the reservation, the next commit extends it by a block, so
 * the reservation is normally durable long before an id reaches it. An id past the durable
 * reservation makes `syncPending` true: the barrier writes the extension before that id can
 * leave the process. A crash therefore never leads to a reused id.
 */
import type { EventPage } from "../shared.js";
import { decodeBatch } from "../sql/event-batch.js";
import { EventBuffer } from "../sql/event-buffer.js";
import type { StoredEvent } from "../types.js";
import { named, type Queryable } from "./connection.js";
import type { EventBatch, SessionState, WorkingSet } from "./working-set.js";

/** Event ids reserved per extension; bounds the id gap a crash can leave. */
export const ID_RESERVATION = 1024;

/** Rows read per query when a read walks the log. */
const ROWS_PER_READ = 64;

/** A reservation extension to write: the session, its token, the new reservation. */
export interface Bump {
	state: SessionState;
	token: number;
	reserved: number;
}

export class EventLog extends EventBuffer<SessionState> {
	private readonly bumps = new Set<SessionState>();

	constructor(
		private readonly sessions: WorkingSet,
		maxEventsPerSession: number,
		/** Runs after an event went into a buffer (the commit queue decides when buffers are written). */
		afterBuffered: () => void,
	) {
		super(maxEventsPerSession, afterBuffered);
	}

	/** True while an id past a session's durable reservation has been handed out (the barrier must write it). */
	get reservationBehind(): boolean {
		for (const state of this.bumps) if (state.last > state.reservedDurable) return true;
		return false;
	}

	/** True when reservation extensions wait to be written. */
	get hasBumps(): boolean {
		return this.bumps.size > 0;
	}

	/** Assigns the next id of `state`'s session and buffers the event. Returns the id. */
	append(state: SessionState, type: string, data: string, at: number): number {
		const id = state.last + 1;
		if (id + ID_RESERVATION / 2 > state.reserved) {
			state.reserved = id + ID_RESERVATION;
			this.bumps.add(state);
		}
		return this.buffer(state, id, type, data, at);
	}

	/** Takes every buffered batch (failed ones first) out of the buffers, for one commit. */
	take(): EventBatch[] {
		const batches: EventBatch[] = [];
		for (const state of this.dirty) {
			batches.push(...state.retry);
			state.retry = [];
			if (state.pending === "") continue;
			const floor = state.pendingLast - this.maxEventsPerSession;
			batches.push({
				sessionId: state.sessionId,
				token: state.token,
				first: state.pendingFirst,
				last: state.pendingLast,
				data: state.pending,
				count: state.pendingCount,
				trimFloor: floor > state.trimmedThrough + this.trimSlack ? floor : 0,
			});
			state.pending = "";
			state.pendingCount = 0;
		}
		this.dirty.clear();
		return batches;
	}

	/** Takes the reservation extensions to write. */
	takeBumps(): Bump[] {
		const bumps = [...this.bumps].map((state) => ({ state, token: state.token, reserved: state.reserved }));
		this.bumps.clear();
		return bumps;
	}

	/** After a commit: the batches are on disk, the reservations durable. */
	committed(batches: EventBatch[], bumps: Bump[]): void {
		for (const b of batches) {
			this.bufferedCount -= b.count;
			const state = this.sessions.get(b.sessionId);
			if (!state || state.token !== b.token) continue;
			state.written = Math.max(state.written, b.last);
			if (b.trimFloor > state.trimmedThrough) state.trimmedThrough = b.trimFloor;
		}
		for (const b of bumps) b.state.reservedDurable = Math.max(b.state.reservedDurable, b.reserved);
	}

	/** After a failed commit: the batches go back (written first next time), the extensions are redone. */
	restore(batches: EventBatch[], bumps: Bump[]): void {
		const bySession = new Map<string, EventBatch[]>();
		for (const b of batches) {
			const list = bySession.get(b.sessionId) ?? [];
			list.push(b);
			bySession.set(b.sessionId, list);
		}
		for (const [sessionId, list] of bySession) {
			const state = this.sessions.get(sessionId);
			if (!state || state.token !== list[0]?.token) {
				for (const b of list) this.bufferedCount -= b.count;
				continue;
			}
			state.retry.unshift(...list);
			this.dirty.add(state);
		}
		for (const b of bumps) if (this.sessions.holds(b.state)) this.bumps.add(b.state);
	}

	/** Drops the buffers of sessions leaving the working set (deleted, released or lost). */
	drop(state: SessionState): void {
		this.bufferedCount -= state.pendingCount + state.retry.reduce((n, b) => n + b.count, 0);
		state.pending = "";
		state.pendingCount = 0;
		state.retry = [];
		this.dirty.delete(state);
		this.bumps.delete(state);
	}

	/** The highest id of a session: from the working set, else from its row. Undefined if unknown. */
	private async lastOf(db: Queryable, sessionId: string): Promise<number | undefined> {
		const state = this.sessions.get(sessionId);
		if (state) return state.last;
		const row = (
			await db.query<{ last: number }>(
				named(
					`SELECT greatest(last_event_id, event_id_reserved,
					 coalesce((SELECT max(last_id) FROM event_batches WHERE session_id = $1), 0)) AS last
					 FROM sessions WHERE id = $1`,
					[sessionId],
				),
			)
		).rows[0];
		return row?.last;
	}

	/** Retained events after `afterId` (see `EventLogReader.readEvents`); the caller committed the buffers first. */
	async read(db: Queryable, sessionId: string, afterId: number, page: EventPage): Promise<StoredEvent[]> {
		const state = this.sessions.get(sessionId);
		const last = await this.lastOf(db, sessionId);
		if (last === undefined) return [];
		const from = this.readFrom(afterId, last);
		const streaming = state?.streaming;
		const windowStart = streaming?.[0]?.id ?? Number.POSITIVE_INFINITY;
		let cursor = from;
		let done = from + 1 >= windowStart;
		while (!done && page.open) {
			const rows = (
				await db.query<{ first_id: number; last_id: number; data: string }>(
					named(
						"SELECT first_id, last_id, data FROM event_batches WHERE session_id = $1 AND last_id > $2 ORDER BY last_id LIMIT $3",
						[sessionId, cursor, ROWS_PER_READ],
					),
				)
			).rows;
			for (const row of rows) {
				decodeBatch(row.first_id, row.data, (e) => {
					if (e.id >= windowStart || !page.open) {
						done = true;
						return false;
					}
					if (e.id > from) page.add(e);
					return true;
				});
				cursor = row.last_id;
				if (done || !page.open) break;
			}
			if (rows.length < ROWS_PER_READ) done = true;
		}
		this.readWindow(streaming, from, page);
		return page.events;
	}

	/** Lowest retained id (see `EventLogReader.oldestEventId`); the caller committed the buffers first. */
	async oldest(db: Queryable, sessionId: string): Promise<number | undefined> {
		const state = this.sessions.get(sessionId);
		const last = await this.lastOf(db, sessionId);
		if (last === undefined || last === 0) return undefined;
		const first =
			(
				await db.query<{ first_id: number }>(
					"SELECT first_id FROM event_batches WHERE session_id = $1 ORDER BY last_id LIMIT 1",
					[sessionId],
				)
			).rows[0]?.first_id ?? state?.streaming?.[0]?.id;
		return this.oldestOf(last, first);
	}
}
