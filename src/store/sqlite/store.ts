/**
 * The SQLite `SessionStore` (the default), on better-sqlite3: its public methods, each a few
 * statements around the parts that do the work —
 *
 * - `../sql/`: what both SQL stores share — the synchronous writes (`engine.ts`), the event
 *   buffer and streaming window (`event-buffer.ts`), the rows and the log's on-disk format;
 * - `open.ts`: the options and the file (checked, owned, migrated);
 * - `working-set.ts`: the write state of the sessions this process writes to;
 * - `event-log.ts`: id reservation, batch rows, reads;
 * - `run-writes.ts`: run starts, messages, run ends and drained messages, with their tallies;
 * - `commit-queue.ts`: which writes share which transaction, and when it commits;
 * - `statements.ts`, `migrations.ts`, `checkpoints.ts` (WAL checkpoints between transactions),
 *   `event-writer.ts` (the writer thread of `eventWriter: "thread"`), `owner-lock.ts` (one process
 *   per file).
 *
 * better-sqlite3 is synchronous: every method does its work within the call, and the asynchronous
 * ones return settled promises (see `../types.ts` for what callers may rely on).
 */
import type Database from "better-sqlite3";
import type { AgentMessage } from "../../agent/types.js";
import {
	addUsage,
	checkLimit,
	decodeCursor,
	duplicateSessionError,
	EventPage,
	encodeCursor,
	sumAssistantUsage,
} from "../shared.js";
import { SqlStoreEngine } from "../sql/engine.js";
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
	toUsageRow,
	type UsageDailyRow,
	ZERO_USAGE_JSON,
} from "../sql/rows.js";
import type {
	FacadeRecord,
	IdempotencyRecord,
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
	UsageTotals,
	WebhookDelivery,
	WebhookOutbox,
	WebhookStatus,
} from "../types.js";
import { checkUsageQuery } from "../usage.js";
import { CommitQueue } from "./commit-queue.js";
import { EventLog, ID_RESERVATION } from "./event-log.js";
import { SqliteFacadeRecords } from "./facade-records.js";
import { LATEST_SCHEMA_VERSION } from "./migrations.js";
import { openDatabase, resolveSettings, type SqliteSettings, type SqliteStoreOptions } from "./open.js";
import type { OwnerLock } from "./owner-lock.js";
import { RunWrites } from "./run-writes.js";
import { prepareStatements, type Statements } from "./statements.js";
import { SqliteWebhookOutbox } from "./webhook-outbox.js";
import { type SessionState, WorkingSet } from "./working-set.js";

export { DEFAULT_DB_PATH, type SqliteStoreOptions } from "./open.js";

/** Opens (creating or migrating) a store; throws a clear Error for a corrupt, foreign or newer file. */
export function openSqliteStore(options: SqliteStoreOptions = {}): SqliteSessionStore {
	return new SqliteSessionStore(options);
}

export class SqliteSessionStore extends SqlStoreEngine<SessionState> implements SessionStore {
	readonly kind = "sqlite" as const;
	readonly maxEventsPerSession: number;
	readonly path: string;
	readonly schemaVersion = LATEST_SCHEMA_VERSION;
	private readonly settings: SqliteSettings;
	private readonly db: Database.Database;
	/** Ownership of the file (none for `:memory:`); released by `close()`. */
	private readonly lock: OwnerLock | undefined;
	private readonly s: Statements;
	protected readonly sessions: WorkingSet;
	protected readonly log: EventLog;
	protected readonly commits: CommitQueue;
	protected readonly runs: RunWrites;
	private readonly outbox: SqliteWebhookOutbox;
	private readonly facade: SqliteFacadeRecords;

	/** Which threads of its own the store runs at this moment (diagnostics and tests). */
	get threads(): { writer: boolean; checkpoint: boolean } {
		return { writer: this.commits.writer !== undefined, checkpoint: this.commits.checkpointer?.threadRunning ?? false };
	}

	constructor(options: SqliteStoreOptions = {}) {
		super();
		// Every option is checked before the file is opened (and owned): a bad one leaves it untouched.
		this.settings = resolveSettings(options);
		this.path = this.settings.path;
		this.maxEventsPerSession = this.settings.maxEventsPerSession;
		const opened = openDatabase(this.settings, (error) => this.settings.onFlushError(error));
		this.db = opened.db;
		this.lock = opened.lock;
		this.s = prepareStatements(this.db);
		this.sessions = new WorkingSet(this.s);
		// With the writer thread, wait for it before a reservation so this write never contends for the WAL lock.
		this.log = new EventLog(
			this.s,
			this.sessions,
			this.maxEventsPerSession,
			() => this.commits.waitForWriter(),
			() => this.commits.afterAppend(),
		);
		try {
			this.commits = new CommitQueue(this.db, this.s, this.sessions, this.log, this.settings);
		} catch (error) {
			this.lock?.release();
			this.db.close();
			throw error;
		}
		this.runs = new RunWrites(this.s, this.sessions, this.commits);
		this.outbox = new SqliteWebhookOutbox(this.db, this.commits);
		this.facade = new SqliteFacadeRecords(this.db, this.commits);
	}

	private row(sessionId: string): SessionRow | undefined {
		return this.s.getSession.get(sessionId) as SessionRow | undefined;
	}

	private toRecord(row: SessionRow): SessionRecord {
		// Listing many sessions must not join each to the working set: ids of the others come from disk.
		return toSessionRecord(row, this.commits.touches.get(row.id), this.sessions.lastEventId(row.id) ?? 0);
	}

	// --- sessions -------------------------------------------------------------------------------

	async createSession(session: NewSession, messages: AgentMessage[] = []): Promise<SessionRecord> {
		return this.commits.durable(() => {
			if (this.row(session.id)) throw duplicateSessionError(session.id);
			const t = session.createdAt;
			this.s.insertSession.run(
				session.id,
				session.ownerId,
				JSON.stringify(pickConfig(session)),
				t,
				t,
				t,
				ZERO_USAGE_JSON,
				messages.length,
				ID_RESERVATION,
			);
			messages.forEach((m, i) => {
				this.s.insertMessage.run(session.id, i, null, JSON.stringify(m));
			});
			// The first block of ids is reserved with the row, so a new session's first events need no extra write.
			this.sessions.add(session.id, messages.length, ID_RESERVATION);
			return this.toRecord(this.row(session.id) as SessionRow);
		}, []);
	}

	async getSession(sessionId: string): Promise<SessionRecord | undefined> {
		this.open();
		this.commits.settle(sessionId);
		const row = this.row(sessionId);
		return row && this.toRecord(row);
	}

	async updateSession(
		sessionId: string,
		patch: Partial<SessionConfig>,
		at: number,
	): Promise<SessionRecord | undefined> {
		return this.commits.durableFor(sessionId, () => {
			const row = this.row(sessionId);
			if (!row) return undefined;
			const config = patchConfig(JSON.parse(row.config) as SessionConfig, patch);
			this.s.updateConfig.run(JSON.stringify(config), at, sessionId);
			return this.toRecord(this.row(sessionId) as SessionRow);
		});
	}

	async listSessions(options: { ownerId?: string | null; cursor?: string; limit?: number } = {}): Promise<SessionPage> {
		this.open();
		this.commits.settle();
		const limit = checkLimit("limit", options.limit, 50, 1, 1000);
		const after = options.cursor === undefined ? undefined : decodeCursor(options.cursor);
		const byOwner = options.ownerId !== undefined;
		const args: unknown[] = [];
		if (byOwner) args.push(options.ownerId);
		if (after) args.push(after[0], after[0], after[1]);
		args.push(limit + 1);
		const stmt = byOwner
			? after
				? this.s.listOwnerAfter
				: this.s.listOwner
			: after
				? this.s.listAllAfter
				: this.s.listAll;
		const rows = stmt.all(...args) as SessionRow[];
		const page = rows.slice(0, limit).map((r) => this.toRecord(r));
		const last = page[page.length - 1];
		return {
			sessions: page,
			...(rows.length > limit && last ? { nextCursor: encodeCursor(last.createdAt, last.id) } : {}),
		};
	}

	async deleteSessions(sessionIds: string[]): Promise<number> {
		this.open();
		// Their buffered events are about to be deleted: drop them instead of writing them first.
		this.log.drop(sessionIds);
		return this.commits.durable(() => {
			let n = 0;
			for (const id of sessionIds) {
				for (const stmt of this.s.deleteChildren) stmt.run(id);
				n += this.s.deleteSession.run(id).changes;
				this.sessions.delete(id);
			}
			return n;
		}, []);
	}

	async listIdleSessions(cutoff: number, limit?: number): Promise<string[]> {
		const max = checkLimit("limit", limit, 1000, 1, 1_000_000);
		this.commits.flush(); // pending touches count
		return this.s.listIdle.pluck().all(cutoff, max) as string[];
	}

	// --- working set ----------------------------------------------------------------------------

	async openSession(sessionId: string): Promise<boolean> {
		this.open();
		return this.sessions.join(sessionId) !== undefined;
	}

	async releaseSession(sessionId: string): Promise<boolean> {
		this.open();
		const state = this.sessions.get(sessionId);
		if (!state) return false;
		// Committed first, synchronously: no write of this session can come in between.
		this.commits.flush();
		if (state.tally?.running || state.streaming !== undefined || state.pendingCount > 0) return false;
		this.sessions.delete(sessionId);
		return true;
	}

	endRun(sessionId: string, runId: string, end: RunEnd, webhooks?: NewWebhookDelivery[]): boolean {
		this.open();
		const state = this.sessions.get(sessionId);
		const put = webhooks && webhooks.length > 0 ? () => this.outbox.put(webhooks) : undefined;
		return state !== undefined && this.runs.endRun(state, runId, end, put);
	}

	// --- commit barrier -------------------------------------------------------------------------

	async sync(): Promise<void> {
		this.commits.sync();
	}

	// --- transcript and event log reads ---------------------------------------------------------

	protected async messageRows(sessionId: string, offset: number, limit: number): Promise<string[]> {
		return this.s.listMessages.pluck().all(sessionId, offset, limit) as string[];
	}

	async countMessages(sessionId: string): Promise<number | undefined> {
		this.open();
		this.commits.settle(sessionId);
		const row = this.s.getCountAndRun.get(sessionId) as { message_count: number } | undefined;
		return row?.message_count;
	}

	async readEvents(sessionId: string, afterId: number, limit?: number, maxBytes?: number): Promise<StoredEvent[]> {
		const page = new EventPage(checkLimit("limit", limit, 1000, 1, 100_000), maxBytes);
		this.commits.flush();
		return this.log.read(sessionId, afterId, page);
	}

	async oldestEventId(sessionId: string): Promise<number | undefined> {
		this.commits.flush();
		return this.log.oldest(sessionId);
	}

	// --- queue ----------------------------------------------------------------------------------

	async enqueue(
		sessionId: string,
		kind: QueueKind,
		message: AgentMessage,
		createdAt: number,
		withKey?: (queued: QueuedMessage) => IdempotencyRecord,
	): Promise<QueuedMessage | undefined> {
		return this.commits.durableFor(sessionId, () => {
			if (!this.row(sessionId)) return undefined;
			const json = JSON.stringify(message);
			const id = Number(this.s.insertQueued.run(sessionId, kind, json, createdAt).lastInsertRowid);
			this.s.bumpActivity.run(createdAt, sessionId);
			const queued: QueuedMessage = { id, sessionId, kind, message: JSON.parse(json) as AgentMessage, createdAt };
			if (withKey) this.writeIdempotencyKey(withKey(queued));
			return queued;
		});
	}

	async listQueued(sessionId: string, kind?: QueueKind): Promise<QueuedMessage[]> {
		this.open();
		const rows = kind === undefined ? this.s.listQueued.all(sessionId) : this.s.listQueuedKind.all(sessionId, kind);
		return (rows as Parameters<typeof toQueuedMessage>[0][]).map(toQueuedMessage);
	}

	async drainQueued(sessionId: string, ids: number[], messages: AgentMessage[]): Promise<number | undefined> {
		this.open();
		const state = this.sessions.join(sessionId);
		return state && this.runs.drainQueued(state, ids, messages);
	}

	async clearQueue(sessionId: string, kind?: QueueKind): Promise<number> {
		return this.commits.durableFor(
			sessionId,
			() =>
				(kind === undefined ? this.s.clearQueue.run(sessionId) : this.s.clearQueueKind.run(sessionId, kind)).changes,
		);
	}

	// --- runs -----------------------------------------------------------------------------------

	async startRun(sessionId: string, runId: string, startedAt: number, messages: AgentMessage[] = []): Promise<boolean> {
		this.open();
		const state = this.sessions.join(sessionId);
		return state !== undefined && this.runs.startRun(state, runId, startedAt, messages);
	}

	async listRuns(sessionId: string, limit?: number): Promise<RunRecord[]> {
		const max = checkLimit("limit", limit, 100, 1, 100_000);
		this.open();
		this.commits.settle(sessionId);
		return (this.s.listRuns.all(sessionId, max) as RunRow[]).reverse().map(toRunRecord);
	}

	async recoverInterrupted(
		at: number,
		webhooks?: (sessionId: string, runId: string | null) => NewWebhookDelivery[],
		sessionIds?: readonly string[],
	): Promise<string[]> {
		const only = sessionIds && new Set(sessionIds);
		const changed = this.commits.durable(() => {
			const rows = (this.s.listRunning.all() as SessionRow[]).filter((row) => !only || only.has(row.id));
			for (const row of rows) {
				const hasRun = row.current_run_id !== null && this.s.getRun.get(row.current_run_id) !== undefined;
				if (webhooks) this.outbox.put(webhooks(row.id, hasRun ? row.current_run_id : null));
				if (row.current_run_id !== null && hasRun) {
					const messages = (this.s.runMessages.pluck().all(row.id, row.current_run_id) as string[]).map(
						(d) => JSON.parse(d) as AgentMessage,
					);
					const usage = sumAssistantUsage(messages);
					this.s.interruptRun.run(at, JSON.stringify(usage), row.current_run_id);
					const total = addUsage(JSON.parse(row.usage) as UsageTotals, usage);
					this.s.setUsage.run(JSON.stringify(total), row.id);
				}
				this.s.interruptSession.run(at, row.id);
			}
			return rows.map((r) => r.id);
		});
		// Statuses changed on disk behind the tallies (nothing is queued after a durable write).
		if (changed.length > 0) this.sessions.resetTallies();
		return changed;
	}

	// --- pending interactions -------------------------------------------------------------------

	async putPending(
		interaction: Omit<PendingInteraction, "resolvedAt" | "resolution">,
		webhooks?: (runId: string | null) => NewWebhookDelivery[],
	): Promise<boolean> {
		return this.commits.durableFor(interaction.sessionId, () => {
			const row = this.row(interaction.sessionId);
			if (!row) return false;
			const i = interaction;
			this.s.upsertPending.run(i.sessionId, i.toolCallId, i.kind, i.payload, i.createdAt);
			// The session's queued writes (its run start) committed first in this transaction: the row is current.
			if (webhooks) this.outbox.put(webhooks(row.current_run_id));
			return true;
		});
	}

	async resolvePending(sessionId: string, toolCallId: string, resolution: string, at: number): Promise<boolean> {
		return this.commits.durableFor(
			sessionId,
			() => this.s.resolvePending.run(at, resolution, sessionId, toolCallId).changes > 0,
		);
	}

	async deletePending(sessionId: string, toolCallId: string): Promise<boolean> {
		return this.commits.durableFor(sessionId, () => this.s.deletePending.run(sessionId, toolCallId).changes > 0);
	}

	async listPending(sessionId: string, options: { includeResolved?: boolean } = {}): Promise<PendingInteraction[]> {
		this.open();
		const rows = this.s.listPending.all(sessionId, options.includeResolved ? 1 : 0);
		return (rows as Parameters<typeof toPendingInteraction>[0][]).map(toPendingInteraction);
	}

	// --- idempotency keys -----------------------------------------------------------------------

	async putIdempotencyKey(record: IdempotencyRecord): Promise<boolean> {
		// One commit with the session's queued writes: a run start and the key that started it.
		return this.commits.durableFor(record.sessionId, () => {
			if (!this.row(record.sessionId)) return false;
			this.writeIdempotencyKey(record);
			return true;
		});
	}

	/** The statements of `putIdempotencyKey`, inside a caller's write. */
	private writeIdempotencyKey(r: IdempotencyRecord): void {
		// Delete and insert (not an upsert): the new row's id puts it last in the session's put order.
		this.s.deleteIdempotencyKey.run(r.sessionId, r.key);
		this.s.insertIdempotencyKey.run(r.sessionId, r.key, r.operation, r.fingerprint, r.outcome, r.createdAt);
		this.s.trimIdempotencyKeys.run(r.sessionId, this.settings.maxIdempotencyKeys);
	}

	async recordUsage(ownerId: string | null, entries: readonly UsageEntry[]): Promise<void> {
		this.open();
		if (entries.length === 0) return;
		this.commits.durable(() => this.runs.addUsage(ownerId ?? "", entries), []);
	}

	async readUsage(query: UsageQuery): Promise<UsageRow[]> {
		this.open();
		checkUsageQuery(query);
		this.commits.settle();
		const rows = this.s.readUsage.all(query.ownerId ?? "", query.fromDay, query.toDay) as UsageDailyRow[];
		return rows.map(toUsageRow);
	}

	async getIdempotencyKey(sessionId: string, key: string): Promise<IdempotencyRecord | undefined> {
		this.open();
		const row = this.s.getIdempotencyKey.get(sessionId, key);
		return row ? toIdempotencyRecord(row as Parameters<typeof toIdempotencyRecord>[0]) : undefined;
	}

	async deleteIdempotencyKeys(cutoff: number): Promise<number> {
		return this.commits.durable(() => this.s.expireIdempotencyKeys.run(cutoff).changes, []);
	}

	// --- facade records -------------------------------------------------------------------------

	async putFacadeRecords(
		sessionId: string,
		records: readonly { kind: string; key: string; data: string }[],
		at: number,
	): Promise<boolean> {
		return this.facade.putFacadeRecords(sessionId, records, at);
	}

	async getFacadeRecord(sessionId: string, kind: string, key: string): Promise<FacadeRecord | undefined> {
		this.open();
		return this.facade.getFacadeRecord(sessionId, kind, key);
	}

	async findFacadeRecords(kind: string, key: string, ownerId: string | null, limit?: number): Promise<FacadeRecord[]> {
		this.open();
		return this.facade.findFacadeRecords(kind, key, ownerId, limit);
	}

	// --- webhook outbox -------------------------------------------------------------------------

	async enqueueWebhooks(deliveries: NewWebhookDelivery[]): Promise<void> {
		this.open();
		return this.outbox.enqueueWebhooks(deliveries);
	}

	async claimWebhooks(now: number, limit: number, claimUntil: number): Promise<WebhookDelivery[]> {
		this.open();
		return this.outbox.claimWebhooks(now, limit, claimUntil);
	}

	async settleWebhook(id: string, outcome: Parameters<WebhookOutbox["settleWebhook"]>[1]): Promise<boolean> {
		this.open();
		return this.outbox.settleWebhook(id, outcome);
	}

	async listWebhooks(options?: { status?: WebhookStatus; limit?: number }): Promise<WebhookDelivery[]> {
		this.open();
		return this.outbox.listWebhooks(options);
	}

	async pruneWebhooks(cutoff: number): Promise<number> {
		this.open();
		return this.outbox.pruneWebhooks(cutoff);
	}

	// --- lifecycle ------------------------------------------------------------------------------

	async flush(): Promise<void> {
		this.open();
		this.commits.flush();
	}

	async close(): Promise<void> {
		if (this.closed) return;
		try {
			this.commits.flush();
		} catch (error) {
			// Closing must not fail (the file would stay owned): what could not be committed is reported.
			this.settings.onFlushError(
				new Error(`session store: closing with writes that could not be committed: ${(error as Error).message}`, {
					cause: error,
				}),
			);
		}
		this.commits.stop();
		// Release unused id reservations so a graceful restart continues ids without a gap.
		try {
			this.db.transaction(() => this.log.releaseReservations())();
		} catch (error) {
			this.settings.onFlushError(
				new Error(`session store: releasing event id reservations failed: ${(error as Error).message}`),
			);
		}
		this.closed = true;
		this.lock?.release();
		this.db.close();
	}
}
