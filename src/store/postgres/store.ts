/**
 * The PostgreSQL `SessionStore`, on node-postgres: a driver of the SQL store engine
 * (`../sql/engine.ts`, which holds the public methods both SQL stores share), with what only it
 * does —
 *
 * - `../sql/`: the engine, its driver interface (`driver.ts`), the event buffer and id reservation
 *   (`event-buffer.ts`), the run writes (`run-writes.ts`), the rows and the log's format;
 * - `settings.ts`, `url.ts`: the options, checked before anything connects;
 * - `connection.ts`: the pool, transactions, and which failures mean "unreachable";
 * - `migrations.ts`, `owner-lock.ts`: the schema (checked, owned when single-replica, migrated);
 * - `working-set.ts`, `lease-holder.ts`, `leases.ts`: the sessions whose lease this store holds,
 *   joining, renewing, releasing and losing them, and the lease SQL;
 * - `event-log.ts`: reservations, batches taken and restored around commits, the log's reads;
 * - `run-writes.ts`, `barrier-batch.ts`: the run writes' statements, many sessions' in one;
 * - `commit.ts`: which writes share which transaction, fencing, retries;
 * - `sessions.ts`, `row-reads.ts`, `recovery.ts`: the session rows' SQL, the reads the engine maps
 *   to records, and marking crashed runs interrupted;
 * - `record-writes.ts`, `webhook-outbox.ts`, `facade-records.ts`: the writes of
 *   queues, pending interactions, idempotency records and usage rows, the outbox, facade records;
 * - `schedules.ts`, `admission.ts`, `sql-tx.ts`: the drivers of the schedules (their row locks and
 *   the scheduler lease) and of the admission queue (its table lock), and statements on a connection.
 *
 * The store is created synchronously (options checked) and connects in the background: every
 * asynchronous method waits for that first, so a failed start rejects them all with its reason.
 * `openPostgresStore` awaits the start and throws its error, for callers that must stop on it.
 */
import { randomUUID } from "node:crypto";
import { hostname } from "node:os";
import type pg from "pg";
import type { AgentMessage } from "../../agent/types.js";
import { checkLimit, closedError } from "../shared.js";
import type { SqlAdmission } from "../sql/admission.js";
import type { RecordWrites, RecoveryWebhooks, RowReads } from "../sql/driver.js";
import { SqlStoreEngine } from "../sql/engine.js";
import { type NewSessionRow, toSessionRecord } from "../sql/rows.js";
import { RunWrites } from "../sql/run-writes.js";
import type { SqlSchedules } from "../sql/schedules.js";
import type {
	LeaseStore,
	SessionConfig,
	SessionRecord,
	SessionStore,
	SupersededBranch,
	WebhookDelivery,
	WebhookStatus,
} from "../types.js";
import { pgAdmission } from "./admission.js";
import { CommitQueue } from "./commit.js";
import { asUnavailable, createPool, named, type Queryable, type Read } from "./connection.js";
import { EventLog } from "./event-log.js";
import { PgFacadeRecords } from "./facade-records.js";
import { LeaseHolder } from "./lease-holder.js";
import { expiredRuns } from "./leases.js";
import { checkSchemaVersion, LATEST_PG_SCHEMA_VERSION, migrate, prepareOwnerTable } from "./migrations.js";
import { PgOwnerLock } from "./owner-lock.js";
import { pgRecordWrites } from "./record-writes.js";
import { interruptRuns } from "./recovery.js";
import { pgRowReads } from "./row-reads.js";
import { pgRunDriver } from "./run-writes.js";
import { pgSchedules } from "./schedules.js";
import {
	deleteSessionRows,
	idleSessionIds,
	insertSession,
	patchSessionConfig,
	readSessionRow,
	type SessionRowWithLog,
} from "./sessions.js";
import { type PostgresSettings, type PostgresStoreOptions, resolveSettings } from "./settings.js";
import { readSuperseded, supersedeRows } from "./superseded.js";
import { PgWebhookOutbox } from "./webhook-outbox.js";
import { type SessionState, WorkingSet } from "./working-set.js";

export type { PostgresStoreOptions } from "./settings.js";

/** Opens a store and waits until it is connected, owned (single-replica) and migrated; throws why not. */
export async function openPostgresStore(options: PostgresStoreOptions): Promise<PostgresSessionStore> {
	const store = new PostgresSessionStore(options);
	try {
		await store.ready;
	} catch (error) {
		await store.close().catch(() => undefined);
		throw error;
	}
	return store;
}

export class PostgresSessionStore
	extends SqlStoreEngine<SessionState, SessionRowWithLog>
	implements SessionStore, LeaseStore
{
	readonly kind = "postgres" as const;
	readonly maxEventsPerSession: number;
	readonly schemaVersion = LATEST_PG_SCHEMA_VERSION;
	/** This store's lease holder id (host, pid, and a random part: two stores in one process differ). */
	readonly holderId = `${hostname()}:${process.pid}:${randomUUID().slice(0, 8)}`;
	readonly leaseTtlMs: number;
	/** Resolves once connected, owned and migrated; rejects with why not. */
	readonly ready: Promise<void>;
	private readonly settings: PostgresSettings;
	private readonly pool: pg.Pool;
	protected readonly sessions = new WorkingSet();
	protected readonly log: EventLog;
	protected readonly commits: CommitQueue;
	protected readonly runs: RunWrites<SessionState>;
	protected readonly outbox: PgWebhookOutbox;
	protected readonly records: RecordWrites;
	protected readonly reads: RowReads<SessionRowWithLog>;
	protected readonly facade: PgFacadeRecords;
	readonly schedules: SqlSchedules;
	readonly admission: SqlAdmission;
	/** `query`, for the parts that read. */
	private readonly read: Read = (sql, params) => this.query(sql, params);
	private readonly leases: LeaseHolder;
	private lock: PgOwnerLock | undefined;
	private renewTimer: NodeJS.Timeout | undefined;
	private closing: Promise<void> | undefined;

	constructor(options: PostgresStoreOptions) {
		super();
		this.settings = resolveSettings(options);
		this.maxEventsPerSession = this.settings.maxEventsPerSession;
		this.leaseTtlMs = this.settings.leaseTtlMs;
		this.pool = createPool(this.settings);
		this.log = new EventLog(this.sessions, this.pool, this.maxEventsPerSession, () => this.commits.afterAppend());
		this.commits = new CommitQueue(this.pool, this.settings, this.sessions, this.log, (state) =>
			this.leases.lose(state, new Error(`the lease of session "${state.sessionId}" was taken over by another replica`)),
		);
		this.leases = new LeaseHolder(this.holderId, this.settings, this.sessions, this.log, this.commits);
		this.runs = new RunWrites(pgRunDriver(this.commits), 0);
		this.outbox = new PgWebhookOutbox(this.commits, () => this.reader());
		this.reads = pgRowReads(this.read);
		this.records = pgRecordWrites(this.commits, this.settings.maxIdempotencyKeys);
		this.facade = new PgFacadeRecords(this.commits, this.read);
		this.schedules = pgSchedules(this.commits, this.read, () => this.begin());
		this.admission = pgAdmission(async () => {
			await this.begin();
			return this.pool;
		}, this.settings.url.redacted);
		this.ready = this.start();
		// Callers that never await `ready` still see the failure on their first call.
		this.ready.catch(() => undefined);
	}

	/** The schema this store's tables are in. */
	get schema(): string {
		return this.settings.schema;
	}

	/** True when this store runs as one of several replicas (no instance-owner lock). */
	get cluster(): boolean {
		return this.settings.cluster;
	}

	/** True while the last commit failed because the database was unreachable. */
	get unavailable(): boolean {
		return this.commits.unavailable;
	}

	private async start(): Promise<void> {
		const where = `${this.settings.url.redacted}`;
		try {
			// Read-only checks first: a foreign or newer schema is refused before anything is written.
			await checkSchemaVersion(this.pool, this.settings.schema, where);
			if (!this.settings.cluster) {
				// Before migrating: a newer build must not migrate a schema an older one is still serving.
				await prepareOwnerTable(this.pool, this.settings.schema);
				this.lock = await PgOwnerLock.take(this.settings, (error) => this.settings.onFlushError(error));
			}
			await migrate(this.pool, this.settings.schema, where);
		} catch (error) {
			throw asUnavailable(error, "opening the store", this.settings.url.redacted);
		}
		const every = Math.max(10, Math.floor(this.settings.leaseTtlMs / 3));
		this.renewTimer = setInterval(() => {
			this.renewLeases().catch((error) => this.settings.onFlushError(error as Error));
		}, every);
		this.renewTimer.unref();
	}

	/** Before any asynchronous method: not closed, started. */
	protected async begin(): Promise<void> {
		if (this.closed) throw closedError();
		await this.ready;
		if (this.closed) throw closedError();
	}

	/** The pool, once every write called before is committed (read-your-writes). */
	private async reader(): Promise<Queryable> {
		await this.begin();
		await this.commits.settle();
		return this.pool;
	}

	/** One read statement; a connection failure becomes a `StoreUnavailableError`. */
	private async query<R extends pg.QueryResultRow>(sql: string, params: unknown[] = []): Promise<R[]> {
		const db = await this.reader();
		try {
			return (await db.query<R>(named(sql, params))).rows;
		} catch (error) {
			throw asUnavailable(error, "a read", this.settings.url.redacted);
		}
	}

	protected toRecord(row: SessionRowWithLog): SessionRecord {
		const state = this.sessions.get(row.id);
		const written = Math.max(row.batch_last ?? 0, row.last_event_id);
		// A cluster's other replicas see what is written: the holder's reservation runs ahead of the
		// ids it assigned, and a reader must not take the reserved ids for events.
		const last = state?.last ?? (this.settings.cluster ? written : Math.max(written, row.event_id_reserved));
		const touched = Math.max(this.commits.touches.get(row.id) ?? 0, this.commits.touchesInFlight.get(row.id) ?? 0);
		return toSessionRecord(row, touched || undefined, last);
	}

	// --- the working set and leases -------------------------------------------------------------

	/** Takes the session's lease and loads its write state (once per session; concurrent calls share it). */
	protected async join(sessionId: string): Promise<SessionState | undefined> {
		await this.begin();
		return this.leases.join(sessionId);
	}

	onSessionLost(listener: (sessionId: string, error: Error) => void): () => void {
		return this.leases.onSessionLost(listener);
	}

	leaseToken(sessionId: string): number | undefined {
		return this.sessions.get(sessionId)?.token;
	}

	async renewLeases(): Promise<string[]> {
		if (this.closed || this.sessions.size === 0) return [];
		await this.begin();
		return this.leases.renew();
	}

	async releaseSession(sessionId: string): Promise<boolean> {
		await this.begin();
		return this.leases.release(sessionId);
	}

	async listExpiredRuns(limit = 100): Promise<string[]> {
		const max = checkLimit("limit", limit, 100, 1, 10_000);
		await this.begin();
		try {
			return await expiredRuns(this.pool, max);
		} catch (error) {
			throw asUnavailable(error, "listing expired runs", this.settings.url.redacted);
		}
	}

	// --- sessions -------------------------------------------------------------------------------

	protected async insertSession(row: NewSessionRow, messages: AgentMessage[]): Promise<SessionRecord> {
		const lease = { holderId: this.holderId, ttlMs: this.settings.leaseTtlMs };
		const created = await this.commits.durable((tx) => insertSession(tx, row, messages, lease));
		this.leases.joinCreated(row.id, (created as unknown as { lease_token: number }).lease_token, messages.length);
		return this.toRecord(created);
	}

	async getSession(sessionId: string): Promise<SessionRecord | undefined> {
		const row = await readSessionRow(this.read, sessionId);
		return row && this.toRecord(row);
	}

	protected async patchSession(
		sessionId: string,
		patch: Partial<SessionConfig>,
		at: number,
	): Promise<SessionRecord | undefined> {
		const row = await this.commits.durable((tx) => patchSessionConfig(tx, sessionId, patch, at));
		return row && this.toRecord(row);
	}

	async deleteSessions(sessionIds: string[]): Promise<number> {
		await this.begin();
		// Their buffered events are about to be deleted: drop them instead of writing them first.
		for (const id of sessionIds) {
			const state = this.sessions.get(id);
			if (!state) continue;
			this.sessions.delete(id);
			this.log.drop(state);
			this.commits.touches.delete(id);
		}
		return this.commits.durable((tx) => deleteSessionRows(tx, sessionIds));
	}

	protected supersede(state: SessionState, keep: number, at: number): Promise<SupersededBranch | undefined> {
		return this.commits.durable((tx) => supersedeRows(tx, state.sessionId, keep, at), state, undefined);
	}

	protected async supersededRows(sessionId: string): Promise<SupersededBranch[] | undefined> {
		await this.begin();
		return readSuperseded(this.read, sessionId);
	}

	async listIdleSessions(cutoff: number, limit?: number): Promise<string[]> {
		const max = checkLimit("limit", limit, 1000, 1, 1_000_000);
		await this.begin();
		await this.commits.flush(); // pending touches count
		return idleSessionIds(this.read, cutoff, max);
	}

	// --- transcript and event log reads ---------------------------------------------------------

	/** A read of the event log, once its buffered events are written; a connection failure becomes unavailable. */
	protected async readLog<T>(read: () => Promise<T>): Promise<T> {
		await this.begin();
		await this.commits.flush();
		try {
			return await read();
		} catch (error) {
			throw asUnavailable(error, "reading events", this.settings.url.redacted);
		}
	}

	// --- runs -----------------------------------------------------------------------------------

	protected async interruptRuns(
		at: number,
		webhooks: RecoveryWebhooks | undefined,
		sessionIds: readonly string[] | undefined,
	): Promise<string[]> {
		if (sessionIds !== undefined && sessionIds.length === 0) return [];
		const changed = await this.commits.durable((tx) =>
			interruptRuns(tx, at, { holderId: this.holderId, cluster: this.settings.cluster }, webhooks, sessionIds),
		);
		for (const id of changed) {
			const state = this.sessions.get(id);
			if (state) state.tally.running = false;
		}
		return changed;
	}

	// --- webhook outbox -------------------------------------------------------------------------

	override async listWebhooks(options?: { status?: WebhookStatus; limit?: number }): Promise<WebhookDelivery[]> {
		try {
			return await super.listWebhooks(options);
		} catch (error) {
			throw asUnavailable(error, "a read", this.settings.url.redacted);
		}
	}

	// --- lifecycle ------------------------------------------------------------------------------

	async close(): Promise<void> {
		this.closing ??= this.shutDown();
		return this.closing;
	}

	private async shutDown(): Promise<void> {
		let started = true;
		try {
			await this.ready;
		} catch {
			started = false;
		}
		if (this.renewTimer) clearInterval(this.renewTimer);
		if (started) {
			try {
				await this.commits.flush();
			} catch (error) {
				// Closing must not fail: what could not be committed is reported.
				this.settings.onFlushError(
					new Error(`closing with writes that could not be committed: ${(error as Error).message}`, { cause: error }),
				);
			}
			// Give the leases and unused id reservations back, so a restart continues ids without a gap.
			try {
				await this.leases.releaseAll();
			} catch (error) {
				this.settings.onFlushError(new Error(`releasing session leases failed: ${(error as Error).message}`));
			}
		}
		this.closed = true;
		this.commits.stop();
		await this.lock?.release();
		await this.pool.end().catch(() => undefined);
	}
}
