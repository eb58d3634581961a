/**
 * What AG-UI has no events for reaches an AG-UI client as `CUSTOM` events, and the native API
 * acts on the thread's session: steering (a queued message, then the steering message itself as
 * a user text message) and approvals (requested, resolved, then the tool's result).
 */
import type { BaseEvent } from "@ag-ui/core";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { aguiAgent, checkFraming, quietConsole, runOnce, typesOf } from "../../helpers/agui.js";
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

type Custom = { type: "CUSTOM"; name: string; value: Record<string, any> };
const customs = (events: BaseEvent[]) => events.filter((e) => e.type === "CUSTOM") as unknown as Custom[];

describe("Wheelhouse facts in an AG-UI stream", () => {
	it("a steering message sent with /v1 shows as queue updates and as a user message of the run", async () => {
		server = await startServer({ config: { apiKeys: [KEY], fauxDelayMs: 5 } });
		const client = aguiAgent(server, KEY);
		const { agent } = client;
		agent.addMessage({ id: "u1", role: "user", content: Array.from({ length: 40 }, (_, i) => `w${i}`).join(" ") });
		let steered: Promise<{ status: number }> | undefined;
		const { events } = await runOnce(
			agent,
			{},
			{
				onRunStartedEvent: ({ event }) => {
					const { sessionId } = (event as unknown as { metadata: { wheelhouse: { sessionId: string } } }).metadata
						.wheelhouse;
					steered = server.request("POST", `/v1/sessions/${sessionId}/steer`, {
						key: KEY,
						body: { message: "steer here" },
					});
				},
			},
		);
		expect(await steered).toMatchObject({ status: 202 });
		expect(customs(events).map((e) => [e.name, e.value.action])).toEqual([
			["wheelhouse.queue_update", "queued"],
			["wheelhouse.queue_update", "drained"],
		]);
		const steering = agent.messages.find((m) => m.role === "user" && m.id !== "u1");
		expect(steering).toMatchObject({ role: "user", content: "steer here" });
		expect(steering?.id).toMatch(/^wh-\d+$/);
		// The steering message was answered in a second turn of the same run.
		expect(agent.messages.at(-1)).toMatchObject({ role: "assistant", content: "steer here" });
		expect(typesOf(checkFraming(await (client.bodies[0] as Promise<string>)))).toEqual(typesOf(events));
	});

	it("an approval is requested and resolved as CUSTOM events; approved through /v1, the tool runs", async () => {
		server = await startServer({ config: { apiKeys: [KEY] } });
		const created = await server.request("POST", "/v1/sessions", {
			key: KEY,
			body: { toolApprovals: { calculate: "always" } },
		});
		const sessionId = created.body.id as string;
		const client = aguiAgent(server, KEY, { threadId: sessionId });
		const { agent } = client;
		agent.addMessage({ id: "u1", role: "user", content: '/tool calculate {"expression": "2+3"}' });
		let approved: Promise<{ status: number }> | undefined;
		const { events } = await runOnce(
			agent,
			{},
			{
				onCustomEvent: ({ event }) => {
					if (event.name !== "wheelhouse.approval_requested") return;
					const { toolCallId } = event.value as { toolCallId: string };
					approved = server.request("POST", `/v1/sessions/${sessionId}/approvals/${toolCallId}`, {
						key: KEY,
						body: { approve: true },
					});
				},
			},
		);
		expect(await approved).toMatchObject({ status: 200 });
		const [requested, resolved] = customs(events);
		expect(requested).toMatchObject({ name: "wheelhouse.approval_requested", value: { toolName: "calculate" } });
		expect(resolved).toMatchObject({ name: "wheelhouse.approval_resolved", value: { outcome: { kind: "approved" } } });
		expect(events.find((e) => e.type === "TOOL_CALL_RESULT")).toMatchObject({ content: "5" });
		expect(agent.messages.at(-1)).toMatchObject({ role: "assistant", content: "Tool results: calculate: 5" });
	});
});
