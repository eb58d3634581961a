/**
 * WAL checkpoints on the store's own connection, between its transactions, for the default
 * (inline) event writer: a timer runs a PASSIVE checkpoint every `checkpointIntervalMs` while the
 * WAL has frames not yet copied into the database file.
 *
 * Why not inside a commit (SQLite's `wal_autocheckpoint`): the commit that crosses the threshold
 * would pay for the copy and its fsyncs on the SSE hot path, at a moment chosen by the write
 * volume. Why not on a thread of its own: a worker thread is a second V8 isolate, resident for
 * the life of the process, for a job that on this connection takes a few milliseconds a second
 * at most and nothing at all while the server is idle (a checkpoint with nothing to copy touches
 * neither file). The writer thread of `eventWriter: "thread"` still checkpoints for itself
 * (`event-writer.ts`): there another connection writes concurrently.
 *
 * Bounding the WAL: a checkpoint here never runs concurrently with a write of this connection,
 * so unless another connection holds an old read snapshot it copies every frame, and the next
 * commit starts the WAL over from its beginning; `journal_size_limit` then cuts the file back to
 * `walLimitBytes`. Under continuous writes the WAL therefore holds about one interval of writes.
 */
import type Database from "better-sqlite3";

export class Checkpointer {
	private readonly timer: NodeJS.Timeout;
	private stopped = false;
	/** A failure is reported once, not every interval, until a checkpoint succeeds again. */
	private failing = false;

	constructor(
		private readonly db: Database.Database,
		intervalMs: number,
		private readonly onError: (error: Error) => void,
	) {
		this.timer = setInterval(() => this.checkpoint(), intervalMs);
		// Checkpoints never keep the process alive: closing the connection checkpoints what is left.
		this.timer.unref();
	}

	/** One PASSIVE checkpoint now (a no-op when every frame is in the file already). */
	checkpoint(): void {
		if (this.stopped) return;
		try {
			this.db.pragma("wal_checkpoint(PASSIVE)");
			this.failing = false;
		} catch (error) {
			if (this.failing) return;
			this.failing = true;
			this.onError(
				new Error(`session store: a WAL checkpoint failed (the next one retries): ${(error as Error).message}`, {
					cause: error,
				}),
			);
		}
	}

	/** Stops the timer (before the connection closes, which checkpoints by itself). Idempotent. */
	stop(): void {
		this.stopped = true;
		clearInterval(this.timer);
	}
}
