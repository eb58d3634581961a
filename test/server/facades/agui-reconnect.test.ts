/**
 * Catching up on a thread (`GET /agui/v1/threads/:threadId/events`, read by an `HttpAgent` whose
 * `connectAgent()` opens it): a snapshot prelude, then the run in progress live to its end. The
 * client's verifier checks these streams like any other.
 */
import type { BaseEvent, Message } from "@ag-ui/core";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import {
	aguiAgent,
	checkFraming,
	quietConsole,
	type RawBodies,
	ReconnectingAgent,
	runOnce,
	typesOf,
} from "../../helpers/agui.js";
import { startServer, type TestServer } from "../../helpers/server.js";

const KEY = "agui-test-key";
let server: TestServer;
let console_: ReturnType<typeof quietConsole>;

beforeEach(() => {
	console_ = quietConsole();
});
afterEach(async () => {
	try {
		console_.check();
	} finally {
		console_.restore();
		await server?.close();
	}
});

const LONG = Array.from({ length: 120 }, (_, i) => `w${i}`).join(" ");

function reconnecting(threadId: string): { agent: ReconnectingAgent; bodies: RawBodies } {
	const bodies: RawBodies = [];
	const agent = new ReconnectingAgent(server.url, {
		url: `${server.url}/agui/v1/run`,
		threadId,
		headers: { authorization: `Bearer ${KEY}` },
		fetch: async (url, init) => {
			const response = await fetch(url, init);
			const [forClient, forTest] = (response.body as ReadableStream<Uint8Array>).tee();
			bodies.push(new Response(forTest).text().catch(() => ""));
			return new Response(forClient, { status: response.status, headers: response.headers });
		},
	});
	return { agent, bodies };
}

async function connect(agent: ReconnectingAgent): Promise<BaseEvent[]> {
	const events: BaseEvent[] = [];
	await agent.connectAgent({}, { onEvent: ({ event }) => void events.push(event) });
	return events;
}

function textOfAssistant(messages: Message[]): string {
	return (messages.find((m) => m.role === "assistant") as { content?: string } | undefined)?.content ?? "";
}

describe("catching up on an AG-UI thread", () => {
	it("joins a run in progress: snapshot prelude, the partial answer, then live to the end", async () => {
		server = await startServer({ config: { apiKeys: [KEY], fauxDelayMs: 5 } });
		const { agent } = aguiAgent(server, KEY);
		agent.addMessage({ id: "u1", role: "user", content: LONG });
		let joined: Promise<BaseEvent[]> | undefined;
		const late = reconnecting(agent.threadId);
		let deltas = 0;
		await runOnce(
			agent,
			{},
			{
				onTextMessageContentEvent: () => {
					if (++deltas === 5) joined = connect(late.agent);
				},
			},
		);
		const events = await (joined as Promise<BaseEvent[]>);
		const types = typesOf(events);
		expect(types.slice(0, 6)).toEqual([
			"RUN_STARTED",
			"MESSAGES_SNAPSHOT",
			"STATE_SNAPSHOT",
			"CUSTOM",
			"STEP_STARTED",
			"TEXT_MESSAGE_START",
		]);
		expect(types.at(-1)).toBe("RUN_FINISHED");
		expect(events[1]).toMatchObject({ messages: [{ id: "wh-0", role: "user", content: LONG }] });
		expect(events[3]).toMatchObject({ name: "wheelhouse.session", value: { status: "running" } });
		// The first delta after the prelude holds the text streamed before the client joined.
		const first = events[6] as unknown as { type: string; delta: string };
		expect(first.type).toBe("TEXT_MESSAGE_CONTENT");
		expect(first.delta.split(" ").length).toBeGreaterThan(1);
		// Both clients end with the same conversation.
		expect(textOfAssistant(late.agent.messages)).toBe(LONG);
		expect(textOfAssistant(agent.messages)).toBe(LONG);
		expect(late.agent.messages.map((m) => m.id)).toEqual(["wh-0", "wh-1"]);
		expect(typesOf(checkFraming(await (late.bodies[0] as Promise<string>)))).toEqual(types);
	});

	it("on an idle thread: the snapshot of the conversation and its state, then RUN_FINISHED", async () => {
		server = await startServer({ config: { apiKeys: [KEY] } });
		const { agent } = aguiAgent(server, KEY, { initialState: { step: 3 } });
		agent.addMessage({ id: "u1", role: "user", content: '/tool calculate {"expression": "1+1"}' });
		await runOnce(agent);
		const late = reconnecting(agent.threadId);
		const events = await connect(late.agent);
		expect(typesOf(events)).toEqual(["RUN_STARTED", "MESSAGES_SNAPSHOT", "STATE_SNAPSHOT", "CUSTOM", "RUN_FINISHED"]);
		expect(late.agent.state).toEqual({ step: 3 });
		expect(late.agent.messages.map((m) => m.role)).toEqual(["user", "assistant", "tool", "assistant"]);
		// The same conversation the live client built, under the server's ids.
		expect(late.agent.messages.slice(1)).toEqual(agent.messages.slice(1));
		checkFraming(await (late.bodies[0] as Promise<string>));
	});

	it("after a compaction released older messages from memory: the snapshot still has every message, under its transcript id", async () => {
		server = await startServer({ config: { apiKeys: [KEY] } });
		const call = async (method: string, route: string, body?: unknown) => {
			const res = await fetch(`${server.url}${route}`, {
				method,
				headers: { authorization: `Bearer ${KEY}`, ...(body ? { "content-type": "application/json" } : {}) },
				body: body ? JSON.stringify(body) : undefined,
			});
			return { status: res.status, body: (await res.json()) as any };
		};
		const id = (await call("POST", "/v1/sessions", {})).body.id as string;
		const texts = ["first question", "second question"].map((t) => `${t} ${LONG}`);
		for (const text of texts) {
			expect((await call("POST", `/v1/sessions/${id}/prompt`, { message: text })).status).toBe(202);
			await expect.poll(async () => (await call("GET", `/v1/sessions/${id}`)).body.status).toBe("idle");
		}
		const compacted = await call("POST", `/v1/sessions/${id}/compact`, { keepRecentTokens: 1 });
		expect(compacted.status).toBe(200);
		expect(compacted.body.message.firstKeptIndex).toBeGreaterThan(0);
		expect((await call("GET", `/v1/sessions/${id}`)).body.messageCount).toBe(5);

		const late = reconnecting(id);
		const events = await connect(late.agent);
		const snapshot = events[1] as unknown as { type: string; messages: { id: string; content: string }[] };
		expect(snapshot.type).toBe("MESSAGES_SNAPSHOT");
		expect(snapshot.messages.map((m) => [m.id, m.content])).toEqual([
			["wh-0", texts[0]],
			["wh-1", texts[0]],
			["wh-2", texts[1]],
			["wh-3", texts[1]],
		]);
	});

	it("while the run waits for a client tool: RUN_FINISHED names the pending call", async () => {
		server = await startServer({ config: { apiKeys: [KEY], shutdownGraceMs: 50 } });
		const { agent } = aguiAgent(server, KEY);
		agent.addMessage({ id: "u1", role: "user", content: '/tool pick {"q": 1}' });
		await runOnce(agent, { tools: [{ name: "pick", description: "pick one", parameters: { type: "object" } }] });
		const late = reconnecting(agent.threadId);
		const pending: string[][] = [];
		await late.agent.connectAgent(
			{},
			{
				onRunFinishedEvent: (params) =>
					void pending.push(params.outcome === "success" ? params.pendingToolCallIds : []),
			},
		);
		const call = (late.agent.messages.at(-1) as { toolCalls: { id: string }[] }).toolCalls[0]?.id;
		expect(call).toBeDefined();
		expect(pending).toEqual([[call]]);
	});

	it("closing a catch-up stream leaves the run running", async () => {
		server = await startServer({ config: { apiKeys: [KEY], fauxDelayMs: 5 } });
		const { agent } = aguiAgent(server, KEY);
		agent.addMessage({ id: "u1", role: "user", content: LONG });
		const late = reconnecting(agent.threadId);
		let deltas = 0;
		let watching: Promise<unknown> | undefined;
		await runOnce(
			agent,
			{},
			{
				onTextMessageContentEvent: () => {
					if (++deltas === 3) {
						watching = late.agent.connectAgent({}, { onTextMessageContentEvent: () => late.agent.abortRun() });
					}
				},
			},
		);
		await watching;
		expect(textOfAssistant(agent.messages)).toBe(LONG);
		expect(textOfAssistant(late.agent.messages).length).toBeLessThan(LONG.length);
	});

	it("an unknown thread is 404 THREAD_NOT_FOUND", async () => {
		server = await startServer({ config: { apiKeys: [KEY] } });
		const res = await server.request("GET", "/agui/v1/threads/no-such-thread/events", { key: KEY });
		expect(res).toMatchObject({ status: 404, body: { error: { code: "THREAD_NOT_FOUND" } } });
		const denied = await server.request("GET", "/agui/v1/threads/no-such-thread/events");
		expect(denied).toMatchObject({ status: 401, body: { error: { code: "UNAUTHORIZED" } } });
	});
});
