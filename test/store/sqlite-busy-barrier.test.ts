/**
 * The SQLite store's barrier (`sync()`) while its commits fail because another process holds the
 * database's write lock for longer than the store's busy timeout: the barrier resolves only once
 * the queued writes (a run's last message and its end) are on disk, and none of them is dropped.
 * The server shows a client nothing before the barrier resolves, so a barrier that resolved on a
 * failed commit would tell the client a run ended that the disk still has running.
 */
import { type ChildProcess, spawn } from "node:child_process";
import { once } from "node:events";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import Database from "better-sqlite3";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { openSqliteStore, type SqliteSessionStore } from "../../src/store/sqlite/index.js";
import { repoRoot } from "../helpers/main-process.js";
import { assistant, newSession, usage, user } from "./contract.js";

let dir: string;
let holder: ChildProcess | undefined;
const open: SqliteSessionStore[] = [];
beforeEach(() => {
	dir = mkdtempSync(join(tmpdir(), "wheelhouse-busy-barrier-"));
});
afterEach(async () => {
	holder?.kill("SIGKILL");
	holder = undefined;
	for (const s of open.splice(0)) await s.close().catch(() => undefined);
	rmSync(dir, { recursive: true, force: true });
});

/** The store's own busy timeout (`open.ts`): a commit waits this long for the lock, then fails. */
const BUSY_TIMEOUT_MS = 5_000;

/** Another process takes the write lock of `path` and holds it for `ms`; resolves once it holds it. */
async function holdWriteLock(path: string, ms: number): Promise<void> {
	const script = `
		const db = new (require("better-sqlite3"))(process.argv[1]);
		db.prepare("BEGIN IMMEDIATE").run();
		console.log("locked");
		setTimeout(() => { db.prepare("COMMIT").run(); db.close(); }, Number(process.argv[2]));`;
	holder = spawn(process.execPath, ["-e", script, path, String(ms)], {
		cwd: repoRoot,
		stdio: ["ignore", "pipe", "inherit"],
	});
	let out = "";
	holder.stdout?.on("data", (chunk: Buffer) => {
		out += chunk.toString();
	});
	while (!out.includes("locked")) await once(holder.stdout!, "data");
}

describe("the SQLite barrier while the database is busy", () => {
	it("resolves only once the run's last message and its end are on disk", async () => {
		const path = join(dir, "busy.db");
		const errors: string[] = [];
		const s = openSqliteStore({ path, onFlushError: (error) => errors.push(error.message) });
		open.push(s);
		await s.createSession(newSession("s1"));
		expect(await s.startRun("s1", "r1", 1, [user("question")])).toEqual({ updatedAt: expect.any(Number) });
		await s.sync();

		// Longer than one busy timeout: the first commit attempt fails.
		await holdWriteLock(path, BUSY_TIMEOUT_MS + 2_500);
		s.appendMessages("s1", [assistant("answer")]);
		s.endRun("s1", "r1", { status: "completed", endedAt: 2, usage: usage(1, 1, 0) });
		await s.sync();

		// What a client would now be shown as done is on disk, as another connection reads it.
		expect(errors.some((message) => /busy|locked/i.test(message))).toBe(true);
		const reader = new Database(path, { readonly: true });
		try {
			const session = reader.prepare("SELECT status, message_count FROM sessions WHERE id = ?").get("s1");
			expect(session).toEqual({ status: "idle", message_count: 2 });
		} finally {
			reader.close();
		}
		// And the store agrees: the run is over, the next one may start.
		expect(await s.startRun("s1", "r2", 3, [user("next")])).toEqual({ updatedAt: expect.any(Number) });
	}, 60_000);
});
