/**
 * WAL checkpoints for the default (inline) event writer: who runs them, and when.
 *
 * - While little is written (an idle server, its owner-lock heartbeat, light traffic), a timer runs
 *   a PASSIVE checkpoint every `checkpointIntervalMs` on the store's own connection, between its
 *   transactions. A checkpoint with nothing new to copy touches neither file; one with a few pages
 *   costs two fsyncs.
 * - When one interval's writes reach `THREAD_FRAMES` WAL pages, the copy and its fsyncs would hold
 *   the event loop for milliseconds to tens of milliseconds every interval, so a thread takes over
 *   (`event-writer.ts` in checkpoint-only mode: its own connection, checkpoints beside our commits).
 * - After `QUIET_INTERVALS` intervals without a commit, the thread is stopped (it checkpoints once
 *   more, then closes) and the timer here takes over again.
 *
 * Why not a thread for the life of the process: a worker thread is a second V8 isolate, resident
 * all the time for a job that an idle or lightly used server needs a few milliseconds a second for.
 * Why not inside a commit (SQLite's `wal_autocheckpoint`): the commit that crosses the threshold
 * would pay for the copy and its fsyncs on the SSE hot path. `wal_autocheckpoint` stays 0.
 *
 * Bounding the WAL: a checkpoint here never runs beside a write of this connection, so unless
 * another connection holds an old read snapshot it copies every frame, and the next commit starts
 * the WAL over; `journal_size_limit` then cuts the file back to `walLimitBytes`. The thread's
 * checkpoints run beside our commits, so they never copy every frame and the WAL is never started
 * over; once the WAL is past half of `walLimitBytes` after one of them, the thread says so and one
 * RESTART checkpoint here copies the few frames written since and starts the WAL over (the next
 * commit writes from its start; `journal_size_limit` cuts the file back if it grew past the limit).
 * The thread never takes the write lock: our commits never wait for it (a TRUNCATE checkpoint
 * there would stop the event loop in SQLite's busy handler for its copy, fsyncs and truncation,
 * and fail commits when a signal cuts the handler's sleeps short, as a CPU profiler's do).
 */
import type Database from "better-sqlite3";
import { EventWriter } from "./event-writer.js";
import { BUSY_TIMEOUT_MS, type SqliteSettings } from "./open.js";

/** WAL pages written in one interval (4 KiB each) from which the thread checkpoints. */
export const THREAD_FRAMES = 64;
/** Intervals without a commit after which the thread is stopped. */
export const QUIET_INTERVALS = 5;

export class Checkpointer {
	private readonly timer: NodeJS.Timeout;
	private stopped = false;
	/** A failure is reported once, not every interval, until a checkpoint succeeds again. */
	private failing = false;
	/** The checkpoint thread while the write rate needs it. */
	private thread: EventWriter | undefined;
	/** The thread could not start once: checkpoints stay here. */
	private threadFailed = false;
	private commits = 0;
	private quietIntervals = 0;

	constructor(
		private readonly db: Database.Database,
		private readonly settings: Pick<SqliteSettings, "path" | "synchronous" | "checkpoints">,
		private readonly onError: (error: Error) => void,
	) {
		this.timer = setInterval(() => this.tick(), settings.checkpoints.checkpointIntervalMs);
		// Checkpoints never keep the process alive: closing the connection checkpoints what is left.
		this.timer.unref();
	}

	/** True while the checkpoint thread runs (tests, diagnostics). */
	get threadRunning(): boolean {
		return this.thread !== undefined;
	}

	/** Told of each commit of the store (the thread stops after intervals without one). */
	noteCommit(): void {
		this.commits++;
	}

	private tick(): void {
		if (this.stopped) return;
		const commits = this.commits;
		this.commits = 0;
		if (this.thread) {
			if (this.thread.failed) {
				this.onError(new Error(`session store: ${this.thread.failureMessage()}; checkpointing on the main thread`));
				this.threadFailed = true;
				this.stopThread();
			} else if (!this.thread.started) {
				// Still booting (tens of milliseconds, more on a busy machine): checkpoint here meanwhile,
				// or the WAL would grow unchecked for that long.
				this.checkpoint();
				return;
			} else {
				this.quietIntervals = commits > 0 ? 0 : this.quietIntervals + 1;
				if (this.quietIntervals >= QUIET_INTERVALS) this.stopThread();
				return;
			}
		}
		const copied = this.checkpoint();
		if (copied >= THREAD_FRAMES && !this.threadFailed) {
			this.thread = new EventWriter(this.settings.path, this.settings.synchronous, this.settings.checkpoints, () =>
				this.walFull(),
			);
			this.quietIntervals = 0;
		}
	}

	/**
	 * The thread's checkpoint left the WAL past half its limit: copy what was written since and start
	 * the WAL over, here, between our transactions (see the module comment). A RESTART checkpoint
	 * takes the write lock, which only this connection takes, so nothing waits for it; it waits for
	 * nothing either (no busy timeout): while the thread checkpoints, or a reader holds an old
	 * snapshot, it gives up, and the thread's next checkpoint asks again.
	 */
	private walFull(): void {
		if (this.stopped || this.thread === undefined) return;
		this.db.pragma("busy_timeout = 0");
		try {
			this.checkpoint("RESTART");
		} finally {
			this.db.pragma(`busy_timeout = ${BUSY_TIMEOUT_MS}`);
		}
	}

	/** One checkpoint on this connection (PASSIVE by default); returns the WAL's size in pages (what it had to copy at most). */
	private checkpoint(mode: "PASSIVE" | "RESTART" = "PASSIVE"): number {
		try {
			const [result] = this.db.pragma(`wal_checkpoint(${mode})`) as { log: number }[];
			this.failing = false;
			return result?.log ?? 0;
		} catch (error) {
			if (!this.failing) {
				this.failing = true;
				this.onError(
					new Error(`session store: a WAL checkpoint failed (the next one retries): ${(error as Error).message}`, {
						cause: error,
					}),
				);
			}
			return 0;
		}
	}

	private stopThread(): void {
		const thread = this.thread;
		this.thread = undefined;
		thread?.close(true);
	}

	/** Stops the timer and the thread (before the connection closes, which checkpoints by itself). Idempotent. */
	stop(): void {
		this.stopped = true;
		clearInterval(this.timer);
		this.stopThread();
	}
}
