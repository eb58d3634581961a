/**
 * The PostgreSQL store's `sessions` rows, as SQL: creating one (with its lease and the first block
 * of event ids, in one statement), reading, patching the config of, listing (all, or the idle
 * ones) and deleting them. Turning a row into a `SessionRecord` needs the working set (the event
 * ids and activity times not yet written), so that stays with the store.
 */
import type { AgentMessage } from "../../agent/types.js";
import { duplicateSessionError, patchConfig } from "../shared.js";
import type { NewSessionRow, SessionRow } from "../sql/rows.js";
import type { SessionConfig } from "../types.js";
import type { Queryable, Read } from "./connection.js";
import { DB_NOW_MS } from "./leases.js";

/** A session row with the highest id of its batches. */
export type SessionRowWithLog = SessionRow & { batch_last: number | null };

export const SESSION_COLUMNS =
	"s.*, (SELECT max(b.last_id) FROM event_batches b WHERE b.session_id = s.id) AS batch_last";

/** The lease a new session's row is created with: this store's, for `ttlMs`. */
export interface NewLease {
	holderId: string;
	ttlMs: number;
}

/**
 * Inserts the session with its lease and the first block of event ids reserved, and its initial
 * transcript, in the caller's transaction. Throws if the id exists.
 */
export async function insertSession(
	tx: Queryable,
	row: NewSessionRow,
	messages: AgentMessage[],
	lease: NewLease,
): Promise<SessionRowWithLog> {
	const inserted = await tx.query<SessionRowWithLog>(
		`INSERT INTO sessions AS s (id, owner_id, config, created_at, updated_at, last_active_at, usage, message_count,
				 event_id_reserved, lease_holder, lease_token, lease_expires, tenant, visibility)
				 VALUES ($1, $2, $3, $4, $4, $4, $5, $6, $7, $8, ${DB_NOW_MS}, ${DB_NOW_MS} + $9, $10, $11)
				 ON CONFLICT (id) DO NOTHING RETURNING s.*, NULL::bigint AS batch_last`,
		[
			row.id,
			row.ownerId,
			row.config,
			row.at,
			row.usage,
			row.messageCount,
			row.reserved,
			lease.holderId,
			lease.ttlMs,
			row.tenant,
			row.visibility,
		],
	);
	const created = inserted.rows[0];
	if (!created) throw duplicateSessionError(row.id);
	if (messages.length > 0) {
		await tx.query(
			`INSERT INTO messages (session_id, seq, run_id, data)
					 SELECT $1, n - 1, NULL, data FROM unnest($2::text[]) WITH ORDINALITY AS t(data, n)`,
			[row.id, messages.map((m) => JSON.stringify(m))],
		);
	}
	return created;
}

/** The session's row on `db` (a transaction's connection), or undefined. */
export async function sessionRow(db: Queryable, sessionId: string): Promise<SessionRowWithLog | undefined> {
	return (await db.query<SessionRowWithLog>(`SELECT ${SESSION_COLUMNS} FROM sessions s WHERE s.id = $1`, [sessionId]))
		.rows[0];
}

/** The session's row, read after the writes called before (see `Read`). */
export async function readSessionRow(read: Read, sessionId: string): Promise<SessionRowWithLog | undefined> {
	const rows = await read<SessionRowWithLog>(`SELECT ${SESSION_COLUMNS} FROM sessions s WHERE s.id = $1`, [sessionId]);
	return rows[0];
}

/** Applies `patch` to the session's config in the caller's transaction; the row after, or undefined. */
export async function patchSessionConfig(
	tx: Queryable,
	sessionId: string,
	patch: Partial<SessionConfig>,
	at: number,
): Promise<SessionRowWithLog | undefined> {
	const current = (
		await tx.query<{ config: string }>("SELECT config FROM sessions WHERE id = $1 FOR UPDATE", [sessionId])
	).rows[0];
	if (!current) return undefined;
	const config = patchConfig(JSON.parse(current.config) as SessionConfig, patch);
	await tx.query("UPDATE sessions SET config = $1, updated_at = $2 WHERE id = $3", [
		JSON.stringify(config),
		at,
		sessionId,
	]);
	return sessionRow(tx, sessionId);
}

/** Deletes the sessions and everything of theirs but their usage rows, in the caller's transaction; how many. */
export async function deleteSessionRows(tx: Queryable, sessionIds: string[]): Promise<number> {
	for (const table of [
		"messages",
		"event_batches",
		"queue",
		"runs",
		"pending_interactions",
		"idempotency_keys",
		"facade_records",
		"superseded_messages",
	]) {
		await tx.query(`DELETE FROM ${table} WHERE session_id = ANY($1::text[])`, [sessionIds]);
	}
	return (await tx.query("DELETE FROM sessions WHERE id = ANY($1::text[])", [sessionIds])).rowCount ?? 0;
}

/** The ids of the sessions inactive since before `cutoff` and not running, the longest inactive first. */
export async function idleSessionIds(read: Read, cutoff: number, max: number): Promise<string[]> {
	const rows = await read<{ id: string }>(
		"SELECT id FROM sessions WHERE last_active_at < $1 AND status <> 'running' ORDER BY last_active_at, id LIMIT $2",
		[cutoff, max],
	);
	return rows.map((r) => r.id);
}
