/**
 * Client tools over AG-UI: a call of a tool the client declared ends the AG-UI run with the call
 * pending; the client's next run carries the tool message and the same Wheelhouse run goes on.
 */
import type { Message } from "@ag-ui/core";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { aguiAgent, checkFraming, quietConsole, runOnce, type TestAgent, typesOf } from "../../helpers/agui.js";
import { startServer, type TestServer } from "../../helpers/server.js";

const KEY = "agui-test-key";
let server: TestServer;
let console_: ReturnType<typeof quietConsole>;
let clients: TestAgent[] = [];

beforeEach(() => {
	console_ = quietConsole();
	clients = [];
});
afterEach(async () => {
	try {
		for (const { bodies } of clients) for (const body of await Promise.all(bodies)) checkFraming(body);
		console_.check();
	} finally {
		console_.restore();
		await server?.close();
	}
});

const pickColor = {
	name: "pick_color",
	description: "Ask the user to pick a color",
	parameters: { type: "object", properties: { question: { type: "string" } }, required: ["question"] },
};

async function start(config: Record<string, unknown> = {}): Promise<TestAgent> {
	// A run left waiting for a client tool is aborted at close after the grace period: keep it short.
	server = await startServer({ config: { apiKeys: [KEY], shutdownGraceMs: 50, ...config } });
	const made = aguiAgent(server, KEY);
	clients.push(made);
	return made;
}

function sessionOf(events: { type: string }[]): string {
	return (events[0] as unknown as { metadata: { wheelhouse: { sessionId: string } } }).metadata.wheelhouse.sessionId;
}

/** The tool calls of the agent's last assistant message. */
function lastCalls(messages: Message[]): { id: string; function: { name: string; arguments: string } }[] {
	const assistant = [...messages].reverse().find((m) => m.role === "assistant");
	return (assistant as { toolCalls?: { id: string; function: { name: string; arguments: string } }[] }).toolCalls ?? [];
}

describe("AG-UI client tools", () => {
	it("ends the run with the call pending, and continues the same run with the client's tool message", async () => {
		const { agent } = await start();
		agent.addMessage({ id: "u1", role: "user", content: '/tool pick_color {"question": "favourite?"}' });
		const pending: string[][] = [];
		const first = await runOnce(
			agent,
			{ tools: [pickColor] },
			{
				onRunFinishedEvent: (params) =>
					void pending.push(params.outcome === "success" ? params.pendingToolCallIds : []),
			},
		);
		const calls = lastCalls(agent.messages);
		expect(calls).toHaveLength(1);
		expect(calls[0]?.function.name).toBe("pick_color");
		expect(JSON.parse(calls[0]?.function.arguments ?? "")).toEqual({ question: "favourite?" });
		expect(pending).toEqual([[calls[0]?.id]]);
		expect(typesOf(first.events).slice(-4)).toEqual([
			"TOOL_CALL_ARGS",
			"TOOL_CALL_END",
			"STEP_FINISHED",
			"RUN_FINISHED",
		]);
		expect(typesOf(first.events)).not.toContain("TOOL_CALL_RESULT");

		// The Wheelhouse run waits for the result.
		const sessionId = sessionOf(first.events);
		const waiting = await server.request("GET", `/v1/sessions/${sessionId}`, { key: KEY });
		expect(waiting.body).toMatchObject({ status: "running", pendingClientToolCalls: [{ toolCallId: calls[0]?.id }] });

		agent.addMessage({ id: "t1", role: "tool", toolCallId: calls[0]?.id as string, content: "teal" });
		const second = await runOnce(agent, { tools: [pickColor] });
		const types = typesOf(second.events);
		// The resumed run's turn is open from the start, then the next turn answers.
		expect(types.slice(0, 2)).toEqual(["RUN_STARTED", "STEP_STARTED"]);
		expect(types.at(-1)).toBe("RUN_FINISHED");
		expect((second.events.at(-1) as { outcome?: unknown }).outcome).toBeUndefined();
		expect(agent.messages.at(-1)).toMatchObject({ role: "assistant", content: "Tool results: pick_color: teal" });
		expect(sessionOf(second.events)).toBe(sessionId);
		// One Wheelhouse run for both AG-UI runs.
		const { metadata: m1 } = first.events[0] as unknown as { metadata: { wheelhouse: { runId: string } } };
		const { metadata: m2 } = second.events[0] as unknown as { metadata: { wheelhouse: { runId: string } } };
		expect(m2.wheelhouse.runId).toBe(m1.wheelhouse.runId);
		const transcript = await server.request("GET", `/v1/sessions/${sessionId}/messages`, { key: KEY });
		expect(transcript.body.messages.map((m: { role: string }) => m.role)).toEqual([
			"user",
			"assistant",
			"toolResult",
			"assistant",
		]);
	});

	it("a new message instead of the result aborts the waiting run and starts the next", async () => {
		const { agent } = await start();
		agent.addMessage({ id: "u1", role: "user", content: '/tool pick_color {"question": "favourite?"}' });
		const first = await runOnce(agent, { tools: [pickColor] });
		const firstRun = (first.events[0] as unknown as { metadata: { wheelhouse: { runId: string } } }).metadata.wheelhouse
			.runId;
		agent.addMessage({ id: "u2", role: "user", content: "never mind, say hi" });
		const second = await runOnce(agent, { tools: [pickColor] });
		const secondRun = (second.events[0] as unknown as { metadata: { wheelhouse: { runId: string } } }).metadata
			.wheelhouse.runId;
		expect(secondRun).not.toBe(firstRun);
		expect(agent.messages.at(-1)).toMatchObject({ role: "assistant", content: "never mind, say hi" });
		const transcript = await server.request("GET", `/v1/sessions/${sessionOf(first.events)}/messages`, { key: KEY });
		const roles = transcript.body.messages.map((m: { role: string }) => m.role);
		// The abandoned call got its (aborted) result, so the transcript stays valid for a provider.
		expect(roles).toEqual(["user", "assistant", "toolResult", "assistant", "user", "assistant"]);
		expect(transcript.body.messages[2]).toMatchObject({ isError: true });
		expect(transcript.body.messages[3]).toMatchObject({ stopReason: "aborted" });
	});

	it("refuses a result no run waits for any more, and a run that answers none of the calls", async () => {
		const { agent } = await start();
		agent.addMessage({ id: "u1", role: "user", content: '/tool pick_color {"question": "favourite?"}' });
		await runOnce(agent, { tools: [pickColor] });
		const call = lastCalls(agent.messages)[0]?.id as string;

		// No new message and no result: the run waits for the result.
		const nothing = aguiAgent(server, KEY, { threadId: agent.threadId, initialMessages: agent.messages });
		await expect(nothing.agent.runAgent({ tools: [pickColor] })).rejects.toMatchObject({
			status: 409,
			payload: { error: { code: "AGENT_BUSY" } },
		});

		// The run is aborted from elsewhere: the call gets an aborted result, and the client's comes too late.
		const sessionId = (await sessionIdOfThread(agent.threadId)) as string;
		await server.request("POST", `/v1/sessions/${sessionId}/abort`, { key: KEY });
		await waitUntilIdle(sessionId);
		const stale = aguiAgent(server, KEY, {
			threadId: agent.threadId,
			initialMessages: [...agent.messages, { id: "t1", role: "tool", toolCallId: call, content: "late" }],
		});
		await expect(stale.agent.runAgent({ tools: [pickColor] })).rejects.toMatchObject({
			status: 409,
			payload: { error: { code: "TOOL_CALL_FINISHED" } },
		});
		console_.restore();
		console_ = quietConsole();
	});
});

async function waitUntilIdle(sessionId: string): Promise<void> {
	for (;;) {
		const state = await server.request("GET", `/v1/sessions/${sessionId}`, { key: KEY });
		if (state.body.status === "idle") return;
		await new Promise((resolve) => setTimeout(resolve, 10));
	}
}

/** The session of a thread, from the session list (the only session of the test's key). */
async function sessionIdOfThread(threadId: string): Promise<string | undefined> {
	const list = await server.request("GET", "/v1/sessions", { key: KEY });
	return list.body.sessions.find((s: { metadata: Record<string, string> }) => s.metadata["agui.threadId"] === threadId)
		?.id;
}
