/**
 * The MCP client's elicitation capability against the fixture server (a real child process, over
 * stdio and over Streamable HTTP): a question asked during the one call in flight reaches the
 * installed handler with that call's tool call id, and the handler's answer reaches the server;
 * with no handler, or while another call to the same server is in flight (MCP does not say which
 * call asks), the server gets `cancel` and the handler is not asked.
 */
import { afterEach, describe, expect, it } from "vitest";
import type { AgentToolResult } from "../../../src/agent/types.js";
import { type McpElicitation, McpManager } from "../../../src/tools/mcp/index.js";
import { fixtureCommand, killChild, startHttpFixture } from "../helpers.js";

const text = (result: AgentToolResult<unknown>) =>
	result.content.map((c) => (c.type === "text" ? c.text : `[${c.type}]`)).join("");

const stops: (() => Promise<unknown>)[] = [];
afterEach(async () => {
	for (const stop of stops.splice(0).reverse()) await stop();
});

async function started(config: ConstructorParameters<typeof McpManager>[0]): Promise<McpManager> {
	const manager = new McpManager(config);
	stops.push(() => manager.stop());
	await manager.start();
	return manager;
}

const call = (manager: McpManager, name: string, id: string, args: object, signal?: AbortSignal) =>
	manager
		.tools()
		.find((t) => t.name === name)!
		.execute(id, args as never, signal);

describe("elicitation from MCP servers", () => {
	it("hands the question to the handler with the call's id and sends the answer back (stdio)", async () => {
		const manager = await started({ fx: { ...fixtureCommand(), pingIntervalMs: 0 } });
		const asked: Omit<McpElicitation, "signal">[] = [];
		manager.setElicitationHandler(async ({ signal: _signal, ...elicitation }) => {
			asked.push(elicitation);
			return { action: "accept", content: { name: "Ada", age: 36 } };
		});
		const result = await call(manager, "fx__ask", "call-1", { question: "Who?" });
		expect(text(result)).toBe('answer: {"action":"accept","content":{"name":"Ada","age":36}}');
		expect(asked).toEqual([
			{
				server: "fx",
				toolCallId: "call-1",
				toolName: "fx__ask",
				message: "Who?",
				requestedSchema: expect.objectContaining({ type: "object", required: ["name", "age"] }),
			},
		]);
	});

	it("works over Streamable HTTP (the question comes on the call's response stream)", async () => {
		const fixture = await startHttpFixture();
		stops.push(() => killChild(fixture.child));
		const manager = await started({ remote: { url: fixture.url, pingIntervalMs: 0 } });
		manager.setElicitationHandler(async () => ({ action: "decline" }));
		const result = await call(manager, "remote__ask", "call-h", {});
		expect(text(result)).toBe('answer: {"action":"decline","content":null}');
	});

	it("answers cancel without a handler, and while another call to the server is in flight", async () => {
		const manager = await started({ fx: { ...fixtureCommand(), pingIntervalMs: 0 } });
		expect(text(await call(manager, "fx__ask", "call-a", {}))).toBe('answer: {"action":"cancel","content":null}');

		let asked = 0;
		manager.setElicitationHandler(async () => {
			asked++;
			return { action: "accept", content: { name: "Ada", age: 36 } };
		});
		const stop = new AbortController();
		const slow = call(manager, "fx__slow", "call-slow", { steps: 200, stepMs: 100 }, stop.signal).catch(
			() => "aborted",
		);
		try {
			expect(text(await call(manager, "fx__ask", "call-b", {}))).toBe('answer: {"action":"cancel","content":null}');
			expect(asked).toBe(0);
		} finally {
			stop.abort();
			await slow;
		}
		// Alone again: the handler answers.
		expect(text(await call(manager, "fx__ask", "call-c", {}))).toBe(
			'answer: {"action":"accept","content":{"name":"Ada","age":36}}',
		);
		expect(asked).toBe(1);
	});
});
