/**
 * The PostgreSQL store's side of its session leases: a session joins the working set when its
 * lease is taken (its write state loaded, once per session however many callers ask at once), and
 * leaves it when the store releases the lease or loses it (taken over, not renewable, or fenced
 * at commit), telling the listeners. The lease SQL is `leases.ts`.
 */

import { ID_RESERVATION } from "../sql/event-buffer.js";
import type { CommitQueue } from "./commit.js";
import type { EventLog } from "./event-log.js";
import { releaseLeases, renewLeases, takeLease } from "./leases.js";
import type { PostgresSettings } from "./settings.js";
import { type SessionState, stateFromLease, type WorkingSet } from "./working-set.js";

export class LeaseHolder {
	private readonly joining = new Map<string, Promise<SessionState | undefined>>();
	private readonly lostListeners = new Set<(sessionId: string, error: Error) => void>();

	constructor(
		private readonly holderId: string,
		private readonly settings: PostgresSettings,
		private readonly sessions: WorkingSet,
		private readonly log: EventLog,
		private readonly commits: CommitQueue,
	) {}

	/** Takes the session's lease and loads its write state (once per session; concurrent calls share it). */
	async join(sessionId: string): Promise<SessionState | undefined> {
		const held = this.sessions.get(sessionId);
		if (held) return held;
		const pending = this.joining.get(sessionId);
		if (pending) return pending;
		const joined = (async () => {
			const row = await this.commits.durable((tx) =>
				takeLease(tx, sessionId, this.holderId, this.settings.leaseTtlMs, this.settings.cluster),
			);
			if (!row) return undefined;
			const state = stateFromLease(sessionId, row);
			this.sessions.set(state);
			return state;
		})();
		this.joining.set(sessionId, joined);
		try {
			return await joined;
		} finally {
			this.joining.delete(sessionId);
		}
	}

	/** A session this store just created joins with the lease it was created with (`token`). */
	joinCreated(sessionId: string, token: number, messageCount: number): void {
		// The first block of ids is reserved with the row, so a new session's first events need no extra write.
		this.sessions.set(
			stateFromLease(sessionId, {
				lease_token: token,
				last_event_id: 0,
				event_id_reserved: 0,
				message_count: messageCount,
				current_run_id: null,
				status: "idle",
				batch_last: null,
			}),
		);
		const state = this.sessions.get(sessionId) as SessionState;
		state.reserved = state.reservedDurable = ID_RESERVATION;
	}

	/** A session leaves the working set because its lease was lost; listeners are told. */
	lose(state: SessionState, error: Error): void {
		if (!this.sessions.holds(state)) return;
		this.sessions.delete(state.sessionId);
		this.log.drop(state);
		this.settings.onFlushError(new Error(`${error.message}; this process stops writing to it`));
		for (const listener of this.lostListeners) listener(state.sessionId, error);
	}

	/** See `LeaseStore.onSessionLost`. */
	onSessionLost(listener: (sessionId: string, error: Error) => void): () => void {
		this.lostListeners.add(listener);
		return () => this.lostListeners.delete(listener);
	}

	/** Renews every lease held; the sessions whose lease could not be (they are lost). */
	async renew(): Promise<string[]> {
		const states = [...this.sessions.values()];
		// Through the commit queue: a renewal running beside a commit, both updating session rows in
		// their own order, could deadlock with it.
		const renewed = await this.commits.durable((tx) =>
			renewLeases(
				tx,
				states.map((s) => s.sessionId),
				states.map((s) => s.token),
				this.settings.leaseTtlMs,
			),
		);
		const lost: string[] = [];
		for (const state of states) {
			if (renewed.has(state.sessionId) || !this.sessions.holds(state)) continue;
			// Gone from disk (deleted elsewhere) or taken over: either way no longer ours to write.
			lost.push(state.sessionId);
			this.lose(
				state,
				new Error(`the lease of session "${state.sessionId}" could not be renewed (taken over or deleted)`),
			);
		}
		return lost;
	}

	/** See `SessionWriter.releaseSession`: its writes committed first, then its lease given back. */
	async release(sessionId: string): Promise<boolean> {
		const state = this.sessions.get(sessionId);
		if (!state) return false;
		await this.commits.flush();
		if (!this.sessions.holds(state)) return false;
		this.sessions.delete(sessionId);
		this.log.drop(state);
		await this.commits.durable((tx) => releaseLeases(tx, [leaseOf(state)]));
		return true;
	}

	/** Gives back every lease held and the unused id reservations (closing). */
	async releaseAll(): Promise<void> {
		const leases = [...this.sessions.values()].map(leaseOf);
		await this.commits.durable((tx) => releaseLeases(tx, leases));
	}
}

/** What releasing a session's lease writes. */
function leaseOf(state: SessionState): { id: string; token: number; last: number; written: number } {
	return { id: state.sessionId, token: state.token, last: state.last, written: state.written };
}
