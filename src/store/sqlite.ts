/**
 * The SQLite `SessionStore` (the default), on better-sqlite3: WAL, statements prepared once,
 * numbered migrations (`migrations.ts`), every multi-row write in one transaction.
 *
 * Event appends are the hot path (one per SSE event), so they are buffered in memory, per session
 * as one string of frames, and written as one `event_batches` row per session per flush
 * (`event-batch.ts`), all in one transaction (see the durability rules in `types.ts`). The deltas
 * of a streaming message are not written at all: they stay in a per-session memory window from the
 * message's `message_start` to its `message_end` (`deltaRetention: "while-streaming"`), and a
 * batch records the ids they took with a skip frame. The cap
 * per session applies at once to what the read methods return; on disk whole batches are deleted
 * once all their ids fall out of the cap. Event ids must stay
 * monotonic even when a crash loses buffered events, so ids are *reserved* on disk ahead of use:
 * when a session's next id passes its reservation, the store durably bumps
 * `event_id_reserved` by `ID_RESERVATION` (one tiny write per that many events), and a reopened
 * store continues after `max(last_event_id, event_id_reserved)`. A clean `close()` releases the
 * unused reservation, so ids continue without a gap after a graceful restart.
 *
 * Run starts, messages and run ends are the other per-run writes. They are queued (`later`) and run
 * back to back in one transaction at the next `sync()` (the server's write passes), with the
 * buffered events of their sessions; what the callers need back (message counts, the current run,
 * usage totals) comes from a per-session tally kept in step with the queue. Events that repeat
 * stored messages are written with references to them (ref frames, `event-batch.ts`).
 *
 * One process owns a database file at a time (`owner-lock.ts`): two servers on one file would hand
 * out equal ids, so the second one is refused.
 */
import { mkdirSync } from "node:fs";
import { dirname } from "node:path";
import Database from "better-sqlite3";
import type { AgentMessage } from "../agent/types.js";
import {
	decodeBatch,
	encodeEvent,
	encodeEventWithRefs,
	encodeSkip,
	inlineRefs,
	type RefTarget,
} from "./event-batch.js";
import {
	DEFAULT_CHECKPOINT_INTERVAL_MS,
	DEFAULT_WAL_LIMIT_BYTES,
	type EventBatch,
	EventWriter,
} from "./event-writer.js";
import { checkSchemaVersion, LATEST_SCHEMA_VERSION, migrate } from "./migrations.js";
import { DEFAULT_LOCK_HEARTBEAT_MS, DEFAULT_LOCK_STALE_MS, OwnerLock } from "./owner-lock.js";
import {
	addUsage,
	checkLimit,
	closedError,
	DEFAULT_MAX_EVENTS_PER_SESSION,
	decodeCursor,
	duplicateRunError,
	duplicateSessionError,
	EventPage,
	encodeCursor,
	maxIdempotencyKeys,
	sumAssistantUsage,
	zeroUsage,
} from "./shared.js";
import { prepareStatements } from "./sqlite-statements.js";
import type {
	IdempotencyRecord,
	NewSession,
	PendingInteraction,
	QueuedMessage,
	QueueKind,
	RunEnd,
	RunRecord,
	SessionConfig,
	SessionPage,
	SessionRecord,
	SessionRunStatus,
	SessionStore,
	StoredEvent,
	StoreOptions,
	UsageTotals,
} from "./types.js";

export const DEFAULT_DB_PATH = "./data/wheelhouse.db";

/** Event ids reserved on disk per bump; bounds the id gap a crash can leave. */
const ID_RESERVATION = 1024;

export interface SqliteStoreOptions extends StoreOptions {
	/** Database file; its folder is created. Default `./data/wheelhouse.db`. */
	path?: string;
	/**
	 * Longest time a buffered event waits before it is written; 0 = next `setImmediate`. Default 50 ms:
	 * each flush costs a commit plus one b-tree page per session with buffered events, so the window sets
	 * the price of persistence per event (see bench/store). Turn boundaries (`appendMessages`) flush anyway.
	 */
	flushIntervalMs?: number;
	/**
	 * Longest time a write that is durable at the next sync (`startRun`, `appendMessages`, `endRun`)
	 * waits for a `sync()` before committing on its own. Default 5 ms.
	 */
	syncDelayMs?: number;
	/** A buffer of this many events is written at once, synchronously. Default 2,000. */
	maxBatchEvents?: number;
	/** SQLite `synchronous` in WAL mode: `normal` survives process crashes, `full` also OS crashes. Default `normal`. */
	synchronous?: "normal" | "full";
	/** Run `PRAGMA quick_check` on open (reads the whole file once). Default true. */
	checkIntegrity?: boolean;
	/**
	 * Who writes the timer-driven event batches: `"inline"` (default) writes them on the calling thread;
	 * `"thread"` hands them to a worker thread with its own connection (`event-writer.ts`), so that SQLite
	 * work leaves the event loop when a spare core exists. On the 2-core, heavily shared benchmark machine
	 * the thread measured slower than inline, hence the default. `:memory:` always writes inline.
	 */
	eventWriter?: "thread" | "inline";
	/**
	 * WAL size past which the background thread truncates the WAL (a `TRUNCATE` checkpoint, which
	 * waits for the current write transaction). Under continuous writes the passive checkpoints
	 * never let SQLite restart the WAL, so without this bound it grows with everything written.
	 * Default 64 MiB.
	 */
	walLimitBytes?: number;
	/** How often the background thread checkpoints. Default 1,000 ms. */
	checkpointIntervalMs?: number;
	/** How often this process refreshes its ownership of the file (`owner-lock.ts`). Default 3,000 ms. */
	lockHeartbeatMs?: number;
	/** An owner on another host whose heartbeat is older than this is taken over. Default 15,000 ms. */
	lockStaleMs?: number;
	/** Called when a timer-driven event write fails. Inline: the events stay buffered for the next try; thread: they are lost. Default: a process warning. */
	onFlushError?: (error: Error) => void;
}

const ZERO_USAGE_JSON = JSON.stringify(zeroUsage());

/** The `fn` of a durable write that only commits what is queued and buffered. */
const noWrite = () => undefined;

/**
 * The batches with the messages of `failed` sessions' queued writes inlined where events refer to
 * them: one of those writes is missing, so the seqs the events were given no longer hold.
 */
function inlineFailedRefs(batches: EventBatch[], later: LaterWrite[], failed: Set<string>): EventBatch[] {
	const queued = new Map<string, Map<number, string>>();
	for (const write of later) {
		if (!failed.has(write.sessionId)) continue;
		const bySeq = queued.get(write.sessionId) ?? new Map<number, string>();
		queued.set(write.sessionId, bySeq);
		for (const m of write.messages) bySeq.set(m.seq, m.json);
	}
	return batches.map((b) => {
		const bySeq = queued.get(b.sessionId);
		return bySeq ? { ...b, data: inlineRefs(b.data, (seq) => bySeq.get(seq)) } : b;
	});
}

/** With the writer thread: at most this many batch messages in flight before appends wait (bounds memory). */
const MAX_OUTSTANDING_BATCHES = 16;

interface SessionRow {
	id: string;
	owner_id: string | null;
	config: string;
	created_at: number;
	updated_at: number;
	last_active_at: number;
	status: SessionRunStatus;
	interrupted_at: number | null;
	current_run_id: string | null;
	usage: string;
	message_count: number;
	last_event_id: number;
	event_id_reserved: number;
}

interface RunRow {
	id: string;
	session_id: string;
	status: RunRecord["status"];
	started_at: number;
	ended_at: number | null;
	usage: string;
	error_message: string | null;
}

interface PendingRow {
	session_id: string;
	tool_call_id: string;
	kind: PendingInteraction["kind"];
	payload: string;
	created_at: number;
	resolved_at: number | null;
	resolution: string | null;
}

interface IdempotencyRow {
	session_id: string;
	key: string;
	operation: string;
	fingerprint: string;
	outcome: string;
	created_at: number;
}

interface QueueRow {
	id: number;
	session_id: string;
	kind: QueueKind;
	data: string;
	created_at: number;
}

/** Per-session event-log state, loaded on first use. */
interface LogState {
	sessionId: string;
	/** Highest id assigned. */
	last: number;
	/** Ids up to this are durably reserved (see the module comment). */
	reserved: number;
	/** Highest id on disk. */
	written: number;
	/** Batches with `last_id` up to this have been deleted by trimming. */
	trimmedThrough: number;
	/** Frames of the buffered events `pendingFirst..pendingLast`; empty when nothing is buffered. */
	pending: string;
	pendingFirst: number;
	/** Id of the last buffered event (ids after it up to `last` are memory-only deltas). */
	pendingLast: number;
	pendingCount: number;
	/**
	 * Every event since the `message_start` of the message still streaming (deltas included), or
	 * undefined when none streams: the only place that message's deltas are kept (see `appendEvent`).
	 */
	streaming: StoredEvent[] | undefined;
	/**
	 * The session's message count and current run as the writes not yet committed leave them
	 * (`later`); undefined until first needed (then read from disk).
	 */
	tally: Tally | undefined;
	/**
	 * The messages stored since the current run started, until its `agent_end`: the events that
	 * repeat them are written with references instead (`event-batch.ts`).
	 */
	refs: RefTarget[];
}

/** A session's message count and current run (see `LogState.tally`). */
interface Tally {
	messages: number;
	runId: string | null;
}

/** A write queued for the next sync (see `later`). */
interface LaterWrite {
	sessionId: string;
	run: () => void;
	/** The messages it appends, with the seqs the caller was given (events may refer to them). */
	messages: RefTarget[];
}

/** At most this many messages of a run are kept for references (a longer run's oldest are repeated). */
const MAX_REFS = 64;
/** The events whose data may repeat whole stored messages. */
const REF_EVENTS = new Set(["message_start", "message_end", "turn_end", "agent_end"]);

/** The log state of a session whose ids on disk are as given, with nothing buffered. */
function newLogState(sessionId: string, written: number, last: number, reserved: number): LogState {
	return {
		sessionId,
		last,
		reserved,
		written,
		trimmedThrough: 0,
		pending: "",
		pendingFirst: 0,
		pendingLast: 0,
		pendingCount: 0,
		streaming: undefined,
		tally: undefined,
		refs: [],
	};
}

const CONFIG_KEYS = [
	"model",
	"systemPrompt",
	"thinkingLevel",
	"tools",
	"toolExecution",
	"steeringMode",
	"followUpMode",
	"metadata",
	"clientTools",
	"toolApprovals",
	"compaction",
	"budget",
] as const satisfies readonly (keyof SessionConfig)[];

function pickConfig(c: SessionConfig | NewSession): SessionConfig {
	return {
		model: c.model,
		systemPrompt: c.systemPrompt,
		thinkingLevel: c.thinkingLevel,
		tools: [...c.tools],
		toolExecution: c.toolExecution,
		steeringMode: c.steeringMode,
		followUpMode: c.followUpMode,
		metadata: { ...c.metadata },
		clientTools: structuredClone(c.clientTools ?? []),
		toolApprovals: { ...c.toolApprovals },
		...(c.compaction ? { compaction: { ...c.compaction } } : {}),
		...(c.budget ? { budget: { ...c.budget } } : {}),
	};
}

/** Opens (creating or migrating) a store; throws a clear Error for a corrupt, foreign or newer file. */
export function openSqliteStore(options: SqliteStoreOptions = {}): SqliteSessionStore {
	return new SqliteSessionStore(options);
}

/**
 * Opens the file, checks it is a healthy Wheelhouse database before anything is written, takes
 * ownership of it (`owner-lock.ts`), then migrates it.
 */
function openDatabase(
	path: string,
	options: SqliteStoreOptions,
	onLost: (error: Error) => void,
): { db: Database.Database; lock: OwnerLock | undefined } {
	if (path !== ":memory:") mkdirSync(dirname(path), { recursive: true });
	let db: Database.Database | undefined;
	let lock: OwnerLock | undefined;
	try {
		db = new Database(path);
		// The first read of the header: a garbage file fails here with SQLITE_NOTADB.
		// (The default 4 KiB pages: 16 KiB ones halved the flush time of big batches but tripled the bytes
		// written by a real server workload, whose durable writes each touch a few scattered pages.)
		db.prepare("SELECT count(*) FROM sqlite_master").get();
		if (options.checkIntegrity !== false) {
			const result = db.pragma("quick_check", { simple: true });
			if (result !== "ok") {
				const detail = String(result)
					.replace(/\s*\n\s*/g, "; ")
					.slice(0, 500);
				throw new Error(`integrity check failed (${detail})`);
			}
		}
		checkSchemaVersion(db, path); // refuses someone else's file, or a newer one, before anything is written to it
		db.pragma("journal_mode = WAL");
		db.pragma(`synchronous = ${options.synchronous === "full" ? "FULL" : "NORMAL"}`);
		db.pragma("busy_timeout = 5000");
		// Before migrating: a newer build must not migrate a file an older one is still serving.
		if (path !== ":memory:") {
			lock = new OwnerLock(db, path, {
				heartbeatMs: checkLimit("lockHeartbeatMs", options.lockHeartbeatMs, DEFAULT_LOCK_HEARTBEAT_MS, 10, 600_000),
				staleMs: checkLimit("lockStaleMs", options.lockStaleMs, DEFAULT_LOCK_STALE_MS, 20, 3_600_000),
				onLost,
			});
		}
		migrate(db, path);
		// With the writer thread, checkpoints (and their fsyncs) run there, never in a durable write here.
		// Checkpoints (and their fsyncs: tens of ms per 4 MB of WAL) run on the background thread, never in a
		// write on this one. If that thread cannot start, autocheckpointing is switched back on (see `writerHealth`).
		if (path !== ":memory:") db.pragma("wal_autocheckpoint = 0");
		return { db, lock };
	} catch (error) {
		lock?.release();
		db?.close();
		const message = error instanceof Error ? error.message : String(error);
		// Already clear messages: from migrations.ts, and from the owner lock.
		if (message.startsWith("database ") || message.startsWith("session store: ")) throw error;
		throw new Error(
			`cannot open session database ${path}: ${message}. The file is corrupt or not an SQLite database; ` +
				"refusing to overwrite it: restore it from a backup, move it away, or point WHEELHOUSE_DB at another file",
			{ cause: error },
		);
	}
}

export class SqliteSessionStore implements SessionStore {
	readonly kind = "sqlite" as const;
	readonly maxEventsPerSession: number;
	private readonly maxIdempotencyKeys: number;
	readonly path: string;
	readonly schemaVersion = LATEST_SCHEMA_VERSION;
	private readonly db: Database.Database;
	private readonly flushIntervalMs: number;
	private readonly maxBatchEvents: number;
	private readonly onFlushError: (error: Error) => void;
	/** Sessions with buffered events, and how many events are buffered in all. */
	private readonly dirty = new Set<LogState>();
	private buffered = 0;
	/** `touchSession` times not yet written (activity is advisory: it rides along with the next flush). */
	private readonly touches = new Map<string, number>();
	private readonly logs = new Map<string, LogState>();
	private timer: NodeJS.Timeout | NodeJS.Immediate | undefined;
	private timerIsImmediate = false;
	private closed = false;
	private readonly s: ReturnType<typeof prepareStatements>;
	/**
	 * One transaction: writes `batches` (inline mode), the activity times, the `later` writes, then
	 * `fn`. With `later` writes, `fn` runs in a savepoint and its throw is returned as `error`.
	 */
	private readonly tx: (
		batches: EventBatch[],
		later: LaterWrite[],
		fn: () => unknown,
	) => { value?: unknown; error?: unknown; failed?: Set<string> };
	/** The background thread (checkpoints; event batches too with `eventWriter: "thread"`); none for `:memory:`. */
	private readonly writer: EventWriter | undefined;
	private readonly threadWrites: boolean;
	private checkpointFallback = false;
	private readonly syncDelayMs: number;
	/** Writes that are durable at the next sync, in call order (see `later`). */
	private readonly laterWrites: LaterWrite[] = [];
	/** Sessions with writes in `laterWrites`: their buffered events are committed with them. */
	private readonly laterSessions = new Set<string>();
	/** Runs started by a write in `laterWrites` (not on disk yet): their session. */
	private readonly laterRuns = new Map<string, string>();
	private syncTimer: NodeJS.Timeout | undefined;
	/** Told each commit's duration (`observeCommits`). */
	private commitObserver: ((ms: number) => void) | undefined;
	private readonly syncSoon = () => {
		this.syncTimer = undefined;
		this.sync();
	};
	/** Runs `fn` in a savepoint of the open transaction: a throw undoes `fn`'s writes only. */
	private readonly savepoint: (fn: () => unknown) => unknown;
	/** Ownership of the file (none for `:memory:`); released by `close()`. */
	private readonly lock: OwnerLock | undefined;

	constructor(options: SqliteStoreOptions = {}) {
		this.maxEventsPerSession = checkLimit(
			"maxEventsPerSession",
			options.maxEventsPerSession,
			DEFAULT_MAX_EVENTS_PER_SESSION,
			1,
			10_000_000,
		);
		this.maxIdempotencyKeys = maxIdempotencyKeys(options.maxIdempotencyKeysPerSession);
		this.flushIntervalMs = checkLimit("flushIntervalMs", options.flushIntervalMs, 50, 0, 60_000);
		this.maxBatchEvents = checkLimit("maxBatchEvents", options.maxBatchEvents, 2000, 1, 1_000_000);
		this.syncDelayMs = checkLimit("syncDelayMs", options.syncDelayMs, 5, 0, 60_000);
		this.onFlushError =
			options.onFlushError ??
			((error) => process.emitWarning(`session store flush failed: ${error.message}`, "WheelhouseStoreWarning"));
		this.path = options.path ?? DEFAULT_DB_PATH;
		// Every option is checked before the file is opened (and owned): a bad one leaves it untouched.
		const checkpoints = {
			walLimitBytes: checkLimit("walLimitBytes", options.walLimitBytes, DEFAULT_WAL_LIMIT_BYTES, 0, 2 ** 40),
			checkpointIntervalMs: checkLimit(
				"checkpointIntervalMs",
				options.checkpointIntervalMs,
				DEFAULT_CHECKPOINT_INTERVAL_MS,
				10,
				3_600_000,
			),
		};
		const opened = openDatabase(this.path, options, (error) => this.onFlushError(error));
		this.db = opened.db;
		this.lock = opened.lock;
		this.s = prepareStatements(this.db);
		this.savepoint = this.db.transaction((fn: () => unknown) => fn());
		this.tx = this.db.transaction((batches: EventBatch[], later: LaterWrite[], fn: () => unknown) => {
			// The queued writes first: if one fails, the events that refer to its messages (or to later
			// ones of its session, whose seqs move up) are written with the messages inlined instead.
			const failed = later.length > 0 ? this.runAllLater(later) : undefined;
			this.writeBatches(failed ? inlineFailedRefs(batches, later, failed) : batches);
			for (const [sessionId, at] of this.touches) this.s.bumpActivity.run(at, sessionId);
			if (later.length === 0) return { value: fn() };
			// The queued writes commit even if this one fails (they were acknowledged already).
			try {
				return { value: this.savepoint(fn), failed };
			} catch (error) {
				return { error, failed };
			}
		});
		this.threadWrites = options.eventWriter === "thread";
		if (this.path !== ":memory:") {
			try {
				this.writer = new EventWriter(this.path, options.synchronous === "full" ? "FULL" : "NORMAL", checkpoints);
			} catch (error) {
				this.lock?.release();
				this.db.close();
				throw error;
			}
		}
	}

	/**
	 * Called from the flush timer: if the background thread failed to start, checkpoint on this
	 * connection again (else the WAL would grow without bound) and say so once.
	 */
	private writerHealth(): void {
		if (!this.writer?.failed || this.checkpointFallback) return;
		this.checkpointFallback = true;
		this.db.pragma("wal_autocheckpoint = 1000");
		this.onFlushError(new Error(`session store: ${this.writer.failureMessage()}; checkpointing on the main thread`));
	}

	// --- plumbing -------------------------------------------------------------------------------

	private open(): void {
		if (this.closed) throw closedError();
	}

	/**
	 * A durable write: `fn` commits in one transaction together with the writes waiting for the next
	 * sync (`later`) and the buffered events of the sessions in `scope` (every session when omitted)
	 * and of the sessions those writes are for, so a session's event log on disk is never behind a
	 * message, run or queue change of that session. Other sessions' events wait for the timer:
	 * writing them here would dirty one scattered b-tree page per session on every durable write.
	 * With the writer thread, it first waits until the writer has committed what it was handed.
	 */
	private durable<T>(fn: () => T, scope?: readonly string[]): T {
		this.open();
		const error = this.writer?.wait();
		if (error) this.onFlushError(new Error(`session store: writing the event log failed: ${error}`));
		const later = this.laterWrites.splice(0);
		const logs = this.logsToWrite(scope === undefined ? undefined : [...scope, ...this.laterSessions]);
		if (this.syncTimer !== undefined) {
			clearTimeout(this.syncTimer);
			this.syncTimer = undefined;
		}
		let outcome: { value?: unknown; error?: unknown; failed?: Set<string> };
		const startedAt = this.commitObserver ? performance.now() : 0;
		try {
			outcome = this.tx(this.batchesOf(logs), later, fn);
			this.commitObserver?.(performance.now() - startedAt);
		} catch (failure) {
			if (later.length === 0) throw failure;
			this.requeue(later);
			throw new Error(
				`session store: a commit failed (${(failure as Error).message}); the run starts, messages and run ends ` +
					"queued for it stay queued for the next try",
				{ cause: failure },
			);
		}
		this.laterSessions.clear();
		this.laterRuns.clear();
		this.markWritten(logs);
		this.touches.clear();
		for (const sessionId of outcome.failed ?? []) {
			// A write of this session is missing: re-read its count and current run; refer to nothing queued.
			const log = this.logs.get(sessionId);
			if (log) {
				log.tally = undefined;
				log.refs = [];
			}
		}
		if ("error" in outcome) throw outcome.error;
		return outcome.value as T;
	}

	/**
	 * A write that is durable at the next sync (see `types.ts`): queued, and run with the others in
	 * one transaction by the next `sync()` or durable write, or after `syncDelayMs`. Many sessions'
	 * run starts, messages and run ends then cost one commit, and their statements run back to back
	 * instead of each between the server's other work (timed in the server, each such call cost
	 * several times what it costs in a tight loop over the same statements). The caller computes its return value from
	 * the session's tally. With the writer thread (which needs the write lock between our writes) it
	 * is an ordinary durable write.
	 */
	private later(sessionId: string, run: () => void, messages: RefTarget[] = []): void {
		if (this.threadWrites) {
			this.durableFor(sessionId, run); // a throw reaches the caller before it advances the tally
			return;
		}
		this.laterWrites.push({ sessionId, run, messages });
		this.laterSessions.add(sessionId);
		// Not unref'd: a script that stores a message and then exits must still commit it.
		this.syncTimer ??= setTimeout(this.syncSoon, this.syncDelayMs);
	}

	/**
	 * After a failed commit (the disk is full, an I/O error): the queued writes go back to the front
	 * of the queue for the next try, as buffered events do; the tallies stay right. Id reservations
	 * made in the transaction are undone with it, so reserve again before the next id is handed out
	 * (a crash must never lead to an id being reused).
	 */
	private requeue(later: LaterWrite[]): void {
		this.laterWrites.unshift(...later);
		for (const log of this.logs.values()) log.reserved = Math.min(log.reserved, log.last);
		this.syncTimer ??= setTimeout(this.syncSoon, Math.max(this.syncDelayMs, this.flushIntervalMs));
	}

	/**
	 * Runs the queued writes in one savepoint; if one fails, that savepoint is undone and they run again
	 * one savepoint each, so only the failing write is lost. Returns the sessions of failed writes.
	 */
	private runAllLater(later: LaterWrite[]): Set<string> | undefined {
		try {
			this.savepoint(() => {
				for (const write of later) write.run();
			});
			return undefined;
		} catch {
			const failed = new Set<string>();
			for (const write of later) if (!this.runLater(write)) failed.add(write.sessionId);
			return failed.size > 0 ? failed : undefined;
		}
	}

	/** Runs one queued write; a failure undoes that write only and is reported (its caller has returned). */
	private runLater(write: LaterWrite): boolean {
		try {
			this.savepoint(write.run);
			return true;
		} catch (error) {
			this.onFlushError(
				new Error(`session store: a queued write failed and is not on disk: ${(error as Error).message}`, {
					cause: error,
				}),
			);
			return false;
		}
	}

	/** The message count and current run of `log`'s session as the queued writes leave them. */
	private tally(log: LogState): Tally {
		if (log.tally) return log.tally;
		const row = this.s.getCountAndRun.get(log.sessionId) as { message_count: number; current_run_id: string | null };
		log.tally = { messages: row.message_count, runId: row.current_run_id };
		return log.tally;
	}

	/**
	 * Appends `rows` (message JSON) to the transcript at the count on disk now (a queued write: the
	 * same seqs as the tally gave unless an earlier write of the session failed, see `inlineFailedRefs`).
	 */
	private insertMessages(sessionId: string, runId: string | null, rows: readonly string[]): void {
		const first = (this.s.getCountAndRun.get(sessionId) as { message_count: number }).message_count;
		for (let i = 0; i < rows.length; i++) this.s.insertMessage.run(sessionId, first + i, runId, rows[i]);
		this.s.setMessageCount.run(first + rows.length, sessionId);
	}

	/** Before a read of `sessionId` (every session when omitted): commits the queued writes it would miss. */
	private settle(sessionId?: string): void {
		if (this.laterWrites.length > 0 && (sessionId === undefined || this.laterSessions.has(sessionId))) this.sync();
	}

	observeCommits(observer: ((ms: number) => void) | undefined): void {
		this.commitObserver = observer;
	}

	get syncPending(): boolean {
		return this.laterWrites.length > 0;
	}

	sync(): void {
		if (this.laterWrites.length === 0 || this.closed) return;
		try {
			this.durable(noWrite, []);
		} catch (error) {
			this.onFlushError(error instanceof Error ? error : new Error(String(error)));
		}
	}

	private durableFor<T>(sessionId: string, fn: () => T): T {
		return this.durable(fn, [sessionId]);
	}

	private logsToWrite(scope: readonly string[] | undefined): LogState[] {
		if (scope === undefined) return [...this.dirty];
		const logs = new Set<LogState>();
		for (const id of scope) {
			const log = this.logs.get(id);
			if (log && this.dirty.has(log)) logs.add(log);
		}
		return [...logs];
	}

	/** The buffered events of `logs` as one batch per session (nothing changes until `markWritten`). */
	private batchesOf(logs: LogState[]): EventBatch[] {
		return logs.map((log) => {
			const floor = log.last - this.maxEventsPerSession;
			return {
				sessionId: log.sessionId,
				first: log.pendingFirst,
				last: log.pendingLast,
				data: log.pending,
				trimFloor: floor > log.trimmedThrough + this.trimSlack ? floor : 0,
			};
		});
	}

	/** Empties the buffers of `logs` once committed (inline) or handed to the writer (thread). */
	private markWritten(logs: LogState[]): void {
		for (const log of logs) {
			log.written = log.last;
			this.buffered -= log.pendingCount;
			log.pending = "";
			log.pendingCount = 0;
			const floor = log.written - this.maxEventsPerSession;
			if (floor > log.trimmedThrough + this.trimSlack) log.trimmedThrough = floor;
			this.dirty.delete(log);
		}
		if (this.dirty.size === 0 && this.touches.size === 0) this.cancelTimer();
	}

	/** Thread mode: hands the buffer to the writer without waiting, unless too much is already in flight. */
	private sendBuffered(): void {
		if (!this.writer || !this.threadWrites || this.buffered === 0) return;
		const logs = [...this.dirty];
		this.writer.send(this.batchesOf(logs));
		this.markWritten(logs);
		if (this.writer.outstanding > MAX_OUTSTANDING_BATCHES) {
			const error = this.writer.wait(MAX_OUTSTANDING_BATCHES);
			if (error) this.onFlushError(new Error(`session store: writing the event log failed: ${error}`));
		}
	}

	private cancelTimer(): void {
		if (this.timer === undefined) return;
		if (this.timerIsImmediate) clearImmediate(this.timer as NodeJS.Immediate);
		else clearTimeout(this.timer as NodeJS.Timeout);
		this.timer = undefined;
	}

	/** Physical trimming runs once a quarter of the cap has fallen out of it, not on every flush. */
	private get trimSlack(): number {
		return Math.floor(this.maxEventsPerSession / 4);
	}

	/** Inline mode: inserts one batch row per session; deletes batches that fell out of the cap. */
	private writeBatches(batches: EventBatch[]): void {
		for (const b of batches) {
			this.s.insertBatch.run(b.sessionId, b.last, b.first, b.data);
			if (b.trimFloor > 0) this.s.trimBatches.run(b.sessionId, b.trimFloor);
		}
	}

	private scheduleFlush(): void {
		if (this.timer !== undefined) return;
		const run = () => {
			this.timer = undefined;
			if (this.closed) return;
			try {
				this.writerHealth();
				if (this.writer && this.threadWrites && this.touches.size === 0) {
					this.sendBuffered();
					const error = this.writer.takeError();
					if (error) throw new Error(`session store: writing the event log failed: ${error}`);
				} else if (this.buffered > 0 || this.touches.size > 0) {
					this.durable(() => undefined);
				}
			} catch (error) {
				this.onFlushError(error instanceof Error ? error : new Error(String(error)));
			}
		};
		this.timerIsImmediate = this.flushIntervalMs === 0;
		this.timer = this.timerIsImmediate ? setImmediate(run) : setTimeout(run, this.flushIntervalMs);
		// A pending flush must not keep the process alive; close() writes whatever is left.
		this.timer.unref();
	}

	/** The event-log state of a session, loaded on first use; undefined if the session does not exist. */
	private log(sessionId: string): LogState | undefined {
		let log = this.logs.get(sessionId);
		if (log) return log;
		const ids = this.idsOnDisk(sessionId);
		if (!ids) return undefined;
		log = newLogState(sessionId, ids.written, ids.last, ids.last);
		this.logs.set(sessionId, log);
		return log;
	}

	/** `written`: the highest id on disk; `last`: the highest id that may have been handed out (reservations included). */
	private idsOnDisk(sessionId: string): { written: number; last: number } | undefined {
		const row = this.s.getLogState.get(sessionId) as
			| { last_event_id: number; event_id_reserved: number; batch_last: number | null }
			| undefined;
		if (!row) return undefined;
		const written = Math.max(row.batch_last ?? 0, row.last_event_id);
		return { written, last: Math.max(written, row.event_id_reserved) };
	}

	private toRecord(row: SessionRow): SessionRecord {
		const config = JSON.parse(row.config) as SessionConfig;
		return {
			id: row.id,
			ownerId: row.owner_id,
			...pickConfig(config),
			createdAt: row.created_at,
			updatedAt: row.updated_at,
			lastActiveAt: Math.max(row.last_active_at, this.touches.get(row.id) ?? 0),
			status: row.status,
			interruptedAt: row.interrupted_at,
			currentRunId: row.current_run_id,
			usage: addUsage(zeroUsage(), JSON.parse(row.usage) as UsageTotals),
			messageCount: row.message_count,
			// Listing many sessions must not load (and keep) the log state of each: read it without caching.
			lastEventId: this.logs.get(row.id)?.last ?? this.idsOnDisk(row.id)?.last ?? 0,
		};
	}

	private row(sessionId: string): SessionRow | undefined {
		return this.s.getSession.get(sessionId) as SessionRow | undefined;
	}

	// --- sessions -------------------------------------------------------------------------------

	createSession(session: NewSession, messages: AgentMessage[] = []): SessionRecord {
		return this.durable(() => {
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
			const log = newLogState(session.id, 0, 0, ID_RESERVATION);
			log.tally = { messages: messages.length, runId: null };
			this.logs.set(session.id, log);
			return this.toRecord(this.row(session.id) as SessionRow);
		}, []);
	}

	getSession(sessionId: string): SessionRecord | undefined {
		this.open();
		this.settle(sessionId);
		const row = this.row(sessionId);
		return row && this.toRecord(row);
	}

	updateSession(sessionId: string, patch: Partial<SessionConfig>, at: number): SessionRecord | undefined {
		return this.durableFor(sessionId, () => {
			const row = this.row(sessionId);
			if (!row) return undefined;
			const config = pickConfig(JSON.parse(row.config) as SessionConfig);
			for (const key of CONFIG_KEYS) {
				if (patch[key] !== undefined) (config as unknown as Record<string, unknown>)[key] = patch[key];
			}
			this.s.updateConfig.run(JSON.stringify(pickConfig(config)), at, sessionId);
			return this.toRecord(this.row(sessionId) as SessionRow);
		});
	}

	touchSession(sessionId: string, at: number): boolean {
		this.open();
		if (!this.log(sessionId)) return false;
		this.touches.set(sessionId, Math.max(at, this.touches.get(sessionId) ?? at));
		this.scheduleFlush();
		return true;
	}

	listSessions(options: { ownerId?: string | null; cursor?: string; limit?: number } = {}): SessionPage {
		this.open();
		this.settle();
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

	deleteSession(sessionId: string): boolean {
		return this.deleteSessions([sessionId]) > 0;
	}

	deleteSessions(sessionIds: string[]): number {
		this.open();
		// Their buffered events are about to be deleted: drop them instead of writing them first.
		const dropped: LogState[] = [];
		for (const id of sessionIds) {
			const log = this.logs.get(id);
			if (log && this.dirty.has(log)) dropped.push(log);
		}
		this.markWritten(dropped);
		return this.durable(() => {
			let n = 0;
			for (const id of sessionIds) {
				for (const stmt of this.s.deleteChildren) stmt.run(id);
				n += this.s.deleteSession.run(id).changes;
				this.logs.delete(id);
			}
			return n;
		}, []);
	}

	// --- transcript -----------------------------------------------------------------------------

	appendMessages(sessionId: string, messages: AgentMessage[]): number | undefined {
		this.open();
		const log = this.log(sessionId);
		if (!log) return undefined;
		const tally = this.tally(log);
		const first = tally.messages;
		const runId = tally.runId;
		const rows = messages.map((m) => JSON.stringify(m));
		if (rows.length === 0) return first;
		const targets = rows.map((json, i) => ({ seq: first + i, json }));
		this.later(sessionId, () => this.insertMessages(sessionId, runId, rows), targets);
		tally.messages += rows.length;
		log.refs.push(...targets);
		if (log.refs.length > MAX_REFS) log.refs.splice(0, log.refs.length - MAX_REFS);
		return tally.messages;
	}

	listMessages(sessionId: string, options: { offset?: number; limit?: number } = {}) {
		const offset = checkLimit("offset", options.offset, 0, 0, Number.MAX_SAFE_INTEGER);
		const limit = checkLimit("limit", options.limit, 100, 1, 1000);
		this.open();
		this.settle(sessionId);
		const total = this.countMessages(sessionId);
		if (total === undefined) return undefined;
		const rows = this.s.listMessages.pluck().all(sessionId, offset, limit) as string[];
		return { messages: rows.map((d) => JSON.parse(d) as AgentMessage), offset, total };
	}

	countMessages(sessionId: string): number | undefined {
		this.open();
		this.settle(sessionId);
		const row = this.s.getCountAndRun.get(sessionId) as { message_count: number } | undefined;
		return row?.message_count;
	}

	// --- event log ------------------------------------------------------------------------------

	readonly deltaRetention = "while-streaming" as const;

	appendEvent(sessionId: string, type: string, data: string, createdAt?: number): number | undefined {
		this.open();
		if (type === "") throw new RangeError("appendEvent: type must be a non-empty event name");
		const log = this.log(sessionId);
		if (!log) return undefined;
		const id = log.last + 1;
		if (id > log.reserved) {
			// Reserve before handing the id out, so no restart can reuse it (see the module comment). With the
			// writer thread, wait for it first so this write never contends for the WAL write lock.
			const error = this.writer?.wait();
			if (error) this.onFlushError(new Error(`session store: writing the event log failed: ${error}`));
			const reserved = id + ID_RESERVATION - 1;
			this.s.reserveIds.run(reserved, sessionId);
			log.reserved = reserved;
		}
		log.last = id;
		const at = createdAt ?? Date.now();
		// The deltas of a streaming message live in memory only (resume within this process gets them
		// from `streaming`); what is written is the message's `message_start` and `message_end`, which
		// carries the whole message. This keeps ~90% of the bytes of a streamed answer off the disk.
		if (type === "message_start") log.streaming = [];
		if (log.streaming) {
			log.streaming.push({ id, type, data, createdAt: at });
			// Its ids are consecutive: what is past the cap is outside the log anyway (readEvents and
			// oldestEventId apply the cap by id). Cut in steps of a quarter so appends stay O(1).
			if (log.streaming.length > this.maxEventsPerSession + this.trimSlack) {
				log.streaming.splice(0, log.streaming.length - this.maxEventsPerSession);
			}
			if (type === "message_end") log.streaming = undefined;
			else if (type === "message_update") return id;
		}
		if (log.pending === "") {
			log.pendingFirst = id;
			this.dirty.add(log);
		} else if (id !== log.pendingLast + 1) {
			log.pending += encodeSkip(id - log.pendingLast - 1, at);
		}
		if (log.refs.length > 0 && REF_EVENTS.has(type)) {
			log.pending += encodeEventWithRefs(type, data, at, log.refs);
			if (type === "agent_end") log.refs = [];
		} else log.pending += encodeEvent(type, data, at);
		log.pendingLast = id;
		log.pendingCount++;
		if (++this.buffered < this.maxBatchEvents) this.scheduleFlush();
		else if (this.writer && this.threadWrites) this.sendBuffered();
		else this.durable(() => undefined);
		return id;
	}

	readEvents(sessionId: string, afterId: number, limit?: number, maxBytes?: number): StoredEvent[] {
		const page = new EventPage(checkLimit("limit", limit, 1000, 1, 100_000), maxBytes);
		this.flush();
		const log = this.log(sessionId);
		if (!log) return [];
		// Ids at or below `floor` are outside the cap even if their batch is still on disk.
		const from = Math.max(afterId, log.last - this.maxEventsPerSession);
		// From the streaming message's `message_start` on, the memory window has every event (the
		// disk has the same ones minus the deltas): the disk serves what is before it.
		const streaming = log.streaming;
		const windowStart = streaming?.[0]?.id ?? Number.POSITIVE_INFINITY;
		if (from + 1 < windowStart) {
			const resolve = (seq: number) => this.s.getMessage.get(sessionId, seq) as string | undefined;
			const rows = this.s.readBatches.iterate(sessionId, from) as IterableIterator<{ first_id: number; data: string }>;
			for (const row of rows) {
				let done = false;
				decodeBatch(
					row.first_id,
					row.data,
					(e) => {
						if (e.id >= windowStart || !page.open) {
							done = true;
							return false;
						}
						if (e.id > from) page.add(e);
						return true;
					},
					resolve,
				);
				if (done || !page.open) break;
			}
		}
		if (streaming && page.open) {
			for (const e of streaming) {
				if (e.id <= from) continue;
				if (!page.add({ ...e })) break;
			}
		}
		return page.events;
	}

	lastEventId(sessionId: string): number | undefined {
		this.open();
		return this.log(sessionId)?.last;
	}

	oldestEventId(sessionId: string): number | undefined {
		this.flush();
		const log = this.log(sessionId);
		// Ids below the cap's floor are trimmed; every retained event at or above it is read back (the
		// deltas of ended messages were never retained: a resume from inside one is not a reset).
		if (!log || log.last === 0) return undefined;
		const first = (this.s.firstBatch.pluck().get(sessionId) as number | undefined) ?? log.streaming?.[0]?.id;
		if (first === undefined) return undefined;
		return Math.max(1, log.last - this.maxEventsPerSession + 1);
	}

	// --- queue ----------------------------------------------------------------------------------

	enqueue(
		sessionId: string,
		kind: QueueKind,
		message: AgentMessage,
		createdAt: number,
		withKey?: (queued: QueuedMessage) => IdempotencyRecord,
	): QueuedMessage | undefined {
		return this.durableFor(sessionId, () => {
			if (!this.row(sessionId)) return undefined;
			const json = JSON.stringify(message);
			const id = Number(this.s.insertQueued.run(sessionId, kind, json, createdAt).lastInsertRowid);
			this.s.bumpActivity.run(createdAt, sessionId);
			const queued: QueuedMessage = { id, sessionId, kind, message: JSON.parse(json) as AgentMessage, createdAt };
			if (withKey) this.writeIdempotencyKey(withKey(queued));
			return queued;
		});
	}

	listQueued(sessionId: string, kind?: QueueKind): QueuedMessage[] {
		this.open();
		const rows = (
			kind === undefined ? this.s.listQueued.all(sessionId) : this.s.listQueuedKind.all(sessionId, kind)
		) as QueueRow[];
		return rows.map((r) => ({
			id: r.id,
			sessionId: r.session_id,
			kind: r.kind,
			message: JSON.parse(r.data) as AgentMessage,
			createdAt: r.created_at,
		}));
	}

	removeQueued(sessionId: string, ids: number[]): number {
		return this.durableFor(sessionId, () =>
			ids.reduce((n, id) => n + this.s.deleteQueued.run(sessionId, id).changes, 0),
		);
	}

	drainQueued(sessionId: string, ids: number[], messages: AgentMessage[]): number | undefined {
		this.open();
		const log = this.log(sessionId);
		if (!log) return undefined;
		const tally = this.tally(log);
		const runId = tally.runId;
		const rows = messages.map((m) => JSON.stringify(m));
		const targets = rows.map((json, i) => ({ seq: tally.messages + i, json }));
		// A durable write, not a queued one: the queue rows go in the same commit as the messages, and
		// that commit runs the session's queued writes first, so the messages land after those before them.
		const stored = this.durableFor(sessionId, () => {
			if (!this.row(sessionId)) return false;
			for (const id of ids) this.s.deleteQueued.run(sessionId, id);
			if (rows.length > 0) this.insertMessages(sessionId, runId, rows);
			return true;
		});
		if (!stored) return undefined;
		// A queued write of this session that failed in the same commit reset the tally (re-read from disk).
		if (log.tally === tally) {
			tally.messages += rows.length;
			log.refs.push(...targets);
			if (log.refs.length > MAX_REFS) log.refs.splice(0, log.refs.length - MAX_REFS);
		}
		return this.tally(log).messages;
	}

	clearQueue(sessionId: string, kind?: QueueKind): number {
		return this.durableFor(
			sessionId,
			() =>
				(kind === undefined ? this.s.clearQueue.run(sessionId) : this.s.clearQueueKind.run(sessionId, kind)).changes,
		);
	}

	// --- runs -----------------------------------------------------------------------------------

	startRun(sessionId: string, runId: string, startedAt: number, messages: AgentMessage[] = []): boolean {
		this.open();
		const log = this.log(sessionId);
		if (!log) return false;
		if (this.laterRuns.has(runId) || this.s.runExists.get(runId) !== undefined) throw duplicateRunError(runId);
		const tally = this.tally(log);
		const rows = messages.map((m) => JSON.stringify(m));
		const targets = rows.map((json, i) => ({ seq: tally.messages + i, json }));
		this.later(
			sessionId,
			() => {
				this.s.insertRun.run(runId, sessionId, startedAt, ZERO_USAGE_JSON);
				this.s.setRunning.run(runId, startedAt, sessionId);
				if (rows.length > 0) this.insertMessages(sessionId, runId, rows);
			},
			targets,
		);
		tally.messages += rows.length;
		tally.runId = runId;
		log.refs = targets.slice(-MAX_REFS);
		this.laterRuns.set(runId, sessionId);
		return true;
	}

	endRun(sessionId: string, runId: string, end: RunEnd): boolean {
		this.open();
		const log = this.log(sessionId);
		if (!log) return false;
		const tally = this.tally(log);
		// The session's current run is its own; any other run is looked up.
		const owner =
			tally.runId === runId
				? sessionId
				: (this.laterRuns.get(runId) ?? (this.s.getRun.get(runId) as RunRow | undefined)?.session_id);
		if (owner !== sessionId) return false;
		const usage = addUsage(zeroUsage(), end.usage);
		const usageJson = JSON.stringify(usage);
		const errorMessage = end.errorMessage ?? null;
		this.later(sessionId, () => {
			this.s.finishRun.run(end.status, end.endedAt, usageJson, errorMessage, runId);
			const total = addUsage(JSON.parse(this.s.getUsage.get(sessionId) as string) as UsageTotals, usage);
			this.s.endRunSession.run({ usage: JSON.stringify(total), at: end.endedAt, runId, sessionId });
		});
		if (tally.runId === runId) tally.runId = null;
		return true;
	}

	listRuns(sessionId: string, limit?: number): RunRecord[] {
		const max = checkLimit("limit", limit, 100, 1, 100_000);
		this.open();
		this.settle(sessionId);
		const rows = (this.s.listRuns.all(sessionId, max) as RunRow[]).reverse();
		return rows.map((r) => ({
			id: r.id,
			sessionId: r.session_id,
			status: r.status,
			startedAt: r.started_at,
			endedAt: r.ended_at,
			usage: JSON.parse(r.usage) as UsageTotals,
			errorMessage: r.error_message,
		}));
	}

	recoverInterrupted(at: number): string[] {
		return this.durable(() => {
			const rows = this.s.listRunning.all() as SessionRow[];
			for (const row of rows) {
				if (row.current_run_id !== null && this.s.getRun.get(row.current_run_id)) {
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
	}

	// --- pending interactions -------------------------------------------------------------------

	putPending(interaction: Omit<PendingInteraction, "resolvedAt" | "resolution">): boolean {
		return this.durableFor(interaction.sessionId, () => {
			if (!this.row(interaction.sessionId)) return false;
			const i = interaction;
			this.s.upsertPending.run(i.sessionId, i.toolCallId, i.kind, i.payload, i.createdAt);
			return true;
		});
	}

	resolvePending(sessionId: string, toolCallId: string, resolution: string, at: number): boolean {
		return this.durableFor(
			sessionId,
			() => this.s.resolvePending.run(at, resolution, sessionId, toolCallId).changes > 0,
		);
	}

	deletePending(sessionId: string, toolCallId: string): boolean {
		return this.durableFor(sessionId, () => this.s.deletePending.run(sessionId, toolCallId).changes > 0);
	}

	listPending(sessionId: string, options: { includeResolved?: boolean } = {}): PendingInteraction[] {
		this.open();
		const rows = this.s.listPending.all(sessionId, options.includeResolved ? 1 : 0) as PendingRow[];
		return rows.map((r) => ({
			sessionId: r.session_id,
			toolCallId: r.tool_call_id,
			kind: r.kind,
			payload: r.payload,
			createdAt: r.created_at,
			resolvedAt: r.resolved_at,
			resolution: r.resolution,
		}));
	}

	// --- idempotency keys -----------------------------------------------------------------------

	putIdempotencyKey(record: IdempotencyRecord): boolean {
		// One commit with the session's queued writes: a run start and the key that started it.
		return this.durableFor(record.sessionId, () => {
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
		this.s.trimIdempotencyKeys.run(r.sessionId, this.maxIdempotencyKeys);
	}

	getIdempotencyKey(sessionId: string, key: string): IdempotencyRecord | undefined {
		this.open();
		const row = this.s.getIdempotencyKey.get(sessionId, key) as IdempotencyRow | undefined;
		return (
			row && {
				sessionId: row.session_id,
				key: row.key,
				operation: row.operation,
				fingerprint: row.fingerprint,
				outcome: row.outcome,
				createdAt: row.created_at,
			}
		);
	}

	deleteIdempotencyKeys(cutoff: number): number {
		return this.durable(() => this.s.expireIdempotencyKeys.run(cutoff).changes, []);
	}

	// --- retention and lifecycle ----------------------------------------------------------------

	listIdleSessions(cutoff: number, limit?: number): string[] {
		const max = checkLimit("limit", limit, 1000, 1, 1_000_000);
		this.flush(); // pending touches count
		return this.s.listIdle.pluck().all(cutoff, max) as string[];
	}

	flush(): void {
		this.open();
		if (
			this.buffered > 0 ||
			this.touches.size > 0 ||
			(this.writer?.outstanding ?? 0) > 0 ||
			this.laterWrites.length > 0
		) {
			this.durable(() => undefined);
		}
	}

	close(): void {
		if (this.closed) return;
		try {
			this.flush();
		} catch (error) {
			// Closing must not fail (the file would stay owned): what could not be committed is reported.
			this.onFlushError(
				new Error(`session store: closing with writes that could not be committed: ${(error as Error).message}`, {
					cause: error,
				}),
			);
		}
		const writerError = this.writer?.close();
		if (writerError) this.onFlushError(new Error(`session store: writing the event log failed: ${writerError}`));
		// Release unused id reservations so a graceful restart continues ids without a gap.
		try {
			this.db.transaction(() => {
				for (const log of this.logs.values()) {
					if (log.reserved > log.last) this.s.releaseIds.run(log.last, log.written, log.sessionId);
				}
			})();
		} catch (error) {
			this.onFlushError(
				new Error(`session store: releasing event id reservations failed: ${(error as Error).message}`),
			);
		}
		this.cancelTimer();
		if (this.syncTimer !== undefined) clearTimeout(this.syncTimer);
		this.syncTimer = undefined;
		this.closed = true;
		this.lock?.release();
		this.db.close();
	}
}
