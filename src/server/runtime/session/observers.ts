/**
 * The one channel through which a session's events are observed. The SSE streams, the facades
 * (AG-UI, Chat Completions, Responses, MCP, A2A), the session's extensions (`onEvent`) and cluster
 * mode's fan-out to the other replicas all read a session's events here, and nowhere else.
 *
 * ## Contract
 *
 * - **What**: every event the session's log appends (agent events and server events), once, as
 *   the log stored it: its id, type, JSON data and prebuilt SSE frame, the run it belongs to, and
 *   for an agent event the Agent's own object (no observer parses what the session serialised).
 * - **Order**: each observer gets the events in id order. An event published while another is
 *   being delivered (an observer that publishes) is delivered once the current one reached every
 *   observer. Per event, the observers added with `observe` come first, in the order they were
 *   added; then the session's own (cluster fan-out, then the extensions' `onEvent`).
 * - **When**: synchronously, as the event is appended — after what it completes was stored
 *   (`agent-events.ts`), before the Agent goes on. An observer added while an event is delivered
 *   starts with the next event; one removed gets no further event.
 * - **What an observer may do**: read the event and the session, write to its own connection,
 *   publish on the session, add or remove observers, settle a promise. It must not block: the
 *   run waits for it. The Agent's object is the Agent's (a partial message goes on changing after
 *   the delivery): read it during the call, copy what is kept.
 * - **Errors are isolated**: an observer that throws is logged and removed; the other observers,
 *   the event's storing and the run go on.
 * - **End**: `close` when the session goes away (deleted, evicted, shutdown), `leaseLost` when
 *   another replica took it over (cluster mode); the observer is then forgotten. The session's own
 *   observers stay for as long as the session.
 * - **Unstored events**: an agent event the log could not store (the session left the store's
 *   working set while its run finishes: deleted, or taken over) reaches only the observers with
 *   `unlogged`, so that what waits for a run's end still sees it.
 */
import type { FastifyBaseLogger } from "fastify";
import type { AgentEvent } from "../../../agent/types.js";

/** One event of a session, as its observers receive it. */
export interface SessionEvent {
	sessionId: string;
	/** The id the log gave it. */
	id: number;
	type: string;
	/** The serialised JSON payload, as stored. */
	data: string;
	/** The SSE frame of the event (`id:`, `event:`, `data:`), built once for every stream. */
	frame: string;
	/** The sequence number of the run the event belongs to (0 outside any run). */
	runSeq: number;
	/** The Agent's event, for an agent event (absent for a server event such as `queue_update`). */
	agent?: AgentEvent;
}

/** Observes a session's events (see the module comment for the contract). */
export interface SessionObserver {
	event(event: SessionEvent): void;
	/** The session is going away (deleted, evicted, shutdown): end what reads it. */
	close?(reason: string): void;
	/**
	 * The session's lease was lost to another replica (cluster mode): end the stream without
	 * sending what is not sent yet (the store refused it). Absent: `close`.
	 */
	leaseLost?(): void;
	/** An agent event the log could not store (see the module comment); absent: not delivered. */
	unlogged?(event: AgentEvent): void;
}

interface Entry {
	observer: SessionObserver;
	active: boolean;
}

export class SessionObservers {
	/** Replaced, never changed in place: a delivery goes over the list it started with. */
	private entries: readonly Entry[] = [];
	/** Events published while one is being delivered, in id order. */
	private readonly pending: SessionEvent[] = [];
	private delivering = false;

	constructor(
		private readonly sessionId: string,
		private readonly logger: FastifyBaseLogger,
		/** The session's own observers: called after the others, never closed, never removed. */
		private readonly own: readonly SessionObserver[] = [],
	) {}

	/** The observers added with `observe` (a session with none may leave memory). */
	get count(): number {
		return this.entries.length;
	}

	/** Adds an observer; it receives every event appended from now on. Returns the removal function. */
	observe(observer: SessionObserver): () => void {
		const entry: Entry = { observer, active: true };
		this.entries = [...this.entries, entry];
		return () => this.remove(entry);
	}

	/** Delivers an event the log appended to every observer (after the one being delivered, if any). */
	deliver(event: SessionEvent): void {
		if (this.delivering) {
			this.pending.push(event);
			return;
		}
		this.delivering = true;
		try {
			this.deliverOne(event);
			// Published by an observer meanwhile (rare): read in place, emptied once at the end.
			for (let i = 0; i < this.pending.length; i++) this.deliverOne(this.pending[i] as SessionEvent);
		} finally {
			this.delivering = false;
			if (this.pending.length > 0) this.pending.length = 0;
		}
	}

	/** Hands an agent event the log could not store to the observers that take such events. */
	deliverUnlogged(event: AgentEvent): void {
		for (const entry of this.entries) {
			if (!entry.active || !entry.observer.unlogged) continue;
			try {
				entry.observer.unlogged(event);
			} catch (err) {
				this.failed(err, entry);
			}
		}
		for (const observer of this.own) {
			try {
				observer.unlogged?.(event);
			} catch (err) {
				this.failed(err);
			}
		}
	}

	/** Tells every observer the session is going away, and forgets them. */
	close(reason: string): void {
		this.end((observer) => observer.close?.(reason));
	}

	/** The session's lease was lost: every observer ends its stream (see `SessionObserver.leaseLost`). */
	leaseLost(): void {
		this.end((observer) => (observer.leaseLost ? observer.leaseLost() : observer.close?.("session lease lost")));
	}

	/** Called for every event of a busy session (deltas included): no allocation beyond the event. */
	private deliverOne(event: SessionEvent): void {
		for (const entry of this.entries) {
			if (!entry.active) continue;
			try {
				entry.observer.event(event);
			} catch (err) {
				this.failed(err, entry);
			}
		}
		for (const observer of this.own) {
			try {
				observer.event(event);
			} catch (err) {
				this.failed(err);
			}
		}
	}

	/** An observer threw: logged; one added with `observe` is removed, the session's own stay. */
	private failed(err: unknown, entry?: Entry): void {
		if (!entry) {
			this.logger.error({ err, sessionId: this.sessionId }, "session observer failed");
			return;
		}
		this.logger.error({ err, sessionId: this.sessionId }, "session observer failed; removing it");
		this.remove(entry);
	}

	private remove(entry: Entry): void {
		if (!entry.active) return;
		entry.active = false;
		this.entries = this.entries.filter((e) => e !== entry);
	}

	private end(notify: (observer: SessionObserver) => void): void {
		const entries = this.entries;
		this.entries = [];
		for (const entry of entries) {
			if (!entry.active) continue;
			entry.active = false;
			try {
				notify(entry.observer);
			} catch {
				// ending is best effort
			}
		}
	}
}
