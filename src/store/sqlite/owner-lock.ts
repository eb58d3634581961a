/**
 * One server process per database file. Two processes on one file would hand out the same event
 * ids, and the second one's restart recovery would mark the first one's running runs interrupted;
 * so the store takes ownership of the file when it opens it and keeps it until it closes.
 *
 * Ownership is a row in `wheelhouse_owner` (outside the numbered migrations, so the lock is taken
 * before any migration runs) with the owner's pid, host, process start time and a heartbeat that
 * the owner refreshes every `heartbeatMs`. Opening a file that has an owner:
 * - the same process (same pid, host and start time): refused while that store is open on this
 *   path; taken over otherwise (its store is gone, or the file is a copy);
 * - the same host: refused while that pid is alive and its heartbeat is fresh; taken over at once
 *   when the process is gone (a crash or SIGKILL, then a restart) or its heartbeat is stale;
 * - another host (another container on a shared volume): taken over once the heartbeat is older than
 *   `staleMs`, waiting for that if needed; refused if the owner keeps it fresh.
 * `close()` releases the row, so a graceful restart takes the file at once.
 */

import { randomUUID } from "node:crypto";
import { realpathSync } from "node:fs";
import { hostname } from "node:os";
import type Database from "better-sqlite3";

export const OWNER_TABLE = "wheelhouse_owner";

export const DEFAULT_LOCK_HEARTBEAT_MS = 3_000;
export const DEFAULT_LOCK_STALE_MS = 15_000;

export interface OwnerLockOptions {
	/** How often the owner refreshes its heartbeat. Default 3 s. */
	heartbeatMs?: number;
	/** A heartbeat older than this marks a dead owner (on another host). Default 15 s. */
	staleMs?: number;
	/** Called if another process took the file over (this one stalled longer than `staleMs`). */
	onLost?: (error: Error) => void;
}

interface OwnerRow {
	token: string;
	pid: number;
	host: string;
	process_started_at: number;
	heartbeat_at: number;
}

/** Tokens of the locks held by stores open in this process, with the file each is for. */
const heldHere = new Map<string, string>();
const processStartedAt = Math.round(performance.timeOrigin);

function fileKey(path: string): string {
	try {
		return realpathSync(path);
	} catch {
		return path;
	}
}

function isAlive(pid: number): boolean {
	try {
		process.kill(pid, 0);
		return true;
	} catch (error) {
		// EPERM: the process exists but belongs to someone else.
		return (error as NodeJS.ErrnoException).code === "EPERM";
	}
}

function sleepSync(ms: number): void {
	Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, ms);
}

export class OwnerLock {
	private readonly token = randomUUID();
	private readonly timer: NodeJS.Timeout;
	private released = false;

	/**
	 * Takes ownership of the open database `db` at `path` (waiting up to `staleMs` for a stale
	 * owner on another host), or throws with who owns it and what to do.
	 */
	constructor(
		private readonly db: Database.Database,
		private readonly path: string,
		options: OwnerLockOptions = {},
	) {
		const heartbeatMs = options.heartbeatMs ?? DEFAULT_LOCK_HEARTBEAT_MS;
		const staleMs = options.staleMs ?? DEFAULT_LOCK_STALE_MS;
		db.exec(
			`CREATE TABLE IF NOT EXISTS ${OWNER_TABLE} (id INTEGER PRIMARY KEY CHECK (id = 1), token TEXT NOT NULL, ` +
				"pid INTEGER NOT NULL, host TEXT NOT NULL, process_started_at INTEGER NOT NULL, heartbeat_at INTEGER NOT NULL)",
		);
		const key = fileKey(path);
		const deadline = Date.now() + staleMs + heartbeatMs;
		for (;;) {
			const verdict = db
				.transaction(() => {
					const row = db.prepare(`SELECT * FROM ${OWNER_TABLE} WHERE id = 1`).get() as OwnerRow | undefined;
					const refusal = row ? this.refusal(row, key, staleMs) : undefined;
					if (refusal) return refusal;
					db.prepare(
						`INSERT OR REPLACE INTO ${OWNER_TABLE} (id, token, pid, host, process_started_at, heartbeat_at) VALUES (1, ?, ?, ?, ?, ?)`,
					).run(this.token, process.pid, hostname(), processStartedAt, Date.now());
					return undefined;
				})
				.immediate();
			if (verdict === undefined) break;
			if (verdict.final || Date.now() >= deadline) throw new Error(verdict.message);
			sleepSync(Math.min(heartbeatMs, Math.max(10, deadline - Date.now())));
		}
		heldHere.set(this.token, key);
		const beat = db.prepare(`UPDATE ${OWNER_TABLE} SET heartbeat_at = ? WHERE id = 1 AND token = ?`);
		this.timer = setInterval(() => {
			if (this.released) return;
			try {
				if (beat.run(Date.now(), this.token).changes === 0) {
					this.released = true;
					clearInterval(this.timer);
					heldHere.delete(this.token);
					options.onLost?.(
						new Error(
							`session store: another process took over ${path} (this one did not refresh its lock for over ${staleMs} ms); ` +
								"stop this process: two servers on one database file hand out the same event ids",
						),
					);
				}
			} catch {
				// A busy database: the next beat retries, well within staleMs.
			}
		}, heartbeatMs);
		this.timer.unref();
	}

	/** Why `row`'s owner keeps the file (undefined: take it). `final`: waiting will not help. */
	private refusal(row: OwnerRow, key: string, staleMs: number): { message: string; final: boolean } | undefined {
		const age = Date.now() - row.heartbeat_at;
		const who = `pid ${row.pid} on host ${row.host}, last heartbeat ${Math.max(0, Math.round(age / 1000))} s ago`;
		const fix = "One server process per database file: stop the other one, or point WHEELHOUSE_DB at another file.";
		if (row.host === hostname() && row.pid === process.pid && row.process_started_at === processStartedAt) {
			if (heldHere.get(row.token) !== key) return undefined;
			return {
				message: `session store: ${this.path} is already open in this process; close that store first.`,
				final: true,
			};
		}
		if (age > staleMs) return undefined;
		if (row.host === hostname()) {
			// Our own pid from an earlier start time: a previous run of this container (pid 1 again).
			if (row.pid === process.pid || !isAlive(row.pid)) return undefined;
			return {
				message: `session store: ${this.path} is in use by another Wheelhouse process (${who}). ${fix}`,
				final: true,
			};
		}
		return {
			message: `session store: ${this.path} is in use by another Wheelhouse process (${who}); its lock did not expire within ${staleMs} ms. ${fix}`,
			final: false,
		};
	}

	/** Gives the file up (on close). Idempotent. */
	release(): void {
		if (this.released) return;
		this.released = true;
		clearInterval(this.timer);
		heldHere.delete(this.token);
		try {
			this.db.prepare(`DELETE FROM ${OWNER_TABLE} WHERE id = 1 AND token = ?`).run(this.token);
		} catch {
			// Closing anyway: a stale row is taken over by the next start (same host: at once).
		}
	}
}
