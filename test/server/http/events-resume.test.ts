import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { MessageAssembler } from "../../../src/client/message-assembler.js";
import { openSqliteStore, type SqliteSessionStore } from "../../../src/store/sqlite/index.js";
import { createGateTool, type GateTool } from "../../helpers/gate-tool.js";
import { startServer, type TestServer } from "../../helpers/server.js";
import { openSse, promptSse } from "../../helpers/sse.js";

let server: TestServer;
let gate: GateTool | undefined;
let sqlite: { store: SqliteSessionStore; dir: string } | undefined;
afterEach(async () => {
	gate?.release();
	gate = undefined;
	await server?.close();
	if (sqlite) {
		sqlite.store.close();
		rmSync(sqlite.dir, { recursive: true, force: true });
		sqlite = undefined;
	}
});

/** A SQLite store on a file in a new temp folder (closed and removed after the test). */
function sqliteStore(): SqliteSessionStore {
	const dir = mkdtempSync(path.join(tmpdir(), "wh-events-resume-"));
	sqlite = { store: openSqliteStore({ path: path.join(dir, "wheelhouse.db") }), dir };
	return sqlite.store;
}

async function newSession(): Promise<string> {
	return (await server.request("POST", "/v1/sessions", { body: {} })).body.id;
}

const eventsUrl = (id: string, query = "") => `${server.url}/v1/sessions/${id}/events${query}`;

describe("GET /events", () => {
	it("three subscribers get identical streams", async () => {
		server = await startServer({ config: { fauxDelayMs: 1 } });
		const id = await newSession();
		const subs = await Promise.all([1, 2, 3].map(() => openSse(eventsUrl(id))));
		await Promise.all(subs.map((s) => s.waitForType("session_snapshot")));
		await server.request("POST", `/v1/sessions/${id}/prompt`, { body: { message: "a b c d e f g h i j" } });
		await Promise.all(subs.map((s) => s.waitForType("agent_end")));
		const shape = (s: (typeof subs)[0]) => s.events.map((e) => [e.id, e.event, JSON.stringify(e.data)]);
		// Snapshots may differ only if taken at different times; they were all taken before the run.
		expect(shape(subs[1])).toEqual(shape(subs[0]));
		expect(shape(subs[2])).toEqual(shape(subs[0]));
		for (const s of subs) s.close();
	});

	// SQLite keeps a streaming message's deltas in memory only: a resume mid-message must still get them all.
	it.each(["memory", "sqlite"] as const)(
		"disconnect and resume with Last-Event-ID loses and duplicates nothing (%s store)",
		async (kind) => {
			server = await startServer({
				...(kind === "sqlite" ? { store: sqliteStore() } : {}),
				config: { fauxDelayMs: 2 },
			});
			const id = await newSession();
			const words = Array.from({ length: 60 }, (_, i) => `w${i}`).join(" ");
			const reference = await openSse(eventsUrl(id));
			await reference.waitForType("session_snapshot");
			const first = await promptSse(server.url, id, { message: words });
			// Disconnect after a few deltas, mid-message.
			await first.waitFor((e) => e.event === "message_update" && e.data.assistantMessageEvent.delta === "w5 ");
			first.close();
			const seen = first.events.filter((e) => e.id !== undefined);
			const lastId = seen.at(-1)!.id!;
			const resumed = await openSse(eventsUrl(id), { headers: { "last-event-id": String(lastId) } });
			await resumed.waitForType("agent_end");
			await reference.waitForType("agent_end");
			const combined = [...seen, ...resumed.events];
			const refEvents = reference.events.filter((e) => e.event !== "session_snapshot");
			expect(combined.map((e) => e.id)).toEqual(refEvents.map((e) => e.id));
			expect(combined.map((e) => JSON.stringify(e.data))).toEqual(refEvents.map((e) => JSON.stringify(e.data)));
			// The client helper rebuilds the full answer from the two halves.
			const assembler = new MessageAssembler();
			for (const e of combined) assembler.apply(e.data);
			expect((assembler.message as any).content[0].text).toBe(words);

			// ?after= works the same way, and a resume at the end gets nothing old. By now the message has
			// ended: the SQLite store no longer has its deltas (the message_end carries the whole message).
			const viaQuery = await openSse(eventsUrl(id, `?after=${lastId}`));
			await viaQuery.waitForType("agent_end");
			const retained = kind === "memory" ? resumed.events : resumed.events.filter((e) => e.event !== "message_update");
			expect(viaQuery.ids()).toEqual(retained.map((e) => e.id));
			for (const s of [reference, resumed, viaQuery]) s.close();
		},
	);

	it("a late joiner gets a snapshot with the in-flight partial message, then the live deltas", async () => {
		gate = createGateTool();
		server = await startServer({ tools: [gate.tool] });
		const id = await newSession();
		const run = await promptSse(server.url, id, { message: "/tool wait_for_gate {}" });
		await gate.started();
		const late = await openSse(eventsUrl(id));
		const snap = await late.waitForType("session_snapshot");
		expect(snap.data.state.status).toBe("running");
		expect(snap.data.state.pendingToolCalls).toHaveLength(1);
		expect(snap.id).toBe(snap.data.lastEventId);
		expect(snap.data.reset).toBeUndefined();
		gate.release();
		await run.waitForEnd();
		await late.waitForType("agent_end");
		// Live events after the snapshot continue the id sequence exactly.
		const ids = late.ids();
		for (let i = 1; i < ids.length; i++) expect(ids[i]).toBe(ids[i - 1] + 1);
		late.close();
	});

	it("a snapshot mid-message carries the partial message", async () => {
		server = await startServer({ config: { fauxDelayMs: 20 } });
		const id = await newSession();
		const run = await promptSse(server.url, id, { message: "alpha beta gamma delta epsilon zeta eta theta" });
		await run.waitFor((e) => e.event === "message_update" && e.data.assistantMessageEvent.delta === "beta ");
		const late = await openSse(eventsUrl(id));
		const snap = await late.waitForType("session_snapshot");
		expect(snap.data.streamingMessage.role).toBe("assistant");
		const assembler = new MessageAssembler();
		await late.waitForType("agent_end");
		for (const e of late.events) assembler.apply(e.data);
		expect(assembler.incomplete).toBe(false);
		expect((assembler.message as any).content[0].text).toBe("alpha beta gamma delta epsilon zeta eta theta");
		await run.waitForEnd();
		late.close();
	});

	it("an id older than the retained log gets a snapshot with reset: true", async () => {
		server = await startServer({ config: { eventRetention: 10 } });
		const id = await newSession();
		await (
			await promptSse(server.url, id, { message: "one two three four five six seven eight nine ten" })
		).waitForEnd();
		const old = await openSse(eventsUrl(id), { headers: { "last-event-id": "1" } });
		const snap = await old.waitForType("session_snapshot");
		expect(snap.data.reset).toBe(true);
		expect(snap.data.state.messageCount).toBe(2);
		const future = await openSse(eventsUrl(id), { headers: { "last-event-id": "999999" } });
		expect((await future.waitForType("session_snapshot")).data.reset).toBe(true);
		old.close();
		future.close();
	});

	it("a malformed Last-Event-ID or ?after= is a 400 INVALID_EVENT_ID", async () => {
		server = await startServer();
		const id = await newSession();
		for (const headers of [{ "last-event-id": "abc" }, { "last-event-id": "-1" }, { "last-event-id": "1.5" }]) {
			const res = await server.request("GET", `/v1/sessions/${id}/events`, { headers });
			expect(res.status).toBe(400);
			expect(res.body.error.code).toBe("INVALID_EVENT_ID");
		}
		const q = await server.request("GET", `/v1/sessions/${id}/events?after=x`);
		expect(q.status).toBe(400);
		expect(q.body.error.code).toBe("INVALID_EVENT_ID");
	});

	it("sends heartbeat comments when configured", async () => {
		server = await startServer({ config: { heartbeatMs: 20 } });
		const id = await newSession();
		const s = await openSse(eventsUrl(id));
		await s.waitForType("session_snapshot");
		await new Promise<void>((resolve, reject) => {
			const t = setInterval(() => {
				if (s.comments.some((c) => c.includes("heartbeat"))) {
					clearInterval(t);
					resolve();
				}
			}, 5);
			setTimeout(() => reject(new Error("no heartbeat")), 3000);
		});
		s.close();
	});
});
