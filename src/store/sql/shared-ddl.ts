/**
 * DDL that released migrations of both SQL stores ran: tables both define alike but for the
 * dialect's words, which each migration list passes in (`../sqlite/migrations.ts`,
 * `../postgres/migrations.ts`). Frozen like those migrations: each text here is what old
 * databases ran (SQLite keeps it in `sqlite_master`), so it never changes, indentation included
 * — a new schema is a new migration in each store. test/store/migrations-frozen.test.ts pins
 * every released migration's text.
 */

/** A numbered schema migration, as both stores list them. */
export interface Migration {
	version: number;
	/** What it changes and why, for humans reading an old database. */
	description: string;
	sql: string;
}

/** The transcript (SQLite 1, PostgreSQL 1), up to its closing parenthesis. */
export const MESSAGES_TABLE = `CREATE TABLE messages (
				session_id TEXT NOT NULL,
				seq INTEGER NOT NULL,
				run_id TEXT,
				data TEXT NOT NULL,
				PRIMARY KEY (session_id, seq)
			)`;

/** The webhook outbox and its indexes (SQLite 8, PostgreSQL 1). */
export function webhookOutboxTable(id: string, int: string): string {
	return `CREATE TABLE webhook_outbox (
				id ${id} PRIMARY KEY,
				endpoint TEXT NOT NULL,
				event_type TEXT NOT NULL,
				payload TEXT NOT NULL,
				created_at ${int} NOT NULL,
				status TEXT NOT NULL DEFAULT 'pending',
				attempts INTEGER NOT NULL DEFAULT 0,
				next_attempt_at ${int} NOT NULL,
				last_error TEXT,
				finished_at ${int}
			);
			CREATE INDEX webhook_outbox_due ON webhook_outbox (status, next_attempt_at);
			CREATE INDEX webhook_outbox_by_created ON webhook_outbox (created_at, id);
			CREATE INDEX webhook_outbox_finished ON webhook_outbox (finished_at) WHERE finished_at IS NOT NULL;`;
}

/**
 * The schedules and their fires with their indexes, and the indexes of the filtered session list
 * (SQLite 11, PostgreSQL 3); each store adds the rest of that migration after it.
 */
export function scheduleTables(int: string, fireId: string): string {
	return `
			CREATE TABLE schedules (
				id TEXT PRIMARY KEY,
				owner_id TEXT,
				spec TEXT NOT NULL,
				state TEXT NOT NULL,
				next_fire_at ${int},
				last_fire_at ${int},
				created_at ${int} NOT NULL,
				updated_at ${int} NOT NULL
			);
			CREATE INDEX schedules_by_created ON schedules (created_at, id);
			CREATE INDEX schedules_by_owner ON schedules (owner_id, created_at, id);
			CREATE INDEX schedules_due ON schedules (next_fire_at) WHERE state = 'active';
			CREATE TABLE schedule_fires (
				id ${fireId},
				schedule_id TEXT NOT NULL,
				kind TEXT NOT NULL,
				tick_at ${int} NOT NULL,
				outcome TEXT NOT NULL,
				session_id TEXT,
				run_id TEXT,
				reason TEXT,
				created_at ${int} NOT NULL,
				settled_at ${int}
			);
			CREATE UNIQUE INDEX schedule_fires_one_per_tick ON schedule_fires (schedule_id, tick_at) WHERE kind <> 'manual';
			CREATE INDEX schedule_fires_by_schedule ON schedule_fires (schedule_id, id);
			CREATE INDEX schedule_fires_unsettled ON schedule_fires (created_at) WHERE outcome = 'firing';
			CREATE INDEX sessions_by_owner_status ON sessions (owner_id, status, created_at, id);
			CREATE INDEX sessions_by_owner_updated ON sessions (owner_id, updated_at);`;
}

/** Sessions' tenant and visibility (SQLite 12, PostgreSQL 4): the whole migration. */
export const TENANT_VISIBILITY = {
	description:
		"sessions carry their owner's tenant and a visibility (owner: its creator only; tenant: everyone of its " +
		"tenant), so a listing shows a caller exactly what it may see; existing sessions stay visible to their " +
		"owner only",
	// Only shared sessions are looked up by tenant: the partial index stays as small as they are.
	sql: `
			ALTER TABLE sessions ADD COLUMN tenant TEXT;
			ALTER TABLE sessions ADD COLUMN visibility TEXT NOT NULL DEFAULT 'owner';
			CREATE INDEX sessions_by_tenant ON sessions (tenant, created_at, id) WHERE visibility = 'tenant';
		`,
};

/** The admission queue (SQLite 13, PostgreSQL 5): the whole migration but its id column's type. */
export function admissionTables(id: string): { description: string; sql: string } {
	return {
		description:
			"runs past a tenant's or an API key's concurrent-run limit wait in a shared admission queue " +
			'(auth.admission "queue"): admission_queue holds the waiting runs and the slots held, ' +
			"admission_turns the round-robin between tenants",
		sql: `
			CREATE TABLE admission_queue (
				id ${id} PRIMARY KEY,
				session_id TEXT NOT NULL,
				owner_id TEXT,
				tenant TEXT,
				grp TEXT NOT NULL,
				messages TEXT NOT NULL,
				state TEXT NOT NULL,
				holder TEXT,
				run_id TEXT,
				heartbeat_at BIGINT,
				enqueued_at BIGINT NOT NULL
			);
			CREATE INDEX admission_by_group ON admission_queue (grp, state, id);
			CREATE INDEX admission_by_session ON admission_queue (session_id);
			CREATE TABLE admission_turns (
				grp TEXT PRIMARY KEY,
				turn BIGINT NOT NULL
			);
		`,
	};
}

/**
 * Usage rows' tenant (SQLite 15, PostgreSQL 7): the whole migration; `note` goes into the
 * description of the store that got it later.
 */
export function usageTenant(note = ""): { description: string; sql: string } {
	return {
		description:
			"usage rows carry the tenant the usage was spent for (per-tenant budgets and GET /v1/usage?scope=tenant), " +
			`${note}with an index for a tenant's days; rows written before have tenant '' (none) until their owner ` +
			"spends again on the same day and model",
		sql: `
			ALTER TABLE usage_daily ADD COLUMN tenant TEXT NOT NULL DEFAULT '';
			CREATE INDEX usage_daily_by_tenant ON usage_daily (tenant, day);
		`,
	};
}

/** Superseded transcript ends (SQLite 14, PostgreSQL 6), up to the table's options. */
export function supersededTable(int: string): string {
	return `
			CREATE TABLE superseded_messages (
				session_id TEXT NOT NULL,
				branch INTEGER NOT NULL,
				seq INTEGER NOT NULL,
				run_id TEXT,
				data TEXT NOT NULL,
				superseded_at ${int} NOT NULL,
				PRIMARY KEY (session_id, branch, seq)
			)`;
}
