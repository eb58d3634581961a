/**
 * The event log of one session, its one owner: appends (the store assigns the next id), frames
 * each event once, fans the frame out to the session's subscribers, and serves the reads a resume
 * needs (pages after a cursor, whether a cursor is still retained). Nothing else in the server
 * reads or writes a session's events in the store.
 *
 * Appends are synchronous (the store's working set assigns the id at once), so the order of ids is
 * the order of events. Reads go to the store and are asynchronous: a reader that registered as a
 * subscriber first, and switches to live events in the same tick as it finds its cursor at
 * `lastEventId`, misses and duplicates nothing (see `stream.ts`).
 */
import type { FastifyBaseLogger } from "fastify";
import type { SessionStore, StoredEvent } from "../../store/types.js";
import type { SseEventName } from "../../wire/events.js";
import { formatEventFrame } from "../sse/frames.js";

/** Receives every event of a session, in id order, as a prebuilt SSE frame. */
export interface SessionSubscriber {
	/** `runSeq` is the sequence number of the run the event belongs to (0 outside any run). */
	deliver(id: number, type: string, frame: string, runSeq: number): void;
	/** The session is going away (deleted, evicted, shutdown): end the stream. */
	close(reason: string): void;
	/**
	 * The session's lease was lost to another replica (cluster mode): end the stream without
	 * sending what is not sent yet (the store refused it). Absent: `close`.
	 */
	leaseLost?(): void;
}

/**
 * Sees every event a session's log appends, after its local subscribers (cluster mode publishes
 * them to the other replicas). Contract: must not throw, and must not block.
 */
export type EventTap = (sessionId: string, id: number, type: string, data: string) => void;

export class SessionEventLog {
	private readonly subscribers = new Set<SessionSubscriber>();

	constructor(
		private readonly store: SessionStore,
		readonly sessionId: string,
		private readonly logger: FastifyBaseLogger,
		private readonly tap?: EventTap,
		/** The last id as the session's record had it: the answer while it is not in this store's working set. */
		private readonly recordLastId = 0,
	) {}

	/**
	 * The id of the last event logged (0: none yet). For a session outside the store's working set
	 * (another replica runs it) the last id its record had when loaded.
	 */
	get lastEventId(): number {
		return this.store.lastEventId(this.sessionId) ?? this.recordLastId;
	}

	get subscriberCount(): number {
		return this.subscribers.size;
	}

	/**
	 * Appends an event and delivers it to every subscriber as one prebuilt frame. `data` is the
	 * serialised JSON payload; `runSeq` the run it belongs to. Returns the id (undefined when the
	 * session is gone from the store). A subscriber that throws is dropped.
	 */
	append(type: SseEventName, data: string, runSeq: number): number | undefined {
		const id = this.store.appendEvent(this.sessionId, type, data);
		if (id === undefined) return undefined;
		const frame = formatEventFrame(id, type, data);
		for (const subscriber of this.subscribers) {
			try {
				subscriber.deliver(id, type, frame, runSeq);
			} catch (err) {
				this.logger.error({ err, sessionId: this.sessionId }, "subscriber failed; dropping it");
				this.subscribers.delete(subscriber);
			}
		}
		this.tap?.(this.sessionId, id, type, data);
		return id;
	}

	/** Adds a subscriber; it receives every event appended from now on. Returns the unsubscribe function. */
	subscribe(subscriber: SessionSubscriber): () => void {
		this.subscribers.add(subscriber);
		return () => {
			this.subscribers.delete(subscriber);
		};
	}

	/** Tells every subscriber the session is going away, and forgets them. */
	closeSubscribers(reason: string): void {
		for (const subscriber of [...this.subscribers]) {
			try {
				subscriber.close(reason);
			} catch {
				// closing is best effort
			}
		}
		this.subscribers.clear();
	}

	/**
	 * The session's lease was lost to another replica: every subscriber ends its stream without
	 * what it has not sent (see `SessionSubscriber.leaseLost`), and is forgotten.
	 */
	leaseLost(): void {
		for (const subscriber of [...this.subscribers]) {
			try {
				if (subscriber.leaseLost) subscriber.leaseLost();
				else subscriber.close("session lease lost");
			} catch {
				// closing is best effort
			}
		}
		this.subscribers.clear();
	}

	/** At most `limit` events after `afterId`, in id order, taking about `maxBytes` at most (one event at least). */
	read(afterId: number, limit: number, maxBytes: number): Promise<StoredEvent[]> {
		return this.store.readEvents(this.sessionId, afterId, limit, maxBytes);
	}

	/** Whether every event after `afterId` is still in the log (none was trimmed). */
	async isRetained(afterId: number): Promise<boolean> {
		const oldest = await this.store.oldestEventId(this.sessionId);
		return oldest !== undefined && afterId >= oldest - 1;
	}
}
