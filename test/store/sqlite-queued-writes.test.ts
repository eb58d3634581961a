/**
 * The queued (durable-at-next-sync) writes of the SQLite store: what a failing queued write leaves
 * behind (events that referred to its message, message counts), a failed commit (the writes stay
 * queued), the tallies across runs, close() and timers. Failures are injected with a temporary
 * trigger on the store's own connection; the database is a real file.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type Database from "better-sqlite3";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { openSqliteStore, type SqliteSessionStore } from "../../src/store/sqlite/index.js";
import { assistant, newSession, usage, user } from "./contract.js";

let dir: string;
const open: SqliteSessionStore[] = [];
beforeEach(() => {
	dir = mkdtempSync(join(tmpdir(), "wheelhouse-review-queue-"));
});
afterEach(async () => {
	for (const s of open.splice(0)) {
		try {
			await s.close();
		} catch {
			// already closed
		}
	}
	rmSync(dir, { recursive: true, force: true });
});

function store(path: string, options: Parameters<typeof openSqliteStore>[0] = {}): SqliteSessionStore {
	const s = openSqliteStore({ path, flushIntervalMs: 60_000, syncDelayMs: 60_000, onFlushError: () => {}, ...options });
	open.push(s);
	return s;
}

/** Fault injection: makes inserts of messages whose data contains `marker` fail (a temp trigger on this connection). */
function failMessagesContaining(s: SqliteSessionStore, marker: string): () => void {
	const db = (s as unknown as { db: Database.Database }).db;
	db.exec(
		`CREATE TEMP TRIGGER fail_marked BEFORE INSERT ON main.messages WHEN instr(NEW.data, '${marker}') > 0
		 BEGIN SELECT RAISE(ABORT, 'injected failure'); END`,
	);
	return () => db.exec("DROP TRIGGER temp.fail_marked");
}

const long = (text: string) => text.repeat(40); // past the 128-char minimum for references

describe("queued writes that fail", () => {
	it("an event that referred to a message whose queued write failed still reads back as appended (no dangling or re-pointed reference)", async () => {
		const s = store(join(dir, "dangling-ref.db"));
		await s.createSession(newSession("s1"));
		const prompt = user(long("question "));
		const lost = assistant(long("BOOM lost answer "));
		const next = assistant(long("a different, later answer "));
		await s.startRun("s1", "run-1", 1, [prompt]);
		s.appendEvent("s1", "message_end", JSON.stringify({ type: "message_end", message: prompt }), 10);
		const restore = failMessagesContaining(s, "BOOM");
		s.appendMessages("s1", [lost]); // seq 1: its insert will fail at the next sync
		const lostEvent = JSON.stringify({ type: "message_end", message: lost });
		const lostId = s.appendEvent("s1", "message_end", lostEvent, 11) as number;
		await s.sync(); // the event batch (with a reference to seq 1) commits; the message insert does not
		restore();
		// The next message takes the seq the failed one had.
		s.appendMessages("s1", [next]);
		await s.sync();
		const read = (await s.readEvents("s1", 0)).find((e) => e.id === lostId);
		// The event log must return the data appended, byte for byte (event-batch.ts).
		expect(read?.data).toBe(lostEvent);
	});

	it("a failing queued message write loses only itself: the message count stays equal to the messages stored", async () => {
		const s = store(join(dir, "count-hole.db"));
		await s.createSession(newSession("s1"));
		await s.startRun("s1", "run-1", 1, [user("hi")]);
		await s.sync();
		const restore = failMessagesContaining(s, "BOOM");
		s.appendMessages("s1", [assistant("BOOM")]); // seq 1, fails
		s.appendMessages("s1", [user("kept")]); // queued as seq 2 in the same window
		await s.sync();
		restore();
		const listed = await s.listMessages("s1");
		expect(listed?.messages.map((m) => m.role)).toEqual(["user", "user"]);
		// message_count says 3 but seq 1 is missing: offsets/total disagree with the rows.
		expect(listed?.total).toBe(listed?.messages.length);
		expect((await s.getSession("s1"))?.messageCount).toBe(2);
	});
});

describe("a commit that fails", () => {
	it("keeps the queued writes for the next try, with the events of their sessions", async () => {
		const path = join(dir, "requeue.db");
		const s = store(path);
		await s.createSession(newSession("s1"));
		const db = (s as unknown as { db: Database.Database }).db;
		db.exec(
			`CREATE TEMP TRIGGER fail_batches BEFORE INSERT ON main.event_batches
			 BEGIN SELECT RAISE(ABORT, 'injected disk trouble'); END`,
		);
		const prompt = user(long("question "));
		await s.startRun("s1", "run-1", 1, [prompt]);
		s.appendEvent("s1", "message_start", JSON.stringify({ type: "message_start", message: prompt }), 10);
		await expect(s.enqueue("s1", "followUp", user("later"), 2)).rejects.toThrow(/stay queued for the next try/);
		expect(s.syncPending).toBe(true);
		db.exec("DROP TRIGGER temp.fail_batches");
		await s.sync();
		expect(s.syncPending).toBe(false);
		await s.close();
		const b = store(path);
		expect((await b.listRuns("s1")).map((r) => r.id)).toEqual(["run-1"]);
		expect((await b.listMessages("s1"))?.messages).toEqual([prompt]);
		expect(await b.listQueued("s1")).toEqual([]); // the enqueue that failed is not on disk, and it said so
		expect((await b.readEvents("s1", 0)).map((e) => [e.id, JSON.parse(e.data).message])).toEqual([[1, prompt]]);
	});
});

describe("queued writes: tally, close, timers", () => {
	it("usage totals, message count and current run are right after several runs in one window, a continue without prompt, and a reopen", async () => {
		const path = join(dir, "tally.db");
		const a = store(path);
		await a.createSession(newSession("s1"), [user("seed")]);
		await a.startRun("s1", "r1", 1, [user("p1")]);
		a.appendMessages("s1", [assistant("a1", usage(1, 2, 0.1))]);
		a.endRun("s1", "r1", { status: "completed", endedAt: 2, usage: usage(1, 2, 0.1) });
		await a.startRun("s1", "r2", 3); // continue without prompt
		expect(a.appendMessages("s1", [assistant("a2", usage(3, 4, 0.2))])).toBe(4);
		a.endRun("s1", "r2", { status: "completed", endedAt: 4, usage: usage(3, 4, 0.2) });
		await a.startRun("s1", "r3", 5, [user("p3")]);
		const rec = await a.getSession("s1");
		expect(rec).toMatchObject({ messageCount: 5, currentRunId: "r3", status: "running" });
		expect(rec?.usage.input).toBe(4);
		expect(rec?.usage.output).toBe(6);
		await a.close();
		const b = store(path);
		expect(await b.recoverInterrupted(9)).toEqual(["s1"]);
		expect(await b.getSession("s1")).toMatchObject({ messageCount: 5, currentRunId: "r3", status: "interrupted" });
		await b.openSession("s1");
		expect(b.appendMessages("s1", [user("after")])).toBe(6);
		expect((await b.listMessages("s1"))?.messages.map((m) => (m as { content: unknown }).content).slice(-1)).toEqual([
			"after",
		]);
	});

	it("close() commits queued writes and leaves no sync timer behind", async () => {
		const path = join(dir, "close.db");
		const a = store(path);
		await a.createSession(newSession("s1"));
		await a.startRun("s1", "r1", 1, [user("p")]);
		a.appendMessages("s1", [assistant("x")]);
		a.endRun("s1", "r1", { status: "completed", endedAt: 2, usage: usage(1, 1, 0) });
		await a.close();
		expect((a as unknown as { syncTimer: unknown }).syncTimer).toBeUndefined();
		const b = store(path);
		expect(await b.getSession("s1")).toMatchObject({ messageCount: 2, status: "idle", currentRunId: null });
		expect((await b.listRuns("s1")).map((r) => r.status)).toEqual(["completed"]);
	});
});
