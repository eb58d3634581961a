/**
 * The SQLite store commits a webhook delivery with the fact it reports: a run end and its
 * deliveries reach the file in one commit (a second connection sees both or neither), and a run end
 * whose delivery cannot be written is not committed either. The database is a real file, read
 * from a second connection as another process would.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import Database from "better-sqlite3";
import { afterEach, beforeEach, expect, it } from "vitest";
import { openSqliteStore, type SqliteSessionStore } from "../../src/store/sqlite/index.js";
import { newSession, usage } from "./contract.js";

let dir: string;
const open: SqliteSessionStore[] = [];
beforeEach(() => {
	dir = mkdtempSync(join(tmpdir(), "wheelhouse-outbox-"));
});
afterEach(async () => {
	for (const s of open.splice(0)) await s.close();
	rmSync(dir, { recursive: true, force: true });
});

const delivery = (id: string) => ({
	id,
	endpoint: "http://hooks.test/a",
	eventType: "run.completed",
	payload: "{}",
	createdAt: 200,
});
const end = { status: "completed" as const, endedAt: 200, usage: usage(1, 1, 0) };

/** What another connection sees on disk: the run's end time and the outbox ids. */
function onDisk(path: string): { endedAt: number | null; outbox: string[] } {
	const db = new Database(path, { readonly: true });
	try {
		const endedAt = db.prepare("SELECT ended_at FROM runs WHERE id = 'r1'").pluck().get() as number | null;
		const outbox = db.prepare("SELECT id FROM webhook_outbox ORDER BY id").pluck().all() as string[];
		return { endedAt, outbox };
	} finally {
		db.close();
	}
}

it("a run end and its deliveries reach the file in one commit", async () => {
	const path = join(dir, "wh.db");
	const store = openSqliteStore({ path, flushIntervalMs: 60_000, syncDelayMs: 60_000 });
	open.push(store);
	await store.createSession(newSession("s1"));
	await store.startRun("s1", "r1", 100);
	await store.sync();
	expect(store.endRun("s1", "r1", end, [delivery("msg_1"), delivery("msg_2")])).toBe(true);
	expect(onDisk(path)).toEqual({ endedAt: null, outbox: [] });
	await store.sync();
	expect(onDisk(path)).toEqual({ endedAt: 200, outbox: ["msg_1", "msg_2"] });
});

it("a run end whose delivery cannot be written is not committed either", async () => {
	const path = join(dir, "wh.db");
	const errors: Error[] = [];
	const store = openSqliteStore({
		path,
		flushIntervalMs: 60_000,
		syncDelayMs: 60_000,
		onFlushError: (error) => errors.push(error),
	});
	open.push(store);
	await store.createSession(newSession("s1"));
	await store.startRun("s1", "r1", 100);
	await store.sync();
	const db = (store as unknown as { db: Database.Database }).db;
	db.exec("CREATE TEMP TRIGGER fail_outbox BEFORE INSERT ON webhook_outbox BEGIN SELECT RAISE(ABORT, 'injected'); END");
	store.endRun("s1", "r1", end, [delivery("msg_1")]);
	await store.sync();
	expect(errors.map((e) => e.message).join()).toMatch(/injected/);
	expect(onDisk(path)).toEqual({ endedAt: null, outbox: [] });
	db.exec("DROP TRIGGER fail_outbox");
});
