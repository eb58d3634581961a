/**
 * SQLite durability: what survives a reopen, how event appends are batched, and that event ids
 * stay monotonic across a clean restart and across a crash that loses buffered events.
 */
import { spawn } from "node:child_process";
import { once } from "node:events";
import { copyFileSync, existsSync, mkdtempSync, readdirSync, rmSync, statSync } from "node:fs";
import { stat } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { setTimeout as sleep } from "node:timers/promises";
import Database from "better-sqlite3";
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { openSqliteStore, type SqliteSessionStore } from "../../src/store/sqlite/index.js";
import { assistant, newSession, usage, user } from "./contract.js";

let dir: string;
const open: SqliteSessionStore[] = [];
beforeEach(() => {
	dir = mkdtempSync(join(tmpdir(), "wheelhouse-store-durability-"));
});
afterEach(async () => {
	for (const s of open.splice(0)) await s.close();
	rmSync(dir, { recursive: true, force: true });
});

function store(path: string, options: Parameters<typeof openSqliteStore>[0] = {}): SqliteSessionStore {
	const s = openSqliteStore({ path, ...options });
	open.push(s);
	return s;
}

/** This process's threads (Linux). */
function threadCount(): number {
	return readdirSync("/proc/self/task").length;
}

/** The thread count once threads of earlier tests have exited (unchanged for 200 ms). */
async function settledThreadCount(): Promise<number> {
	let count = threadCount();
	for (let stable = 0; stable < 10; ) {
		await new Promise((resolve) => setTimeout(resolve, 20));
		const now = threadCount();
		stable = now === count ? stable + 1 : 0;
		count = now;
	}
	return count;
}

/** Events in the batches on disk, as another connection sees them: what is on disk, not in the buffer. */
function eventsOnDisk(path: string): number {
	const db = new Database(path, { readonly: true });
	try {
		return (db.prepare("SELECT sum(last_id - first_id + 1) FROM event_batches").pluck().get() as number | null) ?? 0;
	} finally {
		db.close();
	}
}

describe("SQLite store durability", () => {
	it("bounds the memory window of a message that streams past the cap, and reads it back by the cap", async () => {
		const path = join(dir, "window.db");
		const s = store(path, { maxEventsPerSession: 100, flushIntervalMs: 60_000 });
		await s.createSession(newSession("s1"));
		s.appendEvent("s1", "message_start", "{}", 1); // 1
		for (let i = 0; i < 1000; i++) s.appendEvent("s1", "message_update", `{"d":${i}}`, 2); // 2..1001
		const window = (s as unknown as { sessions: Map<string, { streaming?: unknown[] }> }).sessions.get("s1")?.streaming;
		expect(window?.length).toBeLessThanOrEqual(125);
		expect(await s.oldestEventId("s1")).toBe(902);
		const events = await s.readEvents("s1", 0);
		expect(events.map((e) => e.id)).toEqual(Array.from({ length: 100 }, (_, i) => 902 + i));
		expect(events.at(-1)?.data).toBe('{"d":999}');
		expect((await s.readEvents("s1", 950)).map((e) => e.id)).toEqual(Array.from({ length: 51 }, (_, i) => 951 + i));
		s.appendEvent("s1", "message_end", '{"full":true}', 3); // 1002
		expect((await s.readEvents("s1", 0)).map((e) => e.id)).toEqual([1002]);
	});

	it("keeps the WAL bounded under continuous writes (past walLimitBytes)", async () => {
		const path = join(dir, "wal.db");
		const s = store(path, { walLimitBytes: 1024 * 1024, checkpointIntervalMs: 20 });
		await s.createSession(newSession("s1"));
		const data = JSON.stringify({ type: "tool_execution_update", text: "x".repeat(4000) });
		let largest = 0;
		// ~24 MB written over about a second in small commits, never quiet for more than a millisecond
		// (without the bound the WAL measured ~40 MB at the end: passive checkpoints never let it restart).
		for (let i = 0; i < 6000; i++) {
			s.appendEvent("s1", "tool_execution_update", data, i);
			if (i % 4 === 3) await s.flush();
			if (i % 5 === 0) {
				await new Promise((resolve) => setTimeout(resolve, 1));
				largest = Math.max(largest, statSync(`${path}-wal`).size);
			}
		}
		await s.flush();
		expect(largest).toBeLessThan(4 * 1024 * 1024);
		expect((await s.readEvents("s1", 5990)).map((e) => e.id)).toEqual([
			5991, 5992, 5993, 5994, 5995, 5996, 5997, 5998, 5999, 6000,
		]);
	});

	it("writes a streamed message's start and end but not its deltas; ids continue after them across a reopen", async () => {
		const path = join(dir, "deltas.db");
		const a = store(path);
		await a.createSession(newSession("s1"));
		a.appendEvent("s1", "message_start", '{"m":1}', 1); // 1
		for (let i = 0; i < 50; i++) a.appendEvent("s1", "message_update", `{"d":${i}}`, 2); // 2..51
		a.appendEvent("s1", "message_end", '{"m":1,"full":true}', 3); // 52
		a.appendEvent("s1", "message_start", '{"m":2}', 4); // 53
		for (let i = 0; i < 5; i++) a.appendEvent("s1", "message_update", `{"e":${i}}`, 5); // 54..58: still streaming
		await a.flush();
		const db = new Database(path, { readonly: true });
		const onDisk = db.prepare("SELECT data FROM event_batches").pluck().all() as string[];
		db.close();
		expect(onDisk.join("")).not.toContain('"d":');
		expect(onDisk.join("")).toContain('{"m":1,"full":true}');
		expect((await a.readEvents("s1", 51)).map((e) => e.id)).toEqual([52, 53, 54, 55, 56, 57, 58]);
		await a.close();

		const b = store(path);
		expect((await b.readEvents("s1", 0)).map((e) => [e.id, e.data])).toEqual([
			[1, '{"m":1}'],
			[52, '{"m":1,"full":true}'],
			[53, '{"m":2}'],
		]);
		await b.openSession("s1");
		expect(b.lastEventId("s1")).toBe(58);
		expect(b.appendEvent("s1", "agent_end", "{}", 6)).toBe(59);
		expect((await b.readEvents("s1", 53)).map((e) => e.id)).toEqual([59]);
	});

	it("keeps everything across close and reopen", async () => {
		const path = join(dir, "a.db");
		const a = store(path);
		await a.createSession(newSession("s1"), [user("start")]);
		await a.updateSession("s1", { systemPrompt: "changed" }, 1500);
		await a.startRun("s1", "r1", 2000);
		a.appendMessages("s1", [assistant("answer")]);
		a.endRun("s1", "r1", { status: "completed", endedAt: 2100, usage: usage(10, 5, 0.5) });
		await a.enqueue("s1", "followUp", user("later"), 2200);
		await a.putPending({ sessionId: "s1", toolCallId: "c1", kind: "client_tool", payload: '{"x":1}', createdAt: 2300 });
		for (let i = 0; i < 5; i++) a.appendEvent("s1", "message_update", `{"i":${i}}`, 3000 + i);
		a.touchSession("s1", 9000);
		const before = await a.getSession("s1");
		expect(before?.lastActiveAt).toBe(9000);
		await a.close();

		const b = store(path);
		expect(await b.getSession("s1")).toEqual(before);
		expect((await b.listMessages("s1"))?.messages).toEqual([user("start"), assistant("answer")]);
		expect((await b.listQueued("s1")).map((q) => q.message)).toEqual([user("later")]);
		expect((await b.listPending("s1")).map((p) => p.payload)).toEqual(['{"x":1}']);
		expect((await b.listRuns("s1")).map((r) => r.status)).toEqual(["completed"]);
		expect((await b.readEvents("s1", 0)).map((e) => e.data)).toEqual([0, 1, 2, 3, 4].map((i) => `{"i":${i}}`));
	});

	it("continues event ids without a gap after a clean restart", async () => {
		const path = join(dir, "ids.db");
		const a = store(path);
		await a.createSession(newSession("s1"));
		for (let i = 0; i < 7; i++) a.appendEvent("s1", "e", "{}");
		await a.close();
		const b = store(path);
		await b.openSession("s1");
		expect(b.lastEventId("s1")).toBe(7);
		expect(b.appendEvent("s1", "e", "{}")).toBe(8);
	});

	it("never reuses an id handed out before a crash, even when its event was lost", async () => {
		const path = join(dir, "crash.db");
		const a = store(path, { flushIntervalMs: 60_000 });
		await a.createSession(newSession("s1"));
		for (let i = 0; i < 3; i++) a.appendEvent("s1", "e", "{}");
		await a.flush();
		const lost = [a.appendEvent("s1", "e", "lost-1"), a.appendEvent("s1", "e", "lost-2")];
		expect(lost).toEqual([4, 5]);
		// A copy of the files now is what a SIGKILL would leave: ids 4 and 5 are only in the buffer.
		const crashed = join(dir, "crash-copy.db");
		copyFileSync(path, crashed);
		if (existsSync(`${path}-wal`)) copyFileSync(`${path}-wal`, `${crashed}-wal`);

		const b = store(crashed);
		expect((await b.readEvents("s1", 0)).map((e) => e.id)).toEqual([1, 2, 3]);
		await b.openSession("s1");
		const next = b.appendEvent("s1", "e", "after restart") ?? 0;
		expect(next).toBeGreaterThan(5);
		expect(b.lastEventId("s1")).toBe(next);
		expect((await b.readEvents("s1", 3)).map((e) => e.id)).toEqual([next]);
	});

	it("a drained queued message is on disk in the queue or in the transcript at every moment, never neither", async () => {
		const path = join(dir, "drain.db");
		const a = store(path, { flushIntervalMs: 60_000, syncDelayMs: 60_000 });
		/** What a SIGKILL now would leave: a copy of the files, opened by a new store. */
		const crashCopy = async (name: string) => {
			const copy = join(dir, name);
			copyFileSync(path, copy);
			if (existsSync(`${path}-wal`)) copyFileSync(`${path}-wal`, `${copy}-wal`);
			const b = store(copy);
			return {
				queued: (await b.listQueued("s1")).map((q) => (q.message as { content: string }).content),
				transcript: (await b.listMessages("s1"))?.messages.map((m) => (m.role === "user" ? m.content : m.role)),
			};
		};
		await a.createSession(newSession("s1"));
		const steer = await a.enqueue("s1", "steer", user("steer"), 1);
		await a.startRun("s1", "r1", 2, [user("prompt")]);
		a.appendMessages("s1", [assistant("answer")]);
		expect(await crashCopy("before.db")).toEqual({ queued: ["steer"], transcript: [] });
		expect(await a.drainQueued("s1", [steer?.id ?? -1], [user("steer")])).toBe(3);
		// Durable on return, with the run start and the messages queued before it, in order.
		expect(await crashCopy("after.db")).toEqual({ queued: [], transcript: ["prompt", "assistant", "steer"] });
		expect((await a.listRuns("s1")).map((r) => r.status)).toEqual(["running"]);
	});

	it("buffers event appends and writes them with the next durable write, at flush(), or on the timer", async () => {
		const path = join(dir, "batch.db");
		const s = store(path, { flushIntervalMs: 60_000 });
		await s.createSession(newSession("s1"));
		s.appendEvent("s1", "e", "1");
		s.appendEvent("s1", "e", "2");
		expect(eventsOnDisk(path)).toBe(0);
		// Visible to readers of this store at once, without waiting for the timer.
		expect(s.lastEventId("s1")).toBe(2);

		// A durable write (a queued message about to be acknowledged) carries the buffered events.
		await s.enqueue("s1", "steer", user("now"), 1);
		expect(eventsOnDisk(path)).toBe(2);

		s.appendEvent("s1", "e", "3");
		expect(eventsOnDisk(path)).toBe(2);
		await s.flush();
		expect(eventsOnDisk(path)).toBe(3);

		const timed = store(join(dir, "timed.db"), { flushIntervalMs: 5 });
		timed.createSession(newSession("t"));
		for (let i = 0; i < 10; i++) timed.appendEvent("t", "e", String(i));
		expect(eventsOnDisk(join(dir, "timed.db"))).toBe(0);
		await vi.waitFor(() => expect(eventsOnDisk(join(dir, "timed.db"))).toBe(10), { timeout: 5000, interval: 5 });
	});

	it("by default commits the queued writes of every session made in one event-loop turn at the end of that turn, in one commit, with no timer", async () => {
		const path = join(dir, "turn.db");
		const s = store(path, { flushIntervalMs: 60_000 });
		const runsOnDisk = () => {
			const db = new Database(path, { readonly: true });
			try {
				return db.prepare("SELECT count(*) FROM runs").pluck().get();
			} finally {
				db.close();
			}
		};
		for (const id of ["a", "b", "c"]) await s.createSession(newSession(id));
		// A quiet store: its last commit (the sessions') is more than the grouping window ago.
		await sleep(20);
		let commits = 0;
		s.observeCommits(() => {
			commits++;
		});
		// Three sessions' run starts in one turn (their promises settle in microtasks, not in a later turn).
		const started = await Promise.all(["a", "b", "c"].map((id) => s.startRun(id, `run-${id}`, 1, [user(id)])));
		expect(started).toEqual(["a", "b", "c"].map(() => ({ updatedAt: expect.any(Number) })));
		expect(runsOnDisk()).toBe(0);
		await new Promise((resolve) => setImmediate(resolve));
		expect(runsOnDisk()).toBe(3);
		expect(commits).toBe(1);
		expect(s.syncPending).toBe(false);
	});

	it("right after a commit (a busy store) queued writes wait up to groupWindowMs for the next barrier, so the writes made meanwhile join them", async () => {
		const s = store(join(dir, "window.db"), { flushIntervalMs: 60_000, groupWindowMs: 300 });
		for (const id of ["a", "b", "c"]) await s.createSession(newSession(id));
		await Promise.all(["a", "b", "c"].map((id) => s.startRun(id, `run-${id}`, 1, [user(id)])));
		await s.sync();
		let commits = 0;
		s.observeCommits(() => {
			commits++;
		});
		const end = { status: "completed" as const, endedAt: 3000, usage: usage(1, 1, 0) };
		s.endRun("a", "run-a", end);
		await new Promise((resolve) => setImmediate(resolve));
		s.endRun("b", "run-b", end); // a later turn: joins the same commit
		await new Promise((resolve) => setImmediate(resolve));
		expect(s.syncPending).toBe(true);
		expect(commits).toBe(0);
		// A barrier does not wait for the window.
		await s.sync();
		expect(s.syncPending).toBe(false);
		expect(commits).toBe(1);
		// With no barrier, the timer commits it once the window after the last commit is over.
		s.endRun("c", "run-c", end);
		expect(s.syncPending).toBe(true);
		await sleep(600);
		expect(s.syncPending).toBe(false);
		expect(commits).toBe(2);
	});

	it("commits run starts, messages and run ends of many sessions together: at sync(), at any durable write or read of the session, after syncDelayMs", async () => {
		const path = join(dir, "deferred.db");
		const s = store(path, { flushIntervalMs: 60_000, syncDelayMs: 30 });
		const onDisk = () => {
			const db = new Database(path, { readonly: true });
			try {
				return {
					runs: db.prepare("SELECT count(*) FROM runs").pluck().get(),
					messages: db.prepare("SELECT count(*) FROM messages").pluck().get(),
					ended: db.prepare("SELECT count(*) FROM runs WHERE status = 'completed'").pluck().get(),
				};
			} finally {
				db.close();
			}
		};
		for (const id of ["a", "b", "c"]) await s.createSession(newSession(id));
		for (const id of ["a", "b", "c"])
			expect(await s.startRun(id, `run-${id}`, 1, [user(`prompt ${id}`)])).toEqual({ updatedAt: expect.any(Number) });
		expect(s.syncPending).toBe(true);
		expect(onDisk()).toEqual({ runs: 0, messages: 0, ended: 0 });
		await s.sync();
		expect(s.syncPending).toBe(false);
		expect(onDisk()).toEqual({ runs: 3, messages: 3, ended: 0 });
		// Three sessions' answers and run ends: one commit, at sync().
		for (const id of ["a", "b", "c"]) {
			expect(s.appendMessages(id, [assistant(`answer ${id}`)])).toBe(2);
			expect(s.endRun(id, `run-${id}`, { status: "completed", endedAt: 2, usage: usage(1, 1, 0) })).toBe(true);
		}
		expect(onDisk()).toEqual({ runs: 3, messages: 3, ended: 0 });
		await s.sync();
		expect(onDisk()).toEqual({ runs: 3, messages: 6, ended: 3 });
		// A durable write commits them too.
		s.appendMessages("a", [user("next")]);
		await s.enqueue("b", "followUp", user("later"), 3);
		expect(onDisk().messages).toBe(7);
		// So does a read of that session (it must see them); a read of another session does not.
		s.appendMessages("c", [user("next")]);
		expect((await s.getSession("a"))?.messageCount).toBe(3);
		expect(onDisk().messages).toBe(7);
		expect((await s.listMessages("c"))?.messages.map((m) => m.role)).toEqual(["user", "assistant", "user"]);
		expect(onDisk().messages).toBe(8);
		// And at the latest after syncDelayMs.
		s.appendMessages("b", [user("next")]);
		await new Promise((resolve) => setTimeout(resolve, 60));
		expect(onDisk().messages).toBe(9);
		// A failing write undoes itself only: the others in the same transaction are committed.
		s.appendMessages("a", [user("kept")]);
		await expect(s.startRun("b", "run-a", 4)).rejects.toThrow(/already exists/);
		await expect(s.createSession(newSession("a"))).rejects.toThrow(/already exists/);
		expect(onDisk().messages).toBe(10);
		// Run ends check the run's session whether or not its start is committed yet.
		expect(await s.startRun("a", "run-a2", 5)).toEqual({ updatedAt: expect.any(Number) });
		expect(s.endRun("b", "run-a2", { status: "completed", endedAt: 6, usage: usage(0, 0, 0) })).toBe(false);
		expect(s.endRun("a", "run-a2", { status: "completed", endedAt: 6, usage: usage(0, 0, 0) })).toBe(true);
		await expect(s.startRun("a", "run-a2", 7)).rejects.toThrow(/already exists/);
		expect(await s.startRun("zz", "run-zz", 7)).toBe(false);
		await s.sync();
		expect((await s.listRuns("a")).map((r) => [r.id, r.status])).toEqual([
			["run-a", "completed"],
			["run-a2", "completed"],
		]);
		await s.close();
	});

	it("writes the events of a run with references to its stored messages, and reads them back exactly, across a reopen", async () => {
		const path = join(dir, "refs.db");
		const long = (text: string) => text.repeat(40);
		const prompt = user(long("question "));
		const answer = assistant(long("answer "));
		const events: [string, string][] = [
			["agent_start", '{"type":"agent_start"}'],
			["message_start", JSON.stringify({ type: "message_start", message: prompt })],
			["message_end", JSON.stringify({ type: "message_end", message: prompt })],
			["message_start", JSON.stringify({ type: "message_start", message: { ...answer, content: [] } })],
			["message_end", JSON.stringify({ type: "message_end", message: answer })],
			["turn_end", JSON.stringify({ type: "turn_end", message: answer, toolResults: [] })],
			["agent_end", JSON.stringify({ type: "agent_end", messages: [prompt, answer] })],
		];
		const a = store(path);
		await a.createSession(newSession("s1"));
		await a.startRun("s1", "run-1", 1, [prompt]);
		for (const [type, data] of events.slice(0, 4)) a.appendEvent("s1", type, data, 10);
		a.appendMessages("s1", [answer]);
		for (const [type, data] of events.slice(4, 6)) a.appendEvent("s1", type, data, 10);
		a.endRun("s1", "run-1", { status: "completed", endedAt: 2, usage: usage(1, 1, 0) });
		a.appendEvent("s1", "agent_end", events[6][1], 10);
		const expected = events.map(([type, data], i) => ({ id: i + 1, type, data, createdAt: 10 }));
		expect(await a.readEvents("s1", 0)).toEqual(expected);
		await a.close();
		const db = new Database(path, { readonly: true });
		const written = db.prepare("SELECT sum(length(data)) FROM event_batches").pluck().get() as number;
		db.close();
		// Without references the batches would hold the prompt three times and the answer three times more.
		const eventBytes = events.reduce((n, [, data]) => n + data.length, 0);
		expect(written).toBeLessThan(eventBytes / 4);
		const b = store(path);
		expect(await b.readEvents("s1", 0)).toEqual(expected);
		expect(await b.readEvents("s1", 4)).toEqual(expected.slice(4));
	});

	it("commits messages and run ends of a script that ends without close()", async () => {
		const path = join(dir, "no-close.db");
		const child = spawn(
			process.execPath,
			["--import", "tsx", join(import.meta.dirname, "fixtures", "exit-without-close.ts"), path],
			{
				stdio: ["ignore", "ignore", "pipe"],
			},
		);
		let stderr = "";
		child.stderr.on("data", (d) => {
			stderr += d;
		});
		const [code] = await once(child, "exit");
		expect(code, stderr).toBe(0);
		const s = store(path);
		expect((await s.listMessages("s1"))?.messages.map((m) => (m as { content: string }).content)).toEqual([
			"stored without close",
		]);
		expect((await s.listRuns("s1")).map((r) => r.status)).toEqual(["completed"]);
	});

	it("a durable write carries its own session's buffered events, not the other sessions'", async () => {
		const path = join(dir, "scope.db");
		const s = store(path, { flushIntervalMs: 60_000 });
		await s.createSession(newSession("a"));
		await s.createSession(newSession("b"));
		for (let i = 0; i < 3; i++) s.appendEvent("a", "e", String(i));
		for (let i = 0; i < 5; i++) s.appendEvent("b", "e", String(i));
		s.appendMessages("a", [user("turn done")]);
		// A durable write of a: a's queued message and buffered events go with it, b's wait.
		await s.enqueue("a", "followUp", user("later"), 1);
		expect(eventsOnDisk(path)).toBe(3);
		// Deleting b drops its buffered events; flush() then has nothing left to write for it.
		await s.deleteSession("b");
		await s.flush();
		expect(eventsOnDisk(path)).toBe(3);
		s.appendEvent("a", "e", "3");
		await s.flush();
		expect(eventsOnDisk(path)).toBe(4);
	});

	it("the barrier commits every session's buffered events (a client may be sent any of them next), deltas aside", async () => {
		const path = join(dir, "barrier-events.db");
		const s = store(path, { flushIntervalMs: 60_000 });
		await s.createSession(newSession("a"));
		await s.createSession(newSession("b"));
		expect(s.syncPending).toBe(false);
		s.appendEvent("a", "message_start", "{}");
		// The deltas of a streaming message are memory-only: they leave the barrier nothing to do.
		for (let i = 0; i < 5; i++) s.appendEvent("a", "message_update", String(i));
		s.appendEvent("b", "e", "0");
		expect(s.syncPending).toBe(true);
		expect(eventsOnDisk(path)).toBe(0);
		await s.sync();
		expect(s.syncPending).toBe(false);
		// a's message_start and b's event; a's deltas were not written.
		expect(eventsOnDisk(path)).toBe(2);
		for (let i = 5; i < 10; i++) s.appendEvent("a", "message_update", String(i));
		expect(s.syncPending).toBe(false);
	});

	it("writes a full batch at maxBatchEvents without waiting for the timer (inline: before appendEvent returns)", async () => {
		const inlinePath = join(dir, "full-inline.db");
		const inline = store(inlinePath, { flushIntervalMs: 60_000, maxBatchEvents: 4, eventWriter: "inline" });
		inline.createSession(newSession("s1"));
		for (let i = 0; i < 3; i++) inline.appendEvent("s1", "e", String(i));
		expect(eventsOnDisk(inlinePath)).toBe(0);
		inline.appendEvent("s1", "e", "3");
		expect(eventsOnDisk(inlinePath)).toBe(4);

		const threadPath = join(dir, "full-thread.db");
		const threaded = store(threadPath, { flushIntervalMs: 60_000, maxBatchEvents: 4, eventWriter: "thread" });
		threaded.createSession(newSession("s1"));
		for (let i = 0; i < 3; i++) threaded.appendEvent("s1", "e", String(i));
		expect(eventsOnDisk(threadPath)).toBe(0);
		threaded.appendEvent("s1", "e", "3");
		await vi.waitFor(() => expect(eventsOnDisk(threadPath)).toBe(4), { timeout: 10_000, interval: 5 });
	});

	it("checkpoints the WAL while the store runs (between transactions: the main connection has autocheckpoint off)", async () => {
		const path = join(dir, "checkpoint.db");
		const s = store(path, { flushIntervalMs: 60_000 });
		await s.createSession(newSession("s1"));
		const before = statSync(path).size;
		const payload = "x".repeat(1000);
		for (let round = 0; round < 10; round++) {
			for (let i = 0; i < 500; i++) s.appendEvent("s1", "message_update", payload);
			await s.flush();
		}
		// ~5 MB went to the WAL; the main file only grows when a checkpoint copies pages into it.
		await vi.waitFor(() => expect(statSync(path).size).toBeGreaterThan(before + 4_000_000), {
			timeout: 15_000,
			interval: 50,
		});
	});

	it("starts no thread of its own by default; the writer thread only with eventWriter: thread", async () => {
		if (!existsSync("/proc/self/task")) {
			console.log("skipped: counting this process's threads needs Linux /proc");
			return;
		}
		await stat(dir); // libuv's thread pool starts on its first use: before the counts, not between them
		const before = await settledThreadCount();
		const inline = store(join(dir, "inline.db"));
		await inline.createSession(newSession("s1"));
		for (let i = 0; i < 100; i++) inline.appendEvent("s1", "e", String(i));
		await inline.flush();
		expect(inline.threads).toEqual({ writer: false, checkpoint: false });
		// Other threads of this process (V8's, libuv's) may come and go; none of the store's is among them.
		expect(threadCount()).toBeLessThanOrEqual(before + 1);
		const withWriter = store(join(dir, "thread.db"), { eventWriter: "thread" });
		expect(withWriter.threads.writer).toBe(true);
	});

	it("checkpoints on a thread while much is written, and stops that thread once writes stop", async () => {
		if (!existsSync("/proc/self/task")) {
			console.log("skipped: counting this process's threads needs Linux /proc");
			return;
		}
		await stat(dir);
		const path = join(dir, "busy.db");
		const s = store(path, { checkpointIntervalMs: 50 });
		await s.createSession(newSession("s1"));
		const threads = () => s.threads.checkpoint;
		const payload = "x".repeat(2000);
		let most = threads();
		expect(most).toBe(false);
		// ~8 MB in bursts of 80 KB a millisecond or so apart: far more than the thread threshold per interval.
		for (let i = 0; i < 4000; i++) {
			s.appendEvent("s1", "tool_execution_update", payload, i);
			if (i % 40 === 39) {
				await s.flush();
				await new Promise((resolve) => setTimeout(resolve, 1));
				most ||= threads();
			}
		}
		for (let i = 0; i < 10 && !most; i++) {
			await new Promise((resolve) => setTimeout(resolve, 10));
			most ||= threads();
		}
		expect(most).toBe(true);
		// Quiet: the thread stops after a few intervals without a commit; everything is still there.
		await vi.waitFor(() => expect(threads()).toBe(false), { timeout: 5000, interval: 20 });
		expect((await s.readEvents("s1", 3998)).map((e) => e.id)).toEqual([3999, 4000]);
		expect(statSync(path).size).toBeGreaterThan(2_000_000); // the checkpoints copied the pages into the file
	});

	it("commits an idempotency record with the run start that waits for the next sync, in one transaction", async () => {
		const path = join(dir, "idempotency.db");
		const s = store(path, { syncDelayMs: 60_000 });
		await s.createSession(newSession("s1"));
		await s.startRun("s1", "r1", 10, [user("q")]);
		const onDisk = () => {
			const db = new Database(path, { readonly: true });
			try {
				return {
					runs: db.prepare("SELECT count(*) FROM runs").pluck().get(),
					keys: db.prepare("SELECT count(*) FROM idempotency_keys").pluck().get(),
				};
			} finally {
				db.close();
			}
		};
		expect(onDisk()).toEqual({ runs: 0, keys: 0 });
		await s.putIdempotencyKey({
			sessionId: "s1",
			key: "k",
			operation: "prompt",
			fingerprint: "f",
			outcome: "{}",
			createdAt: 10,
		});
		expect(onDisk()).toEqual({ runs: 1, keys: 1 });
	});

	it("commits a queued message and the idempotency record of its request in one transaction", async () => {
		const path = join(dir, "idempotency-queue.db");
		const s = store(path, { syncDelayMs: 60_000 });
		await s.createSession(newSession("s1"));
		const onDisk = () => {
			const db = new Database(path, { readonly: true });
			try {
				return {
					queued: db.prepare("SELECT count(*) FROM queue").pluck().get(),
					keys: db.prepare("SELECT count(*) FROM idempotency_keys").pluck().get(),
				};
			} finally {
				db.close();
			}
		};
		let whileBuilding: unknown;
		const queued = await s.enqueue("s1", "steer", user("m"), 10, (q) => {
			// Called inside the write: the queue row is not on disk yet, so the two land in one commit.
			whileBuilding = onDisk();
			return {
				sessionId: "s1",
				key: "k",
				operation: "steer",
				fingerprint: "f",
				outcome: `{"id":${q.id}}`,
				createdAt: 10,
			};
		});
		expect(whileBuilding).toEqual({ queued: 0, keys: 0 });
		expect(onDisk()).toEqual({ queued: 1, keys: 1 });
		expect((await s.getIdempotencyKey("s1", "k"))?.outcome).toBe(`{"id":${queued?.id}}`);
	});

	it("close() writes the buffer", async () => {
		const path = join(dir, "close.db");
		const s = openSqliteStore({ path, flushIntervalMs: 60_000 });
		await s.createSession(newSession("s1"));
		s.appendEvent("s1", "e", "x");
		await s.close();
		expect(eventsOnDisk(path)).toBe(1);
	});

	it("applies the cap at once to reads, and deletes whole batches on disk once they fall out of it", async () => {
		const path = join(dir, "cap.db");
		const s = store(path, { maxEventsPerSession: 100, flushIntervalMs: 60_000 });
		await s.createSession(newSession("s1"));
		for (let round = 0; round < 20; round++) {
			for (let i = 0; i < 50; i++) s.appendEvent("s1", "e", String(round * 50 + i + 1));
			await s.flush();
		}
		const events = await s.readEvents("s1", 0);
		expect(events.map((e) => e.id)).toEqual(Array.from({ length: 100 }, (_, i) => 901 + i));
		expect(events.map((e) => e.data)).toEqual(Array.from({ length: 100 }, (_, i) => String(901 + i)));
		expect(await s.oldestEventId("s1")).toBe(901);
		// On disk: at most the cap plus the trimming slack (a quarter of the cap) plus one batch.
		const onDisk = eventsOnDisk(path);
		expect(onDisk).toBeGreaterThanOrEqual(100);
		expect(onDisk).toBeLessThanOrEqual(100 + 25 + 50);
		// After a reopen the logical cap still holds.
		await s.close();
		const again = store(path, { maxEventsPerSession: 100 });
		expect(await again.oldestEventId("s1")).toBe(901);
		expect(await again.readEvents("s1", 0, 100_000)).toHaveLength(100);
	});

	it("interrupted status survives a restart and recovery runs once", async () => {
		const path = join(dir, "recover.db");
		const a = store(path);
		await a.createSession(newSession("s1"));
		await a.startRun("s1", "r1", 100);
		await a.close();
		const b = store(path);
		expect(await b.recoverInterrupted(500)).toEqual(["s1"]);
		await b.close();
		const c = store(path);
		expect(await c.getSession("s1")).toMatchObject({ status: "interrupted", interruptedAt: 500, currentRunId: "r1" });
		expect(await c.recoverInterrupted(900)).toEqual([]);
	});
});
