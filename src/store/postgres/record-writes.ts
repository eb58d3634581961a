/**
 * The PostgreSQL store's durable writes of queues, pending interactions and idempotency records
 * (`RecordWrites` of `../sql/engine.ts`): their statements, each a durable write of the commit
 * queue (`commit.ts`), so it commits after the writes called before it. An enqueue's idempotency
 * record and a put interaction's webhook deliveries go into the same transaction as the write they
 * belong to. (The usage rows of sessions' calls are written with the messages they count,
 * `barrier-batch.ts`; `recordUsage` adds calls of no session.)
 */
import type { AgentMessage } from "../../agent/types.js";
import type { RecordWrites } from "../sql/driver.js";
import type { IdempotencyRecord, QueuedMessage } from "../types.js";
import type { UsageEntry } from "../usage.js";
import type { CommitQueue } from "./commit.js";
import type { Queryable } from "./connection.js";
import { putDeliveries } from "./webhook-outbox.js";

/** Puts an idempotency record in the caller's transaction, keeping the newest `maxKeys` of its session. */
async function writeIdempotencyKey(tx: Queryable, r: IdempotencyRecord, maxKeys: number): Promise<void> {
	// Delete and insert (not an upsert): the new row's id puts it last in the session's put order.
	await tx.query("DELETE FROM idempotency_keys WHERE session_id = $1 AND key = $2", [r.sessionId, r.key]);
	await tx.query(
		`INSERT INTO idempotency_keys (session_id, key, operation, fingerprint, outcome, created_at)
			 VALUES ($1, $2, $3, $4, $5, $6)`,
		[r.sessionId, r.key, r.operation, r.fingerprint, r.outcome, r.createdAt],
	);
	await tx.query(
		`DELETE FROM idempotency_keys WHERE session_id = $1 AND id NOT IN
			 (SELECT id FROM idempotency_keys WHERE session_id = $1 ORDER BY id DESC LIMIT $2)`,
		[r.sessionId, maxKeys],
	);
}

/** See `UsageStore.recordUsage`: adds `entries` to the rows of `owner` and `tenant` (`""`: none) in `tx`. */
async function writeUsage(tx: Queryable, owner: string, tenant: string, entries: readonly UsageEntry[]): Promise<void> {
	await tx.query(
		`INSERT INTO usage_daily AS u (owner_id, tenant, day, provider, model, input, output, cache_read, cache_write,
		 total_tokens, cost_usd, turns)
		SELECT $1, $12, day, provider, model, sum(input), sum(output), sum(cache_read), sum(cache_write),
		 sum(total_tokens), sum(cost_usd), sum(turns)
		FROM unnest($2::text[], $3::text[], $4::text[], $5::bigint[], $6::bigint[], $7::bigint[], $8::bigint[],
		 $9::bigint[], $10::float8[], $11::bigint[])
		 AS t(day, provider, model, input, output, cache_read, cache_write, total_tokens, cost_usd, turns)
		GROUP BY day, provider, model
		ON CONFLICT (owner_id, day, provider, model) DO UPDATE SET tenant = excluded.tenant, input = u.input + excluded.input,
		 output = u.output + excluded.output, cache_read = u.cache_read + excluded.cache_read,
		 cache_write = u.cache_write + excluded.cache_write, total_tokens = u.total_tokens + excluded.total_tokens,
		 cost_usd = u.cost_usd + excluded.cost_usd, turns = u.turns + excluded.turns`,
		[
			owner,
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
			tenant,
		],
	);
}

/** How many rows a statement changed. */
const changed = async (result: Promise<{ rowCount: number | null }>) => (await result).rowCount ?? 0;

export function pgRecordWrites(commits: CommitQueue, maxIdempotencyKeys: number): RecordWrites {
	return {
		enqueue: ({ sessionId, kind, message, createdAt }, withKey) =>
			commits.durable(async (tx) => {
				const bumped = await changed(
					tx.query("UPDATE sessions SET last_active_at = greatest(last_active_at, $1) WHERE id = $2", [
						createdAt,
						sessionId,
					]),
				);
				if (bumped === 0) return undefined;
				const json = JSON.stringify(message);
				const id = (
					await tx.query<{ id: number }>(
						"INSERT INTO queue (session_id, kind, data, created_at) VALUES ($1, $2, $3, $4) RETURNING id",
						[sessionId, kind, json, createdAt],
					)
				).rows[0]?.id as number;
				const queued: QueuedMessage = { id, sessionId, kind, message: JSON.parse(json) as AgentMessage, createdAt };
				if (withKey) await writeIdempotencyKey(tx, withKey(queued), maxIdempotencyKeys);
				return queued;
			}),
		clearQueue: (sessionId, kind) =>
			commits.durable((tx) =>
				changed(
					kind === undefined
						? tx.query("DELETE FROM queue WHERE session_id = $1", [sessionId])
						: tx.query("DELETE FROM queue WHERE session_id = $1 AND kind = $2", [sessionId, kind]),
				),
			),
		putPending: (i, webhooks) =>
			commits.durable(async (tx) => {
				const row = (
					await tx.query<{ current_run_id: string | null }>("SELECT current_run_id FROM sessions WHERE id = $1", [
						i.sessionId,
					])
				).rows[0];
				if (!row) return false;
				await tx.query(
					`INSERT INTO pending_interactions (session_id, tool_call_id, kind, payload, created_at) VALUES ($1, $2, $3, $4, $5)
					 ON CONFLICT (session_id, tool_call_id) DO UPDATE SET kind = excluded.kind, payload = excluded.payload,
					 created_at = excluded.created_at, resolved_at = NULL, resolution = NULL`,
					[i.sessionId, i.toolCallId, i.kind, i.payload, i.createdAt],
				);
				// The session's queued writes (its run start) ran first in this transaction: the row is current.
				if (webhooks) await putDeliveries(tx, webhooks(row.current_run_id));
				return true;
			}),
		resolvePending: (sessionId, toolCallId, resolution, at) =>
			commits.durable(
				async (tx) =>
					(await changed(
						tx.query(
							`UPDATE pending_interactions SET resolved_at = $1, resolution = $2
							 WHERE session_id = $3 AND tool_call_id = $4 AND resolved_at IS NULL`,
							[at, resolution, sessionId, toolCallId],
						),
					)) > 0,
			),
		deletePending: (sessionId, toolCallId) =>
			commits.durable(
				async (tx) =>
					(await changed(
						tx.query("DELETE FROM pending_interactions WHERE session_id = $1 AND tool_call_id = $2", [
							sessionId,
							toolCallId,
						]),
					)) > 0,
			),
		// One commit with the session's queued writes: a run start and the key that started it.
		putIdempotencyKey: (record) =>
			commits.durable(async (tx) => {
				const exists = await changed(tx.query("SELECT 1 FROM sessions WHERE id = $1", [record.sessionId]));
				if (exists === 0) return false;
				await writeIdempotencyKey(tx, record, maxIdempotencyKeys);
				return true;
			}),
		deleteIdempotencyKeys: (cutoff) =>
			commits.durable((tx) => changed(tx.query("DELETE FROM idempotency_keys WHERE created_at < $1", [cutoff]))),
		recordUsage: (owner, tenant, entries) => commits.durable((tx) => writeUsage(tx, owner, tenant, entries)),
	};
}
