/**
 * The PostgreSQL store's writes of runs and transcripts: run starts (the claim), messages, run
 * ends and drained queue entries, and the usage rows the messages add. Run starts, messages and
 * run ends are barrier writes (`commit.ts`); what callers need back at once (the transcript
 * length, the current run, whether a run is active) comes from the session's tally in the working
 * set, kept in step with the queue.
 */
import type { AgentMessage } from "../../agent/types.js";
import { addUsage, duplicateRunError } from "../shared.js";
import { ZERO_USAGE_JSON } from "../sql/rows.js";
import type { RunEnd, UsageTotals } from "../types.js";
import { usageEntriesOf } from "../usage.js";
import { runUsageJson } from "./barrier-batch.js";
import type { CommitQueue } from "./commit.js";
import { named, type Queryable } from "./connection.js";
import type { SessionState } from "./working-set.js";

export class RunWrites {
	constructor(private readonly commits: CommitQueue) {}

	/** See `SessionWriter.appendMessages`. */
	appendMessages(state: SessionState, messages: AgentMessage[]): number {
		const tally = state.tally;
		if (messages.length === 0) return tally.messages;
		const rows = messages.map((m) => JSON.stringify(m));
		const runId = tally.runId;
		this.commits.later(
			state,
			(tx) => insertMessages(tx, state.sessionId, runId, rows, messages),
			() => {
				tally.messages -= rows.length;
			},
			undefined,
			{ kind: "messages", sessionId: state.sessionId, runId, rows, messages },
		);
		tally.messages += rows.length;
		return tally.messages;
	}

	/**
	 * See `RunStore.startRun`, after the session joined and the run id was checked on disk: false
	 * when a run is active. Throws if the run id is queued already.
	 */
	startRun(state: SessionState, runId: string, startedAt: number, messages: AgentMessage[]): boolean {
		if (this.commits.laterRuns.has(runId)) throw duplicateRunError(runId);
		const tally = state.tally;
		if (tally.running) return false;
		const rows = messages.map((m) => JSON.stringify(m));
		const sessionId = state.sessionId;
		const before = { ...tally };
		this.commits.later(
			state,
			async (tx) => {
				// The run's row and the claim in one statement (one round trip).
				await tx.query(
					named(
						`WITH r AS (INSERT INTO runs (id, session_id, status, started_at, usage)
						 VALUES ($1, $3, 'running', $2, $4))
						 UPDATE sessions SET status = 'running', current_run_id = $1, interrupted_at = NULL,
						 last_active_at = greatest(last_active_at, $2) WHERE id = $3`,
						[runId, startedAt, sessionId, ZERO_USAGE_JSON],
					),
				);
				if (rows.length > 0) await insertMessages(tx, sessionId, runId, rows, messages);
			},
			() => {
				tally.messages -= rows.length;
				if (tally.runId === runId) {
					tally.runId = before.runId;
					tally.running = before.running;
				}
			},
			runId,
			{ kind: "start", sessionId, runId, startedAt, rows, messages, usageJson: ZERO_USAGE_JSON },
		);
		tally.messages += rows.length;
		tally.runId = runId;
		tally.running = true;
		return true;
	}

	/**
	 * See `SessionWriter.endRun`; `owner` is the session of `runId` when it is not the current run
	 * (looked up by the caller), `alsoWrite` (its webhook deliveries) runs in the same write.
	 */
	endRun(state: SessionState, runId: string, end: RunEnd, alsoWrite?: (tx: Queryable) => Promise<void>): boolean {
		const tally = state.tally;
		const sessionId = state.sessionId;
		const usageJson = runUsageJson(end.usage);
		const errorMessage = end.errorMessage ?? null;
		const wasCurrent = tally.runId === runId;
		this.commits.later(
			state,
			async (tx) => {
				const updated = await tx.query(
					"UPDATE runs SET status = $1, ended_at = $2, usage = $3, error_message = $4 WHERE id = $5 AND session_id = $6",
					[end.status, end.endedAt, usageJson, errorMessage, runId, sessionId],
				);
				if (updated.rowCount === 0) return;
				const row = (
					await tx.query<{ usage: string }>("SELECT usage FROM sessions WHERE id = $1 FOR UPDATE", [sessionId])
				).rows[0];
				if (!row) return;
				const total = addUsage(JSON.parse(row.usage) as UsageTotals, JSON.parse(usageJson) as UsageTotals);
				await tx.query(
					`UPDATE sessions SET usage = $1, last_active_at = greatest(last_active_at, $2),
					 status = CASE WHEN current_run_id = $3 THEN 'idle' ELSE status END,
					 interrupted_at = CASE WHEN current_run_id = $3 THEN NULL ELSE interrupted_at END,
					 current_run_id = CASE WHEN current_run_id = $3 THEN NULL ELSE current_run_id END
					 WHERE id = $4`,
					[JSON.stringify(total), end.endedAt, runId, sessionId],
				);
				await alsoWrite?.(tx);
			},
			() => {
				if (wasCurrent && tally.runId === null) {
					tally.runId = runId;
					tally.running = true;
				}
			},
			undefined,
			// With webhook deliveries to write, the run end runs on its own (in call order).
			alsoWrite
				? undefined
				: { kind: "end", sessionId, runId, status: end.status, endedAt: end.endedAt, usageJson, errorMessage },
		);
		if (wasCurrent) {
			tally.runId = null;
			tally.running = false;
		}
		return true;
	}

	/**
	 * See `QueueStore.drainQueued`: a durable write. Its messages take their place in call order
	 * (after the barrier writes called before it, in the same transaction). Undefined if the session
	 * is gone or its lease was lost.
	 */
	async drainQueued(state: SessionState, ids: number[], messages: AgentMessage[]): Promise<number | undefined> {
		const tally = state.tally;
		const rows = messages.map((m) => JSON.stringify(m));
		const runId = tally.runId;
		const sessionId = state.sessionId;
		tally.messages += rows.length;
		const at = tally.messages;
		try {
			const stored = await this.commits.durable(
				async (tx) => {
					const exists = await tx.query("SELECT 1 FROM sessions WHERE id = $1", [sessionId]);
					if (exists.rowCount === 0) return false;
					if (ids.length > 0)
						await tx.query("DELETE FROM queue WHERE session_id = $1 AND id = ANY($2::bigint[])", [sessionId, ids]);
					if (rows.length > 0) await insertMessages(tx, sessionId, runId, rows, messages);
					return true;
				},
				state,
				false,
			);
			if (!stored) {
				tally.messages -= rows.length;
				return undefined;
			}
			return at;
		} catch (error) {
			tally.messages -= rows.length;
			throw error;
		}
	}
}

/**
 * Appends `rows` (message JSON) to the transcript after the count on disk, and adds their usage to
 * the owner's usage rows, in the caller's transaction: one statement (one round trip), the count,
 * the messages and the usage rows as data-modifying parts of it. Throws if the session is gone.
 */
export async function insertMessages(
	tx: Queryable,
	sessionId: string,
	runId: string | null,
	rows: readonly string[],
	messages: AgentMessage[],
): Promise<void> {
	const entries = usageEntriesOf(messages);
	const usage =
		entries.length === 0
			? ""
			: `, acc AS (
				INSERT INTO usage_daily AS u (owner_id, day, provider, model, input, output, cache_read, cache_write,
				 total_tokens, cost_usd, turns)
				SELECT c.owner, day, provider, model, sum(input), sum(output), sum(cache_read), sum(cache_write),
				 sum(total_tokens), sum(cost_usd), sum(turns)
				FROM c, unnest($4::text[], $5::text[], $6::text[], $7::bigint[], $8::bigint[], $9::bigint[], $10::bigint[],
				 $11::bigint[], $12::float8[], $13::bigint[])
				 AS t(day, provider, model, input, output, cache_read, cache_write, total_tokens, cost_usd, turns)
				GROUP BY c.owner, day, provider, model
				ON CONFLICT (owner_id, day, provider, model) DO UPDATE SET input = u.input + excluded.input,
				 output = u.output + excluded.output, cache_read = u.cache_read + excluded.cache_read,
				 cache_write = u.cache_write + excluded.cache_write, total_tokens = u.total_tokens + excluded.total_tokens,
				 cost_usd = u.cost_usd + excluded.cost_usd, turns = u.turns + excluded.turns)`;
	const sql = `WITH c AS (
			UPDATE sessions SET message_count = message_count + cardinality($3::text[]) WHERE id = $1
			RETURNING message_count - cardinality($3::text[]) AS first, coalesce(owner_id, '') AS owner),
		m AS (
			INSERT INTO messages (session_id, seq, run_id, data)
			SELECT $1, c.first + t.n - 1, $2, t.data FROM c, unnest($3::text[]) WITH ORDINALITY AS t(data, n))${usage}
		SELECT count(*)::int AS found FROM c`;
	const params: unknown[] = [sessionId, runId, rows];
	if (entries.length > 0) {
		params.push(
			entries.map((e) => e.day),
			entries.map((e) => e.provider),
			entries.map((e) => e.model),
			entries.map((e) => e.usage.input),
			entries.map((e) => e.usage.output),
			entries.map((e) => e.usage.cacheRead),
			entries.map((e) => e.usage.cacheWrite),
			entries.map((e) => e.usage.totalTokens),
			entries.map((e) => e.usage.cost.total),
			entries.map((e) => e.turns),
		);
	}
	const found = (await tx.query<{ found: number }>(named(sql, params))).rows[0]?.found;
	if (!found) throw new Error(`session "${sessionId}" no longer exists`);
}
