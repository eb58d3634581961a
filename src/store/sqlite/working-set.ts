/**
 * The SQLite store's working set: the write state of each session this process writes to (see
 * "A synchronous working set" in `../types.ts`), loaded from disk when a session joins it. The
 * synchronous writes find their session here or write nothing; reads of other sessions look at
 * the disk without joining them.
 */
import { type BufferState, newBufferState } from "../sql/event-buffer.js";
import { SessionStates, type Tally } from "../sql/working-set.js";
import type { Statements } from "./statements.js";

/** One session's write state: its event buffer (`../sql/event-buffer.ts`) and what follows. */
export interface SessionState extends BufferState {
	/**
	 * The session's message count and current run as the writes not yet committed leave them
	 * (`commit-queue.ts`); undefined until first needed (then read from disk).
	 */
	tally: Tally | undefined;
}

/** Ids of a session's event log as the disk has them. */
export interface IdsOnDisk {
	/** The highest id on disk. */
	written: number;
	/** The highest id that may have been handed out (reservations included). */
	last: number;
}

/** The state of a session whose ids on disk are as given, with nothing buffered. */
export function newSessionState(sessionId: string, written: number, last: number, reserved: number): SessionState {
	return newBufferState(sessionId, written, last, reserved, { tally: undefined as Tally | undefined });
}

export class WorkingSet extends SessionStates<SessionState> {
	constructor(private readonly s: Statements) {
		super();
	}

	/** Joins a session to the working set (loading its state); undefined if the session does not exist. */
	join(sessionId: string): SessionState | undefined {
		let state = this.get(sessionId);
		if (state) return state;
		const ids = this.idsOnDisk(sessionId);
		if (!ids) return undefined;
		state = newSessionState(sessionId, ids.written, ids.last, ids.last);
		this.set(state);
		return state;
	}

	/** Joins a session just created with `messages` and `reserved` ids reserved in its row. */
	add(sessionId: string, messages: number, reserved: number): void {
		const state = newSessionState(sessionId, 0, 0, reserved);
		state.tally = { messages, runId: null, running: false };
		this.set(state);
	}

	/** The highest event id of a session, in the working set or not (0 for none); undefined if unknown. */
	lastEventId(sessionId: string): number | undefined {
		return this.get(sessionId)?.last ?? this.idsOnDisk(sessionId)?.last;
	}

	/** The ids of a session's log on disk, without joining it; undefined if the session does not exist. */
	idsOnDisk(sessionId: string): IdsOnDisk | undefined {
		const row = this.s.getLogState.get(sessionId) as
			| { last_event_id: number; event_id_reserved: number; batch_last: number | null }
			| undefined;
		if (!row) return undefined;
		const written = Math.max(row.batch_last ?? 0, row.last_event_id);
		return { written, last: Math.max(written, row.event_id_reserved) };
	}

	/** The message count and current run of `state`'s session as the queued writes leave them. */
	tally(state: SessionState): Tally {
		if (state.tally) return state.tally;
		const row = this.s.getCountAndRun.get(state.sessionId) as {
			message_count: number;
			current_run_id: string | null;
			status: string;
		};
		state.tally = { messages: row.message_count, runId: row.current_run_id, running: row.status === "running" };
		return state.tally;
	}

	/** Forgets every tally (after a write that changed run statuses on disk behind them). */
	resetTallies(): void {
		for (const state of this.values()) state.tally = undefined;
	}
}
