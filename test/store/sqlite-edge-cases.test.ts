/**
 * SQLite store edge cases: the owner lock after a failed open, and oldestEventId with the streaming
 * window and trimmed batches (real database files, no mocks).
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { openSqliteStore, type SqliteSessionStore } from "../../src/store/sqlite/index.js";
import { newSession } from "./contract.js";

let dir: string;
const open: SqliteSessionStore[] = [];
beforeEach(() => {
	dir = mkdtempSync(join(tmpdir(), "wheelhouse-edge-"));
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

describe("owner lock", () => {
	it("a store whose constructor fails after taking the file does not keep owning it", async () => {
		const path = join(dir, "lock.db");
		// walLimitBytes is checked after openDatabase took the owner lock.
		expect(() => openSqliteStore({ path, walLimitBytes: -1 })).toThrow(/walLimitBytes/);
		// Retrying with a valid option in the same process must work: nothing holds the file.
		expect(() => store(path)).not.toThrow();
	});
});

describe("oldestEventId with the streaming window", () => {
	it("is the lowest id readEvents returns while a message streams after its start's batch was trimmed", async () => {
		const path = join(dir, "oldest.db");
		const s = store(path, { maxEventsPerSession: 100, flushIntervalMs: 60_000 });
		await s.createSession(newSession("s1"));
		s.appendEvent("s1", "message_start", "{}", 1); // 1
		await s.flush(); // batch [1..1] on disk
		for (let i = 0; i < 4998; i++) s.appendEvent("s1", "message_update", "{}", 2); // 2..4999 (memory only)
		s.appendEvent("s1", "queue_update", "{}", 3); // 5000: a steer while streaming
		await s.flush(); // batch [5000..5000]; trims batch [1..1] (floor 4900)
		for (let i = 0; i < 50; i++) s.appendEvent("s1", "message_update", "{}", 4); // 5001..5050
		const all = await s.readEvents("s1", 0, 1000);
		expect(all[0]?.id).toBe(4951); // the cap: the last 100 ids, all in the window
		// "Lowest retained id": a client at 4960 can be served from the window (readEvents says so)...
		expect((await s.readEvents("s1", 4960, 1000))[0]?.id).toBe(4961);
		// ...but oldestEventId says ids below 5000 are gone, so the server sends a reset snapshot.
		expect(await s.oldestEventId("s1")).toBe(4951);
	});

	it("after the message ended: a resume from inside it (within the cap) is retained", async () => {
		const path = join(dir, "oldest-ended.db");
		const s = store(path, { maxEventsPerSession: 100, flushIntervalMs: 60_000 });
		await s.createSession(newSession("s1"));
		s.appendEvent("s1", "message_start", "{}", 1); // 1
		await s.flush();
		for (let i = 0; i < 4998; i++) s.appendEvent("s1", "message_update", "{}", 2); // 2..4999
		s.appendEvent("s1", "message_end", "{}", 3); // 5000
		await s.flush(); // trims [1..1]
		// deltaRetention "while-streaming": "A client resuming from inside such a message gets the message_end".
		// A client whose Last-Event-ID is 4960 (within the last 100 ids) must not be treated as having missed events.
		const oldest = (await s.oldestEventId("s1")) as number;
		expect(4960).toBeGreaterThanOrEqual(oldest - 1);
	});
});
