/**
 * The PostgreSQL store's reads of rows for the engine (`RowReads` of `../sql/engine.ts`): their
 * statements, each through the store's `Read` (after every write called before it; a connection
 * failure is a `StoreUnavailableError`).
 */
import type { RowReads } from "../sql/driver.js";
import type { IdempotencyRow } from "../sql/rows.js";
import type { SessionFilter } from "../types.js";
import type { Read } from "./connection.js";
import { SESSION_COLUMNS, type SessionRowWithLog } from "./sessions.js";

export function pgRowReads(read: Read): RowReads<SessionRowWithLog> {
	return {
		sessions({ ownerId, tenant, after, filter, limit }) {
			const where: string[] = [];
			const args: unknown[] = [];
			if (ownerId !== undefined) {
				// What one caller may see: its own sessions, and its tenant's shared ones (`tenant = NULL`
				// matches none). `=` (not IS NOT DISTINCT FROM) so each side of the OR is an index's: a
				// BitmapOr of the owner's and the partial tenant indexes, never a walk of every session.
				if (ownerId === null) {
					args.push(tenant ?? null);
					where.push(`(s.owner_id IS NULL OR (s.visibility = 'tenant' AND s.tenant = $${args.length}))`);
				} else {
					args.push(ownerId, tenant ?? null);
					where.push(`(s.owner_id = $${args.length - 1} OR (s.visibility = 'tenant' AND s.tenant = $${args.length}))`);
				}
			}
			if (after) {
				args.push(after[0], after[1]);
				where.push(`(s.created_at, s.id) > ($${args.length - 1}, $${args.length})`);
			}
			if (filter) where.push(...filterClauses(filter, args));
			args.push(limit);
			return read(
				`SELECT ${SESSION_COLUMNS} FROM sessions s ${where.length > 0 ? `WHERE ${where.join(" AND ")}` : ""}
				 ORDER BY s.created_at, s.id LIMIT $${args.length}`,
				args,
			);
		},
		messageCount: async (sessionId) =>
			(await read<{ message_count: number }>("SELECT message_count FROM sessions WHERE id = $1", [sessionId]))[0]
				?.message_count,
		messages: async (sessionId, offset, limit) =>
			(
				await read<{ data: string }>(
					"SELECT data FROM messages WHERE session_id = $1 AND seq >= $2 ORDER BY seq LIMIT $3",
					[sessionId, offset, limit],
				)
			).map((r) => r.data),
		runs: (sessionId, limit) =>
			read(
				`SELECT * FROM (SELECT * FROM runs WHERE session_id = $1 ORDER BY started_at DESC, seq DESC LIMIT $2) r
				 ORDER BY started_at, seq`,
				[sessionId, limit],
			),
		claimCheck: async (runId, sessionId) => {
			const [row] = await read(
				`SELECT EXISTS (SELECT 1 FROM runs WHERE id = $1) AS run_exists,
				 (SELECT updated_at FROM sessions WHERE id = $2) AS updated_at`,
				[runId, sessionId],
			);
			const updatedAt = row?.updated_at;
			return {
				runExists: row?.run_exists === true,
				updatedAt: updatedAt === null || updatedAt === undefined ? undefined : Number(updatedAt),
			};
		},
		queue: (sessionId, kind) =>
			kind === undefined
				? read("SELECT * FROM queue WHERE session_id = $1 ORDER BY id", [sessionId])
				: read("SELECT * FROM queue WHERE session_id = $1 AND kind = $2 ORDER BY id", [sessionId, kind]),
		pending: (sessionId, includeResolved) =>
			read(
				`SELECT * FROM pending_interactions WHERE session_id = $1 AND ($2 OR resolved_at IS NULL)
				 ORDER BY created_at, seq`,
				[sessionId, includeResolved],
			),
		idempotencyKey: async (sessionId, key) =>
			(
				await read<IdempotencyRow>("SELECT * FROM idempotency_keys WHERE session_id = $1 AND key = $2", [
					sessionId,
					key,
				])
			)[0],
		usage: (query) =>
			query.tenant === undefined
				? read(
						`SELECT * FROM usage_daily WHERE owner_id = $1 AND day >= $2 AND day <= $3
						 ORDER BY day, provider, model`,
						[query.ownerId ?? "", query.fromDay, query.toDay],
					)
				: read(
						`SELECT * FROM usage_daily WHERE tenant = $1 AND day >= $2 AND day <= $3
						 ORDER BY day, provider, model, owner_id COLLATE "C"`,
						[query.tenant, query.fromDay, query.toDay],
					),
		usageSum: async (query) =>
			(
				await read<{ total_tokens: string; cost_usd: number }>(
					`SELECT coalesce(sum(total_tokens), 0) AS total_tokens, coalesce(sum(cost_usd), 0) AS cost_usd
					 FROM usage_daily WHERE ${query.tenant === undefined ? "owner_id" : "tenant"} = $1 AND day >= $2 AND day <= $3`,
					[query.tenant ?? query.ownerId ?? "", query.fromDay, query.toDay],
				)
			)[0]!,
	};
}

/**
 * The conditions of a session filter, their values pushed onto `args`. Metadata pairs are one
 * containment test on the config's metadata, which the GIN index of migration 3 serves.
 */
function filterClauses(filter: SessionFilter, args: unknown[]): string[] {
	const where: string[] = [];
	if (filter.status !== undefined) {
		args.push(filter.status);
		where.push(`s.status = $${args.length}`);
	}
	if (filter.updatedAfter !== undefined) {
		args.push(filter.updatedAfter);
		where.push(`s.updated_at > $${args.length}`);
	}
	if (filter.updatedBefore !== undefined) {
		args.push(filter.updatedBefore);
		where.push(`s.updated_at < $${args.length}`);
	}
	if (Object.keys(filter.metadata ?? {}).length > 0) {
		args.push(JSON.stringify(filter.metadata));
		where.push(`(s.config::jsonb -> 'metadata') @> $${args.length}::jsonb`);
	}
	return where;
}
