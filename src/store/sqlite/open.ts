/**
 * Opening the SQLite store's file: its options (each checked before the file is touched), then the
 * file itself — a healthy Wheelhouse database or a new one, owned by this process, migrated.
 */
import { mkdirSync } from "node:fs";
import { dirname } from "node:path";
import Database from "better-sqlite3";
import { checkLimit } from "../shared.js";
import { type EngineSettings, resolveEngineSettings } from "../sql/settings.js";
import type { StoreOptions } from "../types.js";
import { DEFAULT_CHECKPOINT_INTERVAL_MS, DEFAULT_WAL_LIMIT_BYTES } from "./event-writer.js";
import { checkSchemaVersion, migrate } from "./migrations.js";
import { DEFAULT_LOCK_HEARTBEAT_MS, DEFAULT_LOCK_STALE_MS, OwnerLock } from "./owner-lock.js";

export const DEFAULT_DB_PATH = "./data/wheelhouse.db";
/** How long the store's connection waits for a lock another connection holds (SQLite's busy timeout). */
export const BUSY_TIMEOUT_MS = 5000;

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
	 * Longest time a write that is durable at the next barrier (`startRun`, `appendMessages`, `endRun`)
	 * waits for a `sync()` before committing on its own. Default 0: at the end of the event-loop turn
	 * it was made in, with every other write made in that turn.
	 */
	syncDelayMs?: number;
	/**
	 * A write that is durable at the next barrier, made within this long of the last commit, waits
	 * until then (not only to the end of its turn) for its own commit: while commits follow each other
	 * this closely the store is busy, and the next barrier (a write pass, a response) or this timer
	 * commits it with the writes made meanwhile, one commit instead of one per turn. No client waits
	 * on it: what a client is shown goes through a barrier, which commits at once. 0 turns it off.
	 * Default 5 ms.
	 */
	groupWindowMs?: number;
	/** A buffer of this many events is written at once, synchronously. Default 2,000. */
	maxBatchEvents?: number;
	/** SQLite `synchronous` in WAL mode: `normal` survives process crashes, `full` also OS crashes. Default `normal`. */
	synchronous?: "normal" | "full";
	/** Run `PRAGMA quick_check` on open (reads the whole file once). Default true. */
	checkIntegrity?: boolean;
	/**
	 * Who writes the timer-driven event batches: `"inline"` (default) writes them on the calling thread;
	 * `"thread"` hands them to a worker thread with its own connection (`event-writer.ts`), so that SQLite
	 * work leaves the event loop when a spare core exists. On a small, shared machine the thread measured
	 * slower than inline (bench/store), hence the default. `:memory:` always writes inline.
	 */
	eventWriter?: "thread" | "inline";
	/**
	 * The bound on the WAL file. Checkpoints on this connection (between its transactions) copy every
	 * frame, and the next commit restarts the WAL, which SQLite then cuts back to this size
	 * (`journal_size_limit`). The checkpoint thread (while much is written) checkpoints beside our
	 * commits, which never lets SQLite restart the WAL: past half this size it has this connection
	 * finish the copy between its transactions, so the next commit restarts it. The writer thread of
	 * `eventWriter: "thread"` truncates it past this size (a `TRUNCATE` checkpoint that waits for
	 * nothing: it gives up while a write or a reader of an older snapshot is in the way, and tries
	 * again the next interval). See `checkpoints.ts`. Default 64 MiB.
	 */
	walLimitBytes?: number;
	/** How often the WAL is checkpointed (`checkpoints.ts`). Default 1,000 ms. */
	checkpointIntervalMs?: number;
	/** How often this process refreshes its ownership of the file (`owner-lock.ts`). Default 3,000 ms. */
	lockHeartbeatMs?: number;
	/** An owner on another host whose heartbeat is older than this is taken over. Default 15,000 ms. */
	lockStaleMs?: number;
	/** Called when a timer-driven event write fails. Inline: the events stay buffered for the next try; thread: they are lost. Default: a process warning. */
	onFlushError?: (error: Error) => void;
}

const DEFAULT_GROUP_WINDOW_MS = 5;

/** The options, checked, with their defaults. */
export interface SqliteSettings extends EngineSettings {
	path: string;
	groupWindowMs: number;
	synchronous: "NORMAL" | "FULL";
	checkIntegrity: boolean;
	threadWrites: boolean;
	checkpoints: { walLimitBytes: number; checkpointIntervalMs: number };
	lock: { heartbeatMs: number; staleMs: number };
	onFlushError: (error: Error) => void;
}

/** Checks every option (misuse throws with the allowed range) before anything touches the file. */
export function resolveSettings(options: SqliteStoreOptions): SqliteSettings {
	return {
		path: options.path ?? DEFAULT_DB_PATH,
		...resolveEngineSettings(options),
		groupWindowMs: checkLimit("groupWindowMs", options.groupWindowMs, DEFAULT_GROUP_WINDOW_MS, 0, 1_000),
		synchronous: options.synchronous === "full" ? "FULL" : "NORMAL",
		checkIntegrity: options.checkIntegrity !== false,
		threadWrites: options.eventWriter === "thread",
		checkpoints: {
			walLimitBytes: checkLimit("walLimitBytes", options.walLimitBytes, DEFAULT_WAL_LIMIT_BYTES, 0, 2 ** 40),
			checkpointIntervalMs: checkLimit(
				"checkpointIntervalMs",
				options.checkpointIntervalMs,
				DEFAULT_CHECKPOINT_INTERVAL_MS,
				10,
				3_600_000,
			),
		},
		lock: {
			heartbeatMs: checkLimit("lockHeartbeatMs", options.lockHeartbeatMs, DEFAULT_LOCK_HEARTBEAT_MS, 10, 600_000),
			staleMs: checkLimit("lockStaleMs", options.lockStaleMs, DEFAULT_LOCK_STALE_MS, 20, 3_600_000),
		},
		onFlushError:
			options.onFlushError ??
			((error) => process.emitWarning(`session store flush failed: ${error.message}`, "WheelhouseStoreWarning")),
	};
}

/**
 * Opens the file, checks it is a healthy Wheelhouse database before anything is written, takes
 * ownership of it (`owner-lock.ts`), then migrates it. Throws a clear Error for a corrupt, foreign
 * or newer file, and for one another process owns.
 */
export function openDatabase(
	settings: SqliteSettings,
	onLost: (error: Error) => void,
): { db: Database.Database; lock: OwnerLock | undefined } {
	const path = settings.path;
	if (path !== ":memory:") mkdirSync(dirname(path), { recursive: true });
	let db: Database.Database | undefined;
	let lock: OwnerLock | undefined;
	try {
		db = new Database(path);
		// The first read of the header: a garbage file fails here with SQLITE_NOTADB.
		// (The default 4 KiB pages: 16 KiB ones flush big batches faster but multiply the bytes written by a
		// real server workload, whose durable writes each touch a few scattered pages.)
		db.prepare("SELECT count(*) FROM sqlite_master").get();
		if (settings.checkIntegrity) {
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
		db.pragma(`synchronous = ${settings.synchronous}`);
		db.pragma(`busy_timeout = ${BUSY_TIMEOUT_MS}`);
		// Before migrating: a newer build must not migrate a file an older one is still serving.
		if (path !== ":memory:") lock = new OwnerLock(db, path, { ...settings.lock, onLost });
		migrate(db, path);
		// Checkpoints (and their fsyncs) run between transactions or on a thread (`checkpoints.ts`), never
		// inside a commit. If that thread cannot start, autocheckpointing is switched back on (see
		// `CommitQueue.writerHealth`).
		if (path !== ":memory:") {
			db.pragma("wal_autocheckpoint = 0");
			db.pragma(`journal_size_limit = ${settings.checkpoints.walLimitBytes}`);
		}
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
