/**
 * The PostgreSQL driver of the run writes (`../sql/run-writes.ts`): the tallies loaded with the
 * lease, the barrier queue of `commit.ts` (which joins the writes of many sessions into the
 * multi-row statements of `barrier-batch.ts`), and the drained queue entries' durable write.
 */
import type { RunDriver, RunOp } from "../sql/run-writes.js";
import { runWave } from "./barrier-batch.js";
import type { CommitQueue } from "./commit.js";
import type { Queryable } from "./connection.js";
import { putDeliveries } from "./webhook-outbox.js";
import type { SessionState } from "./working-set.js";

export function pgRunDriver(commits: CommitQueue): RunDriver<SessionState> {
	return {
		tally: (state) => state.tally,
		laterRuns: commits.laterRuns,
		// A run end of a run neither current nor queued is refused without a lookup.
		runOwner: () => undefined,
		later(state, op, undo) {
			// With webhook deliveries to write, the run end runs on its own (in call order).
			const batched = op.kind === "end" && op.webhooks ? undefined : op;
			commits.later(state, (tx) => writeRunOp(tx, op), undo, op.kind === "start" ? op.runId : undefined, batched);
		},
		drain: (state, ids, op) =>
			commits.durable(
				async (tx) => {
					const exists = await tx.query("SELECT 1 FROM sessions WHERE id = $1", [state.sessionId]);
					if (exists.rowCount === 0) return false;
					if (ids.length > 0) {
						await tx.query("DELETE FROM queue WHERE session_id = $1 AND id = ANY($2::bigint[])", [
							state.sessionId,
							ids,
						]);
					}
					await runWave(tx, [op]);
					return true;
				},
				state,
				false,
			),
	};
}

/** One run write on its own, with a run end's webhook deliveries when its run ended. */
async function writeRunOp(tx: Queryable, op: RunOp): Promise<void> {
	const ended = await runWave(tx, [op]);
	if (op.kind === "end" && op.webhooks && ended.has(op.runId)) await putDeliveries(tx, op.webhooks);
}
