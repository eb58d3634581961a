/**
 * The event buffer both SQL stores append into: per-session strings of frames (`event-batch.ts`),
 * the streaming window of the message in flight, and the retention cap as reads apply it. How ids
 * are reserved, how buffers reach the database and how rows are read back is each store's own
 * (`../sqlite/event-log.ts`, `../postgres/event-log.ts`).
 *
 * Appends are the hot path (one per SSE event): a buffered event costs one string append, and the
 * deltas of a streaming message are not written at all. They stay in a per-session memory window
 * from the message's `message_start` to its `message_end` (`deltaRetention: "while-streaming"`),
 * and a batch records the ids they took with a skip frame. The cap per session applies at once to
 * what the reads return; on disk whole batches are deleted once all their ids fall out of it.
 */
import type { EventPage } from "../shared.js";
import type { StoredEvent } from "../types.js";
import { encodeEvent, encodeEventWithRefs, encodeSkip, type RefTarget } from "./event-batch.js";

/** What the buffer keeps of one session; each store's session state adds its own fields. */
export interface BufferState {
	sessionId: string;
	/** Highest event id assigned. */
	last: number;
	/** Highest id on disk. */
	written: number;
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
 * The state of a session whose log on disk ends at `written` and whose ids run to `last`, with
 * nothing buffered; `extra` is the store's own part of the state.
 */
export function newBufferState<X extends object>(
	sessionId: string,
	written: number,
	last: number,
	extra: X,
): BufferState & X {
	return {
		sessionId,
		last,
		written,
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

export class EventBuffer<S extends BufferState> {
	/** Sessions with buffered events, and how many events are buffered in all. */
	protected readonly dirty = new Set<S>();
	protected bufferedCount = 0;

	constructor(
		readonly maxEventsPerSession: number,
		/** Runs after an event went into a buffer (the commit queue decides when buffers are written). */
		private readonly afterBuffered: () => void,
	) {}

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

	/** The id a read after `afterId` starts past: ids at or below the cap's floor are outside the log. */
	protected readFrom(afterId: number, last: number): number {
		return Math.max(afterId, last - this.maxEventsPerSession);
	}

	/**
	 * Adds the events of the streaming window after `from` to `page` (the window has every event from
	 * the streaming message's `message_start` on; the disk serves what is before it).
	 */
	protected readWindow(streaming: StoredEvent[] | undefined, from: number, page: EventPage): void {
		if (!streaming || !page.open) return;
		for (const e of streaming) {
			if (e.id <= from) continue;
			if (!page.add({ ...e })) break;
		}
	}

	/**
	 * The lowest retained id of a log with events whose highest id is `last` and whose first event (on
	 * disk or in the window) is `first`. Ids below the cap's floor are trimmed; every retained event
	 * at or above it is read back (the deltas of ended messages were never retained: a resume from
	 * inside one is not a reset).
	 */
	protected oldestOf(last: number, first: number | undefined): number | undefined {
		if (first === undefined) return undefined;
		return Math.max(1, last - this.maxEventsPerSession + 1);
	}
}
