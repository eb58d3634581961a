/**
 * The PostgreSQL driver of the event log (`../sql/event-buffer.ts`): its reads, reservations
 * extended ahead of use and written with the next commit, and the buffers taken and restored
 * around commits. When buffers are written is the commit queue's business (`commit.ts`); the
 * format is the SQLite store's, without message references.
 *
 * When the next id comes within half a block of the reservation, the next commit extends it by a
 * block, so the reservation is normally durable long before an id reaches it. An id past the
 * durable reservation makes `syncPending` true: the barrier writes the extension before that id
 * can leave the process. A crash therefore never leads to a reused id.
 */
import { EventBuffer, ID_RESERVATION, type LogRows } from "../sql/event-buffer.js";
import { named, type Queryable } from "./connection.js";
import type { EventBatch, SessionState, WorkingSet } from "./working-set.js";

/** A reservation extension to write: the session, its token, the new reservation. */
export interface Bump {
	state: SessionState;
	token: number;
	reserved: number;
}

/** The log's reads as PostgreSQL statements on `db` (after the buffers are committed). */
function logRows(db: Queryable): LogRows {
	const first = async <R>(sql: string, params: unknown[]): Promise<R | undefined> =>
		(await db.query(named(sql, params))).rows[0] as R | undefined;
	return {
		lastId: async (sessionId) =>
			(
				await first<{ last: number }>(
					`SELECT greatest(last_event_id, event_id_reserved,
					 coalesce((SELECT max(last_id) FROM event_batches WHERE session_id = $1), 0)) AS last
					 FROM sessions WHERE id = $1`,
					[sessionId],
				)
			)?.last,
		batches: async (sessionId, after, limit) =>
			(
				await db.query(
					named(
						"SELECT first_id, last_id, data FROM event_batches WHERE session_id = $1 AND last_id > $2 ORDER BY last_id LIMIT $3",
						[sessionId, after, limit],
					),
				)
			).rows,
		firstId: async (sessionId) =>
			(
				await first<{ first_id: number }>(
					"SELECT first_id FROM event_batches WHERE session_id = $1 ORDER BY last_id LIMIT 1",
					[sessionId],
				)
			)?.first_id,
		message: () => undefined,
	};
}

export class EventLog extends EventBuffer<SessionState> {
	private readonly bumps = new Set<SessionState>();

	protected readonly reserveAhead = ID_RESERVATION / 2;

	constructor(
		sessions: WorkingSet,
		db: Queryable,
		maxEventsPerSession: number,
		/** Runs after an event went into a buffer (the commit queue decides when buffers are written). */
		afterBuffered: () => void,
	) {
		super(sessions, logRows(db), maxEventsPerSession, afterBuffered);
	}

	/** True while an id past a session's durable reservation has been handed out (the barrier must write it). */
	get reservationBehind(): boolean {
		for (const state of this.bumps) if (state.last > state.reservedDurable) return true;
		return false;
	}

	/**
	 * True when buffered events wait for a commit to take them (`buffered` also counts those a
	 * commit in flight has taken).
	 */
	get waiting(): boolean {
		return this.dirty.size > 0;
	}

	/** True when reservation extensions wait to be written. */
	get hasBumps(): boolean {
		return this.bumps.size > 0;
	}

	/** Extends the reservation by a block, written with the next commit. */
	protected reserve(state: SessionState, id: number): void {
		state.reserved = id + ID_RESERVATION;
		this.bumps.add(state);
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
}
