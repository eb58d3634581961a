/**
 * The SQLite store's checkpoint thread beside the store's own commits: the thread never holds the
 * write lock, so a commit never waits for it; and with a CPU profiler running (its signal ends each
 * sleep of SQLite's busy handler early, so a 5 s busy timeout lasts milliseconds) no commit fails.
 * The WAL stays bounded all the same.
 */
import { mkdtempSync, rmSync, statSync } from "node:fs";
import { Session } from "node:inspector/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import Database from "better-sqlite3";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { openSqliteStore, type SqliteSessionStore } from "../../src/store/sqlite/index.js";
import { newSession } from "./contract.js";

let dir: string;
const open: SqliteSessionStore[] = [];
beforeEach(() => {
	dir = mkdtempSync(join(tmpdir(), "wheelhouse-checkpoint-thread-"));
});
afterEach(async () => {
	for (const s of open.splice(0)) await s.close();
	rmSync(dir, { recursive: true, force: true });
});

/** True when another thread or process holds the write lock of `probe`'s file right now. */
function writeLockTaken(probe: Database.Database): boolean {
	try {
		probe.exec("BEGIN IMMEDIATE");
		probe.exec("ROLLBACK");
		return false;
	} catch (error) {
		if ((error as { code?: string }).code?.startsWith("SQLITE_BUSY")) return true;
		throw error;
	}
}

describe("the SQLite checkpoint thread", () => {
	it("never holds the write lock the store's commits need, so none fails under a profiler, and the WAL stays bounded", async () => {
		const path = join(dir, "thread.db");
		const errors: string[] = [];
		const walLimitBytes = 1024 * 1024;
		const s = openSqliteStore({
			path,
			walLimitBytes,
			checkpointIntervalMs: 20,
			onFlushError: (error) => errors.push(error.message),
		});
		open.push(s);
		// The probe takes the write lock only between the store's commits (same thread), without waiting.
		const probe = new Database(path);
		probe.pragma("busy_timeout = 0");
		// A sampling CPU profiler, as `--cpu-prof` or the bench's profile: SIGPROF every 100 µs.
		const inspector = new Session();
		inspector.connect();
		await inspector.post("Profiler.enable");
		await inspector.post("Profiler.setSamplingInterval", { interval: 100 });
		await inspector.post("Profiler.start");
		const sessions = Array.from({ length: 20 }, (_, i) => `s${i}`);
		const data = JSON.stringify({ type: "tool_execution_update", text: "x".repeat(4000) });
		let taken = 0;
		let threadSeen = false;
		let largest = 0;
		let created = 0;
		try {
			for (const id of sessions) await s.createSession(newSession(id));
			// ~40 MB in small commits over a few seconds, never quiet for more than a millisecond: dozens
			// of times the WAL limit (without a bound the WAL would grow past 40 MB).
			for (let i = 0; i < 10_000; i++) {
				const id = sessions[i % sessions.length] as string;
				s.appendEvent(id, "tool_execution_update", data, i);
				if (i % 4 === 3) await s.flush();
				if (i % 50 === 0) await s.createSession(newSession(`extra${created++}`)); // a durable write of its own
				if (i % 5 === 0) {
					await new Promise((resolve) => setTimeout(resolve, 1));
					if (writeLockTaken(probe)) taken++;
					threadSeen ||= s.threads.checkpoint;
					largest = Math.max(largest, statSync(`${path}-wal`).size);
				}
			}
			await s.flush();
		} finally {
			await inspector.post("Profiler.stop");
			inspector.disconnect();
			probe.close();
		}
		expect(threadSeen).toBe(true);
		expect(taken).toBe(0);
		expect(errors).toEqual([]);
		// Bounded, not growing with what was written (~40 MB): the thread copies every interval, and on
		// a loaded machine intervals stretch, so the peak depends on the load (under 4 MB on an idle
		// machine, up to 9 MB at load 18); a WAL nothing restarted would hold all of it.
		expect(largest).toBeLessThan((10_000 * data.length) / 3);
		// Every event is there: 500 per session.
		expect((await s.readEvents("s0", 497)).map((e) => e.id)).toEqual([498, 499, 500]);
		expect((await s.readEvents("s19", 497)).map((e) => e.id)).toEqual([498, 499, 500]);
	}, 120_000);
});
