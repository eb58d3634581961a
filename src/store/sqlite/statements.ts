/**
 * Every SQL statement of the SQLite store, prepared once per open database (better-sqlite3
 * statements are reusable and the hot paths must not re-parse SQL).
 */
import type Database from "better-sqlite3";

/** A prepared statement with loosely typed parameters and rows (rows are cast where read). */
// A local name keeps declaration emit from having to name better-sqlite3 internals.
export interface Statement extends Database.Statement<unknown[], unknown> {}

export type Statements = ReturnType<typeof prepareStatements>;

export function prepareStatements(db: Database.Database) {
	const prepare = (sql: string): Statement => db.prepare(sql) as Statement;
	return {
		getSession: prepare(`SELECT * FROM sessions WHERE id = ?`),
		getLogState: prepare(
			`SELECT last_event_id, event_id_reserved,
			 (SELECT max(last_id) FROM event_batches WHERE session_id = sessions.id) AS batch_last
			 FROM sessions WHERE id = ?`,
		),
		getCountAndRun: prepare("SELECT message_count, current_run_id, status FROM sessions WHERE id = ?"),
		getUsage: prepare("SELECT usage FROM sessions WHERE id = ?").pluck(),
		runExists: prepare("SELECT 1 FROM runs WHERE id = ?").pluck(),
		getUpdatedAt: prepare("SELECT updated_at FROM sessions WHERE id = ?").pluck(),
		getMessage: prepare("SELECT data FROM messages WHERE session_id = ? AND seq = ?").pluck(),
		insertSession: prepare(
			`INSERT INTO sessions (id, owner_id, config, created_at, updated_at, last_active_at, usage, message_count,
			 event_id_reserved, tenant, visibility)
			 VALUES (@id, @ownerId, @config, @at, @at, @at, @usage, @messageCount, @reserved, @tenant, @visibility)`,
		),
		updateConfig: prepare("UPDATE sessions SET config = ?, updated_at = ? WHERE id = ?"),
		bumpActivity: prepare("UPDATE sessions SET last_active_at = max(last_active_at, ?) WHERE id = ?"),
		listAll: prepare(`SELECT * FROM sessions ORDER BY created_at, id LIMIT ?`),
		listAllAfter: prepare(
			`SELECT * FROM sessions WHERE created_at > ? OR (created_at = ? AND id > ?) ORDER BY created_at, id LIMIT ?`,
		),
		// What one caller may see: its own sessions, and its tenant's shared ones (`tenant = NULL` matches none).
		listOwner: prepare(
			`SELECT * FROM sessions WHERE (owner_id IS ? OR (visibility = 'tenant' AND tenant = ?))
			 ORDER BY created_at, id LIMIT ?`,
		),
		listOwnerAfter: prepare(
			`SELECT * FROM sessions WHERE (owner_id IS ? OR (visibility = 'tenant' AND tenant = ?))
			 AND (created_at > ? OR (created_at = ? AND id > ?)) ORDER BY created_at, id LIMIT ?`,
		),
		deleteChildren: [
			prepare("DELETE FROM messages WHERE session_id = ?"),
			prepare("DELETE FROM event_batches WHERE session_id = ?"),
			prepare("DELETE FROM queue WHERE session_id = ?"),
			prepare("DELETE FROM runs WHERE session_id = ?"),
			prepare("DELETE FROM pending_interactions WHERE session_id = ?"),
			prepare("DELETE FROM idempotency_keys WHERE session_id = ?"),
			prepare("DELETE FROM facade_records WHERE session_id = ?"),
			prepare("DELETE FROM superseded_messages WHERE session_id = ?"),
		],
		deleteSession: prepare("DELETE FROM sessions WHERE id = ?"),
		insertMessage: prepare("INSERT INTO messages (session_id, seq, run_id, data) VALUES (?, ?, ?, ?)"),
		setMessageCount: prepare("UPDATE sessions SET message_count = ? WHERE id = ?"),
		listMessages: prepare("SELECT data FROM messages WHERE session_id = ? AND seq >= ? ORDER BY seq LIMIT ?"),
		runMessages: prepare("SELECT data FROM messages WHERE session_id = ? AND run_id = ? ORDER BY seq"),
		insertBatch: prepare("INSERT INTO event_batches (session_id, last_id, first_id, data) VALUES (?, ?, ?, ?)"),
		trimBatches: prepare("DELETE FROM event_batches WHERE session_id = ? AND last_id <= ?"),
		readBatches: prepare(
			"SELECT first_id, last_id, data FROM event_batches WHERE session_id = ? AND last_id > ? ORDER BY last_id LIMIT ?",
		),
		firstBatch: prepare("SELECT first_id FROM event_batches WHERE session_id = ? ORDER BY last_id LIMIT 1"),
		reserveIds: prepare("UPDATE sessions SET event_id_reserved = ? WHERE id = ?"),
		releaseIds: prepare("UPDATE sessions SET event_id_reserved = ?, last_event_id = ? WHERE id = ?"),
		insertQueued: prepare("INSERT INTO queue (session_id, kind, data, created_at) VALUES (?, ?, ?, ?)"),
		listQueued: prepare("SELECT * FROM queue WHERE session_id = ? ORDER BY id"),
		listQueuedKind: prepare("SELECT * FROM queue WHERE session_id = ? AND kind = ? ORDER BY id"),
		deleteQueued: prepare("DELETE FROM queue WHERE session_id = ? AND id = ?"),
		clearQueue: prepare("DELETE FROM queue WHERE session_id = ?"),
		clearQueueKind: prepare("DELETE FROM queue WHERE session_id = ? AND kind = ?"),
		getRun: prepare("SELECT * FROM runs WHERE id = ?"),
		insertRun: prepare("INSERT INTO runs (id, session_id, status, started_at, usage) VALUES (?, ?, 'running', ?, ?)"),
		setRunning: prepare(
			`UPDATE sessions SET status = 'running', current_run_id = ?, interrupted_at = NULL,
			 last_active_at = max(last_active_at, ?) WHERE id = ?`,
		),
		finishRun: prepare("UPDATE runs SET status = ?, ended_at = ?, usage = ?, error_message = ? WHERE id = ?"),
		endRunSession: prepare(
			`UPDATE sessions SET usage = @usage, last_active_at = max(last_active_at, @at),
			 status = CASE WHEN current_run_id = @runId THEN 'idle' ELSE status END,
			 interrupted_at = CASE WHEN current_run_id = @runId THEN NULL ELSE interrupted_at END,
			 current_run_id = CASE WHEN current_run_id = @runId THEN NULL ELSE current_run_id END
			 WHERE id = @sessionId`,
		),
		listRuns: prepare("SELECT * FROM runs WHERE session_id = ? ORDER BY started_at DESC, rowid DESC LIMIT ?"),
		listRunning: prepare("SELECT * FROM sessions WHERE status = 'running'"),
		interruptRun: prepare("UPDATE runs SET status = 'interrupted', ended_at = ?, usage = ? WHERE id = ?"),
		setUsage: prepare("UPDATE sessions SET usage = ? WHERE id = ?"),
		interruptSession: prepare("UPDATE sessions SET status = 'interrupted', interrupted_at = ? WHERE id = ?"),
		upsertPending: prepare(
			`INSERT INTO pending_interactions (session_id, tool_call_id, kind, payload, created_at) VALUES (?, ?, ?, ?, ?)
			 ON CONFLICT (session_id, tool_call_id) DO UPDATE SET kind = excluded.kind, payload = excluded.payload,
			 created_at = excluded.created_at, resolved_at = NULL, resolution = NULL`,
		),
		resolvePending: prepare(
			`UPDATE pending_interactions SET resolved_at = ?, resolution = ?
			 WHERE session_id = ? AND tool_call_id = ? AND resolved_at IS NULL`,
		),
		deletePending: prepare("DELETE FROM pending_interactions WHERE session_id = ? AND tool_call_id = ?"),
		listPending: prepare(
			`SELECT * FROM pending_interactions WHERE session_id = ? AND (? = 1 OR resolved_at IS NULL)
			 ORDER BY created_at, rowid`,
		),
		deleteIdempotencyKey: prepare("DELETE FROM idempotency_keys WHERE session_id = ? AND key = ?"),
		insertIdempotencyKey: prepare(
			`INSERT INTO idempotency_keys (session_id, key, operation, fingerprint, outcome, created_at)
			 VALUES (?, ?, ?, ?, ?, ?)`,
		),
		// The unique (session_id, key) index holds the rowid: this walks the session's entries only.
		trimIdempotencyKeys: prepare(
			`DELETE FROM idempotency_keys WHERE id IN (SELECT id FROM idempotency_keys WHERE session_id = ?
			 ORDER BY id DESC LIMIT -1 OFFSET ?)`,
		),
		getIdempotencyKey: prepare("SELECT * FROM idempotency_keys WHERE session_id = ? AND key = ?"),
		expireIdempotencyKeys: prepare("DELETE FROM idempotency_keys WHERE created_at < ?"),
		getOwner: prepare("SELECT owner_id, tenant FROM sessions WHERE id = ?"),
		addUsage: prepare(
			`INSERT INTO usage_daily (owner_id, tenant, day, provider, model, input, output, cache_read, cache_write,
			 total_tokens, cost_usd, turns) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
			 ON CONFLICT (owner_id, day, provider, model) DO UPDATE SET tenant = excluded.tenant, input = input + excluded.input,
			 output = output + excluded.output, cache_read = cache_read + excluded.cache_read,
			 cache_write = cache_write + excluded.cache_write, total_tokens = total_tokens + excluded.total_tokens,
			 cost_usd = cost_usd + excluded.cost_usd, turns = turns + excluded.turns`,
		),
		readUsage: prepare(
			`SELECT * FROM usage_daily WHERE owner_id = ? AND day >= ? AND day <= ? ORDER BY day, provider, model`,
		),
		sumUsage: prepare(
			`SELECT coalesce(sum(total_tokens), 0) AS total_tokens, coalesce(sum(cost_usd), 0) AS cost_usd
			 FROM usage_daily WHERE owner_id = ? AND day >= ? AND day <= ?`,
		),
		sumTenantUsage: prepare(
			`SELECT coalesce(sum(total_tokens), 0) AS total_tokens, coalesce(sum(cost_usd), 0) AS cost_usd
			 FROM usage_daily WHERE tenant = ? AND day >= ? AND day <= ?`,
		),
		readTenantUsage: prepare(
			`SELECT * FROM usage_daily WHERE tenant = ? AND day >= ? AND day <= ?
			 ORDER BY day, provider, model, owner_id`,
		),
		listIdle: prepare(
			"SELECT id FROM sessions WHERE last_active_at < ? AND status != 'running' ORDER BY last_active_at, id LIMIT ?",
		),
	};
}
