/**
 * A schedule bound to a session with `ifBusy: "interrupt"` whose tick comes while that session's
 * run is still going (a tool that waits until it is aborted): the running run is aborted (its tool
 * sees the abort, its stream ends with its `agent_end`), then the fire's prompt runs and is
 * answered; the fire is recorded `fired` with the new run's id, the session's id and no reason.
 * On the memory and SQLite stores.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { createMemoryStore } from "../../../src/store/memory.js";
import { openSqliteStore } from "../../../src/store/sqlite/index.js";
import type { SessionStore } from "../../../src/store/types.js";
import { waitUntil } from "../../helpers/cluster.js";
import { createGateTool, type GateTool } from "../../helpers/gate-tool.js";
import { startServer, type TestServer } from "../../helpers/server.js";
import { promptSse } from "../../helpers/sse.js";

let server: TestServer | undefined;
let gate: GateTool | undefined;
const cleanups: (() => void)[] = [];
afterEach(async () => {
	gate?.release();
	await server?.close();
	server = undefined;
	for (const c of cleanups.splice(0)) c();
});

const stores: [string, () => SessionStore][] = [
	["memory", () => createMemoryStore()],
	[
		"sqlite",
		() => {
			const dir = mkdtempSync(join(tmpdir(), "wh-schedule-interrupt-"));
			const store = openSqliteStore({ path: join(dir, "db.sqlite") });
			cleanups.push(() => rmSync(dir, { recursive: true, force: true }));
			cleanups.unshift(() => void store.close());
			return store;
		},
	],
];

const text = (m: any): string => (typeof m.content === "string" ? m.content : (m.content?.[0]?.text ?? ""));

describe.each(stores)("a schedule with ifBusy: interrupt (%s store)", (_name, makeStore) => {
	it("aborts the session's running run when it fires, then runs its prompt; the fire is recorded fired", async () => {
		gate = createGateTool();
		server = await startServer({ store: makeStore(), tools: [gate.tool] });
		const s = server;
		const sessionId = (await s.request("POST", "/v1/sessions", { body: {} })).body.id as string;
		// A run that only ends when it is aborted: the tool waits for a release that never comes.
		const first = await promptSse(s.url, sessionId, { message: "/tool wait_for_gate {}" });
		await gate.started();

		// A one-shot tick shortly after: it comes while the run above still waits in its tool.
		const at = Date.now() + 1_500;
		const created = await s.request("POST", "/v1/schedules", {
			body: { at: new Date(at).toISOString(), sessionId, prompt: "scheduled turn", ifBusy: "interrupt" },
		});
		expect(created.status, JSON.stringify(created.body)).toBe(201);
		expect(created.body).toMatchObject({ sessionId, ifBusy: "interrupt", nextFireAt: at });
		expect((await s.request("GET", `/v1/sessions/${sessionId}`)).body.status).toBe("running");

		const fire = await waitUntil(
			"the tick's fire settled",
			async () => {
				const fires = (await s.request("GET", `/v1/schedules/${created.body.id}/fires`)).body.fires;
				return fires[0] && fires[0].outcome !== "firing" ? fires : undefined;
			},
			30_000,
		);
		expect(fire).toHaveLength(1);
		expect(fire[0]).toMatchObject({
			kind: "tick",
			tickAt: at,
			outcome: "fired",
			sessionId,
			runId: expect.any(String),
			reason: null,
			settledAt: expect.any(Number),
		});

		// The running run was aborted: its tool saw the abort and its stream ended with agent_end.
		await first.waitForEnd();
		expect(gate.aborted).toBe(1);
		const firstEnd = first.events.at(-1)!;
		expect(firstEnd.event).toBe("agent_end");
		expect(firstEnd.data.messages.at(-1).stopReason).toBe("aborted");

		// Then the fire's prompt ran, as the run the fire recorded, and was answered (the echo model).
		const messages = await waitUntil(
			"the scheduled prompt answered",
			async () => {
				const state = (await s.request("GET", `/v1/sessions/${sessionId}`)).body;
				if (state.status !== "idle") return undefined;
				const page = await s.request("GET", `/v1/sessions/${sessionId}/messages?limit=1000`);
				return page.body.messages as any[];
			},
			30_000,
		);
		expect(messages[0]).toMatchObject({ role: "user" });
		expect(text(messages[0])).toBe("/tool wait_for_gate {}");
		expect(messages.at(-2)).toMatchObject({ role: "user" });
		expect(text(messages.at(-2))).toBe("scheduled turn");
		expect(messages.at(-1)).toMatchObject({ role: "assistant", stopReason: "stop" });
		expect(text(messages.at(-1))).toBe("scheduled turn");
		// Only the two runs' user messages: the interrupted prompt was not queued or sent again.
		expect(messages.filter((m) => m.role === "user").map(text)).toEqual(["/tool wait_for_gate {}", "scheduled turn"]);

		const schedule = (await s.request("GET", `/v1/schedules/${created.body.id}`)).body;
		expect(schedule).toMatchObject({ state: "done", nextFireAt: null, lastFireAt: at });
	}, 40_000);
});
