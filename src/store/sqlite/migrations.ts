/**
 * Numbered schema migrations of the SQLite store, and the checks that run before any of them.
 *
 * Rules: a migration, once released, never changes (old databases and the fixtures in
 * `test/store/fixtures/` depend on its exact effect); a new schema is a new entry at the end.
 * Tables both SQL stores define alike take their DDL from `../sql/shared-ddl.ts`, frozen as well.
 * `schema_version` holds one row per applied migration, so the current version is its maximum.
 * All pending migrations run in one transaction: a crash mid-migration leaves the old version.
 */
import type Database from "better-sqlite3";
import { encodeEvent } from "../sql/event-batch.js";
import * as shared from "../sql/shared-ddl.js";

export interface Migration extends shared.Migration {
	/** Data conversion that SQL alone cannot express; runs after `sql`, in the same transaction. */
	up?: (db: Database.Database) => void;
}

export const MIGRATIONS: readonly Migration[] = [
	{
		version: 1,
		description: "sessions, transcripts, event log, steering/follow-up queue, runs",
		sql: `
			CREATE TABLE sessions (
				id TEXT PRIMARY KEY,
				owner_id TEXT,
				config TEXT NOT NULL,
				created_at INTEGER NOT NULL,
				updated_at INTEGER NOT NULL,
				last_active_at INTEGER NOT NULL,
				status TEXT NOT NULL DEFAULT 'idle',
				interrupted_at INTEGER,
				current_run_id TEXT,
				usage TEXT NOT NULL,
				message_count INTEGER NOT NULL DEFAULT 0,
				last_event_id INTEGER NOT NULL DEFAULT 0
			);
			CREATE INDEX sessions_by_created ON sessions (created_at, id);
			CREATE INDEX sessions_by_owner ON sessions (owner_id, created_at, id);
			CREATE INDEX sessions_by_activity ON sessions (last_active_at);
			${shared.MESSAGES_TABLE} WITHOUT ROWID;
			CREATE TABLE events (
				session_id TEXT NOT NULL,
				id INTEGER NOT NULL,
				type TEXT NOT NULL,
				data TEXT NOT NULL,
				created_at INTEGER NOT NULL,
				PRIMARY KEY (session_id, id)
			) WITHOUT ROWID;
			CREATE TABLE queue (
				id INTEGER PRIMARY KEY AUTOINCREMENT,
				session_id TEXT NOT NULL,
				kind TEXT NOT NULL,
				data TEXT NOT NULL,
				created_at INTEGER NOT NULL
			);
			CREATE INDEX queue_by_session ON queue (session_id, id);
			CREATE TABLE runs (
				id TEXT PRIMARY KEY,
				session_id TEXT NOT NULL,
				status TEXT NOT NULL,
				started_at INTEGER NOT NULL,
				ended_at INTEGER,
				usage TEXT NOT NULL,
				error_message TEXT
			);
			CREATE INDEX runs_by_session ON runs (session_id, started_at);
		`,
	},
	{
		version: 2,
		description:
			"pending interactions (tool approvals, client-side tools) survive restarts; the event log is stored in " +
			"batches (one row per flush) and event ids are reserved ahead of use, so ids stay monotonic after a crash",
		sql: `
			CREATE TABLE pending_interactions (
				session_id TEXT NOT NULL,
				tool_call_id TEXT NOT NULL,
				kind TEXT NOT NULL,
				payload TEXT NOT NULL,
				created_at INTEGER NOT NULL,
				resolved_at INTEGER,
				resolution TEXT,
				PRIMARY KEY (session_id, tool_call_id)
			);
			ALTER TABLE sessions ADD COLUMN event_id_reserved INTEGER NOT NULL DEFAULT 0;
			UPDATE sessions SET event_id_reserved = last_event_id;
			CREATE TABLE event_batches (
				session_id TEXT NOT NULL,
				last_id INTEGER NOT NULL,
				first_id INTEGER NOT NULL,
				data TEXT NOT NULL,
				PRIMARY KEY (session_id, last_id)
			) WITHOUT ROWID;
		`,
		up: convertEventsToBatches,
	},
	{
		version: 3,
		description:
			"a session's config holds its client-side tool declarations and tool approval policies (clientTools, " +
			"toolApprovals), so they survive restarts; older builds would drop them on the next config change, so " +
			"they must refuse this version",
		// The config column is JSON: existing sessions get the two fields, empty (json_insert keeps a present value).
		sql: `
			UPDATE sessions SET config = json_insert(config, '$.clientTools', json('[]'), '$.toolApprovals', json('{}'));
		`,
	},
	{
		version: 4,
		description:
			"event batches may skip ids (skip frames, see event-batch.ts): the deltas of a streamed message stay in " +
			"memory; older builds would misread a skip frame as an event, so they must refuse this version",
		// Nothing to convert: v3 batches are valid v4 batches.
		sql: "",
	},
	{
		version: 5,
		description:
			"event batches may hold ref frames (see event-batch.ts): an event that repeats stored transcript messages " +
			"refers to them instead; older builds would misread a ref frame, so they must refuse this version. " +
			"messages and event_batches become rowid tables with a unique index, so rows are appended in write order",
		// v4 batches are valid v5 batches. The tables are rebuilt because WITHOUT ROWID suits small rows only:
		// its leaves hold only a small part of a row, so each longer message or batch took an overflow page,
		// and rows went to scattered pages by session. As rowid tables, concurrent sessions' new rows share the
		// last pages, so a commit writes fewer pages (bench/sse/results.md).
		sql: `
			CREATE TABLE messages_v5 (
				id INTEGER PRIMARY KEY,
				session_id TEXT NOT NULL,
				seq INTEGER NOT NULL,
				run_id TEXT,
				data TEXT NOT NULL
			);
			INSERT INTO messages_v5 (session_id, seq, run_id, data)
				SELECT session_id, seq, run_id, data FROM messages ORDER BY session_id, seq;
			DROP TABLE messages;
			ALTER TABLE messages_v5 RENAME TO messages;
			CREATE UNIQUE INDEX messages_by_session ON messages (session_id, seq);
			CREATE TABLE event_batches_v5 (
				id INTEGER PRIMARY KEY,
				session_id TEXT NOT NULL,
				last_id INTEGER NOT NULL,
				first_id INTEGER NOT NULL,
				data TEXT NOT NULL
			);
			INSERT INTO event_batches_v5 (session_id, last_id, first_id, data)
				SELECT session_id, last_id, first_id, data FROM event_batches ORDER BY session_id, last_id;
			DROP TABLE event_batches;
			ALTER TABLE event_batches_v5 RENAME TO event_batches;
			CREATE UNIQUE INDEX event_batches_by_session ON event_batches (session_id, last_id);
		`,
	},
	{
		version: 6,
		description:
			"idempotency keys: the outcome of a prompt, continue, steer or follow-up sent with an Idempotency-Key, so a " +
			"client that repeats the request (also after a restart) gets that outcome instead of a second run or message",
		// Rows are replaced (not updated) when a key is put again, so rowid order within a session is put order:
		// the per-session cap removes the lowest rowids. created_at serves the time-based expiry.
		sql: `
			CREATE TABLE idempotency_keys (
				id INTEGER PRIMARY KEY,
				session_id TEXT NOT NULL,
				key TEXT NOT NULL,
				operation TEXT NOT NULL,
				fingerprint TEXT NOT NULL,
				outcome TEXT NOT NULL,
				created_at INTEGER NOT NULL
			);
			CREATE UNIQUE INDEX idempotency_keys_by_key ON idempotency_keys (session_id, key);
			CREATE INDEX idempotency_keys_by_age ON idempotency_keys (created_at);
		`,
	},
	{
		version: 7,
		description:
			"usage accounting: tokens, cost and turns by owner, UTC day, provider and model, added with the messages " +
			"that spent them (per-key budgets and GET /v1/usage); owner_id '' is the owner of sessions made with auth off",
		// Accounting starts with this version: messages stored before it are not counted.
		sql: `
			CREATE TABLE usage_daily (
				owner_id TEXT NOT NULL,
				day TEXT NOT NULL,
				provider TEXT NOT NULL,
				model TEXT NOT NULL,
				input INTEGER NOT NULL,
				output INTEGER NOT NULL,
				cache_read INTEGER NOT NULL,
				cache_write INTEGER NOT NULL,
				total_tokens INTEGER NOT NULL,
				cost_usd REAL NOT NULL,
				turns INTEGER NOT NULL,
				PRIMARY KEY (owner_id, day, provider, model)
			) WITHOUT ROWID;
		`,
	},
	{
		version: 8,
		description:
			"webhook outbox: the deliveries of run ends and pending interactions to the configured endpoints, put in " +
			"the same commit as the fact they report and kept until delivered or given up, so a restart loses none",
		// Not tied to a session row: a delivery outlives the session it reports (a deleted session's run
		// still ended). The due index serves the dispatcher's claim; the finished index serves pruning.
		sql: `
			${shared.webhookOutboxTable("TEXT", "INTEGER")}
		`,
	},
	{
		version: 9,
		description:
			"a session's config holds its onInterrupt policy (continue: a run its process died during goes on by " +
			"itself; stop: it waits for a client); older builds would drop it on the next config change and leave " +
			"runs stopped, so they must refuse this version",
		// Existing sessions get the default, written out (json_insert keeps a present value).
		sql: `
			UPDATE sessions SET config = json_insert(config, '$.onInterrupt', 'continue');
		`,
	},
	{
		version: 10,
		description:
			"facade records: what the OpenAI-compatible API (and other facades) must find again on a later request " +
			"(which session a tool call or a response belongs to, the response objects), kept with their session so " +
			"a restarted process finds them",
		// Rows are replaced (not updated) when a record is put again, so rowid order is put order: the
		// per-session cap removes the lowest rowids of a kind, and lookups by key take the highest first.
		sql: `
			CREATE TABLE facade_records (
				id INTEGER PRIMARY KEY,
				session_id TEXT NOT NULL,
				kind TEXT NOT NULL,
				key TEXT NOT NULL,
				data TEXT NOT NULL,
				created_at INTEGER NOT NULL
			);
			CREATE UNIQUE INDEX facade_records_by_session ON facade_records (session_id, kind, key);
			CREATE INDEX facade_records_by_key ON facade_records (kind, key);
		`,
	},
	{
		version: 11,
		description:
			"schedules: server-owned cron and one-shot schedules, every fire they made (one per tick at most: a " +
			"unique index), and the scheduler lease that lets one process fire at a time; for the filtered " +
			"session list, indexes (status, update time) and session_metadata, one row per metadata pair kept by " +
			"triggers, indexed by pair",
		sql: `${shared.scheduleTables("INTEGER", "INTEGER PRIMARY KEY AUTOINCREMENT")}
			CREATE TABLE session_metadata (
				session_id TEXT NOT NULL,
				owner_id TEXT,
				created_at INTEGER NOT NULL,
				key TEXT NOT NULL,
				value TEXT NOT NULL,
				PRIMARY KEY (session_id, key)
			) WITHOUT ROWID;
			CREATE INDEX session_metadata_lookup ON session_metadata (key, value, owner_id, created_at, session_id);
			INSERT INTO session_metadata
				SELECT s.id, s.owner_id, s.created_at, j.key, j.value FROM sessions s, json_each(s.config, '$.metadata') j
				WHERE j.type = 'text';
			CREATE TRIGGER sessions_metadata_insert AFTER INSERT ON sessions BEGIN
				INSERT INTO session_metadata
					SELECT NEW.id, NEW.owner_id, NEW.created_at, j.key, j.value FROM json_each(NEW.config, '$.metadata') j
					WHERE j.type = 'text';
			END;
			CREATE TRIGGER sessions_metadata_update AFTER UPDATE OF config ON sessions BEGIN
				DELETE FROM session_metadata WHERE session_id = OLD.id;
				INSERT INTO session_metadata
					SELECT NEW.id, NEW.owner_id, NEW.created_at, j.key, j.value FROM json_each(NEW.config, '$.metadata') j
					WHERE j.type = 'text';
			END;
			CREATE TRIGGER sessions_metadata_delete AFTER DELETE ON sessions BEGIN
				DELETE FROM session_metadata WHERE session_id = OLD.id;
			END;
			CREATE TABLE scheduler_lease (
				name TEXT PRIMARY KEY,
				holder TEXT NOT NULL,
				token INTEGER NOT NULL,
				expires INTEGER NOT NULL
			);
		`,
	},
	{
		version: 12,
		...shared.TENANT_VISIBILITY,
	},
	{
		version: 13,
		...shared.admissionTables("INTEGER"),
	},
	{
		version: 14,
		description:
			"superseded_messages keeps what a rewind, a regenerate or an edit took off a transcript's end, numbered " +
			"by branch per session; the transcript itself keeps dense seqs. Older builds neither read nor delete " +
			"these rows, so they must refuse this version",
		sql: `${shared.supersededTable("INTEGER")} WITHOUT ROWID;
		`,
	},
	{
		version: 15,
		...shared.usageTenant(),
	},
	{
		version: 16,
		description:
			"session_metadata carries the tenant a session is shared with (shared_tenant: its tenant when its " +
			"visibility is tenant, else null), backfilled from sessions and kept by the triggers, so a caller with " +
			"a tenant lists its tenant's shared sessions with a metadata pair from an index, as its own",
		// The partial index holds the shared sessions' pairs only: as small as they are.
		sql: `
			ALTER TABLE session_metadata ADD COLUMN shared_tenant TEXT;
			UPDATE session_metadata SET shared_tenant = (SELECT s.tenant FROM sessions s WHERE s.id = session_id)
				WHERE session_id IN (SELECT id FROM sessions WHERE visibility = 'tenant' AND tenant IS NOT NULL);
			CREATE INDEX session_metadata_shared ON session_metadata (key, value, shared_tenant, created_at, session_id)
				WHERE shared_tenant IS NOT NULL;
			DROP TRIGGER sessions_metadata_insert;
			DROP TRIGGER sessions_metadata_update;
			CREATE TRIGGER sessions_metadata_insert AFTER INSERT ON sessions BEGIN
				INSERT INTO session_metadata
					SELECT NEW.id, NEW.owner_id, NEW.created_at, j.key, j.value,
						CASE WHEN NEW.visibility = 'tenant' THEN NEW.tenant END
					FROM json_each(NEW.config, '$.metadata') j
					WHERE j.type = 'text';
			END;
			CREATE TRIGGER sessions_metadata_update AFTER UPDATE OF config ON sessions BEGIN
				DELETE FROM session_metadata WHERE session_id = OLD.id;
				INSERT INTO session_metadata
					SELECT NEW.id, NEW.owner_id, NEW.created_at, j.key, j.value,
						CASE WHEN NEW.visibility = 'tenant' THEN NEW.tenant END
					FROM json_each(NEW.config, '$.metadata') j
					WHERE j.type = 'text';
			END;
			CREATE TRIGGER sessions_metadata_sharing AFTER UPDATE OF tenant, visibility ON sessions BEGIN
				UPDATE session_metadata SET shared_tenant = CASE WHEN NEW.visibility = 'tenant' THEN NEW.tenant END
					WHERE session_id = NEW.id;
			END;
		`,
	},
];

export const LATEST_SCHEMA_VERSION = MIGRATIONS[MIGRATIONS.length - 1]?.version ?? 0;

const VERSION_TABLE = "schema_version";

/**
 * The schema version of an open database: 0 for an empty database, the highest applied
 * migration otherwise. Throws with a clear message for a database that holds tables but is not a
 * Wheelhouse store (we never write into someone else's file).
 */
export function readSchemaVersion(db: Database.Database, path: string): number {
	// The owner lock's table lives outside the numbered migrations (it is taken before they run).
	const tables = (db.prepare("SELECT name FROM sqlite_master WHERE type = 'table'").pluck().all() as string[]).filter(
		(name) => name !== "wheelhouse_owner",
	);
	if (tables.length === 0) return 0;
	if (!tables.includes(VERSION_TABLE)) {
		throw new Error(
			`database ${path} is an SQLite file but not a Wheelhouse store (no ${VERSION_TABLE} table; found ` +
				`${tables.slice(0, 5).join(", ")}); refusing to modify it: point WHEELHOUSE_DB at another file`,
		);
	}
	return (db.prepare(`SELECT MAX(version) FROM ${VERSION_TABLE}`).pluck().get() as number | null) ?? 0;
}

/**
 * {@link readSchemaVersion}, refusing (with a clear message) a database newer than this code knows.
 * Reads only: a file it refuses is left byte for byte as it was.
 */
export function checkSchemaVersion(db: Database.Database, path: string): number {
	const current = readSchemaVersion(db, path);
	if (current > LATEST_SCHEMA_VERSION) {
		throw new Error(
			`database ${path} has schema version ${current}, newer than this Wheelhouse build supports ` +
				`(${LATEST_SCHEMA_VERSION}); refusing to open it: upgrade Wheelhouse, or point WHEELHOUSE_DB at another file`,
		);
	}
	return current;
}

/**
 * Brings the database to `target` (default: the latest), all steps in one transaction.
 * Refuses a database newer than this code knows. Returns the versions it applied.
 */
export function migrate(db: Database.Database, path: string, target = LATEST_SCHEMA_VERSION): number[] {
	const current = checkSchemaVersion(db, path);
	const pending = MIGRATIONS.filter((m) => m.version > current && m.version <= target);
	if (pending.length === 0) return [];
	const apply = db.transaction(() => {
		db.exec(
			`CREATE TABLE IF NOT EXISTS ${VERSION_TABLE} (version INTEGER PRIMARY KEY, description TEXT NOT NULL, applied_at INTEGER NOT NULL)`,
		);
		const record = db.prepare(`INSERT INTO ${VERSION_TABLE} (version, description, applied_at) VALUES (?, ?, ?)`);
		for (const m of pending) {
			db.exec(m.sql);
			m.up?.(db);
			record.run(m.version, m.description, Date.now());
		}
	});
	apply.immediate();
	return pending.map((m) => m.version);
}

/** v1 → v2: moves one-row-per-event `events` into `event_batches` (runs of consecutive ids, ≤ 500 per row). */
function convertEventsToBatches(db: Database.Database): void {
	const insert = db.prepare("INSERT INTO event_batches (session_id, last_id, first_id, data) VALUES (?, ?, ?, ?)");
	let run: { sessionId: string; first: number; last: number; text: string; count: number } | undefined;
	const write = () => {
		if (run) insert.run(run.sessionId, run.last, run.first, run.text);
		run = undefined;
	};
	const rows = db
		.prepare("SELECT session_id, id, type, data, created_at FROM events ORDER BY session_id, id")
		.all() as Array<{ session_id: string; id: number; type: string; data: string; created_at: number }>;
	for (const r of rows) {
		if (!run || run.sessionId !== r.session_id || run.last + 1 !== r.id || run.count >= 500) {
			write();
			run = { sessionId: r.session_id, first: r.id, last: r.id - 1, text: "", count: 0 };
		}
		run.text += encodeEvent(r.type, r.data, r.created_at);
		run.last = r.id;
		run.count++;
	}
	write();
	db.exec("DROP TABLE events");
}
