/**
 * `WheelhouseClient.answerElicitation` answers a real MCP server's question (the fixture server, a
 * child process, asks during its `ask` tool): the content the client sends is what the MCP server
 * receives and the tool call completes with it; content that does not fit the requested schema, a
 * second answer and an unknown id arrive as `WheelhouseError` with the server's codes; a browser's
 * client token answers with the `approve` scope and is refused with `read` only.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
	type ElicitationRequestedEvent,
	type ReceivedEvent,
	WheelhouseClient,
	WheelhouseError,
} from "../../src/client/index.js";
import { startServer, type TestServer } from "../helpers/server.js";
import { fixtureCommand } from "../tools/helpers.js";

const KEY = "elicitation-client-key-0123456789";
let server: TestServer;
let client: WheelhouseClient;

beforeAll(async () => {
	server = await startServer({
		config: { apiKeys: [KEY], tools: { mcpServers: { fx: { ...fixtureCommand(), pingIntervalMs: 0 } } } },
	});
	client = new WheelhouseClient({ baseUrl: server.url, apiKey: KEY });
});

afterAll(async () => {
	await server?.close();
});

/** The run's events; `onEvent` runs before the next one is read (the run waits on the answer). */
async function collect(stream: AsyncIterable<ReceivedEvent>, onEvent: (e: ReceivedEvent) => Promise<void>) {
	const events: ReceivedEvent[] = [];
	for await (const event of stream) {
		events.push(event);
		await onEvent(event);
	}
	return events;
}

const toolResultText = (events: ReceivedEvent[]) => {
	const end = events.find((e) => e.type === "tool_execution_end")!.data as any;
	expect(end.isError).toBe(false);
	return end.result.content.map((c: { text: string }) => c.text).join("");
};

describe("answerElicitation against a real MCP server", () => {
	it("refuses content that does not fit, then delivers the accepted answer; a second answer is 409", {
		timeout: 60_000,
	}, async () => {
		const { id } = await client.createSession({});
		let asked: ElicitationRequestedEvent | undefined;
		const events = await collect(client.streamPrompt(id, '/tool fx__ask {"question": "Who are you?"}'), async (e) => {
			if (e.type !== "elicitation_requested") return;
			asked = e.data as ElicitationRequestedEvent;
			expect(asked.message).toBe("Who are you?");
			expect((await client.getSession(id)).pendingElicitations?.map((p) => p.elicitationId)).toEqual([
				asked.elicitationId,
			]);

			const wrong = await client
				.answerElicitation(id, asked.elicitationId, { action: "accept", content: { name: "Ada", age: 36.5 } })
				.catch((error) => error);
			expect(wrong).toBeInstanceOf(WheelhouseError);
			expect(wrong).toMatchObject({ status: 400, code: "VALIDATION_FAILED" });
			expect(wrong.message).toBe("body.content.age: must be an integer");
			// Still waiting for an answer after the refusal.
			expect((await client.getSession(id)).pendingElicitations).toHaveLength(1);

			const accepted = await client.answerElicitation(id, asked.elicitationId, {
				action: "accept",
				content: { name: "Ada", age: 36, color: "green" },
			});
			expect(accepted).toEqual({ elicitationId: asked.elicitationId, status: "accepted" });
		});

		expect(asked).toBeDefined();
		const resolved = events.find((e) => e.type === "elicitation_resolved")!.data;
		expect(resolved).toMatchObject({
			elicitationId: asked!.elicitationId,
			outcome: { kind: "accepted", content: { name: "Ada", age: 36, color: "green" } },
		});
		// What the MCP server received, as its tool reports it back.
		expect(toolResultText(events)).toBe(
			'answer: {"action":"accept","content":{"name":"Ada","age":36,"color":"green"}}',
		);
		expect(events.at(-1)?.type).toBe("agent_end");
		expect((await client.getSession(id)).pendingElicitations).toEqual([]);

		const again = await client.answerElicitation(id, asked!.elicitationId, { action: "decline" }).catch((e) => e);
		expect(again).toMatchObject({ status: 409, code: "ELICITATION_FINISHED" });
		const unknown = await client.answerElicitation(id, "eli_nope", { action: "decline" }).catch((e) => e);
		expect(unknown).toMatchObject({ status: 404, code: "ELICITATION_NOT_FOUND" });
	});

	it("a client token answers with the approve scope, not with read only", { timeout: 60_000 }, async () => {
		const { id } = await client.createSession({});
		const approver = new WheelhouseClient({
			baseUrl: server.url,
			apiKey: (await client.clientToken(id, ["read", "approve"])).token,
		});
		const reader = new WheelhouseClient({
			baseUrl: server.url,
			apiKey: (await client.clientToken(id, ["read"])).token,
		});
		const events = await collect(client.streamPrompt(id, "/tool fx__ask {}"), async (e) => {
			if (e.type !== "elicitation_requested") return;
			const { elicitationId } = e.data as ElicitationRequestedEvent;
			const refused = await reader.answerElicitation(id, elicitationId, { action: "cancel" }).catch((error) => error);
			expect(refused).toMatchObject({ status: 403, code: "INSUFFICIENT_SCOPE" });
			expect(await approver.answerElicitation(id, elicitationId, { action: "decline" })).toEqual({
				elicitationId,
				status: "accepted",
			});
		});
		expect(events.find((e) => e.type === "elicitation_resolved")?.data).toMatchObject({
			outcome: { kind: "declined" },
		});
		expect(toolResultText(events)).toBe('answer: {"action":"decline","content":null}');
	});
});
