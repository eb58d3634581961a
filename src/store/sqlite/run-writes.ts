/**
 * The SQLite store's writes of runs and transcripts: run starts (the claim), messages, run ends and
 * drained queue entries. Run starts, messages and run ends are queued for the barrier
 * (`commit-queue.ts`); what the callers need back at once (the transcript length, the current run,
 * whether a run is active) comes from the session's tally, kept in step with the queue. The
 * messages a run stores are remembered as reference targets, so the events that repeat them are
 * written with references (`../sql/event-batch.ts`).
 */
import type { AgentMessage } from "../../agent/types.js";
import { addUsage, duplicateRunError, zeroUsage } from "../shared.js";
import type { RefTarget } from "../sql/event-batch.js";
import { type RunRow, ZERO_USAGE_JSON } from "../sql/rows.js";
import type { RunEnd, UsageTotals } from "../types.js";
import { type UsageEntry, usageEntriesOf } from "../usage.js";
import type { CommitQueue } from "./commit-queue.js";
import type { Statements } from "./statements.js";
import type { SessionState, WorkingSet } from "./working-set.js";

/** At most this many messages of a run are kept for references (a longer run's oldest are repeated). */
const MAX_REFS = 64;

export class RunWrites {
	constructor(
		private readonly s: Statements,
		private readonly sessions: WorkingSet,
		private readonly commits: CommitQueue,
	) {}

	/** See `SessionWriter.appendMessages`; `state` is the session's working-set state. */
	appendMessages(state: SessionState, messages: AgentMessage[]): number {
		const sessionId = state.sessionId;
		const tally = this.sessions.tally(state);
		const first = tally.messages;
		const runId = tally.runId;
		const rows = messages.map((m) => JSON.stringify(m));
		if (rows.length === 0) return first;
		const targets = rows.map((json, i) => ({ seq: first + i, json }));
		this.commits.later(sessionId, () => this.insertMessages(sessionId, runId, rows, messages), targets);
		tally.messages += rows.length;
		this.remember(state, targets);
		return tally.messages;
	}

	/**
	 * See `RunStore.startRun`: false when a run is active (the claim fails). Throws if the run id
	 * exists (the caller turns it into a rejection).
	 */
	startRun(state: SessionState, runId: string, startedAt: number, messages: AgentMessage[]): boolean {
		const sessionId = state.sessionId;
		if (this.commits.laterRuns.has(runId) || this.s.runExists.get(runId) !== undefined) throw duplicateRunError(runId);
		const tally = this.sessions.tally(state);
		if (tally.running) return false;
		const rows = messages.map((m) => JSON.stringify(m));
		const targets = rows.map((json, i) => ({ seq: tally.messages + i, json }));
		this.commits.later(
			sessionId,
			() => {
				this.s.insertRun.run(runId, sessionId, startedAt, ZERO_USAGE_JSON);
				this.s.setRunning.run(runId, startedAt, sessionId);
				if (rows.length > 0) this.insertMessages(sessionId, runId, rows, messages);
			},
			targets,
		);
		tally.messages += rows.length;
		tally.runId = runId;
		tally.running = true;
		state.refs = targets.slice(-MAX_REFS);
		this.commits.laterRuns.set(runId, sessionId);
		return true;
	}

	/** See `SessionWriter.endRun`; `alsoWrite` (the run end's webhook deliveries) runs in the same queued write. */
	endRun(state: SessionState, runId: string, end: RunEnd, alsoWrite?: () => void): boolean {
		const sessionId = state.sessionId;
		const tally = this.sessions.tally(state);
		// The session's current run is its own; any other run is looked up.
		const owner =
			tally.runId === runId
				? sessionId
				: (this.commits.laterRuns.get(runId) ?? (this.s.getRun.get(runId) as RunRow | undefined)?.session_id);
		if (owner !== sessionId) return false;
		const usage = addUsage(zeroUsage(), end.usage);
		const usageJson = JSON.stringify(usage);
		const errorMessage = end.errorMessage ?? null;
		this.commits.later(sessionId, () => {
			this.s.finishRun.run(end.status, end.endedAt, usageJson, errorMessage, runId);
			const total = addUsage(JSON.parse(this.s.getUsage.get(sessionId) as string) as UsageTotals, usage);
			this.s.endRunSession.run({ usage: JSON.stringify(total), at: end.endedAt, runId, sessionId });
			alsoWrite?.();
		});
		if (tally.runId === runId) {
			tally.runId = null;
			tally.running = false;
		}
		return true;
	}

	/**
	 * See `QueueStore.drainQueued`: a durable write, not a queued one. The queue rows go in the same
	 * commit as the messages, and that commit runs the session's queued writes first, so the
	 * messages land after those before them. Undefined if the session is gone.
	 */
	drainQueued(state: SessionState, ids: number[], messages: AgentMessage[]): number | undefined {
		const sessionId = state.sessionId;
		const tally = this.sessions.tally(state);
		const runId = tally.runId;
		const rows = messages.map((m) => JSON.stringify(m));
		const targets = rows.map((json, i) => ({ seq: tally.messages + i, json }));
		const stored = this.commits.durableFor(sessionId, () => {
			if (!this.s.getSession.get(sessionId)) return false;
			for (const id of ids) this.s.deleteQueued.run(sessionId, id);
			if (rows.length > 0) this.insertMessages(sessionId, runId, rows, messages);
			return true;
		});
		if (!stored) return undefined;
		// A queued write of this session that failed in the same commit reset the tally (re-read from disk).
		if (state.tally === tally) {
			tally.messages += rows.length;
			this.remember(state, targets);
		}
		return this.sessions.tally(state).messages;
	}

	/** Keeps the newest stored messages of the run as reference targets. */
	private remember(state: SessionState, targets: RefTarget[]): void {
		state.refs.push(...targets);
		if (state.refs.length > MAX_REFS) state.refs.splice(0, state.refs.length - MAX_REFS);
	}

	/**
	 * Appends `rows` (message JSON) to the transcript at the count on disk now (a queued write: the
	 * same seqs as the tally gave unless an earlier write of the session failed, see `commit-queue.ts`),
	 * and adds their usage to the owner's usage rows in the same transaction.
	 */
	insertMessages(sessionId: string, runId: string | null, rows: readonly string[], messages: AgentMessage[]): void {
		const first = (this.s.getCountAndRun.get(sessionId) as { message_count: number }).message_count;
		for (let i = 0; i < rows.length; i++) this.s.insertMessage.run(sessionId, first + i, runId, rows[i]);
		this.s.setMessageCount.run(first + rows.length, sessionId);
		const entries = usageEntriesOf(messages);
		if (entries.length === 0) return;
		this.addUsage((this.s.getOwner.get(sessionId) as string | null) ?? "", entries);
	}

	/** Adds `entries` to the usage rows of `owner` (`""`: no owner), in the caller's transaction. */
	addUsage(owner: string, entries: readonly UsageEntry[]): void {
		for (const e of entries) {
			const u = e.usage;
			this.s.addUsage.run(
				owner,
				e.day,
				e.provider,
				e.model,
				u.input,
				u.output,
				u.cacheRead,
				u.cacheWrite,
				u.totalTokens,
				u.cost.total,
				e.turns,
			);
		}
	}
}
