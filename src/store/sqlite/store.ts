/**
 * The SQLite `SessionStore` (the default), on better-sqlite3: a driver of the SQL store engine
 * (`../sql/engine.ts`, which holds the public methods both SQL stores share), with what only it
 * does —
 *
 * - `../sql/`: the engine, its driver interface (`driver.ts`), the event buffer and id reservation
 *   (`event-buffer.ts`), the run writes (`run-writes.ts`), the rows and the log's format;
 * - `open.ts`: the options and the file (checked, owned, migrated);
 * - `working-set.ts`: the write state of the sessions this process writes to;
 * - `event-log.ts`, `run-writes.ts`, `row-reads.ts`, `record-writes.ts`: the statements the
 *   engine's parts run (the log, run writes, reads, and queue/pending/idempotency/usage writes);
 * - `session-search.ts`: the statements of a filtered session list;
 * - `schedules.ts`, `admission.ts`, `statement-cache.ts`: the drivers of the schedules (with the
 *   scheduler lease) and of the admission queue, and the statements their shared bodies run;
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
import { addUsage, checkLimit, duplicateSessionError, patchConfig, sumAssistantUsage } from "../shared.js";
import type { SqlAdmission } from "../sql/admission.js";
import type { RecordWrites, RecoveryWebhooks, RowReads } from "../sql/driver.js";
import { SqlStoreEngine } from "../sql/engine.js";
import { type NewSessionRow, type SessionRow, toSessionRecord } from "../sql/rows.js";
import { RunWrites } from "../sql/run-writes.js";
import type { SqlSchedules } from "../sql/schedules.js";
import type { SessionConfig, SessionRecord, SessionStore, SupersededBranch, UsageTotals } from "../types.js";
import { sqliteAdmission } from "./admission.js";
import { CommitQueue } from "./commit-queue.js";
import { EventLog } from "./event-log.js";
import { SqliteFacadeRecords } from "./facade-records.js";
import { LATEST_SCHEMA_VERSION } from "./migrations.js";
import { openDatabase, resolveSettings, type SqliteSettings, type SqliteStoreOptions } from "./open.js";
import type { OwnerLock } from "./owner-lock.js";
import { sqliteRecordWrites } from "./record-writes.js";
import { sqliteRowReads } from "./row-reads.js";
import { sqliteRunDriver } from "./run-writes.js";
import { sqliteSchedules } from "./schedules.js";
import { SqliteSessionSearch } from "./session-search.js";
import { prepareStatements, type Statements } from "./statements.js";
import { SqliteSuperseded } from "./superseded.js";
import { SqliteWebhookOutbox } from "./webhook-outbox.js";
import { type SessionState, WorkingSet } from "./working-set.js";

export { DEFAULT_DB_PATH, type SqliteStoreOptions } from "./open.js";

/** At most this many messages of a run are kept for references (a longer run's oldest are repeated). */
const MAX_REFS = 64;

/** Opens (creating or migrating) a store; throws a clear Error for a corrupt, foreign or newer file. */
export function openSqliteStore(options: SqliteStoreOptions = {}): SqliteSessionStore {
	return new SqliteSessionStore(options);
}

export class SqliteSessionStore extends SqlStoreEngine<SessionState, SessionRow> implements SessionStore {
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
	protected readonly runs: RunWrites<SessionState>;
	protected readonly outbox: SqliteWebhookOutbox;
	protected readonly facade: SqliteFacadeRecords;
	protected readonly records: RecordWrites;
	protected readonly reads: RowReads<SessionRow>;
	readonly schedules: SqlSchedules;
	private readonly superseded: SqliteSuperseded;
	readonly admission: SqlAdmission;

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
		this.outbox = new SqliteWebhookOutbox(this.db, this.commits);
		this.facade = new SqliteFacadeRecords(this.db, this.commits);
		this.reads = sqliteRowReads(this.s, this.commits, new SqliteSessionSearch(this.db));
		this.records = sqliteRecordWrites(this.s, this.commits, this.outbox, this.settings.maxIdempotencyKeys);
		this.runs = new RunWrites(sqliteRunDriver(this.s, this.sessions, this.commits, this.outbox), MAX_REFS);
		this.schedules = sqliteSchedules(this.db, this.commits, this.outbox, () => this.open());
		this.superseded = new SqliteSuperseded(this.db);
		this.admission = sqliteAdmission(this.db, this.commits, () => this.open());
	}

	protected supersede(state: SessionState, keep: number, at: number): SupersededBranch | undefined {
		return this.commits.durableFor(state.sessionId, () => this.superseded.supersede(state.sessionId, keep, at));
	}

	protected supersededRows(sessionId: string): SupersededBranch[] | undefined {
		this.commits.settle(sessionId);
		return this.superseded.list(sessionId);
	}

	protected begin(): void {
		this.open();
	}

	protected join(sessionId: string): SessionState | undefined {
		this.open();
		return this.sessions.join(sessionId);
	}

	private row(sessionId: string): SessionRow | undefined {
		return this.s.getSession.get(sessionId) as SessionRow | undefined;
	}

	protected toRecord(row: SessionRow): SessionRecord {
		// Listing many sessions must not join each to the working set: ids of the others come from disk.
		return toSessionRecord(row, this.commits.touches.get(row.id), this.sessions.lastEventId(row.id) ?? 0);
	}

	// --- sessions -------------------------------------------------------------------------------

	protected insertSession(row: NewSessionRow, messages: AgentMessage[]): SessionRecord {
		return this.commits.durable(() => {
			if (this.row(row.id)) throw duplicateSessionError(row.id);
			this.s.insertSession.run(row);
			messages.forEach((m, i) => {
				this.s.insertMessage.run(row.id, i, null, JSON.stringify(m));
			});
			this.sessions.add(row.id, messages.length, row.reserved);
			return this.toRecord(this.row(row.id) as SessionRow);
		}, []);
	}

	async getSession(sessionId: string): Promise<SessionRecord | undefined> {
		this.open();
		this.commits.settle(sessionId);
		const row = this.row(sessionId);
		return row && this.toRecord(row);
	}

	protected patchSession(sessionId: string, patch: Partial<SessionConfig>, at: number): SessionRecord | undefined {
		return this.commits.durableFor(sessionId, () => {
			const row = this.row(sessionId);
			if (!row) return undefined;
			const config = patchConfig(JSON.parse(row.config) as SessionConfig, patch);
			this.s.updateConfig.run(JSON.stringify(config), at, sessionId);
			return this.toRecord(this.row(sessionId) as SessionRow);
		});
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

	// --- transcript and event log reads ---------------------------------------------------------

	protected readLog<T>(read: () => Promise<T>): Promise<T> {
		this.commits.flush();
		return read();
	}

	// --- runs -----------------------------------------------------------------------------------

	protected interruptRuns(
		at: number,
		webhooks: RecoveryWebhooks | undefined,
		sessionIds: readonly string[] | undefined,
	): string[] {
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

	// --- lifecycle ------------------------------------------------------------------------------

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
