/**
 * The PostgreSQL `SessionStore`, on node-postgres: its public methods, each a few statements
 * around the parts that do the work —
 *
 * - `../sql/`: what both SQL stores share — the synchronous writes (`engine.ts`), the event
 *   buffer and streaming window (`event-buffer.ts`), the rows and the log's on-disk format;
 * - `settings.ts`, `url.ts`: the options, checked before anything connects;
 * - `connection.ts`: the pool, transactions, and which failures mean "unreachable";
 * - `migrations.ts`, `owner-lock.ts`: the schema (checked, owned when single-replica, migrated);
 * - `working-set.ts`, `lease-holder.ts`, `leases.ts`: the sessions whose lease this store holds,
 *   joining, renewing, releasing and losing them, and the lease SQL;
 * - `event-log.ts`: id reservation, batches taken and restored around commits, reads;
 * - `run-writes.ts`: run starts, messages, run ends and drained messages, with their usage rows;
 * - `commit.ts`: which writes share which transaction, fencing, retries;
 * - `sessions.ts`, `recovery.ts`: the session rows' SQL, and marking crashed runs interrupted;
 * - `queue.ts`, `pending.ts`, `idempotency-keys.ts`, `usage-reads.ts`, `webhook-outbox.ts`: the
 *   queues, pending interactions, idempotency records, usage rows and the outbox.
 *
 * The store is created synchronously (options checked) and connects in the background: every
 * asynchronous method waits for that first, so a failed start rejects them all with its reason.
 * `openPostgresStore` awaits the start and throws its error, for callers that must stop on it.
 */
import { randomUUID } from "node:crypto";
import { hostname } from "node:os";
import type pg from "pg";
import type { AgentMessage } from "../../agent/types.js";
import { checkLimit, closedError, duplicateRunError, EventPage } from "../shared.js";
import { SqlStoreEngine } from "../sql/engine.js";
import { type RunRow, toRunRecord, toSessionRecord } from "../sql/rows.js";
import type {
	FacadeRecord,
	IdempotencyRecord,
	LeaseStore,
	NewSession,
	NewWebhookDelivery,
	PendingInteraction,
	QueuedMessage,
	QueueKind,
	RunEnd,
	RunRecord,
	SessionConfig,
	SessionPage,
	SessionRecord,
	SessionStore,
	StoredEvent,
	UsageEntry,
	UsageQuery,
	UsageRow,
	WebhookDelivery,
	WebhookOutbox,
	WebhookStatus,
} from "../types.js";
import { CommitQueue } from "./commit.js";
import { asUnavailable, createPool, named, type Queryable, type Read } from "./connection.js";
import { EventLog } from "./event-log.js";
import { PgFacadeRecords } from "./facade-records.js";
import { PgIdempotencyKeys } from "./idempotency-keys.js";
import { LeaseHolder } from "./lease-holder.js";
import { expiredRuns } from "./leases.js";
import { checkSchemaVersion, LATEST_PG_SCHEMA_VERSION, migrate } from "./migrations.js";
import { PgOwnerLock } from "./owner-lock.js";
import { PgPendingInteractions } from "./pending.js";
import { PgQueue } from "./queue.js";
import { interruptRuns } from "./recovery.js";
import { RunWrites } from "./run-writes.js";
import {
	deleteSessionRows,
	idleSessionIds,
	insertSession,
	listSessionPage,
	patchSessionConfig,
	readSessionRow,
	type SessionRowWithLog,
} from "./sessions.js";
import { type PostgresSettings, type PostgresStoreOptions, resolveSettings } from "./settings.js";
import { readUsage, recordUsage } from "./usage-reads.js";
import { PgWebhookOutbox, putDeliveries } from "./webhook-outbox.js";
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

export class PostgresSessionStore extends SqlStoreEngine<SessionState> implements SessionStore, LeaseStore {
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
	protected readonly runs: RunWrites;
	private readonly outbox: PgWebhookOutbox;
	private readonly queue: PgQueue;
	private readonly pending: PgPendingInteractions;
	private readonly keys: PgIdempotencyKeys;
	private readonly facade: PgFacadeRecords;
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
		this.log = new EventLog(this.sessions, this.maxEventsPerSession, () => this.commits.afterAppend());
		this.commits = new CommitQueue(this.pool, this.settings, this.sessions, this.log, (state) =>
			this.leases.lose(state, new Error(`the lease of session "${state.sessionId}" was taken over by another replica`)),
		);
		this.leases = new LeaseHolder(this.holderId, this.settings, this.sessions, this.log, this.commits);
		this.runs = new RunWrites(this.commits);
		this.outbox = new PgWebhookOutbox(this.commits, () => this.reader());
		this.queue = new PgQueue(this.commits, this.read, this.settings.maxIdempotencyKeys);
		this.pending = new PgPendingInteractions(this.commits, this.read);
		this.keys = new PgIdempotencyKeys(this.commits, this.read, this.settings.maxIdempotencyKeys);
		this.facade = new PgFacadeRecords(this.commits, this.read);
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
			await this.pool.query(`CREATE SCHEMA IF NOT EXISTS ${this.settings.schema}`);
			if (!this.settings.cluster) {
				// Before migrating: a newer build must not migrate a schema an older one is still serving.
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
	private async begin(): Promise<void> {
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

	private toRecord(row: SessionRowWithLog): SessionRecord {
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
	private async join(sessionId: string): Promise<SessionState | undefined> {
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

	async createSession(session: NewSession, messages: AgentMessage[] = []): Promise<SessionRecord> {
		await this.begin();
		const row = await this.commits.durable((tx) =>
			insertSession(tx, session, messages, { holderId: this.holderId, ttlMs: this.settings.leaseTtlMs }),
		);
		this.leases.joinCreated(session.id, (row as unknown as { lease_token: number }).lease_token, messages.length);
		return this.toRecord(row);
	}

	async getSession(sessionId: string): Promise<SessionRecord | undefined> {
		const row = await readSessionRow(this.read, sessionId);
		return row && this.toRecord(row);
	}

	async updateSession(
		sessionId: string,
		patch: Partial<SessionConfig>,
		at: number,
	): Promise<SessionRecord | undefined> {
		await this.begin();
		const row = await this.commits.durable((tx) => patchSessionConfig(tx, sessionId, patch, at));
		return row && this.toRecord(row);
	}

	async listSessions(options: { ownerId?: string | null; cursor?: string; limit?: number } = {}): Promise<SessionPage> {
		return listSessionPage(this.read, options, (row) => this.toRecord(row));
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

	async listIdleSessions(cutoff: number, limit?: number): Promise<string[]> {
		const max = checkLimit("limit", limit, 1000, 1, 1_000_000);
		await this.begin();
		await this.commits.flush(); // pending touches count
		return idleSessionIds(this.read, cutoff, max);
	}

	// --- working set ----------------------------------------------------------------------------

	async openSession(sessionId: string): Promise<boolean> {
		return (await this.join(sessionId)) !== undefined;
	}

	endRun(sessionId: string, runId: string, end: RunEnd, webhooks?: NewWebhookDelivery[]): boolean {
		this.open();
		const state = this.sessions.get(sessionId);
		if (!state) return false;
		// The session's current run is its own; a run started by a queued write is known too.
		if (state.tally.runId !== runId && this.commits.laterRuns.get(runId) !== sessionId) return false;
		const put = webhooks && webhooks.length > 0 ? (tx: Queryable) => putDeliveries(tx, webhooks) : undefined;
		return this.runs.endRun(state, runId, end, put);
	}

	// --- commit barrier -------------------------------------------------------------------------

	async sync(): Promise<void> {
		await this.commits.sync();
	}

	// --- transcript and event log reads ---------------------------------------------------------

	protected async messageRows(sessionId: string, offset: number, limit: number): Promise<string[]> {
		const rows = await this.query<{ data: string }>(
			"SELECT data FROM messages WHERE session_id = $1 AND seq >= $2 ORDER BY seq LIMIT $3",
			[sessionId, offset, limit],
		);
		return rows.map((r) => r.data);
	}

	async countMessages(sessionId: string): Promise<number | undefined> {
		const rows = await this.query<{ message_count: number }>("SELECT message_count FROM sessions WHERE id = $1", [
			sessionId,
		]);
		return rows[0]?.message_count;
	}

	async readEvents(sessionId: string, afterId: number, limit?: number, maxBytes?: number): Promise<StoredEvent[]> {
		const page = new EventPage(checkLimit("limit", limit, 1000, 1, 100_000), maxBytes);
		return this.readLog((db) => this.log.read(db, sessionId, afterId, page));
	}

	async oldestEventId(sessionId: string): Promise<number | undefined> {
		return this.readLog((db) => this.log.oldest(db, sessionId));
	}

	/** A read of the event log, once its buffered events are written; a connection failure becomes unavailable. */
	private async readLog<T>(read: (db: Queryable) => Promise<T>): Promise<T> {
		await this.begin();
		await this.commits.flush();
		try {
			return await read(this.pool);
		} catch (error) {
			throw asUnavailable(error, "reading events", this.settings.url.redacted);
		}
	}

	// --- queue ----------------------------------------------------------------------------------

	async enqueue(
		sessionId: string,
		kind: QueueKind,
		message: AgentMessage,
		createdAt: number,
		withKey?: (queued: QueuedMessage) => IdempotencyRecord,
	): Promise<QueuedMessage | undefined> {
		await this.begin();
		return this.queue.enqueue(sessionId, kind, message, createdAt, withKey);
	}

	async listQueued(sessionId: string, kind?: QueueKind): Promise<QueuedMessage[]> {
		return this.queue.listQueued(sessionId, kind);
	}

	async drainQueued(sessionId: string, ids: number[], messages: AgentMessage[]): Promise<number | undefined> {
		const state = await this.join(sessionId);
		return state && this.runs.drainQueued(state, ids, messages);
	}

	async clearQueue(sessionId: string, kind?: QueueKind): Promise<number> {
		await this.begin();
		return this.queue.clearQueue(sessionId, kind);
	}

	// --- runs -----------------------------------------------------------------------------------

	async startRun(sessionId: string, runId: string, startedAt: number, messages: AgentMessage[] = []): Promise<boolean> {
		const state = await this.join(sessionId);
		if (!state) return false;
		if (this.commits.laterRuns.has(runId)) throw duplicateRunError(runId);
		const exists = await this.query("SELECT 1 FROM runs WHERE id = $1", [runId]);
		if (exists.length > 0 || this.commits.laterRuns.has(runId)) throw duplicateRunError(runId);
		// The lease may have been lost while the check ran.
		if (!this.sessions.holds(state)) return false;
		return this.runs.startRun(state, runId, startedAt, messages);
	}

	async listRuns(sessionId: string, limit?: number): Promise<RunRecord[]> {
		const max = checkLimit("limit", limit, 100, 1, 100_000);
		const rows = await this.query<RunRow>(
			`SELECT * FROM (SELECT * FROM runs WHERE session_id = $1 ORDER BY started_at DESC, seq DESC LIMIT $2) r
			 ORDER BY started_at, seq`,
			[sessionId, max],
		);
		return rows.map(toRunRecord);
	}

	async recoverInterrupted(
		at: number,
		webhooks?: (sessionId: string, runId: string | null) => NewWebhookDelivery[],
		sessionIds?: readonly string[],
	): Promise<string[]> {
		await this.begin();
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

	// --- pending interactions -------------------------------------------------------------------

	async putPending(
		interaction: Omit<PendingInteraction, "resolvedAt" | "resolution">,
		webhooks?: (runId: string | null) => NewWebhookDelivery[],
	): Promise<boolean> {
		await this.begin();
		return this.pending.putPending(interaction, webhooks);
	}

	async resolvePending(sessionId: string, toolCallId: string, resolution: string, at: number): Promise<boolean> {
		await this.begin();
		return this.pending.resolvePending(sessionId, toolCallId, resolution, at);
	}

	async deletePending(sessionId: string, toolCallId: string): Promise<boolean> {
		await this.begin();
		return this.pending.deletePending(sessionId, toolCallId);
	}

	async listPending(sessionId: string, options: { includeResolved?: boolean } = {}): Promise<PendingInteraction[]> {
		return this.pending.listPending(sessionId, options);
	}

	// --- idempotency keys and usage -------------------------------------------------------------

	async putIdempotencyKey(record: IdempotencyRecord): Promise<boolean> {
		await this.begin();
		return this.keys.putIdempotencyKey(record);
	}

	async getIdempotencyKey(sessionId: string, key: string): Promise<IdempotencyRecord | undefined> {
		return this.keys.getIdempotencyKey(sessionId, key);
	}

	async deleteIdempotencyKeys(cutoff: number): Promise<number> {
		await this.begin();
		return this.keys.deleteIdempotencyKeys(cutoff);
	}

	async recordUsage(ownerId: string | null, entries: readonly UsageEntry[]): Promise<void> {
		await this.begin();
		if (entries.length === 0) return;
		await this.commits.durable((tx) => recordUsage(tx, ownerId ?? "", entries));
	}

	async readUsage(query: UsageQuery): Promise<UsageRow[]> {
		return readUsage(this.read, query);
	}

	// --- facade records -------------------------------------------------------------------------

	async putFacadeRecords(
		sessionId: string,
		records: readonly { kind: string; key: string; data: string }[],
		at: number,
	): Promise<boolean> {
		await this.begin();
		return this.facade.putFacadeRecords(sessionId, records, at);
	}

	async getFacadeRecord(sessionId: string, kind: string, key: string): Promise<FacadeRecord | undefined> {
		return this.facade.getFacadeRecord(sessionId, kind, key);
	}

	async findFacadeRecords(kind: string, key: string, ownerId: string | null, limit?: number): Promise<FacadeRecord[]> {
		return this.facade.findFacadeRecords(kind, key, ownerId, limit);
	}

	// --- webhook outbox -------------------------------------------------------------------------

	async enqueueWebhooks(deliveries: NewWebhookDelivery[]): Promise<void> {
		await this.begin();
		return this.outbox.enqueueWebhooks(deliveries);
	}

	async claimWebhooks(now: number, limit: number, claimUntil: number): Promise<WebhookDelivery[]> {
		await this.begin();
		return this.outbox.claimWebhooks(now, limit, claimUntil);
	}

	async settleWebhook(id: string, outcome: Parameters<WebhookOutbox["settleWebhook"]>[1]): Promise<boolean> {
		await this.begin();
		return this.outbox.settleWebhook(id, outcome);
	}

	async listWebhooks(options?: { status?: WebhookStatus; limit?: number }): Promise<WebhookDelivery[]> {
		try {
			return await this.outbox.listWebhooks(options);
		} catch (error) {
			throw asUnavailable(error, "a read", this.settings.url.redacted);
		}
	}

	async pruneWebhooks(cutoff: number): Promise<number> {
		await this.begin();
		return this.outbox.pruneWebhooks(cutoff);
	}

	// --- lifecycle ------------------------------------------------------------------------------

	async flush(): Promise<void> {
		await this.begin();
		await this.commits.flush();
	}

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
