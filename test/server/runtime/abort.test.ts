import { afterEach, describe, expect, it } from "vitest";
import { createGateTool, type GateTool } from "../../helpers/gate-tool.js";
import { startServer, type TestServer } from "../../helpers/server.js";
import { openSse, promptSse } from "../../helpers/sse.js";

let server: TestServer;
let gate: GateTool;
afterEach(async () => {
	gate?.release();
	await server?.close();
});

describe("abort", () => {
	it("mid-stream: the answer stops, the run ends with agent_end and an aborted message; the session is idle", async () => {
		server = await startServer({ config: { fauxDelayMs: 5 } });
		const id = (await server.request("POST", "/v1/sessions", { body: {} })).body.id;
		const words = Array.from({ length: 500 }, (_, i) => `w${i}`).join(" ");
		const stream = await promptSse(server.url, id, { message: words });
		await stream.waitFor((e) => e.event === "message_update" && e.data.assistantMessageEvent.type === "text_delta");
		const res = await server.request("POST", `/v1/sessions/${id}/abort`);
		expect(res.status).toBe(200);
		expect(res.body.aborted).toBe(true);
		await stream.waitForEnd();
		const end = stream.events.at(-1)!;
		expect(end.event).toBe("agent_end");
		const last = end.data.messages.at(-1);
		expect(last.stopReason).toBe("aborted");
		expect(last.content[0].text.split(" ").length).toBeLessThan(500);
		const state = (await server.request("GET", `/v1/sessions/${id}`)).body;
		expect(state.status).toBe("idle");
		expect(state.errorMessage).toBeTruthy();
		// The aborted message is in the transcript; a later abort is a no-op.
		const again = await server.request("POST", `/v1/sessions/${id}/abort`);
		expect(again.body).toEqual({ aborted: false, runId: null });
	});

	it("mid-tool: the tool sees the abort signal, its result is an error, the run ends", async () => {
		gate = createGateTool();
		server = await startServer({ tools: [gate.tool] });
		const id = (await server.request("POST", "/v1/sessions", { body: {} })).body.id;
		const stream = await promptSse(server.url, id, { message: "/tool wait_for_gate {}" });
		await gate.started();
		await server.request("POST", `/v1/sessions/${id}/abort`);
		await stream.waitForEnd();
		expect(gate.aborted).toBe(1);
		const toolEnd = stream.events.find((e) => e.event === "tool_execution_end")!;
		expect(toolEnd.data.isError).toBe(true);
		expect(stream.events.at(-1)!.event).toBe("agent_end");
		const state = (await server.request("GET", `/v1/sessions/${id}`)).body;
		expect(state.status).toBe("idle");
		expect(state.pendingToolCalls).toEqual([]);
	});

	it("a client disconnect does not stop the run", async () => {
		server = await startServer({ config: { fauxDelayMs: 1 } });
		const id = (await server.request("POST", "/v1/sessions", { body: {} })).body.id;
		const stream = await promptSse(server.url, id, { message: "one two three four five six seven eight" });
		await stream.waitForType("message_update");
		stream.close();
		// The run completes anyway: wait on a fresh subscription for the run's agent_end.
		const events = await openSse(`${server.url}/v1/sessions/${id}/events?after=0`);
		const end = await events.waitForType("agent_end");
		expect(end.data.messages.at(-1).content[0].text).toBe("one two three four five six seven eight");
		events.close();
	});
});
