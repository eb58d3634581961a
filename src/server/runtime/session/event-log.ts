/**
 * The event log of one session, its one owner: appends (the store assigns the next id), frames
 * each event once, hands it to the session's observers (`observers.ts`), and serves the reads a
 * resume needs (pages after a cursor, whether a cursor is still retained). Nothing else in the server
 * reads or writes a session's events in the store.
 *
 * Appends are synchronous (the store's working set assigns the id at once), so the order of ids is
 * the order of events. Reads go to the store and are asynchronous: a reader that registered as a
 * observer first, and switches to live events in the same tick as it finds its cursor at
 * `lastEventId`, misses and duplicates nothing (see `stream.ts`).
 */
import type { AgentEvent } from "../../../agent/types.js";
import type { SessionStore, StoredEvent } from "../../../store/types.js";
import type { SseEventName } from "../../../wire/events.js";
import { formatEventFrame } from "../../../wire/sse-frames.js";
import type { SessionObservers } from "./observers.js";

export class SessionEventLog {
	constructor(
		private readonly store: SessionStore,
		readonly sessionId: string,
		/** Who observes the session's events: every append goes to them. */
		private readonly observers: SessionObservers,
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

	/**
	 * Appends an event and hands it to the session's observers as one prebuilt frame. `data` is the
	 * serialised JSON payload; `runSeq` the run it belongs to; `agent` the Agent's event it encodes
	 * (absent for a server event). Returns the id (undefined when the session is gone from the
	 * store: an agent event then goes only to the observers of unstored events).
	 */
	append(type: SseEventName, data: string, runSeq: number, agent?: AgentEvent): number | undefined {
		const id = this.store.appendEvent(this.sessionId, type, data);
		if (id === undefined) {
			if (agent) this.observers.deliverUnlogged(agent);
			return undefined;
		}
		const frame = formatEventFrame(id, type, data);
		this.observers.deliver({ sessionId: this.sessionId, id, type, data, frame, runSeq, agent });
		return id;
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
