import { afterEach, describe, expect, it } from "vitest";
import { createGateTool, type GateTool } from "../../helpers/gate-tool.js";
import { startServer, type TestServer } from "../../helpers/server.js";
import { openSse, promptSse, type SseEvent } from "../../helpers/sse.js";

let server: TestServer;
let gate: GateTool;
afterEach(async () => {
	gate?.release();
	await server?.close();
});

async function setup(): Promise<string> {
	gate = createGateTool();
	server = await startServer({ tools: [gate.tool] });
	const res = await server.request("POST", "/v1/sessions", { body: {} });
	return res.body.id;
}

const userTexts = (events: SseEvent[]) =>
	events
		.filter((e) => e.event === "message_start" && e.data.message.role === "user")
		.map((e) => e.data.message.content[0].text);

describe("steering and follow-up", () => {
	it("a steering message POSTed while a slow tool runs is delivered after that batch and answered in the next turn", async () => {
		const id = await setup();
		const stream = await promptSse(server.url, id, { message: "/tool wait_for_gate {}" });
		await gate.started();
		const steer = await server.request("POST", `/v1/sessions/${id}/steer`, { body: { message: "change of plan" } });
		expect(steer.status).toBe(202);
		expect(steer.body).toMatchObject({ status: "queued", queue: "steer", queueLength: 1, idle: false });

		const state = (await server.request("GET", `/v1/sessions/${id}`)).body;
		expect(state.queue.steeringCount).toBe(1);
		expect(state.queue.steering[0].message.content[0].text).toBe("change of plan");
		expect(state.pendingToolCalls).toHaveLength(1);

		gate.release("tool finished");
		await stream.waitForEnd();
		const types = stream.types();
		const toolEnd = types.indexOf("tool_execution_end");
		const drained = stream.events.findIndex((e) => e.event === "queue_update" && e.data.action === "drained");
		const steerStart = stream.events.findIndex(
			(e) => e.event === "message_start" && e.data.message.content?.[0]?.text === "change of plan",
		);
		// Order: the tool batch ends (its turn_end), then the queued message is drained and injected.
		expect(toolEnd).toBeGreaterThan(0);
		expect(types.indexOf("turn_end", toolEnd)).toBeLessThan(drained);
		expect(drained).toBeLessThan(steerStart);
		// The next turn answers it (the echo model repeats the last user message).
		const end = stream.events.at(-1)!;
		expect(end.event).toBe("agent_end");
		expect(end.data.messages.at(-1).content[0].text).toBe("change of plan");
		const queued = stream.events.find((e) => e.event === "queue_update" && e.data.action === "queued")!;
		expect(queued.data).toMatchObject({ kind: "steer", steeringCount: 1 });
		const after = (await server.request("GET", `/v1/sessions/${id}`)).body;
		expect(after.queue.steeringCount).toBe(0);
	});

	it("follow-ups run only when the agent would otherwise stop", async () => {
		const id = await setup();
		const stream = await promptSse(server.url, id, { message: "/tool wait_for_gate {}" });
		await gate.started();
		const fu = await server.request("POST", `/v1/sessions/${id}/follow-up`, { body: { message: "and then this" } });
		expect(fu.status).toBe(202);
		expect(fu.body).toMatchObject({ queue: "followUp", queueLength: 1, idle: false });
		gate.release();
		await stream.waitForEnd();
		// The tool result is answered first ("Tool results: ..."), then the follow-up starts a new turn.
		const assistantTexts = stream.events
			.filter((e) => e.event === "message_end" && e.data.message.role === "assistant")
			.map((e) => e.data.message.content[0]?.text ?? e.data.message.content[0]?.type);
		expect(assistantTexts).toEqual(["toolCall", "Tool results: wait_for_gate: gate released", "and then this"]);
		expect(userTexts(stream.events)).toEqual(["/tool wait_for_gate {}", "and then this"]);
	});

	it("on an idle session a queued message waits for the next run; DELETE /queue clears both queues", async () => {
		const id = await setup();
		const events = await openSse(`${server.url}/v1/sessions/${id}/events`);
		await events.waitForType("session_snapshot");
		const steer = await server.request("POST", `/v1/sessions/${id}/steer`, { body: { message: "first steer" } });
		expect(steer.body.idle).toBe(true);
		expect(steer.body.note).toMatch(/next run/);
		await server.request("POST", `/v1/sessions/${id}/follow-up`, { body: { message: "later" } });
		const cleared = await server.request("DELETE", `/v1/sessions/${id}/queue?kind=followUp`);
		expect(cleared.body).toEqual({ cleared: 1, steeringCount: 1, followUpCount: 0 });
		const clearedEvent = await events.waitFor((e) => e.event === "queue_update" && e.data.action === "cleared");
		expect(clearedEvent.data.messages.map((m: any) => m.message.content[0].text)).toEqual(["later"]);

		// The next prompt drains the waiting steering message right after the prompt.
		const stream = await promptSse(server.url, id, { message: "hello" });
		await stream.waitForEnd();
		expect(userTexts(stream.events)).toEqual(["hello", "first steer"]);
		expect(stream.events.at(-1)!.data.messages.at(-1).content[0].text).toBe("first steer");

		await server.request("POST", `/v1/sessions/${id}/steer`, { body: { message: "x" } });
		await server.request("POST", `/v1/sessions/${id}/follow-up`, { body: { message: "y" } });
		const all = await server.request("DELETE", `/v1/sessions/${id}/queue`);
		expect(all.body).toEqual({ cleared: 2, steeringCount: 0, followUpCount: 0 });
		events.close();
	});

	it("steeringMode all delivers every queued steering message at once", async () => {
		const id = await setup();
		await server.request("PATCH", `/v1/sessions/${id}`, { body: { steeringMode: "all" } });
		const stream = await promptSse(server.url, id, { message: "/tool wait_for_gate {}" });
		await gate.started();
		await server.request("POST", `/v1/sessions/${id}/steer`, { body: { message: "one" } });
		await server.request("POST", `/v1/sessions/${id}/steer`, { body: { message: "two" } });
		gate.release();
		await stream.waitForEnd();
		expect(userTexts(stream.events)).toEqual(["/tool wait_for_gate {}", "one", "two"]);
		// Both are injected before the single next model call, which answers the last one.
		const assistantEnds = stream.events.filter((e) => e.event === "message_end" && e.data.message.role === "assistant");
		expect(assistantEnds).toHaveLength(2);
		expect(assistantEnds[1].data.message.content[0].text).toBe("two");
	});

	it("rejects queueing past the per-session limit with 429 QUEUE_FULL", async () => {
		gate = createGateTool();
		server = await startServer({ config: { maxQueuedMessages: 2 } });
		const id = (await server.request("POST", "/v1/sessions", { body: {} })).body.id;
		for (const m of ["a", "b"]) {
			expect((await server.request("POST", `/v1/sessions/${id}/steer`, { body: { message: m } })).status).toBe(202);
		}
		const full = await server.request("POST", `/v1/sessions/${id}/follow-up`, { body: { message: "c" } });
		expect(full.status).toBe(429);
		expect(full.body.error.code).toBe("QUEUE_FULL");
	});
});
