/**
 * AG-UI runs with the unmodified `HttpAgent` of `@ag-ui/client` against a real server: text, a
 * second run on the same thread, a server tool, thinking, a provider error, and errors before the
 * stream. The client's verifier checks every stream (a violation rejects `runAgent`), and every
 * raw body is checked for the framing the client parses.
 */
import type { BaseEvent } from "@ag-ui/core";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { fauxThinking, registerFauxProvider } from "../../../src/ai/providers/faux.js";
import { aguiAgent, checkFraming, quietConsole, runOnce, type TestAgent, typesOf } from "../../helpers/agui.js";
import { startServer, type TestServer } from "../../helpers/server.js";

const KEY = "agui-test-key";
const faux = registerFauxProvider({ api: "agui-run-faux", provider: "scripted" });
const SCRIPTED = `scripted/${faux.getModel().id}`;

let server: TestServer;
let console_: ReturnType<typeof quietConsole>;
let clients: TestAgent[] = [];

beforeEach(() => {
	console_ = quietConsole();
	clients = [];
});
afterEach(async () => {
	try {
		// Every stream of the test, as the client read it, framed by the rules.
		for (const { bodies } of clients) for (const body of await Promise.all(bodies)) checkFraming(body);
		console_.check();
	} finally {
		console_.restore();
		await server?.close();
	}
});

async function start(): Promise<void> {
	server = await startServer({ config: { apiKeys: [KEY] }, models: [faux.getModel()] });
}

function client(threadId?: string): TestAgent {
	const made = aguiAgent(server, KEY, threadId ? { threadId } : {});
	clients.push(made);
	return made;
}

function textOf(events: BaseEvent[]): string {
	return events
		.filter((event) => event.type === "TEXT_MESSAGE_CONTENT")
		.map((event) => (event as unknown as { delta: string }).delta)
		.join("");
}

const scripted = { forwardedProps: { wheelhouse: { model: SCRIPTED } } };

describe("AG-UI runs with HttpAgent", () => {
	it("streams a text answer: run, step, text message, in the order the client's verifier enforces", async () => {
		await start();
		const { agent, bodies } = client();
		agent.addMessage({ id: "u1", role: "user", content: "hello from an AG-UI client" });
		const { events } = await runOnce(agent, { runId: "run-1" });
		const types = typesOf(events);
		expect(types[0]).toBe("RUN_STARTED");
		expect(types.slice(1, 3)).toEqual(["STEP_STARTED", "TEXT_MESSAGE_START"]);
		expect(types.slice(-3)).toEqual(["TEXT_MESSAGE_END", "STEP_FINISHED", "RUN_FINISHED"]);
		expect(types.filter((type) => type === "TEXT_MESSAGE_CONTENT").length).toBeGreaterThan(1);
		expect(textOf(events)).toBe("hello from an AG-UI client");
		expect(events[0]).toMatchObject({ threadId: agent.threadId, runId: "run-1" });
		expect(events.at(-1)).toMatchObject({ type: "RUN_FINISHED", threadId: agent.threadId, runId: "run-1" });
		expect((events.at(-1) as unknown as { usage: unknown[] }).usage).toMatchObject([
			{ provider: "faux", model: "echo" },
		]);
		expect(agent.messages).toMatchObject([
			{ id: "u1", role: "user", content: "hello from an AG-UI client" },
			{ id: "wh-1", role: "assistant", content: "hello from an AG-UI client" },
		]);

		// The thread is a session, named in RUN_STARTED: the native API sees the same run.
		const sessionId = (events[0] as unknown as { metadata: { wheelhouse: { sessionId: string } } }).metadata.wheelhouse
			.sessionId;
		const transcript = await server.request("GET", `/v1/sessions/${sessionId}/messages`, { key: KEY });
		expect(transcript.body.messages.map((m: { role: string }) => m.role)).toEqual(["user", "assistant"]);
		// The body is what the client parsed: the same events, one data: line each.
		expect(typesOf(checkFraming(await (bodies[0] as Promise<string>)))).toEqual(types);
	});

	it("continues the same session on a second run of the thread", async () => {
		await start();
		const { agent } = client();
		agent.addMessage({ id: "u1", role: "user", content: "first" });
		const first = await runOnce(agent);
		agent.addMessage({ id: "u2", role: "user", content: "second" });
		const second = await runOnce(agent);
		expect(textOf(second.events)).toBe("second");
		const sessionOf = (events: BaseEvent[]) =>
			(events[0] as unknown as { metadata: { wheelhouse: { sessionId: string } } }).metadata.wheelhouse.sessionId;
		expect(sessionOf(second.events)).toBe(sessionOf(first.events));
		expect(agent.messages.map((m) => [m.id, m.role])).toEqual([
			["u1", "user"],
			["wh-1", "assistant"],
			["u2", "user"],
			["wh-3", "assistant"],
		]);
		const transcript = await server.request("GET", `/v1/sessions/${sessionOf(first.events)}/messages`, { key: KEY });
		expect(transcript.body.messages.map((m: { role: string }) => m.role)).toEqual([
			"user",
			"assistant",
			"user",
			"assistant",
		]);

		// Another key's client with the same thread id has a thread of its own.
		await server.close();
		server = await startServer({ config: { apiKeys: [KEY, "other-key-123"] }, models: [faux.getModel()] });
		const mine = aguiAgent(server, KEY, { threadId: "shared-name" });
		const theirs = aguiAgent(server, "other-key-123", { threadId: "shared-name" });
		clients.push(mine, theirs);
		mine.agent.addMessage({ id: "m1", role: "user", content: "mine" });
		theirs.agent.addMessage({ id: "t1", role: "user", content: "theirs" });
		const a = await runOnce(mine.agent);
		const b = await runOnce(theirs.agent);
		expect(sessionOf(a.events)).not.toBe(sessionOf(b.events));
	});

	it("streams a server tool call and its result", async () => {
		await start();
		const { agent } = client();
		agent.addMessage({ id: "u1", role: "user", content: '/tool calculate {"expression": "6 * 7"}' });
		const { events } = await runOnce(agent);
		const types = typesOf(events);
		expect(types).toEqual(
			expect.arrayContaining(["TOOL_CALL_START", "TOOL_CALL_ARGS", "TOOL_CALL_END", "TOOL_CALL_RESULT"]),
		);
		// Two turns: the call, then the answer from its result.
		expect(types.filter((type) => type === "STEP_STARTED")).toHaveLength(2);
		expect(
			events.filter((e) => e.type === "STEP_STARTED").map((e) => (e as unknown as { stepName: string }).stepName),
		).toEqual(["turn 1", "turn 2"]);
		const opened = events.find((e) => e.type === "TOOL_CALL_START") as unknown as {
			toolCallId: string;
			toolCallName: string;
		};
		expect(opened.toolCallName).toBe("calculate");
		const result = events.find((e) => e.type === "TOOL_CALL_RESULT") as unknown as {
			toolCallId: string;
			content: string;
		};
		expect(result).toMatchObject({ toolCallId: opened.toolCallId, content: "42" });
		const call = agent.messages.find((m) => m.role === "assistant" && m.toolCalls) as {
			toolCalls: { id: string; function: { name: string; arguments: string } }[];
		};
		expect(JSON.parse(call.toolCalls[0]?.function.arguments ?? "")).toEqual({ expression: "6 * 7" });
		expect(agent.messages.map((m) => m.role)).toEqual(["user", "assistant", "tool", "assistant"]);
		expect(agent.messages.at(-1)).toMatchObject({ content: "Tool results: calculate: 42" });
		// No client tool was pending: the run finished plainly.
		expect((events.at(-1) as unknown as { outcome?: unknown }).outcome).toBeUndefined();
	});

	it("streams thinking as reasoning events, then the answer", async () => {
		await start();
		faux.setResponses([{ content: [fauxThinking("let me think about it"), { type: "text", text: "the answer" }] }]);
		const { agent } = client();
		agent.addMessage({ id: "u1", role: "user", content: "think first" });
		const { events } = await runOnce(agent, scripted);
		expect(typesOf(events).filter((type) => type.startsWith("REASONING") || type.startsWith("TEXT"))).toEqual([
			"REASONING_START",
			"REASONING_MESSAGE_START",
			...Array(5).fill("REASONING_MESSAGE_CONTENT"),
			"REASONING_MESSAGE_END",
			"REASONING_END",
			"TEXT_MESSAGE_START",
			"TEXT_MESSAGE_CONTENT",
			"TEXT_MESSAGE_CONTENT",
			"TEXT_MESSAGE_END",
		]);
		expect(agent.messages).toMatchObject([
			{ id: "u1", role: "user" },
			{ id: "wh-1.r0", role: "reasoning", content: "let me think about it" },
			{ id: "wh-1", role: "assistant", content: "the answer" },
		]);
	});

	it("a provider error ends the run with RUN_ERROR (MODEL_ERROR), after what streamed was closed", async () => {
		await start();
		faux.setResponses([{ content: "partial answer", stopReason: "error", errorMessage: "upstream exploded" }]);
		const { agent } = client();
		agent.addMessage({ id: "u1", role: "user", content: "hi" });
		const errors: unknown[] = [];
		const { events } = await runOnce(agent, scripted, { onRunErrorEvent: ({ event }) => void errors.push(event) });
		expect(errors).toMatchObject([{ type: "RUN_ERROR", code: "MODEL_ERROR", message: "upstream exploded" }]);
		const types = typesOf(events);
		expect(types.at(-1)).toBe("RUN_ERROR");
		expect(types.slice(-3, -1)).toEqual(["TEXT_MESSAGE_END", "STEP_FINISHED"]);
		expect(types).not.toContain("RUN_FINISHED");
	});

	it("gives the model the request's context and state, keeps the state, and applies system messages", async () => {
		await start();
		const seen: string[] = [];
		faux.setResponses([
			(context) => {
				seen.push(context.systemPrompt ?? "");
				return { content: "ok" };
			},
			(context) => {
				seen.push(context.systemPrompt ?? "");
				return { content: "ok again" };
			},
		]);
		const { agent } = client();
		agent.setMessages([
			{ id: "s1", role: "system", content: "You are terse." },
			{ id: "u1", role: "user", content: "hi" },
		]);
		agent.setState({ cart: ["apple"] });
		const { events } = await runOnce(agent, {
			...scripted,
			context: [{ description: "the user's city", value: "Lisbon" }],
		});
		expect(seen[0]).toContain("You are terse.");
		expect(seen[0]).toContain("- the user's city: Lisbon");
		expect(seen[0]).toContain('{"cart":["apple"]}');
		// Per run: the session's stored system prompt is the system message alone.
		const sessionId = (events[0] as unknown as { metadata: { wheelhouse: { sessionId: string } } }).metadata.wheelhouse
			.sessionId;
		const state = await server.request("GET", `/v1/sessions/${sessionId}`, { key: KEY });
		expect(state.body.systemPrompt).toBe("You are terse.");
		expect(JSON.parse(state.body.metadata["agui.state"])).toEqual({ cart: ["apple"] });

		agent.addMessage({ id: "u2", role: "user", content: "again" });
		agent.setState({});
		await runOnce(agent, scripted);
		expect(seen[1]).toBe("You are terse.");
	});

	it("answers errors before the stream as the error envelope, which the client rejects with", async () => {
		await start();
		const noKey = aguiAgent(server, "wrong-key-123");
		noKey.agent.addMessage({ id: "u1", role: "user", content: "hi" });
		await expect(noKey.agent.runAgent()).rejects.toMatchObject({ status: 401 });

		const badModel = aguiAgent(server, KEY);
		badModel.agent.addMessage({ id: "u1", role: "user", content: "hi" });
		const rejected = await badModel.agent
			.runAgent({ forwardedProps: { wheelhouse: { model: "nope/none" } } })
			.catch((err: unknown) => err);
		expect(rejected).toMatchObject({ status: 400, payload: { error: { code: "UNKNOWN_MODEL" } } });

		const missingSession = aguiAgent(server, KEY, { threadId: "ses_0123456789abcdef0123456789abcdef" });
		missingSession.agent.addMessage({ id: "u1", role: "user", content: "hi" });
		await expect(missingSession.agent.runAgent()).rejects.toMatchObject({
			status: 404,
			payload: { error: { code: "THREAD_NOT_FOUND" } },
		});

		const bad = await server.request("POST", "/agui/v1/run", { key: KEY, body: { threadId: "t", messages: [] } });
		expect(bad).toMatchObject({ status: 400, body: { error: { code: "VALIDATION_FAILED" } } });
		expect(bad.body.error.message).toContain("runId");
		const nothing = await server.request("POST", "/agui/v1/run", {
			key: KEY,
			body: { threadId: "t", runId: "r", messages: [{ id: "a", role: "assistant", content: "hi" }] },
		});
		expect(nothing).toMatchObject({ status: 400, body: { error: { code: "VALIDATION_FAILED" } } });
		// An AG-UI client's errors are logged by it: expected here.
		console_.restore();
		console_ = quietConsole();
	});

	it("drives a session made with /v1 when the thread id is its id", async () => {
		await start();
		const created = await server.request("POST", "/v1/sessions", {
			key: KEY,
			body: { messages: [{ role: "user", content: "earlier", timestamp: 1 }] },
		});
		const { agent } = client(created.body.id);
		agent.addMessage({ id: "u1", role: "user", content: "now through AG-UI" });
		const { events } = await runOnce(agent);
		expect(textOf(events)).toBe("now through AG-UI");
		expect(agent.messages.at(-1)).toMatchObject({ id: "wh-2", role: "assistant" });
		const transcript = await server.request("GET", `/v1/sessions/${created.body.id}/messages`, { key: KEY });
		expect(transcript.body.messages).toHaveLength(3);
	});
});
