/**
 * `resumeInterruptedSession` as the cluster layer calls it: a session whose run another process
 * left `running` in the store (a lost replica) is taken over by a live server — marked interrupted
 * (`run.interrupted`, `reason: "replica_lost"`), settled on its stream and continued per its
 * `onInterrupt` policy. The store is real (SQLite); the dead process's writes are made on it
 * directly, as that process made them, before the server opens the session.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import type { AgentMessage } from "../../../src/agent/types.js";
import { zeroUsage } from "../../../src/ai/usage.js";
import { resumeInterruptedSession } from "../../../src/server/runtime/session/interruption.js";
import { openSqliteStore, type SqliteSessionStore } from "../../../src/store/sqlite/index.js";
import { startServer, type TestServer } from "../../helpers/server.js";
import { openSse } from "../../helpers/sse.js";

let server: TestServer | undefined;
let store: SqliteSessionStore | undefined;
const dirs: string[] = [];
afterEach(async () => {
	await server?.close();
	server = undefined;
	await store?.close();
	store = undefined;
	for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});

const T = 1_770_000_000_000;

/** A session whose run died during a call of `toolName` (the assistant message asked for it; no result). */
async function deadRun(
	s: SqliteSessionStore,
	id: string,
	toolName: string,
	config: { onInterrupt?: "continue" | "stop"; toolApprovals?: Record<string, "always" | "never"> } = {},
) {
	await s.createSession({
		id,
		ownerId: null,
		createdAt: T,
		model: "faux/echo",
		systemPrompt: "",
		thinkingLevel: "off",
		tools: ["*"],
		toolExecution: "parallel",
		steeringMode: "one-at-a-time",
		followUpMode: "one-at-a-time",
		metadata: {},
		...config,
	});
	const prompt: AgentMessage = { role: "user", content: `/tool ${toolName} {"expression": "2+3"}`, timestamp: T };
	expect(await s.startRun(id, `run-${id}`, T + 1, [prompt])).toEqual({ updatedAt: expect.any(Number) });
	const call: AgentMessage = {
		role: "assistant",
		content: [{ type: "toolCall", id: `call-${id}`, name: toolName, arguments: { expression: "2+3" } }],
		api: "faux-echo",
		provider: "faux",
		model: "echo",
		usage: zeroUsage(),
		stopReason: "toolUse",
		timestamp: T + 2,
	};
	s.appendMessages(id, [call]);
	await s.flush();
}

async function setup() {
	const dir = mkdtempSync(path.join(tmpdir(), "wh-resume-"));
	dirs.push(dir);
	store = openSqliteStore({ path: path.join(dir, "wh.db") });
	return store;
}

describe("resumeInterruptedSession (a replica takes over a lost one's session)", () => {
	it("marks the run interrupted, runs an idempotent tool again, announces it and continues", async () => {
		const s = await setup();
		await deadRun(s, "ses_lost", "calculate");
		server = await startServer({ store: s });

		const outcome = await resumeInterruptedSession(server.app.wheelhouse, "ses_lost", "replica_lost");
		expect(outcome).toMatchObject({ kind: "continued", sessionId: "ses_lost", interruptedRunId: "run-ses_lost" });
		const runs = await s.listRuns("ses_lost");
		expect(runs.map((r) => [r.id, r.status])).toEqual([
			["run-ses_lost", "interrupted"],
			[outcome.kind === "continued" ? outcome.runId : "", expect.any(String)],
		]);

		const events = await openSse(`${server.url}/v1/sessions/ses_lost/events`, { headers: { "last-event-id": "0" } });
		const end = await events.waitForType("agent_end", 10_000);
		events.close();
		const names = events.events.filter((e) => e.id !== undefined).map((e) => e.event);
		expect(names.slice(0, 5)).toEqual([
			"tool_execution_end",
			"message_start",
			"message_end",
			"run_interrupted",
			"agent_start",
		]);
		const interrupted = events.events.find((e) => e.event === "run_interrupted")!;
		expect(interrupted.data).toMatchObject({
			runId: "run-ses_lost",
			reason: "replica_lost",
			willContinue: true,
			message: expect.stringMatching(/replica running this session was lost/),
		});
		expect(end.data.messages.at(-1).content[0].text).toBe("Tool results: calculate: 5");

		// Called again, it finds nothing to do: the session is no longer interrupted.
		expect(await resumeInterruptedSession(server.app.wheelhouse, "ses_lost", "replica_lost")).toMatchObject({
			kind: "skipped",
		});
		expect(await resumeInterruptedSession(server.app.wheelhouse, "ses_none", "replica_lost")).toMatchObject({
			kind: "skipped",
			why: "no such session",
		});
	});

	it("an approval that was waiting: not run; the model is told to call again, which asks again", async () => {
		const s = await setup();
		await deadRun(s, "ses_ask", "calculate", { toolApprovals: { calculate: "always" } });
		await s.putPending({
			sessionId: "ses_ask",
			toolCallId: "call-ses_ask",
			kind: "approval",
			payload: JSON.stringify({ toolName: "calculate", args: { expression: "2+3" }, expiresAt: T + 60_000 }),
			createdAt: T + 3,
		});
		server = await startServer({ store: s });

		const outcome = await resumeInterruptedSession(server.app.wheelhouse, "ses_ask", "replica_lost");
		expect(outcome.kind).toBe("continued");
		const events = await openSse(`${server.url}/v1/sessions/ses_ask/events`, { headers: { "last-event-id": "0" } });
		const end = await events.waitForType("agent_end", 10_000);
		events.close();
		expect(
			events.events
				.filter((e) => e.id !== undefined)
				.map((e) => e.event)
				.slice(0, 6),
		).toEqual([
			"approval_resolved",
			"tool_execution_end",
			"message_start",
			"message_end",
			"run_interrupted",
			"agent_start",
		]);
		expect(events.events[0]!.data).toMatchObject({ toolCallId: "call-ses_ask", outcome: { kind: "interrupted" } });
		expect(end.data.messages.at(-1).content[0].text).toBe(
			"Tool results: calculate (error): The tool call was interrupted by the loss of the server replica running it while it waited for approval; the tool did not run. Call it again if it is still needed (approval is asked again).",
		);
		expect((await server.request("GET", "/v1/sessions/ses_ask")).body.pendingApprovals).toEqual([]);
	});

	it('onInterrupt "stop": announced with willContinue false; the session stays interrupted', async () => {
		const s = await setup();
		await deadRun(s, "ses_stop", "calculate", { onInterrupt: "stop" });
		server = await startServer({ store: s });

		const outcome = await resumeInterruptedSession(server.app.wheelhouse, "ses_stop", "replica_lost");
		expect(outcome).toMatchObject({ kind: "stopped", interruptedRunId: "run-ses_stop" });
		const events = await openSse(`${server.url}/v1/sessions/ses_stop/events`, { headers: { "last-event-id": "0" } });
		const interrupted = await events.waitForType("run_interrupted", 10_000);
		events.close();
		expect(interrupted.data).toMatchObject({ willContinue: false, reason: "replica_lost" });
		const state = (await server.request("GET", "/v1/sessions/ses_stop")).body;
		expect(state).toMatchObject({ status: "interrupted", onInterrupt: "stop" });
		const transcript = (await server.request("GET", "/v1/sessions/ses_stop/messages")).body.messages;
		expect(transcript.at(-1)).toMatchObject({ role: "toolResult", isError: true });
		expect(transcript.at(-1).content[0].text).toMatch(/before its result was recorded; it may or may not/);

		// A second call (a takeover retried) announces nothing twice.
		const lastEventId = state.lastEventId;
		expect(await resumeInterruptedSession(server.app.wheelhouse, "ses_stop", "replica_lost")).toMatchObject({
			kind: "skipped",
			why: expect.stringMatching(/settled already/),
		});
		expect((await server.request("GET", "/v1/sessions/ses_stop")).body.lastEventId).toBe(lastEventId);
	});
});
