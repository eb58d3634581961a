/**
 * The SQLite store's group-commit engine: decides what goes into which transaction and when.
 *
 * - A *durable* write (`durable`) commits at once, in one transaction with every write queued for
 *   the barrier and the buffered events of the sessions involved.
 * - A *queued* write (`later`: run starts, messages, run ends) waits for the next barrier
 *   (`sync()`, the server's write passes), any durable write, a read of its session, or the end of
 *   the event-loop turn it was made in (`syncDelayMs` later when set; `groupWindowMs` after the
 *   last commit while commits follow each other that closely); the queued writes of every session
 *   made until then share one commit, their statements back to back instead of each between the
 *   server's other work. No barrier waits for others to join its commit.
 * - Buffered events and activity times ride along with the next commit, or are written by the
 *   flush timer after `flushIntervalMs` (with `eventWriter: "thread"`, by the writer thread). The
 *   barrier commits every buffered event, of every session, before the frames it guards go out:
 *   a client is never sent an event a crash could take back (the deltas of a streaming message,
 *   never buffered, aside).
 * - WAL checkpoints run between transactions or, while much is written, on a thread
 *   (`checkpoints.ts`); with `eventWriter: "thread"`, on the writer thread.
 *
 * A failed commit leaves queued writes queued and events buffered for the next try; a queued write
 * that fails on its own loses only itself (its caller has returned) and is reported. A transaction
 * takes the write lock when it begins (`BEGIN IMMEDIATE`), so a busy database fails the whole commit
 * there, never one queued write inside it; and a failure of the database itself (busy, full, I/O)
 * inside a transaction fails the whole commit too. The barrier (`sync()`) resolves only once
 * what was queued is committed: a failed commit is never reported to a client as done.
 */
import { setTimeout as sleep } from "node:timers/promises";
import type Database from "better-sqlite3";
import { closedError } from "../shared.js";
import { inlineRefs, type RefTarget } from "../sql/event-batch.js";
import { Checkpointer } from "./checkpoints.js";
import type { EventLog } from "./event-log.js";
import { type EventBatch, EventWriter } from "./event-writer.js";
import type { SqliteSettings } from "./open.js";
import type { Statements } from "./statements.js";
import type { SessionState, WorkingSet } from "./working-set.js";

/** A write queued for the next barrier (see `later`). */
interface LaterWrite {
	sessionId: string;
	run: () => void;
	/** The messages it appends, with the seqs the caller was given (events may refer to them). */
	messages: RefTarget[];
}

/** What one transaction came to (see `CommitQueue.tx`). */
interface TxOutcome {
	value?: unknown;
	error?: unknown;
	failed?: Set<string>;
}

/** With the writer thread: at most this many batch messages in flight before appends wait (bounds memory). */
const MAX_OUTSTANDING_BATCHES = 16;

/** The barrier's pause between commit attempts while they fail: it starts here and doubles. */
const BARRIER_RETRY_MIN_MS = 20;
/** The barrier's longest pause between commit attempts. */
const BARRIER_RETRY_MAX_MS = 1_000;

/**
 * True for a failure of the database rather than of one write's statements (busy or locked, full,
 * I/O, out of memory, read-only, corrupt): every write would fail the same way, so the commit
 * fails and all of them are tried again, none is dropped.
 */
function isDatabaseFailure(error: unknown): boolean {
	const code = (error as { code?: unknown } | undefined)?.code;
	return (
		typeof code === "string" &&
		/^SQLITE_(BUSY|LOCKED|FULL|IOERR|NOMEM|READONLY|CORRUPT|CANTOPEN|PROTOCOL|NOTADB)/.test(code)
	);
}

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

export class CommitQueue {
	/** `touchSession` times not yet written (activity is advisory: it rides along with the next commit). */
	readonly touches = new Map<string, number>();
	/** Runs started by a write in `laterWrites` (not on disk yet): their session. */
	readonly laterRuns = new Map<string, string>();
	/** Writes that are durable at the next barrier, in call order (see `later`). */
	private readonly laterWrites: LaterWrite[] = [];
	/** Sessions with writes in `laterWrites`: their buffered events are committed with them. */
	private readonly laterSessions = new Set<string>();
	/**
	 * One transaction: writes `batches` (inline mode), the activity times, the `later` writes, then
	 * `fn`. With `later` writes, `fn` runs in a savepoint and its throw is returned as `error`.
	 */
	private readonly tx: (batches: EventBatch[], later: LaterWrite[], fn: () => unknown) => TxOutcome;
	/** Runs `fn` in a savepoint of the open transaction: a throw undoes `fn`'s writes only. */
	private readonly savepoint: (fn: () => unknown) => unknown;
	/** The writer thread of `eventWriter: "thread"` (event batches and checkpoints); none for `:memory:`. */
	readonly writer: EventWriter | undefined;
	/** Checkpoints when there is no writer thread (here, or on a thread while much is written); none for `:memory:`. */
	readonly checkpointer: Checkpointer | undefined;
	private checkpointFallback = false;
	private flushTimer: NodeJS.Timeout | NodeJS.Immediate | undefined;
	private flushTimerIsImmediate = false;
	private syncTimer: NodeJS.Timeout | NodeJS.Immediate | undefined;
	private syncTimerIsImmediate = false;
	/** When the last commit ended (`performance.now()`): see `groupWindowMs`. */
	private lastCommitAt = Number.NEGATIVE_INFINITY;
	/** Told each commit's duration (`observeCommits`). */
	commitObserver: ((ms: number) => void) | undefined;
	closed = false;
	private readonly syncSoon = () => {
		this.syncTimer = undefined;
		this.commitQueued();
	};

	constructor(
		private readonly db: Database.Database,
		private readonly s: Statements,
		private readonly sessions: WorkingSet,
		private readonly log: EventLog,
		private readonly settings: SqliteSettings,
	) {
		this.savepoint = db.transaction((fn: () => unknown) => fn());
		const tx = db.transaction((batches: EventBatch[], later: LaterWrite[], fn: () => unknown): TxOutcome => {
			// The queued writes first: if one fails, the events that refer to its messages (or to later
			// ones of its session, whose seqs move up) are written with the messages inlined instead.
			const failed = later.length > 0 ? this.runAllLater(later) : undefined;
			this.log.writeBatches(failed ? inlineFailedRefs(batches, later, failed) : batches);
			for (const [sessionId, at] of this.touches) this.s.bumpActivity.run(at, sessionId);
			if (later.length === 0) return { value: fn() };
			// The queued writes commit even if this one fails (they were acknowledged already).
			try {
				return { value: this.savepoint(fn), failed };
			} catch (error) {
				if (isDatabaseFailure(error)) throw error;
				return { error, failed };
			}
		});
		// The write lock is taken at BEGIN: a busy database fails the commit before any write ran.
		this.tx = tx.immediate;
		if (settings.path !== ":memory:" && settings.threadWrites) {
			this.writer = new EventWriter(settings.path, settings.synchronous, settings.checkpoints);
		} else if (settings.path !== ":memory:") {
			this.checkpointer = new Checkpointer(db, settings, settings.onFlushError);
		}
	}

	/** With the writer thread, event batches are committed there. */
	private get threadWrites(): boolean {
		return this.writer !== undefined && this.settings.threadWrites;
	}

	/**
	 * True while the barrier has work: writes wait for it, or events are buffered (or handed to the
	 * writer thread and not yet committed) that a client may be sent next. The deltas of a
	 * streaming message are never buffered, so a stream of deltas alone leaves it false.
	 */
	get pending(): boolean {
		return this.laterWrites.length > 0 || this.log.buffered > 0 || (this.writer?.outstanding ?? 0) > 0;
	}

	/** True when anything at all waits to be written (queued writes, buffered events, activity, thread batches). */
	get anythingWaiting(): boolean {
		return (
			this.log.buffered > 0 ||
			this.touches.size > 0 ||
			(this.writer?.outstanding ?? 0) > 0 ||
			this.laterWrites.length > 0
		);
	}

	private open(): void {
		if (this.closed) throw closedError();
	}

	/** Waits until the writer thread has committed what it was handed; reports a write error it had. */
	waitForWriter(): void {
		const error = this.writer?.wait();
		if (error) this.settings.onFlushError(new Error(`session store: writing the event log failed: ${error}`));
	}

	/**
	 * A durable write: `fn` commits in one transaction together with the writes waiting for the next
	 * barrier (`later`) and the buffered events of the sessions in `scope` (every session when omitted)
	 * and of the sessions those writes are for, so a session's event log on disk is never behind a
	 * message, run or queue change of that session. Other sessions' events wait for the timer:
	 * writing them here would dirty one scattered b-tree page per session on every durable write.
	 * With the writer thread, it first waits until the writer has committed what it was handed.
	 */
	durable<T>(fn: () => T, scope?: readonly string[]): T {
		this.open();
		this.waitForWriter();
		const later = this.laterWrites.splice(0);
		const states = this.log.toWrite(scope === undefined ? undefined : [...scope, ...this.laterSessions]);
		this.cancelSyncTimer();
		let outcome: TxOutcome;
		const startedAt = this.commitObserver ? performance.now() : 0;
		try {
			outcome = this.tx(this.log.batchesOf(states), later, fn);
			this.lastCommitAt = performance.now();
			this.commitObserver?.(this.lastCommitAt - startedAt);
			this.checkpointer?.noteCommit();
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
		this.log.markWritten(states);
		this.touches.clear();
		if (this.log.buffered === 0) this.cancelFlushTimer();
		for (const sessionId of outcome.failed ?? []) {
			// A write of this session is missing: re-read its count and current run; refer to nothing queued.
			const state = this.sessions.get(sessionId);
			if (state) {
				state.tally = undefined;
				state.refs = [];
			}
		}
		if ("error" in outcome) throw outcome.error;
		return outcome.value as T;
	}

	/** A durable write scoped to one session (its buffered events ride along). */
	durableFor<T>(sessionId: string, fn: () => T): T {
		return this.durable(fn, [sessionId]);
	}

	/**
	 * A write that is durable at the next barrier: queued, and run with the others in one
	 * transaction by the next `sync()` or durable write, or at the end of this event-loop turn
	 * (after `syncDelayMs` when that is set). The caller computes
	 * its return value from the session's tally. With the writer thread (which needs the write lock
	 * between our writes) it is an ordinary durable write.
	 */
	later(sessionId: string, run: () => void, messages: RefTarget[] = []): void {
		this.open();
		if (this.threadWrites) {
			this.durableFor(sessionId, run); // a throw reaches the caller before it advances the tally
			return;
		}
		this.laterWrites.push({ sessionId, run, messages });
		this.laterSessions.add(sessionId);
		// Not unref'd: a script that stores a message and then exits must still commit it.
		if (this.syncTimer !== undefined) return;
		const delay = Math.max(
			this.settings.syncDelayMs,
			this.lastCommitAt + this.settings.groupWindowMs - performance.now(),
		);
		this.syncTimerIsImmediate = delay <= 0;
		this.syncTimer = this.syncTimerIsImmediate ? setImmediate(this.syncSoon) : setTimeout(this.syncSoon, delay);
	}

	private cancelSyncTimer(): void {
		if (this.syncTimer === undefined) return;
		if (this.syncTimerIsImmediate) clearImmediate(this.syncTimer as NodeJS.Immediate);
		else clearTimeout(this.syncTimer as NodeJS.Timeout);
		this.syncTimer = undefined;
	}

	/**
	 * After a failed commit (the disk is full, an I/O error): the queued writes go back to the front
	 * of the queue for the next try, as buffered events do; the tallies stay right.
	 */
	private requeue(later: LaterWrite[]): void {
		this.laterWrites.unshift(...later);
		this.log.forgetReservations();
		if (this.syncTimer !== undefined) return;
		this.syncTimerIsImmediate = false;
		this.syncTimer = setTimeout(this.syncSoon, Math.max(this.settings.syncDelayMs, this.settings.flushIntervalMs));
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

	/**
	 * Runs one queued write; a failure undoes that write only and is reported (its caller has
	 * returned). A failure of the database fails the commit instead (`isDatabaseFailure`).
	 */
	private runLater(write: LaterWrite): boolean {
		try {
			this.savepoint(write.run);
			return true;
		} catch (error) {
			if (isDatabaseFailure(error)) throw error;
			this.settings.onFlushError(
				new Error(`session store: a queued write failed and is not on disk: ${(error as Error).message}`, {
					cause: error,
				}),
			);
			return false;
		}
	}

	/** Before a read of `sessionId` (every session when omitted): commits the queued writes it would miss. */
	settle(sessionId?: string): void {
		if (this.laterWrites.length > 0 && (sessionId === undefined || this.laterSessions.has(sessionId))) {
			this.commitQueued();
		}
	}

	/**
	 * Commits the queued writes now. A failure is reported and the writes stay queued. True when
	 * nothing is left queued (or the store is closed: closing reports what it could not write).
	 */
	private commitQueued(): boolean {
		if (this.laterWrites.length === 0 || this.closed) return true;
		try {
			this.durable(noWrite, []);
			return true;
		} catch (error) {
			this.settings.onFlushError(error instanceof Error ? error : new Error(String(error)));
			return false;
		}
	}

	/**
	 * The barrier the server awaits before anything leaves the process (`SessionStore.sync`): commits
	 * the writes queued so far and every buffered event, of every session, in one transaction within
	 * the call (the frames about to go out may be of any of them), and answers nothing when that
	 * worked. When it failed, a promise that tries again (each failure reported), pausing longer each
	 * time up to a second, and resolves once they are committed, so what a client is shown next never
	 * claims a write or an event the disk does not have. With the writer thread it hands the buffered
	 * events to the thread and resolves once the thread has committed them. Never throws or rejects
	 * (the server's write passes rely on that): when the store closes first, it resolves, and closing
	 * reports what it could not write.
	 */
	sync(): undefined | Promise<void> {
		if (this.threadWrites) return this.pending ? this.syncThread() : undefined;
		return this.commitForBarrier() ? undefined : this.retryBarrier();
	}

	/**
	 * Commits the queued writes and every buffered event now. A failure is reported and they stay
	 * queued and buffered. True when nothing is left (or the store is closed: closing reports what
	 * it could not write).
	 */
	private commitForBarrier(): boolean {
		if ((this.laterWrites.length === 0 && this.log.buffered === 0) || this.closed) return true;
		try {
			this.durable(noWrite);
			return true;
		} catch (error) {
			this.settings.onFlushError(error instanceof Error ? error : new Error(String(error)));
			return false;
		}
	}

	/** Tries the barrier's commit again, after a pause that doubles each time, until it worked. */
	private async retryBarrier(): Promise<void> {
		for (let pause = BARRIER_RETRY_MIN_MS; ; pause = Math.min(BARRIER_RETRY_MAX_MS, pause * 2)) {
			await sleep(pause, undefined, { ref: false });
			if (this.commitForBarrier()) return;
		}
	}

	/**
	 * The barrier with the writer thread (queued writes are committed as they are made there): hands
	 * the buffered events to the thread, then waits, without blocking the event loop, until it has
	 * committed everything it was handed. A write error it reports is reported here.
	 */
	private async syncThread(): Promise<void> {
		try {
			this.sendBuffered();
			const error = await this.writer?.committed();
			if (error) throw new Error(`session store: writing the event log failed: ${error}`);
		} catch (error) {
			this.settings.onFlushError(error instanceof Error ? error : new Error(String(error)));
		}
	}

	/** Commits everything that waits (queued writes, every buffer, activity times). */
	flush(): void {
		this.open();
		if (this.anythingWaiting) this.durable(noWrite);
	}

	/** After an append: writes a full buffer now, else makes sure the flush timer runs. */
	afterAppend(): void {
		if (this.log.buffered < this.settings.maxBatchEvents) this.scheduleFlush();
		else if (this.threadWrites) this.sendBuffered();
		else this.durable(noWrite);
	}

	/** Records activity of a session, written with the next commit. */
	touch(sessionId: string, at: number): void {
		this.touches.set(sessionId, Math.max(at, this.touches.get(sessionId) ?? at));
		this.scheduleFlush();
	}

	/** Thread mode: hands the buffer to the writer without waiting, unless too much is already in flight. */
	private sendBuffered(): void {
		if (!this.writer || !this.threadWrites || this.log.buffered === 0) return;
		const states: SessionState[] = this.log.toWrite(undefined);
		this.writer.send(this.log.batchesOf(states));
		this.log.markWritten(states);
		if (this.writer.outstanding > MAX_OUTSTANDING_BATCHES) {
			const error = this.writer.wait(MAX_OUTSTANDING_BATCHES);
			if (error) this.settings.onFlushError(new Error(`session store: writing the event log failed: ${error}`));
		}
	}

	/**
	 * Called from the flush timer: if the writer thread failed to start, checkpoint on this
	 * connection again (else the WAL would grow without bound) and say so once.
	 */
	private writerHealth(): void {
		if (!this.writer?.failed || this.checkpointFallback) return;
		this.checkpointFallback = true;
		this.db.pragma("wal_autocheckpoint = 1000");
		this.settings.onFlushError(
			new Error(`session store: ${this.writer.failureMessage()}; checkpointing on the main thread`),
		);
	}

	private scheduleFlush(): void {
		if (this.flushTimer !== undefined) return;
		const run = () => {
			this.flushTimer = undefined;
			if (this.closed) return;
			try {
				this.writerHealth();
				if (this.threadWrites && this.touches.size === 0) {
					this.sendBuffered();
					const error = this.writer?.takeError();
					if (error) throw new Error(`session store: writing the event log failed: ${error}`);
				} else if (this.log.buffered > 0 || this.touches.size > 0) {
					this.durable(noWrite);
				}
			} catch (error) {
				this.settings.onFlushError(error instanceof Error ? error : new Error(String(error)));
			}
		};
		this.flushTimerIsImmediate = this.settings.flushIntervalMs === 0;
		this.flushTimer = this.flushTimerIsImmediate ? setImmediate(run) : setTimeout(run, this.settings.flushIntervalMs);
		// A pending flush must not keep the process alive; close() writes whatever is left.
		this.flushTimer.unref();
	}

	private cancelFlushTimer(): void {
		if (this.flushTimer === undefined || this.touches.size > 0) return;
		if (this.flushTimerIsImmediate) clearImmediate(this.flushTimer as NodeJS.Immediate);
		else clearTimeout(this.flushTimer as NodeJS.Timeout);
		this.flushTimer = undefined;
	}

	/** Stops the writer thread (after the last commit) and the timers; reports what the thread could not write. */
	stop(): void {
		this.checkpointer?.stop();
		const writerError = this.writer?.close();
		if (writerError) {
			this.settings.onFlushError(new Error(`session store: writing the event log failed: ${writerError}`));
		}
		if (this.flushTimer !== undefined) {
			if (this.flushTimerIsImmediate) clearImmediate(this.flushTimer as NodeJS.Immediate);
			else clearTimeout(this.flushTimer as NodeJS.Timeout);
			this.flushTimer = undefined;
		}
		this.cancelSyncTimer();
		this.closed = true;
	}
}
