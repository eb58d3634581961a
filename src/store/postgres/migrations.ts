/**
 * Numbered schema migrations of the PostgreSQL store, and the checks that run before any of them.
 *
 * Rules (as for SQLite): a released migration never changes; a new schema is a new entry at the
 * end; tables both SQL stores define alike take their DDL from `../sql/shared-ddl.ts`, frozen as well.
 * `wheelhouse_schema_version`, in the configured schema, holds one row per applied migration.
 * The store never writes into a schema it does not recognise (tables but no version table), nor
 * into one newer than this code knows. Pending migrations run in one transaction, under an
 * advisory lock, so replicas starting together migrate once.
 */
import type pg from "pg";
import * as shared from "../sql/shared-ddl.js";
import type { Queryable } from "./connection.js";

export const VERSION_TABLE = "wheelhouse_schema_version";
/** The instance-owner lock's table: outside the numbered migrations (taken before they run). */
export const OWNER_TABLE = "wheelhouse_owner";

export const MIGRATIONS: readonly shared.Migration[] = [
	{
		version: 1,
		description:
			"sessions (with their lease: holder, fencing token, expiry), transcripts, the event log in batches, " +
			"queues, runs, pending interactions, idempotency keys, usage accounting and the webhook outbox",
		// Text keys that are listed in order compare byte-wise (COLLATE "C"), as the other stores order them.
		sql: `
			CREATE TABLE sessions (
				id TEXT COLLATE "C" PRIMARY KEY,
				owner_id TEXT,
				config TEXT NOT NULL,
				created_at BIGINT NOT NULL,
				updated_at BIGINT NOT NULL,
				last_active_at BIGINT NOT NULL,
				status TEXT NOT NULL DEFAULT 'idle',
				interrupted_at BIGINT,
				current_run_id TEXT,
				usage TEXT NOT NULL,
				message_count INTEGER NOT NULL DEFAULT 0,
				last_event_id BIGINT NOT NULL DEFAULT 0,
				event_id_reserved BIGINT NOT NULL DEFAULT 0,
				lease_holder TEXT,
				lease_token BIGINT NOT NULL DEFAULT 0,
				lease_expires BIGINT NOT NULL DEFAULT 0
			);
			CREATE INDEX sessions_by_created ON sessions (created_at, id);
			CREATE INDEX sessions_by_owner ON sessions (owner_id, created_at, id);
			CREATE INDEX sessions_by_activity ON sessions (last_active_at);
			CREATE INDEX sessions_running ON sessions (lease_expires) WHERE status = 'running';
			${shared.MESSAGES_TABLE};
			CREATE TABLE event_batches (
				session_id TEXT NOT NULL,
				last_id BIGINT NOT NULL,
				first_id BIGINT NOT NULL,
				data TEXT NOT NULL,
				PRIMARY KEY (session_id, last_id)
			);
			CREATE TABLE queue (
				id BIGSERIAL PRIMARY KEY,
				session_id TEXT NOT NULL,
				kind TEXT NOT NULL,
				data TEXT NOT NULL,
				created_at BIGINT NOT NULL
			);
			CREATE INDEX queue_by_session ON queue (session_id, id);
			CREATE TABLE runs (
				id TEXT PRIMARY KEY,
				session_id TEXT NOT NULL,
				status TEXT NOT NULL,
				started_at BIGINT NOT NULL,
				ended_at BIGINT,
				usage TEXT NOT NULL,
				error_message TEXT,
				seq BIGSERIAL NOT NULL
			);
			CREATE INDEX runs_by_session ON runs (session_id, started_at, seq);
			CREATE TABLE pending_interactions (
				session_id TEXT NOT NULL,
				tool_call_id TEXT NOT NULL,
				kind TEXT NOT NULL,
				payload TEXT NOT NULL,
				created_at BIGINT NOT NULL,
				resolved_at BIGINT,
				resolution TEXT,
				seq BIGSERIAL NOT NULL,
				PRIMARY KEY (session_id, tool_call_id)
			);
			CREATE TABLE idempotency_keys (
				id BIGSERIAL PRIMARY KEY,
				session_id TEXT NOT NULL,
				key TEXT NOT NULL,
				operation TEXT NOT NULL,
				fingerprint TEXT NOT NULL,
				outcome TEXT NOT NULL,
				created_at BIGINT NOT NULL,
				UNIQUE (session_id, key)
			);
			CREATE INDEX idempotency_keys_by_age ON idempotency_keys (created_at);
			CREATE TABLE usage_daily (
				owner_id TEXT NOT NULL,
				day TEXT COLLATE "C" NOT NULL,
				provider TEXT COLLATE "C" NOT NULL,
				model TEXT COLLATE "C" NOT NULL,
				input BIGINT NOT NULL,
				output BIGINT NOT NULL,
				cache_read BIGINT NOT NULL,
				cache_write BIGINT NOT NULL,
				total_tokens BIGINT NOT NULL,
				cost_usd DOUBLE PRECISION NOT NULL,
				turns BIGINT NOT NULL,
				PRIMARY KEY (owner_id, day, provider, model)
			);
			${shared.webhookOutboxTable('TEXT COLLATE "C"', "BIGINT")}
		`,
	},
	{
		version: 2,
		description:
			"facade records: what the OpenAI-compatible API (and other facades) must find again on a later request " +
			"(which session a tool call or a response belongs to, the response objects), kept with their session so " +
			"any replica finds them",
		// Rows are replaced (not updated) when a record is put again, so id order is put order.
		sql: `
			CREATE TABLE facade_records (
				id BIGSERIAL PRIMARY KEY,
				session_id TEXT NOT NULL,
				kind TEXT NOT NULL,
				key TEXT NOT NULL,
				data TEXT NOT NULL,
				created_at BIGINT NOT NULL,
				UNIQUE (session_id, kind, key)
			);
			CREATE INDEX facade_records_by_key ON facade_records (kind, key);
		`,
	},
	{
		version: 3,
		description:
			"schedules: server-owned cron and one-shot schedules, every fire they made (one per tick at most: a " +
			"unique index), and the scheduler lease (holder, fencing token, expiry on the database's clock) that " +
			"lets one replica fire at a time; indexes for the filtered session list (status, update time, metadata)",
		sql: `${shared.scheduleTables("BIGINT", "BIGSERIAL PRIMARY KEY")}
			CREATE INDEX sessions_by_metadata ON sessions USING gin ((config::jsonb -> 'metadata') jsonb_path_ops);
			CREATE TABLE scheduler_lease (
				name TEXT PRIMARY KEY,
				holder TEXT NOT NULL,
				token BIGINT NOT NULL,
				expires BIGINT NOT NULL
			);
		`,
	},
	{
		version: 4,
		...shared.TENANT_VISIBILITY,
	},
	{
		version: 5,
		...shared.admissionTables("BIGSERIAL"),
	},
	{
		version: 6,
		description:
			"superseded_messages keeps what a rewind, a regenerate or an edit took off a transcript's end, numbered " +
			"by branch per session, as SQLite 14 does",
		sql: `${shared.supersededTable("BIGINT")};
		`,
	},
	{
		version: 7,
		...shared.usageTenant("as SQLite 15 does: "),
	},
	{
		version: 8,
		description:
			"the sessions shared with a tenant get the status index the owners' sessions have (tenant, status, " +
			"created_at, id), so a caller with a tenant lists its tenant's shared sessions of a status from an index",
		// Partial, as sessions_by_tenant: only shared sessions are looked up by tenant.
		sql: `
			CREATE INDEX sessions_shared_by_status ON sessions (tenant, status, created_at, id) WHERE visibility = 'tenant';
		`,
	},
];

export const LATEST_PG_SCHEMA_VERSION = MIGRATIONS[MIGRATIONS.length - 1]?.version ?? 0;

/**
 * The schema version of `schema`: 0 when it does not exist or holds no tables, the highest applied
 * migration otherwise. Throws (reading only) for a schema that holds tables but is not a Wheelhouse
 * store, and for one newer than this code knows.
 */
export async function checkSchemaVersion(db: Queryable, schema: string, where: string): Promise<number> {
	const tables = (
		await db.query<{ table_name: string }>(
			"SELECT table_name FROM information_schema.tables WHERE table_schema = $1 ORDER BY table_name",
			[schema],
		)
	).rows
		.map((r) => r.table_name)
		.filter((name) => name !== OWNER_TABLE);
	if (tables.length === 0) return 0;
	if (!tables.includes(VERSION_TABLE)) {
		throw new Error(
			`database ${where}: schema "${schema}" holds tables but is not a Wheelhouse store (no ${VERSION_TABLE} ` +
				`table; found ${tables.slice(0, 5).join(", ")}); refusing to modify it: set WHEELHOUSE_DATABASE_SCHEMA ` +
				"to another schema",
		);
	}
	const version =
		(await db.query<{ v: number | null }>(`SELECT max(version) AS v FROM ${schema}.${VERSION_TABLE}`)).rows[0]?.v ?? 0;
	if (version > LATEST_PG_SCHEMA_VERSION) {
		throw new Error(
			`database ${where}: schema "${schema}" has schema version ${version}, newer than this Wheelhouse build ` +
				`supports (${LATEST_PG_SCHEMA_VERSION}); refusing to open it: upgrade Wheelhouse, or set ` +
				"WHEELHOUSE_DATABASE_SCHEMA to another schema",
		);
	}
	return version;
}

/**
 * Runs `work` in one transaction on one connection, under the transaction-scoped advisory lock
 * every schema change of the store takes first, so servers starting together change the schema
 * one at a time.
 */
async function underSchemaLock<T>(
	pool: pg.Pool,
	schema: string,
	work: (client: pg.PoolClient) => Promise<T>,
): Promise<T> {
	const client = await pool.connect();
	let broken: Error | undefined;
	try {
		await client.query("BEGIN");
		await client.query("SELECT pg_advisory_xact_lock(hashtext($1))", [`wheelhouse.migrate.${schema}`]);
		const result = await work(client);
		await client.query("COMMIT");
		return result;
	} catch (error) {
		try {
			await client.query("ROLLBACK");
		} catch (e) {
			broken = e as Error;
		}
		throw error;
	} finally {
		client.release(broken);
	}
}

/**
 * Creates `schema` if missing, with the instance-owner lock's table in it, under the migrations'
 * lock: `CREATE … IF NOT EXISTS` is not safe against itself (two at once on a new name, and one
 * fails on the catalog's unique index), and servers starting together on a fresh database do
 * exactly that. Only a single-replica store needs this before `migrate`, which creates the schema
 * itself: its owner lock is taken before migrating.
 */
export function prepareOwnerTable(pool: pg.Pool, schema: string): Promise<void> {
	return underSchemaLock(pool, schema, async (client) => {
		await client.query(`CREATE SCHEMA IF NOT EXISTS ${schema}`);
		await client.query(
			`CREATE TABLE IF NOT EXISTS ${schema}.${OWNER_TABLE} (id INTEGER PRIMARY KEY CHECK (id = 1), ` +
				"pid INTEGER NOT NULL, host TEXT NOT NULL, started_at BIGINT NOT NULL)",
		);
	});
}

/**
 * Brings `schema` (created if missing) to the latest version in one transaction, under an
 * advisory lock so concurrent starts migrate once. Returns the versions it applied.
 */
export function migrate(pool: pg.Pool, schema: string, where: string): Promise<number[]> {
	return underSchemaLock(pool, schema, async (client) => {
		const current = await checkSchemaVersion(client, schema, where);
		const pending = MIGRATIONS.filter((m) => m.version > current);
		if (pending.length > 0) {
			await client.query(`CREATE SCHEMA IF NOT EXISTS ${schema}`);
			await client.query(
				`CREATE TABLE IF NOT EXISTS ${schema}.${VERSION_TABLE} (version INTEGER PRIMARY KEY, ` +
					"description TEXT NOT NULL, applied_at BIGINT NOT NULL)",
			);
			for (const m of pending) {
				await client.query(m.sql);
				await client.query(
					`INSERT INTO ${schema}.${VERSION_TABLE} (version, description, applied_at) VALUES ($1, $2, $3)`,
					[m.version, m.description, Date.now()],
				);
			}
		}
		return pending.map((m) => m.version);
	});
}
