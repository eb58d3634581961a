/**
 * The map under both SQL stores' working sets (see "A synchronous working set" in `../types.ts`):
 * the write state of each session this process writes to, by id. When a session joins and leaves
 * is each store's own (`../sqlite/working-set.ts`: on first write; `../postgres/working-set.ts`:
 * with its lease).
 */

/** A session's message count, current run, and whether a run is active, as the queued writes leave them. */
export interface Tally {
	messages: number;
	runId: string | null;
	running: boolean;
}

/** Contract: `S` is a session's write state (`BufferState` of `event-buffer.ts` and the driver's own part). */
export class SessionStates<S extends { sessionId: string }> {
	private readonly states = new Map<string, S>();

	/** The state of a session in the working set, or undefined. */
	get(sessionId: string): S | undefined {
		return this.states.get(sessionId);
	}

	set(state: S): void {
		this.states.set(state.sessionId, state);
	}

	/** The session leaves the working set; true if it was in it. */
	delete(sessionId: string): boolean {
		return this.states.delete(sessionId);
	}

	/** True when `state` is the session's current state (not replaced by a later join, not removed). */
	holds(state: S): boolean {
		return this.states.get(state.sessionId) === state;
	}

	values(): IterableIterator<S> {
		return this.states.values();
	}

	get size(): number {
		return this.states.size;
	}
}
