/**
 * A session evicted from memory also leaves the SQLite store's working set (its write state), so a
 * server that runs many sessions over its life keeps write state only for those in memory; the
 * next request brings it back, and its runs write where the last left off.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { openSqliteStore, type SqliteSessionStore } from "../../../src/store/sqlite/index.js";
import { startServer, type TestServer } from "../../helpers/server.js";
import { openSse, promptSse } from "../../helpers/sse.js";

let dir: string | undefined;
let store: SqliteSessionStore | undefined;
let server: TestServer | undefined;
afterEach(async () => {
	await server?.close();
	await store?.close();
	if (dir) rmSync(dir, { recursive: true, force: true });
	server = store = dir = undefined;
});

describe("eviction and the store's working set", () => {
	it("an evicted session leaves the working set; a request brings it back and its next run's ids go on", async () => {
		dir = mkdtempSync(path.join(tmpdir(), "wh-evict-"));
		store = openSqliteStore({ path: path.join(dir, "wheelhouse.db") });
		server = await startServer({ store });
		const sessions = server.app.wheelhouse.sessions;
		const ids: string[] = [];
		for (let i = 0; i < 3; i++) {
			const id = (await server.request("POST", "/v1/sessions", { body: {} })).body.id as string;
			await (await promptSse(server.url, id, { message: `run ${i}` })).waitForEnd();
			ids.push(id);
		}
		// One kept in memory by a reader.
		const watched = await openSse(`${server.url}/v1/sessions/${ids[2]}/events`);
		await watched.waitForType("session_snapshot");
		const lastIds = ids.map((id) => store!.lastEventId(id)!);
		for (const last of lastIds) expect(last).toBeGreaterThan(0);

		expect(sessions.evictIdle(0)).toBe(2);
		await expect.poll(() => store!.lastEventId(ids[0]!)).toBeUndefined();
		await expect.poll(() => store!.lastEventId(ids[1]!)).toBeUndefined();
		// Outside the working set a write does nothing: the session is not this process's to write now.
		expect(store.appendEvent(ids[0]!, "stray", "{}")).toBeUndefined();
		expect(store.lastEventId(ids[2]!)).toBe(lastIds[2]);

		// A request brings it back; a run writes after what the first left.
		const again = await promptSse(server.url, ids[0]!, { message: "run again" });
		await again.waitForEnd();
		const newIds = again.events.filter((e) => e.id !== undefined).map((e) => e.id as number);
		expect(newIds.length).toBeGreaterThan(0);
		expect(Math.min(...newIds)).toBeGreaterThan(lastIds[0]!);
		const messages = (await server.request("GET", `/v1/sessions/${ids[0]}/messages`)).body.messages;
		expect(messages.map((m: { content: { text: string }[] }) => m.content[0]!.text)).toEqual([
			"run 0",
			"run 0",
			"run again",
			"run again",
		]);
		// The log has every event once, in order: the first run's, then the second's.
		const log = await openSse(`${server.url}/v1/sessions/${ids[0]}/events?after=0`);
		await log.waitFor((e) => e.event === "agent_end" && (e.id as number) > lastIds[0]!);
		const logged = log.events.filter((e) => e.id !== undefined).map((e) => e.id as number);
		expect(logged).toEqual([...new Set(logged)].sort((a, b) => a - b));
		expect(log.events.filter((e) => e.event === "agent_end")).toHaveLength(2);
		log.close();
		watched.close();
	});
});
