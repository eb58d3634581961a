/**
 * The SQLite driver of the run writes (`../sql/run-writes.ts`): each write's statements, the
 * tallies read from disk when first needed, and the barrier queue of `commit-queue.ts`. A write
 * whose statements fail makes the commit queue forget the session's tally (re-read from disk), so
 * the `undo` of a write is not needed here.
 */
import type { AgentMessage } from "../../agent/types.js";
import { addUsage } from "../shared.js";
import type { RunRow } from "../sql/rows.js";
import type { RunDriver, RunOp } from "../sql/run-writes.js";
import type { UsageTotals } from "../types.js";
import { type UsageEntry, usageEntriesOf } from "../usage.js";
import type { CommitQueue } from "./commit-queue.js";
import type { Statements } from "./statements.js";
import type { SqliteWebhookOutbox } from "./webhook-outbox.js";
import type { SessionState, WorkingSet } from "./working-set.js";

export function sqliteRunDriver(
	s: Statements,
	sessions: WorkingSet,
	commits: CommitQueue,
	outbox: SqliteWebhookOutbox,
): RunDriver<SessionState> {
	return {
		tally: (state) => sessions.tally(state),
		laterRuns: commits.laterRuns,
		runOwner: (runId) => (s.getRun.get(runId) as RunRow | undefined)?.session_id,
		later(state, op, _undo, targets) {
			commits.later(state.sessionId, () => writeRunOp(s, op, outbox), targets);
			if (op.kind === "start") commits.laterRuns.set(op.runId, state.sessionId);
		},
		drain: (state, ids, op) =>
			commits.durableFor(state.sessionId, () => {
				if (!s.getSession.get(state.sessionId)) return false;
				for (const id of ids) s.deleteQueued.run(state.sessionId, id);
				if (op.rows.length > 0) insertMessages(s, op);
				return true;
			}),
	};
}

/** The statements of one run write, in the caller's transaction. */
function writeRunOp(s: Statements, op: RunOp, outbox: SqliteWebhookOutbox): void {
	if (op.kind !== "end") {
		if (op.kind === "start") {
			s.insertRun.run(op.runId, op.sessionId, op.startedAt, op.usageJson);
			s.setRunning.run(op.runId, op.startedAt, op.sessionId);
		}
		if (op.rows.length > 0) insertMessages(s, op);
		return;
	}
	s.finishRun.run(op.status, op.endedAt, op.usageJson, op.errorMessage, op.runId);
	const usage = JSON.parse(op.usageJson) as UsageTotals;
	const total = addUsage(JSON.parse(s.getUsage.get(op.sessionId) as string) as UsageTotals, usage);
	s.endRunSession.run({ usage: JSON.stringify(total), at: op.endedAt, runId: op.runId, sessionId: op.sessionId });
	if (op.webhooks) outbox.put(op.webhooks);
}

/**
 * Appends `op`'s messages to the transcript at the count on disk now (a queued write: the same
 * seqs as the tally gave unless an earlier write of the session failed, see `commit-queue.ts`),
 * and adds their usage to the owner's usage rows in the same transaction.
 */
function insertMessages(
	s: Statements,
	op: { sessionId: string; runId: string | null; rows: readonly string[]; messages: AgentMessage[] },
): void {
	const { sessionId, rows } = op;
	const first = (s.getCountAndRun.get(sessionId) as { message_count: number }).message_count;
	for (let i = 0; i < rows.length; i++) s.insertMessage.run(sessionId, first + i, op.runId, rows[i]);
	s.setMessageCount.run(first + rows.length, sessionId);
	const entries = usageEntriesOf(op.messages);
	if (entries.length === 0) return;
	const owner = s.getOwner.get(sessionId) as { owner_id: string | null; tenant: string | null };
	addUsageRows(s, owner.owner_id ?? "", owner.tenant ?? "", entries);
}

/** Adds `entries` to the usage rows of `owner` and `tenant` (`""`: none), in the caller's transaction. */
export function addUsageRows(s: Statements, owner: string, tenant: string, entries: readonly UsageEntry[]): void {
	for (const e of entries) {
		const u = e.usage;
		s.addUsage.run(
			owner,
			tenant,
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
