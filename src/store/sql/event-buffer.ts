/**
 * The event log both SQL stores append into: per-session strings of frames (`event-batch.ts`),
 * the streaming window of the message in flight, id reservation, the retention cap, and the reads
 * that merge the batch rows on disk with the window. What a driver adds is its SQL (`LogRows`),
 * when a reservation is written, and how buffers reach the database (`../sqlite/event-log.ts`,
 * `../postgres/event-log.ts`).
 *
 * Event ids must stay monotonic even when a crash loses buffered events, so ids are *reserved* in
 * the session's row ahead of use, `ID_RESERVATION` at a time (one tiny write per that many events),
 * and a reopened store continues after the last reserved id. A clean close gives the unused
 * reservation back, so ids continue without a gap after a graceful restart.
 *
 * Appends are the hot path (one per SSE event): a buffered event costs one string append, and the
 * deltas of a streaming message are not written at all. They stay in a per-session memory window
 * from the message's `message_start` to its `message_end` (`deltaRetention: "while-streaming"`),
 * and a batch records the ids they took with a skip frame. The cap per session applies at once to
 * what the reads return; on disk whole batches are deleted once all their ids fall out of it.
 */
import type { EventPage } from "../shared.js";
import type { StoredEvent } from "../types.js";
import type { Answer } from "./driver.js";
import { decodeBatch, encodeEvent, encodeEventWithRefs, encodeSkip, type RefTarget } from "./event-batch.js";
import type { SessionStates } from "./working-set.js";

/** Event ids reserved on disk per reservation; bounds the id gap a crash can leave. */
export const ID_RESERVATION = 1024;

/** Rows read per query when a read walks the log. */
const ROWS_PER_READ = 64;

/** One `event_batches` row as reads need it. */
export interface BatchRow {
	first_id: number;
	last_id: number;
	data: string;
}

/**
 * The reads of the log a driver answers with its SQL. Contract: each sees every batch committed
 * before it; none writes.
 */
export interface LogRows {
	/** The highest id a session not in the working set may have handed out; undefined if unknown. */
	lastId(sessionId: string): Answer<number | undefined>;
	/** Up to `limit` batches of the session with `last_id > after`, in id order. */
	batches(sessionId: string, after: number, limit: number): Answer<BatchRow[]>;
	/** The `first_id` of the session's oldest batch, undefined when it has none. */
	firstId(sessionId: string): Answer<number | undefined>;
	/** The JSON of transcript message `seq` (for batches written with references). */
	message(sessionId: string, seq: number): string | undefined;
}

/** What the buffer keeps of one session; each store's session state adds its own fields. */
export interface BufferState {
	sessionId: string;
	/** Highest event id assigned. */
	last: number;
	/** Highest id on disk. */
	written: number;
	/** Ids up to this are reserved (see `EventBuffer.reserve`). */
	reserved: number;
	/** Batches with `last_id` up to this have been deleted by trimming. */
	trimmedThrough: number;
	/** Frames of the buffered events `pendingFirst..pendingLast`; empty when nothing is buffered. */
	pending: string;
	pendingFirst: number;
	/** Id of the last buffered event (ids after it up to `last` are memory-only deltas). */
	pendingLast: number;
	pendingCount: number;
	/**
	 * Every event since the `message_start` of the message still streaming (deltas included), or
	 * undefined when none streams: the only place that message's deltas are kept.
	 */
	streaming: StoredEvent[] | undefined;
	/**
	 * The messages stored since the current run started, until its `agent_end`: the events that
	 * repeat them are written with references instead (`event-batch.ts`). Always empty in a store
	 * that writes no references.
	 */
	refs: RefTarget[];
}

/**
 * The state of a session whose log on disk ends at `written`, whose ids run to `last` and are
 * reserved up to `reserved`, with nothing buffered; `extra` is the store's own part of the state.
 */
export function newBufferState<X extends object>(
	sessionId: string,
	written: number,
	last: number,
	reserved: number,
	extra: X,
): BufferState & X {
	return {
		sessionId,
		last,
		written,
		reserved,
		trimmedThrough: 0,
		pending: "",
		pendingFirst: 0,
		pendingLast: 0,
		pendingCount: 0,
		streaming: undefined,
		refs: [],
		...extra,
	};
}

/** The events whose data may repeat whole stored messages (written with references to them). */
const REF_EVENTS = new Set(["message_start", "message_end", "turn_end", "agent_end"]);

export abstract class EventBuffer<S extends BufferState> {
	/** Sessions with buffered events, and how many events are buffered in all. */
	protected readonly dirty = new Set<S>();
	protected bufferedCount = 0;
	/** How far ahead of the next id a reservation is renewed (0: when the next id passes it). */
	protected abstract readonly reserveAhead: number;

	constructor(
		protected readonly sessions: SessionStates<S>,
		private readonly rows: LogRows,
		readonly maxEventsPerSession: number,
		/** Runs after an event went into a buffer (the commit queue decides when buffers are written). */
		private readonly afterBuffered: () => void,
	) {}

	/**
	 * Reserves ids from `id` on (at least up to `id`) before `id` is handed out: written at once, or
	 * with the next commit and before `id` can leave the process (the barrier waits for it).
	 */
	protected abstract reserve(state: S, id: number): void;

	/**
	 * Assigns the next id of `state`'s session and buffers the event (a delta of a streaming message
	 * stays in the window only). Returns the id.
	 */
	append(state: S, type: string, data: string, at: number): number {
		const id = state.last + 1;
		if (id + this.reserveAhead > state.reserved) this.reserve(state, id);
		return this.buffer(state, id, type, data, at);
	}

	/** Events buffered in all sessions. */
	get buffered(): number {
		return this.bufferedCount;
	}

	/** Physical trimming runs once a quarter of the cap has fallen out of it, not on every flush. */
	protected get trimSlack(): number {
		return Math.floor(this.maxEventsPerSession / 4);
	}

	/**
	 * Takes `id` (reserved by the caller) as `state`'s last id and buffers the event (a delta of a
	 * streaming message stays in the window only). Returns the id.
	 */
	protected buffer(state: S, id: number, type: string, data: string, at: number): number {
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
	 * Retained events of a session after `afterId` (see `EventLogReader.readEvents`); the caller has
	 * committed the buffers first. `[]` for an unknown session.
	 */
	async read(sessionId: string, afterId: number, page: EventPage): Promise<StoredEvent[]> {
		const state = this.sessions.get(sessionId);
		const known = state ? state.last : this.rows.lastId(sessionId);
		const last = known instanceof Promise ? await known : known;
		if (last === undefined) return [];
		// Ids at or below the cap's floor are outside the log.
		const from = Math.max(afterId, last - this.maxEventsPerSession);
		// From the streaming message's `message_start` on, the memory window has every event (the
		// disk has the same ones minus the deltas): the disk serves what is before it.
		// The window goes on from the disk only once every event before it is there: those appended
		// after the last commit took the buffers are in neither yet, and a page that went on with the
		// window would skip them for good (its reader's cursor passes them). The page ends with the
		// disk then; the next read, after the commit, has them.
		const windowStart = state?.streaming?.[0]?.id ?? Number.POSITIVE_INFINITY;
		const streaming =
			state?.streaming && (state.written >= windowStart - 1 || from + 1 >= windowStart) ? state.streaming : undefined;
		const resolve = (seq: number) => this.rows.message(sessionId, seq);
		let cursor = from;
		let done = from + 1 >= windowStart;
		while (!done && page.open) {
			const answer = this.rows.batches(sessionId, cursor, ROWS_PER_READ);
			const rows = answer instanceof Promise ? await answer : answer;
			for (const row of rows) {
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
				cursor = row.last_id;
				if (done || !page.open) break;
			}
			if (rows.length < ROWS_PER_READ) done = true;
		}
		if (streaming && page.open) {
			for (const e of streaming) {
				if (e.id <= from) continue;
				if (!page.add({ ...e })) break;
			}
		}
		return page.events;
	}

	/**
	 * The lowest retained id (see `EventLogReader.oldestEventId`); the caller has committed the
	 * buffers first. Ids below the cap's floor are trimmed; every retained event at or above it is
	 * read back (the deltas of ended messages were never retained: a resume from inside one is not a
	 * reset).
	 */
	async oldest(sessionId: string): Promise<number | undefined> {
		const state = this.sessions.get(sessionId);
		const known = state ? state.last : this.rows.lastId(sessionId);
		const last = known instanceof Promise ? await known : known;
		if (last === undefined || last === 0) return undefined;
		const onDisk = this.rows.firstId(sessionId);
		const first = (onDisk instanceof Promise ? await onDisk : onDisk) ?? state?.streaming?.[0]?.id;
		if (first === undefined) return undefined;
		return Math.max(1, last - this.maxEventsPerSession + 1);
	}
}
