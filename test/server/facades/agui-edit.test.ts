/**
 * An edited AG-UI history with the unmodified `HttpAgent` (`@ag-ui/client`): the user edits an
 * earlier message (the client sends the conversation up to it and the new text, CopilotKit
 * style), or the client drops the last answer to have it again. The thread's session is rewound
 * where the conversation leaves its transcript: the edited turn is answered in place (not appended
 * after the old answers), the client's view and the stored transcript agree, and what was replaced
 * stays readable as a superseded branch. A conversation that goes on with a message the thread
 * never had after the point it leaves is refused, naming the message.
 */
import type { Message } from "@ag-ui/core";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { aguiAgent, quietConsole, runOnce } from "../../helpers/agui.js";
import { startServer, type TestServer } from "../../helpers/server.js";

const KEY = "agui-edit-key";
let server: TestServer;
let console_: ReturnType<typeof quietConsole>;
/** Set by a test whose run the client fails (it logs the failure with console.error). */
let failsARun = false;

beforeEach(() => {
	console_ = quietConsole();
	failsARun = false;
});
afterEach(async () => {
	try {
		if (!failsARun) console_.check();
	} finally {
		console_.restore();
		await server?.close();
	}
});

type Stored = { role: string; content: { type: string; text?: string }[] | string };
const textOf = (m: Stored) =>
	typeof m.content === "string" ? m.content : m.content.map((b) => (b.type === "text" ? b.text : "")).join("");

async function transcript(sessionId: string): Promise<string[]> {
	const { body } = await server.request("GET", `/v1/sessions/${sessionId}/messages`, { key: KEY });
	return (body.messages as Stored[]).map((m) => `${m.role}: ${textOf(m)}`);
}

function sessionOf(events: { type: string }[]): string {
	const started = events.find((e) => e.type === "RUN_STARTED") as unknown as {
		metadata: { wheelhouse: { sessionId: string } };
	};
	return started.metadata.wheelhouse.sessionId;
}

describe("AG-UI: an edited history rewinds the thread", () => {
	it("an edited earlier message is answered in its place; the replaced turns stay as a superseded branch", async () => {
		server = await startServer({ config: { apiKeys: [KEY] } });
		const { agent } = aguiAgent(server, KEY, { threadId: "edited-thread" });
		agent.addMessage({ id: "u1", role: "user", content: "first question" });
		const first = await runOnce(agent);
		const sessionId = sessionOf(first.events);
		agent.addMessage({ id: "u2", role: "user", content: "second question" });
		await runOnce(agent);
		agent.addMessage({ id: "u3", role: "user", content: "third question" });
		await runOnce(agent);
		expect(await transcript(sessionId)).toEqual([
			"user: first question",
			"assistant: first question",
			"user: second question",
			"assistant: second question",
			"user: third question",
			"assistant: third question",
		]);

		// The user edits the second message: the client keeps what came before it, then the new text.
		const kept = agent.messages.slice(0, 2) as Message[];
		agent.setMessages([...kept, { id: "u2", role: "user", content: "second question, edited" }]);
		const edited = await runOnce(agent);
		expect(sessionOf(edited.events)).toBe(sessionId);
		expect(await transcript(sessionId)).toEqual([
			"user: first question",
			"assistant: first question",
			"user: second question, edited",
			"assistant: second question, edited",
		]);
		// The client's view is the transcript's: the new answer has the id of its place.
		expect(agent.messages.map((m) => m.id)).toEqual([agent.messages[0]!.id, "wh-1", "u2", "wh-3"]);
		const { body } = await server.request("GET", `/v1/sessions/${sessionId}/branches`, { key: KEY });
		expect(body.branches).toHaveLength(1);
		expect(body.branches[0]).toMatchObject({ fromMessageId: "wh-2", messageCount: 4 });
		expect((body.branches[0].messages as Stored[]).map(textOf)).toEqual([
			"second question",
			"second question",
			"third question",
			"third question",
		]);

		// The next message goes on from the edit.
		agent.addMessage({ id: "u4", role: "user", content: "after the edit" });
		await runOnce(agent);
		expect((await transcript(sessionId)).slice(4)).toEqual(["user: after the edit", "assistant: after the edit"]);
	});

	it("a conversation without its last answer has it again; the old answer is superseded", async () => {
		server = await startServer({ config: { apiKeys: [KEY] } });
		const { agent } = aguiAgent(server, KEY, { threadId: "regenerated-thread" });
		agent.addMessage({ id: "u1", role: "user", content: "one" });
		const { events } = await runOnce(agent);
		const sessionId = sessionOf(events);
		agent.addMessage({ id: "u2", role: "user", content: "two" });
		await runOnce(agent);
		agent.setMessages(agent.messages.slice(0, -1) as Message[]);
		const again = await runOnce(agent);
		expect(again.newMessages).toHaveLength(1);
		expect(await transcript(sessionId)).toEqual(["user: one", "assistant: one", "user: two", "assistant: two"]);
		const { body } = await server.request("GET", `/v1/sessions/${sessionId}/branches`, { key: KEY });
		expect(body.branches).toHaveLength(1);
		expect(body.branches[0]).toMatchObject({ fromMessageId: "wh-3", messageCount: 1 });
	});

	it("a conversation that goes on with an answer the thread never had after the edit is refused, naming it", async () => {
		server = await startServer({ config: { apiKeys: [KEY] } });
		const { agent } = aguiAgent(server, KEY, { threadId: "fabricated-thread" });
		agent.addMessage({ id: "u1", role: "user", content: "one" });
		const { events } = await runOnce(agent);
		const sessionId = sessionOf(events);
		agent.addMessage({ id: "u2", role: "user", content: "two" });
		await runOnce(agent);
		agent.setMessages([
			...(agent.messages.slice(0, 2) as Message[]),
			{ id: "u2", role: "user", content: "two, edited" },
			{ id: "made-up", role: "assistant", content: "an answer the thread never gave" },
			{ id: "u3", role: "user", content: "three" },
		]);
		failsARun = true;
		await expect(runOnce(agent)).rejects.toThrow(/body\.messages\[3\].*only user messages may follow/);
		expect(await transcript(sessionId)).toEqual(["user: one", "assistant: one", "user: two", "assistant: two"]);
	});
});
