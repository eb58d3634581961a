/**
 * The run writes both SQL stores share: run starts (the claim), messages, run ends and drained
 * queue entries. Run starts, messages and run ends are barrier writes; what the callers need back
 * at once (the transcript length, the current run, whether a run is active) comes from the
 * session's tally, kept in step with the writes queued for the barrier. Each write goes to the
 * driver as data (`RunOp`), which its SQL writes alone or together with other sessions' writes.
 *
 * A store that writes message references (`maxRefs > 0`) remembers the messages a run stores, so
 * the events that repeat them are written with references (`event-batch.ts`).
 */
import type { AgentMessage } from "../../agent/types.js";
import { addUsage, duplicateRunError, zeroUsage } from "../shared.js";
import type { NewWebhookDelivery, RunEnd, UsageTotals } from "../types.js";
import type { Answer } from "./driver.js";
import type { RefTarget } from "./event-batch.js";
import type { BufferState } from "./event-buffer.js";
import { ZERO_USAGE_JSON } from "./rows.js";
import type { Tally } from "./working-set.js";

/** A transcript append as data. Contract: `rows` are the JSON of `messages`, in order. */
export interface MessagesOp {
	kind: "messages";
	sessionId: string;
	/** The run the messages belong to (null: none). */
	runId: string | null;
	rows: readonly string[];
	messages: AgentMessage[];
}

/** A run start (the claim) with its prompt appended after it. */
export interface StartOp {
	kind: "start";
	sessionId: string;
	runId: string;
	startedAt: number;
	rows: readonly string[];
	messages: AgentMessage[];
	usageJson: string;
}

/** A run end: the run's row, its usage added to the session's, the session freed if it is the current run. */
export interface EndOp {
	kind: "end";
	sessionId: string;
	runId: string;
	status: string;
	endedAt: number;
	/** The run's own usage (from zero), as stored. */
	usageJson: string;
	errorMessage: string | null;
	/** Webhook deliveries written in the same write (never empty when present). */
	webhooks?: readonly NewWebhookDelivery[];
}

/** A barrier write as data. Contract: `sessionId` is the session every row is for. */
export type RunOp = StartOp | MessagesOp | EndOp;

/** What the run writes ask of a driver: its tallies, its barrier queue and its SQL. */
export interface RunDriver<S> {
	/** The message count and current run of `state`'s session as the queued writes leave them. */
	tally(state: S): Tally;
	/** Runs started by a write not yet committed: their session. */
	readonly laterRuns: ReadonlyMap<string, string>;
	/**
	 * The session of a run that is neither a session's current run nor queued (a lookup on disk), or
	 * undefined when the driver does not look (the run end is then refused).
	 */
	runOwner(runId: string): string | undefined;
	/**
	 * Queues `op` for the barrier (a run start's id counts in `laterRuns` until it commits). `undo`
	 * reverts its effect on the tally if the write fails on its own; `targets` are the messages it
	 * appends with the seqs the caller was given. A throw means nothing was queued.
	 */
	later(state: S, op: RunOp, undo: () => void, targets: RefTarget[]): void;
	/**
	 * A durable write: deletes the queue entries `ids` and appends `op`'s messages, after the
	 * session's writes queued before it. False if the session is gone (or no longer this store's).
	 */
	drain(state: S, ids: readonly number[], op: MessagesOp): Answer<boolean>;
}

/** A run end's usage as stored (the run's own, from zero). */
function runUsageJson(usage: Partial<UsageTotals> | undefined): string {
	return JSON.stringify(addUsage(zeroUsage(), usage));
}

export class RunWrites<S extends BufferState> {
	constructor(
		private readonly driver: RunDriver<S>,
		/** Messages of a run kept for references (a longer run's oldest are repeated); 0: none. */
		private readonly maxRefs: number,
	) {}

	/** True while a run with this id is started by a write not yet committed. */
	queued(runId: string): boolean {
		return this.driver.laterRuns.has(runId);
	}

	/** See `SessionWriter.appendMessages`; `state` is the session's working-set state. */
	appendMessages(state: S, messages: AgentMessage[]): number {
		const tally = this.driver.tally(state);
		if (messages.length === 0) return tally.messages;
		const rows = messages.map((m) => JSON.stringify(m));
		const targets = this.targets(rows, tally.messages);
		const op: MessagesOp = { kind: "messages", sessionId: state.sessionId, runId: tally.runId, rows, messages };
		const undo = () => {
			tally.messages -= rows.length;
		};
		this.driver.later(state, op, undo, targets);
		tally.messages += rows.length;
		this.remember(state, targets);
		return tally.messages;
	}

	/**
	 * See `RunStore.startRun`, after the session joined and the run id was checked on disk: false
	 * when a run is active. Throws if the run id is queued already.
	 */
	startRun(state: S, runId: string, startedAt: number, messages: AgentMessage[]): boolean {
		if (this.driver.laterRuns.has(runId)) throw duplicateRunError(runId);
		const tally = this.driver.tally(state);
		if (tally.running) return false;
		const rows = messages.map((m) => JSON.stringify(m));
		const targets = this.targets(rows, tally.messages);
		const sessionId = state.sessionId;
		const before = { runId: tally.runId, running: tally.running };
		const undo = () => {
			tally.messages -= rows.length;
			if (tally.runId === runId) Object.assign(tally, before);
		};
		const op: StartOp = { kind: "start", sessionId, runId, startedAt, rows, messages, usageJson: ZERO_USAGE_JSON };
		this.driver.later(state, op, undo, targets);
		tally.messages += rows.length;
		tally.runId = runId;
		tally.running = true;
		if (this.maxRefs > 0) state.refs = targets.slice(-this.maxRefs);
		return true;
	}

	/** See `SessionWriter.endRun`; `webhooks` (the run end's deliveries) are written in the same write. */
	endRun(state: S, runId: string, end: RunEnd, webhooks?: readonly NewWebhookDelivery[]): boolean {
		const sessionId = state.sessionId;
		const tally = this.driver.tally(state);
		const wasCurrent = tally.runId === runId;
		// The session's current run is its own; any other run is looked up.
		const owner = wasCurrent ? sessionId : (this.driver.laterRuns.get(runId) ?? this.driver.runOwner(runId));
		if (owner !== sessionId) return false;
		const op: EndOp = {
			kind: "end",
			sessionId,
			runId,
			status: end.status,
			endedAt: end.endedAt,
			usageJson: runUsageJson(end.usage),
			errorMessage: end.errorMessage ?? null,
			...(webhooks && webhooks.length > 0 ? { webhooks } : {}),
		};
		const undo = () => {
			if (wasCurrent && tally.runId === null) Object.assign(tally, { runId, running: true });
		};
		this.driver.later(state, op, undo, []);
		if (wasCurrent) {
			tally.runId = null;
			tally.running = false;
		}
		return true;
	}

	/**
	 * See `QueueStore.drainQueued`: a durable write, not a queued one. Its messages take their place
	 * in call order (after the barrier writes called before it, in the same transaction). Undefined
	 * if the session is gone or no longer this store's.
	 */
	async drainQueued(state: S, ids: number[], messages: AgentMessage[]): Promise<number | undefined> {
		const tally = this.driver.tally(state);
		const rows = messages.map((m) => JSON.stringify(m));
		const targets = this.targets(rows, tally.messages);
		const op: MessagesOp = { kind: "messages", sessionId: state.sessionId, runId: tally.runId, rows, messages };
		// Their seqs are taken now: appends called while the write is in flight come after them.
		tally.messages += rows.length;
		const at = tally.messages;
		let stored: boolean;
		try {
			const answer = this.driver.drain(state, ids, op);
			stored = answer instanceof Promise ? await answer : answer;
		} catch (error) {
			tally.messages -= rows.length;
			throw error;
		}
		if (!stored) {
			tally.messages -= rows.length;
			return undefined;
		}
		// A queued write of this session that failed in the same commit made the driver forget the tally.
		const now = this.driver.tally(state);
		if (now !== tally) return now.messages;
		this.remember(state, targets);
		return at;
	}

	/**
	 * A rewind moved the transcript from `keep` on away (a durable write, committed): the tally
	 * counts from there, and the moved messages are no reference targets any more (their seqs will
	 * hold other messages).
	 */
	rewound(state: S, keep: number): void {
		this.driver.tally(state).messages = keep;
		state.refs = state.refs.filter((r) => r.seq < keep);
	}

	/** The messages `rows` as reference targets from seq `first` on (none without references). */
	private targets(rows: readonly string[], first: number): RefTarget[] {
		return this.maxRefs > 0 ? rows.map((json, i) => ({ seq: first + i, json })) : [];
	}

	/** Keeps the newest stored messages of the run as reference targets. */
	private remember(state: S, targets: RefTarget[]): void {
		if (targets.length === 0) return;
		state.refs.push(...targets);
		if (state.refs.length > this.maxRefs) state.refs.splice(0, state.refs.length - this.maxRefs);
	}
}
