/**
 * `Idempotency-Key` on the branching routes (fork, rewind, regenerate, the edit of a user
 * message) against a real server: a repeat gets the first request's outcome (the same fork, the
 * same cut, the same run; its stream again with SSE) instead of a second fork, cut or run; the same
 * key on another request is 422; a refused request records nothing; keys survive a restart.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { openSqliteStore } from "../../../src/store/sqlite/index.js";
import type { SessionStore } from "../../../src/store/types.js";
import { createGateTool, type GateTool } from "../../helpers/gate-tool.js";
import { startServer, type TestServer } from "../../helpers/server.js";
import { openSse } from "../../helpers/sse.js";

const servers: TestServer[] = [];
const gates: GateTool[] = [];
const cleanups: (() => void)[] = [];
afterEach(async () => {
	for (const gate of gates.splice(0)) gate.release();
	for (const server of servers.splice(0)) await server.close();
	for (const cleanup of cleanups.splice(0)) cleanup();
});

function tempDb(): string {
	const dir = mkdtempSync(join(tmpdir(), "wheelhouse-branch-keys-"));
	cleanups.push(() => rmSync(dir, { recursive: true, force: true }));
	return join(dir, "wheelhouse.db");
}

async function serve(store?: SessionStore): Promise<{ server: TestServer; gate: GateTool }> {
	const gate = createGateTool();
	gates.push(gate);
	const server = await startServer({ ...(store ? { store } : {}), tools: [gate.tool] });
	servers.push(server);
	return { server, gate };
}

async function idle(server: TestServer, id: string): Promise<void> {
	await server.app.wheelhouse.sessions.get(id, null).waitForIdle();
}

/** A session with three user turns (6 messages: wh-0 … wh-5). */
async function threeTurns(server: TestServer): Promise<string> {
	const id: string = (await server.request("POST", "/v1/sessions", { body: {} })).body.id;
	for (const message of ["one", "two", "three"]) {
		expect((await server.request("POST", `/v1/sessions/${id}/prompt`, { body: { message } })).status).toBe(202);
		await idle(server, id);
	}
	return id;
}

function send(server: TestServer, method: string, path: string, body: unknown, key?: string) {
	return server.request(method, path, { body, headers: key ? { "idempotency-key": key } : {} });
}

const texts = async (server: TestServer, id: string): Promise<string[]> =>
	(await server.request("GET", `/v1/sessions/${id}/messages?limit=1000`)).body.messages.map((m: any) =>
		typeof m.content === "string" ? m.content : m.content[0].text,
	);

const runsOf = async (server: TestServer, id: string) =>
	(await server.app.wheelhouse.sessions.store.listRuns(id)) ?? [];

describe("Idempotency-Key on the branching routes", () => {
	it("regenerate sent twice with one key regenerates once; the repeat gets the same run (202 and its stream)", async () => {
		const { server } = await serve();
		const id = await threeTurns(server);
		const first = await send(server, "POST", `/v1/sessions/${id}/regenerate`, undefined, "regen-1");
		expect(first.status, JSON.stringify(first.body)).toBe(202);
		await idle(server, id);
		const repeat = await send(server, "POST", `/v1/sessions/${id}/regenerate`, undefined, "regen-1");
		expect(repeat.status).toBe(202);
		expect(repeat.headers.get("idempotent-replayed")).toBe("true");
		expect(repeat.body).toEqual(first.body);
		// One regenerate: one superseded branch, one run more than the three turns.
		expect((await server.request("GET", `/v1/sessions/${id}/branches`)).body.branches).toHaveLength(1);
		expect(await runsOf(server, id)).toHaveLength(4);

		// Asked for as SSE, the repeat streams that run from its first event: the cut.
		const replay = await openSse(`${server.url}/v1/sessions/${id}/regenerate`, {
			method: "POST",
			headers: { "idempotency-key": "regen-1" },
		});
		await replay.waitForEnd();
		expect(replay.response.headers.get("idempotent-replayed")).toBe("true");
		expect(replay.events[0]).toMatchObject({ id: first.body.firstEventId, event: "transcript_rewound" });
		expect(replay.events.at(-1)?.event).toBe("agent_end");
		expect(await runsOf(server, id)).toHaveLength(4);

		// A new key is a new request.
		expect((await send(server, "POST", `/v1/sessions/${id}/regenerate`, undefined, "regen-2")).status).toBe(202);
		await idle(server, id);
		expect((await server.request("GET", `/v1/sessions/${id}/branches`)).body.branches).toHaveLength(2);
	});

	it("a regenerate repeated while its run is going re-attaches to it: the same events, live to its end", async () => {
		const { server, gate } = await serve();
		const id: string = (await server.request("POST", "/v1/sessions", { body: {} })).body.id;
		// The last user message calls the gate tool: its regenerate waits at the gate too.
		expect(
			(await send(server, "POST", `/v1/sessions/${id}/prompt`, { message: "/tool wait_for_gate {}" })).status,
		).toBe(202);
		await gate.started(1);
		gate.release();
		await idle(server, id);
		const headers = { "idempotency-key": "regen-live" };
		const first = await openSse(`${server.url}/v1/sessions/${id}/regenerate`, { method: "POST", headers });
		await gate.started(2);
		const repeat = await openSse(`${server.url}/v1/sessions/${id}/regenerate`, { method: "POST", headers });
		await repeat.waitForType("tool_execution_start");
		gate.release();
		await first.waitForEnd();
		await repeat.waitForEnd();
		expect(repeat.response.headers.get("idempotent-replayed")).toBe("true");
		expect(repeat.types()[0]).toBe("transcript_rewound");
		expect(repeat.types().at(-1)).toBe("agent_end");
		const logged = (ids: (number | undefined)[]) => ids.filter((n) => n !== undefined);
		expect(logged(repeat.ids())).toEqual(logged(first.ids()));
		expect(gate.calls).toBe(2);
		expect(await runsOf(server, id)).toHaveLength(2);
	});

	it("an edit sent twice with one key edits once; the same key on another message or text is 422", async () => {
		const { server } = await serve();
		const id = await threeTurns(server);
		const first = await send(server, "PATCH", `/v1/sessions/${id}/messages/wh-2`, { content: "TWO" }, "edit-1");
		expect(first.status, JSON.stringify(first.body)).toBe(202);
		await idle(server, id);
		const repeat = await send(server, "PATCH", `/v1/sessions/${id}/messages/wh-2`, { content: "TWO" }, "edit-1");
		expect(repeat.status).toBe(202);
		expect(repeat.body.runId).toBe(first.body.runId);
		expect(await texts(server, id)).toEqual(["one", "one", "TWO", "TWO"]);
		expect((await server.request("GET", `/v1/sessions/${id}/branches`)).body.branches).toHaveLength(1);

		for (const [path, body] of [
			[`/v1/sessions/${id}/messages/wh-2`, { content: "two!" }],
			[`/v1/sessions/${id}/messages/wh-0`, { content: "TWO" }],
		] as const) {
			const reused = await send(server, "PATCH", path, body, "edit-1");
			expect(reused.status, JSON.stringify(reused.body)).toBe(422);
			expect(reused.body.error.code).toBe("IDEMPOTENCY_KEY_REUSED");
		}
		const otherRoute = await send(server, "POST", `/v1/sessions/${id}/regenerate`, undefined, "edit-1");
		expect(otherRoute.status).toBe(422);
		expect(otherRoute.body.error.message).toContain("PATCH .../messages/:messageId");
		expect(await texts(server, id)).toEqual(["one", "one", "TWO", "TWO"]);
	});

	it("a rewind sent twice with one key cuts once; the repeat gets the first answer, its branch included", async () => {
		const { server } = await serve();
		const id = await threeTurns(server);
		const first = await send(server, "POST", `/v1/sessions/${id}/rewind`, { toMessageId: "wh-1" }, "rw-1");
		expect(first.status, JSON.stringify(first.body)).toBe(200);
		expect(first.body.branch.messageCount).toBe(4);
		const repeat = await send(server, "POST", `/v1/sessions/${id}/rewind`, { toMessageId: "wh-1" }, "rw-1");
		expect(repeat.status).toBe(200);
		expect(repeat.headers.get("idempotent-replayed")).toBe("true");
		expect(repeat.body).toEqual(first.body);
		// Without the key the same body is a new rewind: to the last message, it cuts nothing.
		const again = await send(server, "POST", `/v1/sessions/${id}/rewind`, { toMessageId: "wh-1" });
		expect(again.body.runId).not.toBe(first.body.runId);
		expect(again.body.branch.messageCount).toBe(0);
		expect((await server.request("GET", `/v1/sessions/${id}/branches`)).body.branches).toHaveLength(1);

		const reused = await send(server, "POST", `/v1/sessions/${id}/rewind`, { toMessageId: "wh-0" }, "rw-1");
		expect(reused.status).toBe(422);
		expect(await texts(server, id)).toEqual(["one", "one"]);
	});

	it("a fork sent twice with one key makes one session; the repeat answers the same 201", async () => {
		const { server } = await serve();
		const id = await threeTurns(server);
		const first = await send(server, "POST", `/v1/sessions/${id}/fork`, { atMessageId: "wh-3" }, "fork-1");
		expect(first.status, JSON.stringify(first.body)).toBe(201);
		const repeat = await send(server, "POST", `/v1/sessions/${id}/fork`, { atMessageId: "wh-3" }, "fork-1");
		expect(repeat.status).toBe(201);
		expect(repeat.headers.get("idempotent-replayed")).toBe("true");
		expect(repeat.body.id).toBe(first.body.id);
		const forks = await server.request("GET", `/v1/sessions?metadata.wheelhouse.forkedFrom=${id}`);
		expect(forks.body.sessions.map((s: any) => s.id)).toEqual([first.body.id]);
		const reused = await send(server, "POST", `/v1/sessions/${id}/fork`, { atMessageId: "wh-1" }, "fork-1");
		expect(reused.status).toBe(422);
		expect(reused.body.error.message).toContain("another body");
	});

	it("records nothing for a refused request: regenerate refused while a run is active works with its key after", async () => {
		const { server, gate } = await serve();
		const id = await threeTurns(server);
		const running = await send(server, "POST", `/v1/sessions/${id}/prompt`, { message: "/tool wait_for_gate {}" });
		expect(running.status).toBe(202);
		await gate.started();
		const busy = await send(server, "POST", `/v1/sessions/${id}/regenerate`, undefined, "after-busy");
		expect(busy.status).toBe(409);
		expect(busy.body.error.code).toBe("AGENT_BUSY");
		gate.release();
		await idle(server, id);
		const later = await send(server, "POST", `/v1/sessions/${id}/regenerate`, undefined, "after-busy");
		expect(later.status, JSON.stringify(later.body)).toBe(202);
		expect(later.headers.get("idempotent-replayed")).toBeNull();
		expect(later.body.runId).not.toBe(running.body.runId);
	});

	it("honours the keys after a restart on the same SQLite file", async () => {
		const path = tempDb();
		const store = openSqliteStore({ path });
		const before = await serve(store);
		const id = await threeTurns(before.server);
		const regen = await send(before.server, "POST", `/v1/sessions/${id}/regenerate`, undefined, "r");
		await idle(before.server, id);
		const rewind = await send(before.server, "POST", `/v1/sessions/${id}/rewind`, { toMessageId: "wh-3" }, "w");
		const fork = await send(before.server, "POST", `/v1/sessions/${id}/fork`, {}, "f");
		const edit = await send(before.server, "PATCH", `/v1/sessions/${id}/messages/wh-2`, { content: "2" }, "e");
		await idle(before.server, id);
		await before.server.close();
		store.close();

		const reopened = openSqliteStore({ path });
		cleanups.unshift(() => reopened.close());
		const { server } = await serve(reopened);
		const runs = (await runsOf(server, id)).length;
		expect((await send(server, "POST", `/v1/sessions/${id}/regenerate`, undefined, "r")).body).toEqual(regen.body);
		expect((await send(server, "POST", `/v1/sessions/${id}/rewind`, { toMessageId: "wh-3" }, "w")).body).toEqual(
			rewind.body,
		);
		expect((await send(server, "POST", `/v1/sessions/${id}/fork`, {}, "f")).body).toEqual(fork.body);
		expect((await send(server, "PATCH", `/v1/sessions/${id}/messages/wh-2`, { content: "2" }, "e")).body).toEqual(
			edit.body,
		);
		expect((await runsOf(server, id)).length).toBe(runs);
		expect(await texts(server, id)).toEqual(["one", "one", "2", "2"]);
	});
});
