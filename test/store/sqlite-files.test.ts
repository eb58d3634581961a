/**
 * What the SQLite store does with the file it is given: creates it with its folder, refuses a
 * corrupt, foreign or newer file without touching it, and migrates an old schema.
 */
import { createHash } from "node:crypto";
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import Database from "better-sqlite3";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { openSqliteStore } from "../../src/store/sqlite/index.js";
import { LATEST_SCHEMA_VERSION } from "../../src/store/sqlite/migrations.js";
import { newSession } from "./contract.js";

let dir: string;
beforeEach(() => {
	dir = mkdtempSync(join(tmpdir(), "wheelhouse-store-files-"));
});
afterEach(() => rmSync(dir, { recursive: true, force: true }));

const sha = (path: string) => createHash("sha256").update(readFileSync(path)).digest("hex");

describe("SQLite store files", () => {
	it("creates the database and its missing folders, in WAL mode, at the latest schema version", async () => {
		const path = join(dir, "nested", "data", "wheelhouse.db");
		const store = openSqliteStore({ path });
		await store.createSession(newSession("s1"));
		await store.close();
		expect(existsSync(path)).toBe(true);
		const db = new Database(path, { readonly: true });
		expect(db.pragma("journal_mode", { simple: true })).toBe("wal");
		expect(db.prepare("SELECT version FROM schema_version ORDER BY version").pluck().all()).toEqual(
			Array.from({ length: LATEST_SCHEMA_VERSION }, (_, i) => i + 1),
		);
		db.close();
	});

	it("refuses a file of garbage with a clear message and leaves it untouched", async () => {
		const path = join(dir, "garbage.db");
		writeFileSync(path, Buffer.from(Array.from({ length: 8192 }, (_, i) => (i * 7919) % 251)));
		const before = sha(path);
		expect(() => openSqliteStore({ path })).toThrow(/corrupt or not an SQLite database.*refusing to overwrite/);
		expect(sha(path)).toBe(before);
		expect(existsSync(`${path}-wal`)).toBe(false);
	});

	it("refuses a database whose pages were damaged (integrity check)", async () => {
		const path = join(dir, "damaged.db");
		const store = openSqliteStore({ path });
		await store.createSession(newSession("s1"));
		for (let i = 0; i < 2000; i++) store.appendEvent("s1", "message_update", `{"delta":"${"x".repeat(80)}","i":${i}}`);
		await store.close();
		const bytes = readFileSync(path);
		const pageSize = bytes.readUInt16BE(16);
		expect(bytes.length).toBeGreaterThan(pageSize * 8);
		// Overwrite pages 3..6 (b-tree pages of the tables) with a pattern that is not a valid page.
		bytes.fill(0x5a, pageSize * 2, pageSize * 6);
		writeFileSync(path, bytes);
		const before = sha(path);
		expect(() => openSqliteStore({ path })).toThrow(/cannot open session database .*refusing to overwrite/);
		expect(sha(path)).toBe(before);
	});

	it("refuses an SQLite file that is not a Wheelhouse store", async () => {
		const path = join(dir, "foreign.db");
		const db = new Database(path);
		db.exec("CREATE TABLE customers (id INTEGER PRIMARY KEY, name TEXT); INSERT INTO customers VALUES (1, 'a')");
		db.close();
		const before = sha(path);
		expect(() => openSqliteStore({ path })).toThrow(/not a Wheelhouse store.*customers.*refusing/);
		expect(sha(path)).toBe(before);
	});

	it("refuses a database written by a newer version, naming both versions", async () => {
		const path = join(dir, "newer.db");
		openSqliteStore({ path }).close();
		const db = new Database(path);
		db.prepare("INSERT INTO schema_version VALUES (?, 'from the future', 0)").run(LATEST_SCHEMA_VERSION + 7);
		db.close();
		const before = sha(path);
		expect(() => openSqliteStore({ path })).toThrow(
			new RegExp(`schema version ${LATEST_SCHEMA_VERSION + 7}, newer than .*\\(${LATEST_SCHEMA_VERSION}\\).*upgrade`),
		);
		expect(sha(path)).toBe(before);
	});

	it("migrates a version-1 database (immutable fixture) and keeps all its data", async () => {
		const path = join(dir, "v1.db");
		const db = new Database(path);
		db.exec(readFileSync(join(import.meta.dirname, "fixtures", "schema-v1.sql"), "utf8"));
		db.close();

		const store = openSqliteStore({ path });
		const rec = await store.getSession("v1-session");
		expect(rec).toMatchObject({
			ownerId: "key-1",
			model: "faux/echo",
			systemPrompt: "old prompt",
			thinkingLevel: "low",
			tools: ["calculate"],
			toolExecution: "sequential",
			steeringMode: "all",
			followUpMode: "one-at-a-time",
			metadata: { from: "v1" },
			status: "running",
			currentRunId: "v1-run",
			messageCount: 2,
			lastEventId: 3,
		});
		expect(rec?.usage.totalTokens).toBe(7);
		expect((await store.listMessages("v1-session"))?.messages.map((m) => m.role)).toEqual(["user", "assistant"]);
		expect((await store.readEvents("v1-session", 1)).map((e) => e.type)).toEqual(["turn_start", "message_start"]);
		expect(await store.listQueued("v1-session", "followUp")).toHaveLength(1);
		// v2 features work on migrated data.
		await store.openSession("v1-session");
		expect(store.appendEvent("v1-session", "message_update", "{}")).toBe(4);
		expect(
			await store.putPending({
				sessionId: "v1-session",
				toolCallId: "c",
				kind: "approval",
				payload: "{}",
				createdAt: 1,
			}),
		).toBe(true);
		// The v1 run was active: recovery interrupts it and accounts the assistant message of that run.
		expect(await store.recoverInterrupted(1700000009000)).toEqual(["v1-session"]);
		expect((await store.getSession("v1-session"))?.usage.totalTokens).toBe(9);
		await store.close();

		const check = new Database(path, { readonly: true });
		expect(check.prepare("SELECT version FROM schema_version ORDER BY version").pluck().all()).toEqual(
			Array.from({ length: LATEST_SCHEMA_VERSION }, (_, i) => i + 1),
		);
		check.close();
	});

	it("opens a version-2 database (immutable fixture): batches decode, ids continue, nothing is lost", async () => {
		const path = join(dir, "v2.db");
		const db = new Database(path);
		db.exec(readFileSync(join(import.meta.dirname, "fixtures", "schema-v2.sql"), "utf8"));
		db.close();

		const store = openSqliteStore({ path });
		expect(await store.getSession("v2-session")).toMatchObject({
			ownerId: "key-2",
			systemPrompt: "v2 prompt",
			thinkingLevel: "medium",
			followUpMode: "all",
			metadata: { from: "v2" },
			status: "running",
			currentRunId: "v2-run",
			messageCount: 1,
			lastEventId: 3,
		});
		expect(await store.readEvents("v2-session", 0)).toEqual([
			{ id: 1, type: "agent_start", data: '{"type":"agent_start"}', createdAt: 1_750_000_000_101 },
			{
				id: 2,
				type: "message_update",
				data: '{"type":"message_update","assistantMessageEvent":{"type":"text_delta","contentIndex":0,"delta":"héllo\\n😀"}}',
				createdAt: 1_750_000_000_102,
			},
			{ id: 3, type: "message_end", data: '{"type":"message_end"}', createdAt: 1_750_000_000_103 },
		]);
		expect((await store.listQueued("v2-session")).map((q) => q.kind)).toEqual(["steer"]);
		expect((await store.listPending("v2-session")).map((p) => p.toolCallId)).toEqual(["call-1"]);
		await store.openSession("v2-session");
		expect(store.appendEvent("v2-session", "agent_end", "{}")).toBe(4);
		expect((await store.enqueue("v2-session", "followUp", { role: "user", content: "x", timestamp: 3 }, 1))?.id).toBe(
			2,
		);
		expect(await store.recoverInterrupted(1_750_000_009_000)).toEqual(["v2-session"]);
		await store.close();
	});

	it("migrates a version-2 database to the latest version: sessions get no client tools or policies and keep their config", async () => {
		const path = join(dir, "v2-to-v3.db");
		const db = new Database(path);
		db.exec(readFileSync(join(import.meta.dirname, "fixtures", "schema-v2.sql"), "utf8"));
		db.close();

		const store = openSqliteStore({ path });
		expect(await store.getSession("v2-session")).toMatchObject({
			systemPrompt: "v2 prompt",
			tools: ["calculate"],
			metadata: { from: "v2" },
			clientTools: [],
			toolApprovals: {},
		});
		// Declarations on a migrated session are stored like any config change.
		const spec = { name: "pick_color", description: "Pick a color" };
		await store.updateSession("v2-session", { clientTools: [spec], toolApprovals: { calculate: "always" } }, 1);
		await store.close();

		const check = new Database(path, { readonly: true });
		expect(check.prepare("SELECT max(version) FROM schema_version").pluck().get()).toBe(LATEST_SCHEMA_VERSION);
		const config = JSON.parse(check.prepare("SELECT config FROM sessions").pluck().get() as string);
		expect(config).toMatchObject({
			followUpMode: "all",
			metadata: { from: "v2" },
			clientTools: [spec],
			toolApprovals: { calculate: "always" },
		});
		check.close();
	});

	it("opens a version-3 database (immutable fixture): client tools and approval policies are there", async () => {
		const path = join(dir, "v3.db");
		const db = new Database(path);
		db.exec(readFileSync(join(import.meta.dirname, "fixtures", "schema-v3.sql"), "utf8"));
		db.close();

		const store = openSqliteStore({ path });
		expect(await store.getSession("v3-session")).toMatchObject({
			ownerId: "key-3",
			systemPrompt: "v3 prompt",
			metadata: { from: "v3" },
			clientTools: [
				{
					name: "pick_color",
					description: "Ask the user to pick a color",
					parameters: { type: "object", properties: { question: { type: "string" } }, required: ["question"] },
					approval: "always",
				},
			],
			toolApprovals: { calculate: "always", "files__*": "never" },
			status: "running",
			lastEventId: 2,
		});
		expect((await store.readEvents("v3-session", 0)).map((e) => e.type)).toEqual([
			"agent_start",
			"tool_execution_start",
		]);
		expect((await store.listPending("v3-session")).map((p) => p.toolCallId)).toEqual(["call-3"]);
		expect(await store.recoverInterrupted(1_760_000_009_000)).toEqual(["v3-session"]);
		await store.close();
	});

	it("opens a version-4 database (immutable fixture): batches skip the ids of unwritten deltas", async () => {
		const path = join(dir, "v4.db");
		const db = new Database(path);
		db.exec(readFileSync(join(import.meta.dirname, "fixtures", "schema-v4.sql"), "utf8"));
		db.close();

		const store = openSqliteStore({ path });
		expect(await store.getSession("v4-session")).toMatchObject({
			ownerId: "key-4",
			systemPrompt: "v4 prompt",
			lastEventId: 7,
		});
		expect((await store.readEvents("v4-session", 0)).map((e) => [e.id, e.type])).toEqual([
			[1, "agent_start"],
			[2, "message_start"],
			[6, "message_end"],
			[7, "agent_end"],
		]);
		expect((await store.readEvents("v4-session", 3)).map((e) => e.id)).toEqual([6, 7]);
		// v5 rebuilt the transcript and batch tables: their rows came along.
		expect((await store.listMessages("v4-session"))?.messages).toEqual([
			{ role: "user", content: "hi", timestamp: 1_764_000_000_001 },
		]);
		await store.openSession("v4-session");
		store.appendMessages("v4-session", [{ role: "user", content: "again", timestamp: 2 }]);
		expect(await store.countMessages("v4-session")).toBe(2);
		expect(store.appendEvent("v4-session", "agent_start", "{}")).toBe(8);
		await store.close();
	});

	it("opens a version-5 database (immutable fixture): events refer to transcript messages", async () => {
		const path = join(dir, "v5.db");
		const db = new Database(path);
		db.exec(readFileSync(join(import.meta.dirname, "fixtures", "schema-v5.sql"), "utf8"));
		db.close();

		const store = openSqliteStore({ path });
		expect(await store.getSession("v5-session")).toMatchObject({ ownerId: "key-5", status: "idle", messageCount: 2 });
		const messages = (await store.listMessages("v5-session"))?.messages ?? [];
		expect(messages.map((m) => m.role)).toEqual(["user", "assistant"]);
		const events = await store.readEvents("v5-session", 0);
		expect(events.map((e) => [e.id, e.type])).toEqual([
			[1, "agent_start"],
			[2, "message_start"],
			[3, "message_end"],
			[4, "message_start"],
			[8, "message_end"],
			[9, "agent_end"],
		]);
		// The references read back as the messages themselves.
		expect(JSON.parse(events[2]?.data ?? "")).toEqual({ type: "message_end", message: messages[0] });
		expect(JSON.parse(events[4]?.data ?? "")).toEqual({ type: "message_end", message: messages[1] });
		expect(JSON.parse(events[5]?.data ?? "")).toEqual({ type: "agent_end", messages });
		await store.openSession("v5-session");
		expect(store.appendEvent("v5-session", "agent_start", "{}")).toBe(10);
		await store.close();
	});

	it("opens a version-8 database (immutable fixture): the webhook outbox is there and works on", async () => {
		const path = join(dir, "v8.db");
		const db = new Database(path);
		db.exec(readFileSync(join(import.meta.dirname, "fixtures", "schema-v8.sql"), "utf8"));
		db.close();

		const store = openSqliteStore({ path });
		// Migrated to version 9: the session has the default onInterrupt policy, written out.
		expect((await store.getSession("v8-session"))?.onInterrupt).toBe("continue");
		const listed = await store.listWebhooks();
		expect(listed.map((d) => [d.id, d.status, d.attempts, d.lastError])).toEqual([
			["msg_v8delivered", "delivered", 1, null],
			["msg_v8pending", "pending", 2, "HTTP 503"],
		]);
		expect(JSON.parse(listed[1]?.payload ?? "")).toMatchObject({
			type: "run.completed",
			data: { sessionId: "v8-session" },
		});
		expect(await store.claimWebhooks(1_767_000_019_999, 10, 1_767_000_030_000)).toEqual([]);
		expect((await store.claimWebhooks(1_767_000_020_000, 10, 1_767_000_030_000)).map((d) => d.id)).toEqual([
			"msg_v8pending",
		]);
		expect(
			await store.settleWebhook("msg_v8pending", { status: "delivered", attempts: 3, at: 1_767_000_020_100 }),
		).toBe(true);
		expect(await store.pruneWebhooks(1_767_000_020_101)).toBe(2);
		await store.close();
	});

	it("opens a version-9 database (immutable fixture): the onInterrupt policies are there; recovery of one session", async () => {
		const path = join(dir, "v9.db");
		const db = new Database(path);
		db.exec(readFileSync(join(import.meta.dirname, "fixtures", "schema-v9.sql"), "utf8"));
		db.close();

		const store = openSqliteStore({ path });
		expect((await store.getSession("v9-stop"))?.onInterrupt).toBe("stop");
		expect((await store.getSession("v9-continue"))?.onInterrupt).toBe("continue");
		// Recovery limited to other sessions leaves this one running.
		expect(await store.recoverInterrupted(1_768_000_009_000, undefined, ["v9-continue"])).toEqual([]);
		expect((await store.getSession("v9-stop"))?.status).toBe("running");
		expect(await store.recoverInterrupted(1_768_000_009_000, undefined, ["v9-stop"])).toEqual(["v9-stop"]);
		expect(await store.getSession("v9-stop")).toMatchObject({
			status: "interrupted",
			interruptedAt: 1_768_000_009_000,
		});
		const patched = await store.updateSession("v9-stop", { onInterrupt: "continue" }, 1_768_000_009_001);
		expect(patched?.onInterrupt).toBe("continue");
		await store.close();
	});

	it("migrates a version-10 database (immutable fixture): its sessions have no tenant and stay their owner's alone", async () => {
		const path = join(dir, "v10-tenants.db");
		const db = new Database(path);
		db.exec(readFileSync(join(import.meta.dirname, "fixtures", "schema-v10.sql"), "utf8"));
		db.close();

		const store = openSqliteStore({ path });
		const old = await store.getSession("v10-responses");
		expect({ ownerId: old?.ownerId, tenant: old?.tenant, visibility: old?.visibility }).toEqual({
			ownerId: "owner-v10",
			tenant: null,
			visibility: "owner",
		});
		// Another caller, even of a tenant, does not list it; its owner does.
		expect((await store.listSessions({ ownerId: "someone", tenant: "org-a" })).sessions).toEqual([]);
		expect((await store.listSessions({ ownerId: "owner-v10", tenant: null })).sessions.map((s) => s.id)).toContain(
			"v10-responses",
		);
		await store.close();
	});

	it("opens a version-10 database (immutable fixture): facade records are there, found by owner", async () => {
		const path = join(dir, "v10.db");
		const db = new Database(path);
		db.exec(readFileSync(join(import.meta.dirname, "fixtures", "schema-v10.sql"), "utf8"));
		db.close();

		const store = openSqliteStore({ path });
		expect(
			JSON.parse((await store.getFacadeRecord("v10-responses", "openai.response", "resp_v10"))?.data ?? "{}"),
		).toMatchObject({
			id: "resp_v10",
			status: "completed",
		});
		expect(
			(await store.findFacadeRecords("openai.tool_call", "call_v10", "owner-v10")).map((r) => r.sessionId),
		).toEqual(["v10-responses"]);
		expect(
			(await store.findFacadeRecords("openai.tool_call", "call_v10", "owner-other")).map((r) => r.sessionId),
		).toEqual(["v10-other"]);
		expect(await store.getFacadeRecord("v10-responses", "openai.item", "fc_v10")).toMatchObject({
			createdAt: 1_769_000_010_100,
		});
		await store.putFacadeRecords(
			"v10-responses",
			[{ kind: "openai.tool_call", key: "call_v10b", data: "" }],
			1_769_000_010_300,
		);
		expect(await store.deleteSession("v10-responses")).toBe(true);
		expect(await store.findFacadeRecords("openai.tool_call", "call_v10", "owner-v10")).toEqual([]);
		await store.close();
	});

	it("opens a version-6 database (immutable fixture): idempotency records are there", async () => {
		const path = join(dir, "v6.db");
		const db = new Database(path);
		db.exec(readFileSync(join(import.meta.dirname, "fixtures", "schema-v6.sql"), "utf8"));
		db.close();

		const store = openSqliteStore({ path });
		expect(await store.getIdempotencyKey("v6-session", "prompt-key-1")).toEqual({
			sessionId: "v6-session",
			key: "prompt-key-1",
			operation: "prompt",
			fingerprint: "5f0c1a2b3c4d5e6f",
			outcome: '{"kind":"run","runId":"0194b2c3-d4e5-7f60-8b7c-8d9e0f1a2b3c","firstEventId":1}',
			createdAt: 1_766_000_000_100,
		});
		expect(JSON.parse((await store.getIdempotencyKey("v6-session", "steer-key-1"))?.outcome ?? "")).toMatchObject({
			kind: "response",
			status: 202,
			body: { status: "queued", queue: "steer", queuedId: 1 },
		});
		expect((await store.listQueued("v6-session")).map((q) => q.id)).toEqual([1]);
		expect(await store.recoverInterrupted(1_766_000_009_000)).toEqual(["v6-session"]);
		// Records put now come after the frozen ones: the per-session cap removes the oldest first.
		const steer = await store.getIdempotencyKey("v6-session", "steer-key-1");
		if (steer) await store.putIdempotencyKey({ ...steer, key: "k3" });
		expect((await store.getIdempotencyKey("v6-session", "k3"))?.operation).toBe("steer");
		expect(await store.deleteIdempotencyKeys(1_766_000_000_101)).toBe(1);
		expect(await store.getIdempotencyKey("v6-session", "prompt-key-1")).toBeUndefined();
		await store.deleteSession("v6-session");
		await store.close();
		const check = new Database(path, { readonly: true });
		expect(check.prepare("SELECT count(*) FROM idempotency_keys").pluck().get()).toBe(0);
		check.close();
	});

	it("migrates a version-5 database to version 6: no idempotency records, and keys can be put", async () => {
		const path = join(dir, "v5-to-v6.db");
		const db = new Database(path);
		db.exec(readFileSync(join(import.meta.dirname, "fixtures", "schema-v5.sql"), "utf8"));
		db.close();

		const store = openSqliteStore({ path });
		expect(await store.getIdempotencyKey("v5-session", "k")).toBeUndefined();
		const record = {
			sessionId: "v5-session",
			key: "k",
			operation: "follow-up",
			fingerprint: "f",
			outcome: "{}",
			createdAt: 1,
		};
		expect(await store.putIdempotencyKey(record)).toBe(true);
		await store.close();
		const reopened = openSqliteStore({ path });
		expect(await reopened.getIdempotencyKey("v5-session", "k")).toEqual(record);
		await reopened.close();
	});
});
