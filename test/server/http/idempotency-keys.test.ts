/**
 * `Idempotency-Key` on prompt, continue, steer and follow-up, against a real server: a repeat
 * gets the first request's outcome (the same run's stream, the same 202), never a second run or a
 * second queued message; another request under the same key is refused; keys survive a restart.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { request as httpRequest, type IncomingMessage } from "node:http";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Type } from "@sinclair/typebox";
import { afterEach, describe, expect, it } from "vitest";
import type { AgentTool } from "../../../src/agent/types.js";
import { createMemoryStore } from "../../../src/store/memory.js";
import { openSqliteStore } from "../../../src/store/sqlite/index.js";
import type { SessionStore } from "../../../src/store/types.js";
import { createGateTool, type GateTool } from "../../helpers/gate-tool.js";
import { startServer, type TestServer } from "../../helpers/server.js";
import { openSse, type SseReader } from "../../helpers/sse.js";

const servers: TestServer[] = [];
const gates: GateTool[] = [];
const cleanups: (() => void)[] = [];
afterEach(async () => {
	for (const gate of gates.splice(0)) gate.release();
	for (const server of servers.splice(0)) await server.close();
	for (const cleanup of cleanups.splice(0)) cleanup();
});

async function setup(options: { store?: SessionStore; tools?: AgentTool<any>[] } = {}) {
	const gate = createGateTool();
	gates.push(gate);
	const store = options.store ?? createMemoryStore();
	const server = await startServer({ store, tools: [gate.tool, ...(options.tools ?? [])] });
	servers.push(server);
	const id: string = (await server.request("POST", "/v1/sessions", { body: {} })).body.id;
	return { server, store, gate, id };
}

function post(server: TestServer, path: string, body: unknown, key?: string, headers: Record<string, string> = {}) {
	return server.request("POST", path, { body, headers: { ...(key ? { "idempotency-key": key } : {}), ...headers } });
}

function promptSse(server: TestServer, id: string, body: unknown, headers: Record<string, string>): Promise<SseReader> {
	return openSse(`${server.url}/v1/sessions/${id}/prompt`, {
		method: "POST",
		body: JSON.stringify(body),
		headers: { "content-type": "application/json", ...headers },
	});
}

async function idle(server: TestServer, id: string): Promise<void> {
	await server.app.wheelhouse.sessions.get(id, null).waitForIdle();
}

const userMessages = async (store: SessionStore, id: string) =>
	((await store.listMessages(id))?.messages ?? []).filter((m) => m.role === "user").length;

describe("Idempotency-Key", () => {
	it("an SSE prompt sent twice with one key starts one run; the repeat re-attaches to that run's events from its start", async () => {
		const { server, store, gate, id } = await setup();
		const body = { message: "/tool wait_for_gate {}" };
		const first = await promptSse(server, id, body, { "idempotency-key": "prompt-1" });
		await gate.started();
		const repeat = await promptSse(server, id, body, { "idempotency-key": "prompt-1" });
		expect(repeat.response.headers.get("idempotent-replayed")).toBe("true");
		await repeat.waitForType("tool_execution_start");
		gate.release("done");
		await Promise.all([first.waitForEnd(), repeat.waitForEnd()]);

		expect(gate.calls).toBe(1);
		expect(await store.listRuns(id)).toHaveLength(1);
		expect(await userMessages(store, id)).toBe(1);
		// The very same events, ids included, from agent_start to agent_end.
		expect(repeat.events.map((e) => [e.id, e.event])).toEqual(first.events.map((e) => [e.id, e.event]));
		expect(repeat.events[0]?.event).toBe("agent_start");
		expect(repeat.events.at(-1)?.event).toBe("agent_end");
	});

	it("after the run ended: a JSON repeat gets the same 202, an SSE repeat replays the run and ends", async () => {
		const { server, store, id } = await setup();
		const first = await post(server, `/v1/sessions/${id}/prompt`, { message: "hello there" }, "p-2");
		expect(first.status).toBe(202);
		expect(first.headers.get("idempotent-replayed")).toBeNull();
		await idle(server, id);
		const repeat = await post(server, `/v1/sessions/${id}/prompt`, { message: "hello there" }, "p-2");
		expect(repeat.status).toBe(202);
		expect(repeat.body).toEqual(first.body);
		expect(repeat.headers.get("idempotent-replayed")).toBe("true");

		const replay = await promptSse(server, id, { message: "hello there" }, { "idempotency-key": "p-2" });
		await replay.waitForEnd();
		expect(replay.events[0]).toMatchObject({ id: first.body.firstEventId, event: "agent_start" });
		expect(replay.events.at(-1)?.event).toBe("agent_end");
		expect(replay.events.at(-1)?.data.messages.at(-1).content[0].text).toContain("hello there");
		// From Last-Event-ID: only what follows it.
		const tail = await promptSse(
			server,
			id,
			{ message: "hello there" },
			{ "idempotency-key": "p-2", "last-event-id": String(replay.events.at(-3)?.id) },
		);
		await tail.waitForEnd();
		expect(tail.events.map((e) => e.id)).toEqual(replay.events.slice(-2).map((e) => e.id));
		expect(await store.listRuns(id)).toHaveLength(1);
		expect(await userMessages(store, id)).toBe(1);
	});

	it("refuses the key for a different request (another body or route) with 422 IDEMPOTENCY_KEY_REUSED", async () => {
		const { server, id } = await setup();
		expect((await post(server, `/v1/sessions/${id}/prompt`, { message: "a" }, "k")).status).toBe(202);
		await idle(server, id);
		const otherBody = await post(server, `/v1/sessions/${id}/prompt`, { message: "b" }, "k");
		expect(otherBody.status).toBe(422);
		expect(otherBody.body.error.code).toBe("IDEMPOTENCY_KEY_REUSED");
		expect(otherBody.body.error.message).toMatch(/different request.*new key/);
		const otherRoute = await post(server, `/v1/sessions/${id}/steer`, { message: "a" }, "k");
		expect(otherRoute.status).toBe(422);
		expect(otherRoute.body.error.message).toContain("POST .../prompt");
		// The same body with its fields in another order is the same request.
		const reordered = await post(server, `/v1/sessions/${id}/prompt`, '{"ifBusy":"reject","message":"a"}', "k2");
		expect(reordered.status).toBe(202);
		await idle(server, id);
		expect((await post(server, `/v1/sessions/${id}/prompt`, { message: "a", ifBusy: "reject" }, "k2")).status).toBe(
			202,
		);
		// Keys belong to their session.
		const other: string = (await server.request("POST", "/v1/sessions", { body: {} })).body.id;
		const elsewhere = await post(server, `/v1/sessions/${other}/prompt`, { message: "b" }, "k");
		expect(elsewhere.status).toBe(202);
		expect(elsewhere.body.runId).not.toBe(otherBody.body.runId);
	});

	it("a steering or follow-up message sent twice with one key is queued once, and both get the same 202", async () => {
		const { server, store, gate, id } = await setup();
		const run = await promptSse(server, id, { message: "/tool wait_for_gate {}" }, {});
		await gate.started();
		for (const path of ["steer", "follow-up"]) {
			const first = await post(server, `/v1/sessions/${id}/${path}`, { message: `once ${path}` }, `q-${path}`);
			const again = await post(server, `/v1/sessions/${id}/${path}`, { message: `once ${path}` }, `q-${path}`);
			expect(first.status).toBe(202);
			expect(again.status).toBe(202);
			expect(again.body).toEqual(first.body);
		}
		expect((await store.listQueued(id)).map((q) => q.kind)).toEqual(["steer", "followUp"]);
		// ifBusy "steer" on a prompt is recorded the same way.
		const viaPrompt = { message: "via prompt", ifBusy: "steer" };
		const queued = await post(server, `/v1/sessions/${id}/prompt`, viaPrompt, "q-prompt");
		expect(await post(server, `/v1/sessions/${id}/prompt`, viaPrompt, "q-prompt")).toMatchObject({
			status: 202,
			body: queued.body,
		});
		expect(await store.listQueued(id)).toHaveLength(3);
		gate.release();
		await run.waitForEnd();
	});

	it("continue sent twice with one key continues once", async () => {
		const { server, store, id } = await setup();
		const created: string = (
			await server.request("POST", "/v1/sessions", {
				body: { messages: [{ role: "user", content: "pick it up", timestamp: 1 }] },
			})
		).body.id;
		const first = await post(server, `/v1/sessions/${created}/continue`, undefined, "c-1");
		expect(first.status).toBe(202);
		const repeat = await post(server, `/v1/sessions/${created}/continue`, undefined, "c-1");
		expect(repeat).toMatchObject({ status: 202, body: first.body });
		await idle(server, created);
		expect(await store.listRuns(created)).toHaveLength(1);
		expect(id).not.toBe(created);
	});

	it("answers 409 IDEMPOTENCY_IN_PROGRESS while the first request is still being processed", async () => {
		// A tool that ignores the abort: an interrupting prompt waits until it returns.
		let letGo!: () => void;
		const held = new Promise<void>((resolve) => {
			letGo = resolve;
		});
		let started!: () => void;
		const running = new Promise<void>((resolve) => {
			started = resolve;
		});
		let abortSeen!: () => void;
		const aborted = new Promise<void>((resolve) => {
			abortSeen = resolve;
		});
		const stubborn: AgentTool<any> = {
			name: "stubborn",
			label: "Stubborn",
			description: "Returns when the test lets it go, abort or not.",
			parameters: Type.Object({}),
			execute: async (_id, _params, signal) => {
				signal?.addEventListener("abort", () => abortSeen(), { once: true });
				started();
				await held;
				return { content: [{ type: "text", text: "finally" }], details: {} };
			},
		};
		const { server, store, id } = await setup({ tools: [stubborn] });
		expect((await post(server, `/v1/sessions/${id}/prompt`, { message: "/tool stubborn {}" })).status).toBe(202);
		await running;
		const body = { message: "instead", ifBusy: "interrupt" };
		const waiting = post(server, `/v1/sessions/${id}/prompt`, body, "i-1");
		// The interrupting prompt aborted the run and waits for it to settle.
		await aborted;
		const meanwhile = await post(server, `/v1/sessions/${id}/prompt`, body, "i-1");
		expect(meanwhile.status).toBe(409);
		expect(meanwhile.body.error.code).toBe("IDEMPOTENCY_IN_PROGRESS");
		letGo();
		const answered = await waiting;
		expect(answered.status).toBe(202);
		expect(await post(server, `/v1/sessions/${id}/prompt`, body, "i-1")).toMatchObject({
			status: 202,
			body: answered.body,
		});
		await idle(server, id);
		expect(await store.listRuns(id)).toHaveLength(2);
	});

	it("records nothing for a refused request: the same key works once the cause is gone", async () => {
		const { server, store, gate, id } = await setup();
		const run = await promptSse(server, id, { message: "/tool wait_for_gate {}" }, {});
		await gate.started();
		const busy = await post(server, `/v1/sessions/${id}/prompt`, { message: "next" }, "r-1");
		expect(busy.status).toBe(409);
		expect(busy.body.error.code).toBe("AGENT_BUSY");
		gate.release();
		await run.waitForEnd();
		await idle(server, id);
		const later = await post(server, `/v1/sessions/${id}/prompt`, { message: "next" }, "r-1");
		expect(later.status).toBe(202);
		await idle(server, id);
		expect(await store.listRuns(id)).toHaveLength(2);
	});

	it("forgets a key 24 hours after its first request", async () => {
		const { server, store, id } = await setup();
		const dayAndAMinute = 24 * 60 * 60 * 1000 + 60_000;
		await store.putIdempotencyKey({
			sessionId: id,
			key: "old",
			operation: "prompt",
			fingerprint: "from yesterday",
			outcome: JSON.stringify({ kind: "run", runId: "yesterdays-run", firstEventId: 1 }),
			createdAt: Date.now() - dayAndAMinute,
		});
		const fresh = await post(server, `/v1/sessions/${id}/prompt`, { message: "today" }, "old");
		expect(fresh.status).toBe(202);
		expect(fresh.body.runId).not.toBe("yesterdays-run");
		await idle(server, id);
		expect(await post(server, `/v1/sessions/${id}/prompt`, { message: "today" }, "old")).toMatchObject({
			status: 202,
			body: fresh.body,
		});
		expect(await store.listRuns(id)).toHaveLength(1);
	});

	it("refuses a malformed key with 400 INVALID_IDEMPOTENCY_KEY before doing anything", async () => {
		const { server, store, id } = await setup();
		for (const key of ["", "x".repeat(256), "caf\u00e9"]) {
			const res = await post(server, `/v1/sessions/${id}/prompt`, { message: "hi" }, undefined, {
				"idempotency-key": key,
			});
			expect(res.status, JSON.stringify(key)).toBe(400);
			expect(res.body.error.code).toBe("INVALID_IDEMPOTENCY_KEY");
			expect(res.body.error.message).toContain("1 to 255 printable ASCII");
		}
		expect(await store.listRuns(id)).toHaveLength(0);
		const longest = await post(server, `/v1/sessions/${id}/steer`, { message: "hi" }, `~ ${"k".repeat(253)}`);
		expect(longest.status).toBe(202);
	});

	it("without the header nothing changes: every request is carried out", async () => {
		const { server, store, gate, id } = await setup();
		const run = await promptSse(server, id, { message: "/tool wait_for_gate {}" }, {});
		await gate.started();
		expect((await post(server, `/v1/sessions/${id}/prompt`, { message: "x" })).status).toBe(409);
		expect((await post(server, `/v1/sessions/${id}/steer`, { message: "s" })).status).toBe(202);
		expect((await post(server, `/v1/sessions/${id}/steer`, { message: "s" })).status).toBe(202);
		expect(await store.listQueued(id)).toHaveLength(2);
		gate.release();
		await run.waitForEnd();
		await idle(server, id);
		for (let i = 0; i < 2; i++) {
			expect((await post(server, `/v1/sessions/${id}/prompt`, { message: "same" })).status).toBe(202);
			await idle(server, id);
		}
		expect(await store.listRuns(id)).toHaveLength(3);
	});

	it("honours keys after a restart on the same SQLite file", async () => {
		const dir = mkdtempSync(join(tmpdir(), "wheelhouse-idempotency-"));
		cleanups.push(() => rmSync(dir, { recursive: true, force: true }));
		const path = join(dir, "wheelhouse.db");

		const before = await setup({ store: openSqliteStore({ path }) });
		const { id } = before;
		const prompt = await post(before.server, `/v1/sessions/${id}/prompt`, { message: "remember me" }, "restart-p");
		await idle(before.server, id);
		const steer = await post(before.server, `/v1/sessions/${id}/steer`, { message: "later" }, "restart-s");
		await before.server.close();
		before.store.close();

		const store = openSqliteStore({ path });
		cleanups.unshift(() => store.close());
		const gate = createGateTool();
		gates.push(gate);
		const server = await startServer({ store, tools: [gate.tool] });
		servers.push(server);
		expect(await post(server, `/v1/sessions/${id}/prompt`, { message: "remember me" }, "restart-p")).toMatchObject({
			status: 202,
			body: prompt.body,
		});
		expect(await post(server, `/v1/sessions/${id}/steer`, { message: "later" }, "restart-s")).toMatchObject({
			status: 202,
			body: steer.body,
		});
		const replay = await promptSse(server, id, { message: "remember me" }, { "idempotency-key": "restart-p" });
		await replay.waitForEnd();
		expect(replay.events[0]).toMatchObject({ id: prompt.body.firstEventId, event: "agent_start" });
		expect(replay.events.at(-1)?.event).toBe("agent_end");
		expect(await store.listRuns(id)).toHaveLength(1);
		expect(await store.listQueued(id)).toHaveLength(1);
		expect(await userMessages(store, id)).toBe(1);
	});
});

/** A raw SSE response read frame by frame, as a generic client reads it. */
class RawStream {
	readonly frames: { id?: number; event?: string; data: string }[] = [];
	private text = "";
	private waiters: (() => void)[] = [];
	ended = false;

	constructor(readonly response: IncomingMessage) {
		response.setEncoding("utf8");
		response.on("data", (chunk: string) => {
			this.text += chunk;
			let end = this.text.indexOf("\n\n");
			while (end >= 0) {
				const block = this.text.slice(0, end);
				this.text = this.text.slice(end + 2);
				const frame: { id?: number; event?: string; data: string } = { data: "" };
				for (const line of block.split("\n")) {
					if (line.startsWith("id: ")) frame.id = Number(line.slice(4));
					else if (line.startsWith("event: ")) frame.event = line.slice(7);
					else if (line.startsWith("data: ")) frame.data += line.slice(6);
				}
				if (frame.event) this.frames.push(frame);
				end = this.text.indexOf("\n\n");
			}
			for (const w of this.waiters.splice(0)) w();
		});
		const finish = () => {
			this.ended = true;
			for (const w of this.waiters.splice(0)) w();
		};
		response.on("end", finish);
		response.on("close", finish);
	}

	async until(predicate: () => boolean): Promise<void> {
		while (!predicate()) {
			if (this.ended) throw new Error(`stream ended; got ${this.frames.map((f) => f.event).join(",")}`);
			await new Promise<void>((resolve) => this.waiters.push(resolve));
		}
	}
}

function rawPost(url: string, path: string, body: unknown, headers: Record<string, string>): Promise<RawStream> {
	return new Promise((resolve, reject) => {
		const req = httpRequest(`${url}${path}`, {
			method: "POST",
			agent: false,
			headers: { "content-type": "application/json", accept: "text/event-stream", ...headers },
		});
		req.on("response", (res) => resolve(new RawStream(res)));
		req.on("error", reject);
		req.end(JSON.stringify(body));
	});
}

describe("Idempotency-Key: the reconnect of a generic SSE client (fetch-event-source)", () => {
	it("a dropped stream re-POSTed with the same key and Last-Event-ID continues the same run, no second run", async () => {
		const { server, store, gate, id } = await setup();
		const body = { message: "/tool wait_for_gate {}" };
		const headers = { "idempotency-key": "fes-1" };
		const first = await rawPost(server.url, `/v1/sessions/${id}/prompt`, body, headers);
		await first.until(() => first.frames.some((f) => f.event === "tool_execution_start"));
		const lastSeen = first.frames.at(-1)?.id as number;
		first.response.destroy(); // the connection drops mid-run
		// While the client is away, the run goes on: a steering message is queued.
		expect((await post(server, `/v1/sessions/${id}/steer`, { message: "while away" })).status).toBe(202);

		const again = await rawPost(server.url, `/v1/sessions/${id}/prompt`, body, {
			...headers,
			"last-event-id": String(lastSeen),
		});
		expect(again.response.statusCode).toBe(200);
		await again.until(() => again.frames.some((f) => f.event === "queue_update"));
		gate.release("gate open");
		await again.until(() => again.ended);

		const ids = again.frames.map((f) => f.id as number);
		expect(ids[0]).toBe(lastSeen + 1);
		expect(again.frames.some((f) => f.event === "agent_start")).toBe(false);
		expect(again.frames.at(-1)?.event).toBe("agent_end");
		// Every event of the run after the cursor, exactly once, in order: the log agrees.
		const logged = (await store.readEvents(id, lastSeen)).filter((e) => e.id <= (ids.at(-1) as number));
		expect(ids).toEqual(logged.map((e) => e.id));
		expect(await store.listRuns(id)).toHaveLength(1);
		expect(gate.calls).toBe(1);
		expect(JSON.parse(again.frames.at(-1)?.data ?? "{}").messages.at(-1).content[0].text).toContain("while away");
	});
});
