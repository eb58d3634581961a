/**
 * The SQLite store's log keeps a streamed message's deltas in memory only while the message streams
 * (`deltaRetention: "while-streaming"`). A resume mid-message is covered in events-resume.test.ts; here:
 * a client that resumes after the message ended gets its `message_end`, which carries the whole
 * message, so the client helper still ends with the full answer; and what a client sees is on disk.
 * A real server on an ephemeral port, a real database file.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import Database from "better-sqlite3";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { MessageAssembler } from "../../../src/client/message-assembler.js";
import { openSqliteStore, type SqliteSessionStore } from "../../../src/store/sqlite/index.js";
import { startServer, type TestServer } from "../../helpers/server.js";
import { openSse, promptSse, type SseEvent } from "../../helpers/sse.js";

let dir: string;
let store: SqliteSessionStore;
let server: TestServer;
beforeEach(async () => {
	dir = mkdtempSync(path.join(tmpdir(), "wh-resume-sqlite-"));
	store = openSqliteStore({ path: path.join(dir, "wheelhouse.db") });
	server = await startServer({ store, config: { fauxDelayMs: 2 } });
});
afterEach(async () => {
	await server.close();
	store.close();
	rmSync(dir, { recursive: true, force: true });
});

const words = Array.from({ length: 60 }, (_, i) => `w${i}`).join(" ");
const eventsUrl = (id: string) => `${server.url}/v1/sessions/${id}/events`;
const assistantText = (events: SseEvent[]) => {
	const assembler = new MessageAssembler();
	for (const e of events) assembler.apply(e.data);
	return (assembler.message as any).content[0].text;
};

describe("durability before delivery on the SQLite store", () => {
	it("a client sees the response to its prompt, an answer's message_end and the run's agent_end only once they are on disk", async () => {
		const dbPath = path.join(dir, "wheelhouse.db");
		const onDisk = () => {
			const db = new Database(dbPath, { readonly: true });
			try {
				return {
					runs: db.prepare("SELECT count(*) FROM runs").pluck().get(),
					prompts: db.prepare('SELECT count(*) FROM messages WHERE data LIKE \'%"role":"user"%\'').pluck().get(),
					answers: db.prepare('SELECT count(*) FROM messages WHERE data LIKE \'%"role":"assistant"%\'').pluck().get(),
					ended: db.prepare("SELECT count(*) FROM runs WHERE ended_at IS NOT NULL").pluck().get(),
				};
			} finally {
				db.close();
			}
		};
		const id = (await server.request("POST", "/v1/sessions", { body: {} })).body.id;
		for (let round = 1; round <= 3; round++) {
			const stream = await promptSse(server.url, id, { message: `round ${round} of words` });
			// The response head has arrived: the run and its prompt are committed.
			expect(onDisk()).toMatchObject({ runs: round, prompts: round });
			const end = await stream.waitFor((e) => e.event === "message_end" && e.data.message.role === "assistant");
			expect(end.data.message.content[0].text).toBe(`round ${round} of words`);
			expect(onDisk().answers).toBe(round);
			await stream.waitForType("agent_end");
			expect(onDisk().ended).toBe(round);
			stream.close();
		}
	});
});

describe("durability of a prompt answered with 202 on the SQLite store", () => {
	it("the run and its prompt are on disk when the 202 arrives", async () => {
		const dbPath = path.join(dir, "wheelhouse.db");
		const id = (await server.request("POST", "/v1/sessions", { body: {} })).body.id;
		const accepted = await server.request("POST", `/v1/sessions/${id}/prompt`, { body: { message: "hello there" } });
		expect(accepted.status).toBe(202);
		const db = new Database(dbPath, { readonly: true });
		try {
			expect(db.prepare("SELECT id FROM runs").pluck().all()).toEqual([accepted.body.runId]);
			expect(db.prepare("SELECT data FROM messages").pluck().all()).toEqual([expect.stringContaining("hello there")]);
		} finally {
			db.close();
		}
	});
});

describe("resume on the SQLite store", () => {
	it("after the message ended: its message_end (the whole message) instead of the deltas", async () => {
		const id = (await server.request("POST", "/v1/sessions", { body: {} })).body.id;
		const first = await promptSse(server.url, id, { message: words });
		await first.waitFor((e) => e.event === "message_update" && e.data.assistantMessageEvent.delta === "w5 ");
		first.close();
		const seen = first.events.filter((e) => e.id !== undefined);
		// Wait for the run to finish while disconnected.
		for (let i = 0; i < 200; i++) {
			if ((await server.request("GET", `/v1/sessions/${id}`)).body.status === "idle") break;
			await new Promise((r) => setTimeout(r, 10));
		}
		const resumed = await openSse(eventsUrl(id), { headers: { "last-event-id": String(seen.at(-1)!.id) } });
		await resumed.waitForType("agent_end");
		resumed.close();
		const types = resumed.events.map((e) => e.event);
		expect(types).not.toContain("message_update");
		expect(types).toEqual(["message_end", "turn_end", "agent_end"]);
		const ids = resumed.events.map((e) => e.id!);
		expect(ids[0]).toBeGreaterThan(seen.at(-1)!.id!);
		expect([...ids].sort((a, b) => a - b)).toEqual(ids);
		expect(assistantText([...seen, ...resumed.events])).toBe(words);
	});
});
