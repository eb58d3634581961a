/**
 * The PostgreSQL `SessionStore`, on node-postgres: its public methods, each a few statements
 * around the parts that do the work —
 *
 * - `settings.ts`, `url.ts`: the options, checked before anything connects;
 * - `connection.ts`: the pool, transactions, and which failures mean "unreachable";
 * - `migrations.ts`, `owner-lock.ts`: the schema (checked, owned when single-replica, migrated);
 * - `working-set.ts`, `leases.ts`: the sessions whose lease this store holds, and the lease SQL;
 * - `event-log.ts`: buffered event appends, id reservation, the streaming window, reads;
 * - `run-writes.ts`: run starts, messages, run ends and drained messages, with their usage rows;
 * - `commit.ts`: which writes share which transaction, fencing, retries;
 * - `webhook-outbox.ts`: the outbox.
 *
 * The store is created synchronously (options checked) and connects in the background: every
 * asynchronous method waits for that first, so a failed start rejects them all with its reason.
 * `openPostgresStore` awaits the start and throws its error, for callers that must stop on it.
 */
import { randomUUID } from "node:crypto";
import { hostname } from "node:os";
import type pg from "pg";
import type { AgentMessage } from "../../agent/types.js";
import {
	addUsage,
	checkLimit,
	closedError,
	decodeCursor,
	duplicateRunError,
	duplicateSessionError,
	EventPage,
	encodeCursor,
	sumAssistantUsage,
} from "../shared.js";
import {
	patchConfig,
	pickConfig,
	type RunRow,
	type SessionRow,
	toIdempotencyRecord,
	toPendingInteraction,
	toQueuedMessage,
	toRunRecord,
	toSessionRecord,
	ZERO_USAGE_JSON,
} from "../sqlite/rows.js";
import type {
	IdempotencyRecord,
	LeaseStore,
	MessagePage,
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
	UsageQuery,
	UsageRow,
	UsageTotals,
	WebhookDelivery,
	WebhookOutbox,
	WebhookStatus,
} from "../types.js";
import { checkUsageQuery } from "../usage.js";
import { CommitQueue } from "./commit.js";
import { asUnavailable, createPool, named, type Queryable } from "./connection.js";
import { EventLog, ID_RESERVATION } from "./event-log.js";
import { DB_NOW_MS, expiredRuns, releaseLeases, renewLeases, takeLease } from "./leases.js";
import { checkSchemaVersion, LATEST_PG_SCHEMA_VERSION, migrate } from "./migrations.js";
import { PgOwnerLock } from "./owner-lock.js";
import { RunWrites } from "./run-writes.js";
import { type PostgresSettings, type PostgresStoreOptions, resolveSettings } from "./settings.js";
import { PgWebhookOutbox, putDeliveries } from "./webhook-outbox.js";
import { type SessionState, stateFromLease, WorkingSet } from "./working-set.js";

export type { PostgresStoreOptions } from "./settings.js";

/** A session row with the highest id of its batches. */
type SessionRowWithLog = SessionRow & { batch_last: number | null };

const SESSION_COLUMNS = "s.*, (SELECT max(b.last_id) FROM event_batches b WHERE b.session_id = s.id) AS batch_last";

interface UsageDailyRow {
	owner_id: string;
	day: string;
	provider: string;
	model: string;
	input: number;
	output: number;
	cache_read: number;
	cache_write: number;
	total_tokens: number;
	cost_usd: number;
	turns: number;
}

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

export class PostgresSessionStore implements SessionStore, LeaseStore {
	readonly kind = "postgres" as const;
	readonly deltaRetention = "while-streaming" as const;
	readonly maxEventsPerSession: number;
	readonly schemaVersion = LATEST_PG_SCHEMA_VERSION;
	/** This store's lease holder id (host, pid, and a random part: two stores in one process differ). */
	readonly holderId = `${hostname()}:${process.pid}:${randomUUID().slice(0, 8)}`;
	readonly leaseTtlMs: number;
	/** Resolves once connected, owned and migrated; rejects with why not. */
	readonly ready: Promise<void>;
	private readonly settings: PostgresSettings;
	private readonly pool: pg.Pool;
	private readonly sessions = new WorkingSet();
	private readonly log: EventLog;
	private readonly commits: CommitQueue;
	private readonly runs: RunWrites;
	private readonly outbox: PgWebhookOutbox;
	private readonly joining = new Map<string, Promise<SessionState | undefined>>();
	private readonly lostListeners = new Set<(sessionId: string, error: Error) => void>();
	private lock: PgOwnerLock | undefined;
	private renewTimer: NodeJS.Timeout | undefined;
	private closed = false;
	private closing: Promise<void> | undefined;

	constructor(options: PostgresStoreOptions) {
		this.settings = resolveSettings(options);
		this.maxEventsPerSession = this.settings.maxEventsPerSession;
		this.leaseTtlMs = this.settings.leaseTtlMs;
		this.pool = createPool(this.settings);
		this.log = new EventLog(this.sessions, this.maxEventsPerSession, () => this.commits.afterAppend());
		this.commits = new CommitQueue(this.pool, this.settings, this.sessions, this.log, (state) =>
			this.lose(state, new Error(`the lease of session "${state.sessionId}" was taken over by another replica`)),
		);
		this.runs = new RunWrites(this.commits);
		this.outbox = new PgWebhookOutbox(this.commits, () => this.reader());
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

	private open(): void {
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

	private async sessionRow(db: Queryable, sessionId: string): Promise<SessionRowWithLog | undefined> {
		return (await db.query<SessionRowWithLog>(`SELECT ${SESSION_COLUMNS} FROM sessions s WHERE s.id = $1`, [sessionId]))
			.rows[0];
	}

	// --- the working set and leases -------------------------------------------------------------

	/** Takes the session's lease and loads its write state (once per session; concurrent calls share it). */
	private async join(sessionId: string): Promise<SessionState | undefined> {
		await this.begin();
		const held = this.sessions.get(sessionId);
		if (held) return held;
		const pending = this.joining.get(sessionId);
		if (pending) return pending;
		const joined = (async () => {
			const row = await this.commits.durable((tx) =>
				takeLease(tx, sessionId, this.holderId, this.settings.leaseTtlMs, this.settings.cluster),
			);
			if (!row) return undefined;
			const state = stateFromLease(sessionId, row);
			this.sessions.set(state);
			return state;
		})();
		this.joining.set(sessionId, joined);
		try {
			return await joined;
		} finally {
			this.joining.delete(sessionId);
		}
	}

	/** A session leaves the working set because its lease was lost; listeners are told. */
	private lose(state: SessionState, error: Error): void {
		if (!this.sessions.holds(state)) return;
		this.sessions.delete(state.sessionId);
		this.log.drop(state);
		this.settings.onFlushError(new Error(`${error.message}; this process stops writing to it`));
		for (const listener of this.lostListeners) listener(state.sessionId, error);
	}

	onSessionLost(listener: (sessionId: string, error: Error) => void): () => void {
		this.lostListeners.add(listener);
		return () => this.lostListeners.delete(listener);
	}

	leaseToken(sessionId: string): number | undefined {
		return this.sessions.get(sessionId)?.token;
	}

	async renewLeases(): Promise<string[]> {
		if (this.closed || this.sessions.size === 0) return [];
		await this.begin();
		const states = [...this.sessions.values()];
		// Through the commit queue: a renewal running beside a commit, both updating session rows in
		// their own order, could deadlock with it.
		const renewed = await this.commits.durable((tx) =>
			renewLeases(
				tx,
				states.map((s) => s.sessionId),
				states.map((s) => s.token),
				this.settings.leaseTtlMs,
			),
		);
		const lost: string[] = [];
		for (const state of states) {
			if (renewed.has(state.sessionId) || !this.sessions.holds(state)) continue;
			// Gone from disk (deleted elsewhere) or taken over: either way no longer ours to write.
			lost.push(state.sessionId);
			this.lose(
				state,
				new Error(`the lease of session "${state.sessionId}" could not be renewed (taken over or deleted)`),
			);
		}
		return lost;
	}

	async releaseSession(sessionId: string): Promise<boolean> {
		await this.begin();
		const state = this.sessions.get(sessionId);
		if (!state) return false;
		await this.commits.flush();
		if (!this.sessions.holds(state)) return false;
		this.sessions.delete(sessionId);
		this.log.drop(state);
		await this.commits.durable((tx) => releaseLeases(tx, [leaseOf(state)]));
		return true;
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

	async takeOver(sessionId: string): Promise<number | undefined> {
		return (await this.join(sessionId))?.token;
	}

	// --- sessions -------------------------------------------------------------------------------

	async createSession(session: NewSession, messages: AgentMessage[] = []): Promise<SessionRecord> {
		await this.begin();
		const row = await this.commits.durable(async (tx) => {
			const t = session.createdAt;
			const inserted = await tx.query<SessionRowWithLog>(
				`INSERT INTO sessions AS s (id, owner_id, config, created_at, updated_at, last_active_at, usage, message_count,
				 event_id_reserved, lease_holder, lease_token, lease_expires)
				 VALUES ($1, $2, $3, $4, $4, $4, $5, $6, $7, $8, ${DB_NOW_MS}, ${DB_NOW_MS} + $9)
				 ON CONFLICT (id) DO NOTHING RETURNING s.*, NULL::bigint AS batch_last`,
				[
					session.id,
					session.ownerId,
					JSON.stringify(pickConfig(session)),
					t,
					ZERO_USAGE_JSON,
					messages.length,
					ID_RESERVATION,
					this.holderId,
					this.settings.leaseTtlMs,
				],
			);
			const created = inserted.rows[0];
			if (!created) throw duplicateSessionError(session.id);
			if (messages.length > 0) {
				await tx.query(
					`INSERT INTO messages (session_id, seq, run_id, data)
					 SELECT $1, n - 1, NULL, data FROM unnest($2::text[]) WITH ORDINALITY AS t(data, n)`,
					[session.id, messages.map((m) => JSON.stringify(m))],
				);
			}
			return created;
		});
		// The first block of ids is reserved with the row, so a new session's first events need no extra write.
		this.sessions.set(
			stateFromLease(session.id, {
				lease_token: (row as unknown as { lease_token: number }).lease_token,
				last_event_id: 0,
				event_id_reserved: 0,
				message_count: messages.length,
				current_run_id: null,
				status: "idle",
				batch_last: null,
			}),
		);
		const state = this.sessions.get(session.id) as SessionState;
		state.reserved = state.reservedDurable = ID_RESERVATION;
		return this.toRecord(row);
	}

	async getSession(sessionId: string): Promise<SessionRecord | undefined> {
		const rows = await this.query<SessionRowWithLog>(`SELECT ${SESSION_COLUMNS} FROM sessions s WHERE s.id = $1`, [
			sessionId,
		]);
		return rows[0] && this.toRecord(rows[0]);
	}

	async updateSession(
		sessionId: string,
		patch: Partial<SessionConfig>,
		at: number,
	): Promise<SessionRecord | undefined> {
		await this.begin();
		const row = await this.commits.durable(async (tx) => {
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
			return this.sessionRow(tx, sessionId);
		});
		return row && this.toRecord(row);
	}

	async listSessions(options: { ownerId?: string | null; cursor?: string; limit?: number } = {}): Promise<SessionPage> {
		const limit = checkLimit("limit", options.limit, 50, 1, 1000);
		const after = options.cursor === undefined ? undefined : decodeCursor(options.cursor);
		const where: string[] = [];
		const args: unknown[] = [];
		if (options.ownerId !== undefined) {
			args.push(options.ownerId);
			where.push(`s.owner_id IS NOT DISTINCT FROM $${args.length}`);
		}
		if (after) {
			args.push(after[0], after[1]);
			where.push(`(s.created_at, s.id) > ($${args.length - 1}, $${args.length})`);
		}
		args.push(limit + 1);
		const rows = await this.query<SessionRowWithLog>(
			`SELECT ${SESSION_COLUMNS} FROM sessions s ${where.length > 0 ? `WHERE ${where.join(" AND ")}` : ""}
			 ORDER BY s.created_at, s.id LIMIT $${args.length}`,
			args,
		);
		const page = rows.slice(0, limit).map((r) => this.toRecord(r));
		const last = page[page.length - 1];
		return {
			sessions: page,
			...(rows.length > limit && last ? { nextCursor: encodeCursor(last.createdAt, last.id) } : {}),
		};
	}

	async deleteSession(sessionId: string): Promise<boolean> {
		return (await this.deleteSessions([sessionId])) > 0;
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
		return this.commits.durable(async (tx) => {
			for (const table of ["messages", "event_batches", "queue", "runs", "pending_interactions", "idempotency_keys"]) {
				await tx.query(`DELETE FROM ${table} WHERE session_id = ANY($1::text[])`, [sessionIds]);
			}
			return (await tx.query("DELETE FROM sessions WHERE id = ANY($1::text[])", [sessionIds])).rowCount ?? 0;
		});
	}

	async listIdleSessions(cutoff: number, limit?: number): Promise<string[]> {
		const max = checkLimit("limit", limit, 1000, 1, 1_000_000);
		await this.begin();
		await this.commits.flush(); // pending touches count
		const rows = await this.query<{ id: string }>(
			"SELECT id FROM sessions WHERE last_active_at < $1 AND status <> 'running' ORDER BY last_active_at, id LIMIT $2",
			[cutoff, max],
		);
		return rows.map((r) => r.id);
	}

	// --- working set ----------------------------------------------------------------------------

	async openSession(sessionId: string): Promise<boolean> {
		return (await this.join(sessionId)) !== undefined;
	}

	appendEvent(sessionId: string, type: string, data: string, createdAt?: number): number | undefined {
		this.open();
		if (type === "") throw new RangeError("appendEvent: type must be a non-empty event name");
		const state = this.sessions.get(sessionId);
		return state && this.log.append(state, type, data, createdAt ?? Date.now());
	}

	lastEventId(sessionId: string): number | undefined {
		this.open();
		return this.sessions.get(sessionId)?.last;
	}

	appendMessages(sessionId: string, messages: AgentMessage[]): number | undefined {
		this.open();
		const state = this.sessions.get(sessionId);
		return state && this.runs.appendMessages(state, messages);
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

	touchSession(sessionId: string, at: number): boolean {
		this.open();
		if (!this.sessions.get(sessionId)) return false;
		this.commits.touch(sessionId, at);
		return true;
	}

	// --- commit barrier -------------------------------------------------------------------------

	async sync(): Promise<void> {
		await this.commits.sync();
	}

	get syncPending(): boolean {
		return this.commits.pending;
	}

	observeCommits(observer: ((ms: number) => void) | undefined): void {
		this.commits.commitObserver = observer;
	}

	// --- transcript and event log reads ---------------------------------------------------------

	async listMessages(
		sessionId: string,
		options: { offset?: number; limit?: number } = {},
	): Promise<MessagePage | undefined> {
		const offset = checkLimit("offset", options.offset, 0, 0, Number.MAX_SAFE_INTEGER);
		const limit = checkLimit("limit", options.limit, 100, 1, 1000);
		const total = await this.countMessages(sessionId);
		if (total === undefined) return undefined;
		const rows = await this.query<{ data: string }>(
			"SELECT data FROM messages WHERE session_id = $1 AND seq >= $2 ORDER BY seq LIMIT $3",
			[sessionId, offset, limit],
		);
		return { messages: rows.map((r) => JSON.parse(r.data) as AgentMessage), offset, total };
	}

	async countMessages(sessionId: string): Promise<number | undefined> {
		const rows = await this.query<{ message_count: number }>("SELECT message_count FROM sessions WHERE id = $1", [
			sessionId,
		]);
		return rows[0]?.message_count;
	}

	async readEvents(sessionId: string, afterId: number, limit?: number, maxBytes?: number): Promise<StoredEvent[]> {
		const page = new EventPage(checkLimit("limit", limit, 1000, 1, 100_000), maxBytes);
		await this.begin();
		await this.commits.flush();
		try {
			return await this.log.read(this.pool, sessionId, afterId, page);
		} catch (error) {
			throw asUnavailable(error, "reading events", this.settings.url.redacted);
		}
	}

	async oldestEventId(sessionId: string): Promise<number | undefined> {
		await this.begin();
		await this.commits.flush();
		try {
			return await this.log.oldest(this.pool, sessionId);
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
		return this.commits.durable(async (tx) => {
			const bumped = await tx.query("UPDATE sessions SET last_active_at = greatest(last_active_at, $1) WHERE id = $2", [
				createdAt,
				sessionId,
			]);
			if (bumped.rowCount === 0) return undefined;
			const json = JSON.stringify(message);
			const id = (
				await tx.query<{ id: number }>(
					"INSERT INTO queue (session_id, kind, data, created_at) VALUES ($1, $2, $3, $4) RETURNING id",
					[sessionId, kind, json, createdAt],
				)
			).rows[0]?.id as number;
			const queued: QueuedMessage = { id, sessionId, kind, message: JSON.parse(json) as AgentMessage, createdAt };
			if (withKey) await this.writeIdempotencyKey(tx, withKey(queued));
			return queued;
		});
	}

	async listQueued(sessionId: string, kind?: QueueKind): Promise<QueuedMessage[]> {
		const rows =
			kind === undefined
				? await this.query("SELECT * FROM queue WHERE session_id = $1 ORDER BY id", [sessionId])
				: await this.query("SELECT * FROM queue WHERE session_id = $1 AND kind = $2 ORDER BY id", [sessionId, kind]);
		return (rows as Parameters<typeof toQueuedMessage>[0][]).map(toQueuedMessage);
	}

	async removeQueued(sessionId: string, ids: number[]): Promise<number> {
		await this.begin();
		return this.commits.durable(
			async (tx) =>
				(await tx.query("DELETE FROM queue WHERE session_id = $1 AND id = ANY($2::bigint[])", [sessionId, ids]))
					.rowCount ?? 0,
		);
	}

	async drainQueued(sessionId: string, ids: number[], messages: AgentMessage[]): Promise<number | undefined> {
		const state = await this.join(sessionId);
		return state && this.runs.drainQueued(state, ids, messages);
	}

	async clearQueue(sessionId: string, kind?: QueueKind): Promise<number> {
		await this.begin();
		return this.commits.durable(async (tx) => {
			const r =
				kind === undefined
					? await tx.query("DELETE FROM queue WHERE session_id = $1", [sessionId])
					: await tx.query("DELETE FROM queue WHERE session_id = $1 AND kind = $2", [sessionId, kind]);
			return r.rowCount ?? 0;
		});
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
	): Promise<string[]> {
		return this.recover(at, webhooks, true);
	}

	async recoverExpiredRuns(
		at: number,
		webhooks?: (sessionId: string, runId: string | null) => NewWebhookDelivery[],
	): Promise<string[]> {
		return this.recover(at, webhooks, false);
	}

	/** `recoverInterrupted`; without `own`, the runs this store holds are left alone (they are live here). */
	private async recover(
		at: number,
		webhooks: ((sessionId: string, runId: string | null) => NewWebhookDelivery[]) | undefined,
		own: boolean,
	): Promise<string[]> {
		await this.begin();
		// Cluster mode: only runs no live store runs — the holder stopped renewing, nobody holds it, or it is this store.
		const expired = this.settings.cluster
			? `AND (lease_holder IS NULL OR lease_expires < ${DB_NOW_MS} OR ${own ? "lease_holder = $1" : "$1::text IS NULL"})`
			: "AND $1::text IS NOT NULL";
		const changed = await this.commits.durable(async (tx) => {
			const rows = (
				await tx.query<SessionRow>(
					`SELECT * FROM sessions WHERE status = 'running' ${expired} ORDER BY id FOR UPDATE`,
					[this.holderId],
				)
			).rows;
			for (const row of rows) {
				const runId = row.current_run_id;
				const hasRun = runId !== null && (await tx.query("SELECT 1 FROM runs WHERE id = $1", [runId])).rowCount !== 0;
				if (webhooks) await putDeliveries(tx, webhooks(row.id, hasRun ? runId : null));
				if (runId !== null && hasRun) {
					const messages = (
						await tx.query<{ data: string }>(
							"SELECT data FROM messages WHERE session_id = $1 AND run_id = $2 ORDER BY seq",
							[row.id, runId],
						)
					).rows.map((r) => JSON.parse(r.data) as AgentMessage);
					const usage = sumAssistantUsage(messages);
					await tx.query("UPDATE runs SET status = 'interrupted', ended_at = $1, usage = $2 WHERE id = $3", [
						at,
						JSON.stringify(usage),
						runId,
					]);
					const total = addUsage(JSON.parse(row.usage) as UsageTotals, usage);
					await tx.query("UPDATE sessions SET usage = $1 WHERE id = $2", [JSON.stringify(total), row.id]);
				}
				// Cluster mode: another holder's token moves on, so a stalled holder's late writes are refused.
				const fence = this.settings.cluster
					? `, lease_token = CASE WHEN lease_holder = $3 THEN lease_token ELSE lease_token + 1 END,
					   lease_holder = CASE WHEN lease_holder = $3 THEN lease_holder END`
					: "";
				await tx.query(
					`UPDATE sessions SET status = 'interrupted', interrupted_at = $1 ${fence} WHERE id = $2`,
					this.settings.cluster ? [at, row.id, this.holderId] : [at, row.id],
				);
			}
			return rows.map((r) => r.id);
		});
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
		const i = interaction;
		return this.commits.durable(async (tx) => {
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
		});
	}

	async resolvePending(sessionId: string, toolCallId: string, resolution: string, at: number): Promise<boolean> {
		await this.begin();
		return this.commits.durable(async (tx) => {
			const r = await tx.query(
				`UPDATE pending_interactions SET resolved_at = $1, resolution = $2
				 WHERE session_id = $3 AND tool_call_id = $4 AND resolved_at IS NULL`,
				[at, resolution, sessionId, toolCallId],
			);
			return (r.rowCount ?? 0) > 0;
		});
	}

	async deletePending(sessionId: string, toolCallId: string): Promise<boolean> {
		await this.begin();
		return this.commits.durable(async (tx) => {
			const r = await tx.query("DELETE FROM pending_interactions WHERE session_id = $1 AND tool_call_id = $2", [
				sessionId,
				toolCallId,
			]);
			return (r.rowCount ?? 0) > 0;
		});
	}

	async listPending(sessionId: string, options: { includeResolved?: boolean } = {}): Promise<PendingInteraction[]> {
		const rows = await this.query(
			`SELECT * FROM pending_interactions WHERE session_id = $1 AND ($2 OR resolved_at IS NULL)
			 ORDER BY created_at, seq`,
			[sessionId, options.includeResolved === true],
		);
		return (rows as Parameters<typeof toPendingInteraction>[0][]).map(toPendingInteraction);
	}

	// --- idempotency keys -----------------------------------------------------------------------

	async putIdempotencyKey(record: IdempotencyRecord): Promise<boolean> {
		await this.begin();
		// One commit with the session's queued writes: a run start and the key that started it.
		return this.commits.durable(async (tx) => {
			const exists = await tx.query("SELECT 1 FROM sessions WHERE id = $1", [record.sessionId]);
			if (exists.rowCount === 0) return false;
			await this.writeIdempotencyKey(tx, record);
			return true;
		});
	}

	/** The statements of `putIdempotencyKey`, inside a caller's transaction. */
	private async writeIdempotencyKey(tx: Queryable, r: IdempotencyRecord): Promise<void> {
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
			[r.sessionId, this.settings.maxIdempotencyKeys],
		);
	}

	async getIdempotencyKey(sessionId: string, key: string): Promise<IdempotencyRecord | undefined> {
		const rows = await this.query("SELECT * FROM idempotency_keys WHERE session_id = $1 AND key = $2", [
			sessionId,
			key,
		]);
		return rows[0] ? toIdempotencyRecord(rows[0] as Parameters<typeof toIdempotencyRecord>[0]) : undefined;
	}

	async deleteIdempotencyKeys(cutoff: number): Promise<number> {
		await this.begin();
		return this.commits.durable(
			async (tx) => (await tx.query("DELETE FROM idempotency_keys WHERE created_at < $1", [cutoff])).rowCount ?? 0,
		);
	}

	async readUsage(query: UsageQuery): Promise<UsageRow[]> {
		checkUsageQuery(query);
		const rows = await this.query<UsageDailyRow>(
			"SELECT * FROM usage_daily WHERE owner_id = $1 AND day >= $2 AND day <= $3 ORDER BY day, provider, model",
			[query.ownerId ?? "", query.fromDay, query.toDay],
		);
		return rows.map((r) => ({
			ownerId: r.owner_id === "" ? null : r.owner_id,
			day: r.day,
			provider: r.provider,
			model: r.model,
			input: r.input,
			output: r.output,
			cacheRead: r.cache_read,
			cacheWrite: r.cache_write,
			totalTokens: r.total_tokens,
			costUsd: r.cost_usd,
			turns: r.turns,
		}));
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
				const leases = [...this.sessions.values()].map(leaseOf);
				await this.commits.durable((tx) => releaseLeases(tx, leases));
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

/** What releasing a session's lease writes. */
function leaseOf(state: SessionState): { id: string; token: number; last: number; written: number } {
	return { id: state.sessionId, token: state.token, last: state.last, written: state.written };
}
