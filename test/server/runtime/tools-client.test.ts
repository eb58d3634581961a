import { afterEach, describe, expect, it } from "vitest";
import { startServer, type TestServer } from "../../helpers/server.js";
import { openSse, promptSse, type SseReader } from "../../helpers/sse.js";

let server: TestServer;
const readers: SseReader[] = [];
afterEach(async () => {
	for (const r of readers.splice(0)) r.close();
	await server?.close();
});

const pickColor = {
	name: "pick_color",
	description: "Ask the user to pick a color",
	parameters: { type: "object", properties: { question: { type: "string" } }, required: ["question"] },
};

async function start(tools: Record<string, unknown> = {}): Promise<void> {
	server = await startServer({ config: { tools } });
}

async function session(body: Record<string, unknown> = { clientTools: [pickColor] }): Promise<string> {
	const res = await server.request("POST", "/v1/sessions", { body });
	expect(res.status).toBe(201);
	return res.body.id;
}

async function prompt(id: string, message: string): Promise<SseReader> {
	const reader = await promptSse(server.url, id, { message });
	readers.push(reader);
	return reader;
}

const resultText = (e: { data: any }) => e.data.result.content.map((c: any) => c.text).join("");
const post = (id: string, callId: string, body: unknown) =>
	server.request("POST", `/v1/sessions/${id}/tool-results/${callId}`, { body });

describe("client-side tools over HTTP", () => {
	it("a declared tool's call shows as tool_execution_start and completes with the posted result", async () => {
		await start();
		const id = await session();
		const view = (await server.request("GET", `/v1/sessions/${id}`)).body;
		expect(view.clientTools).toEqual([pickColor]);

		const stream = await prompt(id, '/tool pick_color {"question": "favourite?"}');
		const start_ = await stream.waitFor((e) => e.event === "tool_execution_start" && e.data.toolName === "pick_color");
		expect(start_.data.args).toEqual({ question: "favourite?" });
		const { toolCallId } = start_.data;
		const state = (await server.request("GET", `/v1/sessions/${id}`)).body;
		expect(state.pendingClientToolCalls).toMatchObject([
			{ toolCallId, toolName: "pick_color", args: { question: "favourite?" } },
		]);
		expect(state.pendingToolCalls).toEqual([toolCallId]);

		const res = await post(id, toolCallId, { content: "teal", details: { swatch: "#008080" } });
		expect(res).toMatchObject({ status: 200, body: { toolCallId, status: "accepted" } });
		const end = await stream.waitForType("tool_execution_end");
		expect([resultText(end), end.data.isError, end.data.result.details]).toEqual([
			"teal",
			false,
			{ client: true, details: { swatch: "#008080" } },
		]);
		await stream.waitForEnd();
		const answer = stream.events.filter((e) => e.event === "message_end").at(-1)!.data.message;
		expect(answer.content[0].text).toContain("teal");

		expect((await post(id, toolCallId, { content: "again" })).body.error.code).toBe("TOOL_CALL_FINISHED");
		const unknown = await post(id, "call_unknown", { content: "x" });
		expect([unknown.status, unknown.body.error.code]).toEqual([404, "TOOL_CALL_NOT_FOUND"]);
	});

	it("an isError result and a timeout are error results", async () => {
		await start({ clientToolTimeoutMs: 150 });
		const id = await session();
		const stream = await prompt(id, '/tool pick_color {"question": "q"}');
		const { toolCallId } = (await stream.waitForType("tool_execution_start")).data;
		await post(id, toolCallId, { content: [{ type: "text", text: "the user closed the picker" }], isError: true });
		const end = await stream.waitForType("tool_execution_end");
		expect([resultText(end), end.data.isError]).toEqual(["the user closed the picker", true]);
		await stream.waitForEnd();

		const slow = await prompt(id, '/tool pick_color {"question": "q2"}');
		const timedOut = await slow.waitForType("tool_execution_end");
		expect([resultText(timedOut), timedOut.data.isError]).toEqual([
			"The client did not return a result for pick_color within 150 ms",
			true,
		]);
		await slow.waitForEnd();
		const late = await post(id, timedOut.data.toolCallId, { content: "late" });
		expect([late.status, late.body.error.code]).toEqual([409, "TOOL_CALL_FINISHED"]);
	});

	it("abort while waiting ends the call with an error and the run with agent_end", async () => {
		await start();
		const id = await session();
		const stream = await prompt(id, '/tool pick_color {"question": "q"}');
		const { toolCallId } = (await stream.waitForType("tool_execution_start")).data;
		await server.request("POST", `/v1/sessions/${id}/abort`);
		await stream.waitForEnd();
		const end = stream.events.find((e) => e.event === "tool_execution_end")!;
		expect(end.data.isError).toBe(true);
		expect(stream.events.at(-1)!.event).toBe("agent_end");
		expect((await post(id, toolCallId, { content: "x" })).status).toBe(409);
		expect((await server.request("GET", `/v1/sessions/${id}`)).body.pendingClientToolCalls).toEqual([]);
	});

	it("a parallel batch mixes a server tool and a client tool", async () => {
		await start();
		const id = await session();
		const events = await openSse(`${server.url}/v1/sessions/${id}/events`);
		readers.push(events);
		await events.waitForType("session_snapshot");
		const res = await server.request("POST", `/v1/sessions/${id}/prompt`, {
			body: {
				message:
					'/tools [{"name": "pick_color", "arguments": {"question": "q"}}, {"name": "calculate", "arguments": {"expression": "2^10"}}]',
			},
		});
		expect(res.status).toBe(202);
		// The server tool finishes while the client tool still waits.
		const calc = await events.waitFor((e) => e.event === "tool_execution_end" && e.data.toolName === "calculate");
		expect(resultText(calc)).toBe("1024");
		const client = events.events.find((e) => e.event === "tool_execution_start" && e.data.toolName === "pick_color")!;
		expect(events.events.some((e) => e.event === "tool_execution_end" && e.data.toolName === "pick_color")).toBe(false);
		await post(id, client.data.toolCallId, { content: "red" });
		await events.waitForType("agent_end");
		// Tool results are in the assistant message's source order.
		const results = events.events
			.filter((e) => e.event === "message_end" && e.data.message.role === "toolResult")
			.map((e) => [e.data.message.toolName, e.data.message.content[0].text]);
		expect(results).toEqual([
			["pick_color", "red"],
			["calculate", "1024"],
		]);
	});

	it("tool_result_requested announces the stored wait: after tool_execution_start and the approval, never for a server tool, replayed on resume", async () => {
		await start();
		const id = await session({ clientTools: [pickColor, { ...pickColor, name: "pick_size", approval: "always" }] });
		const events = await openSse(`${server.url}/v1/sessions/${id}/events`);
		readers.push(events);
		await events.waitForType("session_snapshot");
		const batch = [
			{ name: "pick_color", arguments: { question: "colour?" } },
			{ name: "calculate", arguments: { expression: "2^10" } },
			{ name: "pick_size", arguments: { question: "size?" } },
		];
		const res = await server.request("POST", `/v1/sessions/${id}/prompt`, {
			body: { message: `/tools ${JSON.stringify(batch)}` },
		});
		expect(res.status).toBe(202);
		const started = (name: string) =>
			events.events.find((e) => e.event === "tool_execution_start" && e.data.toolName === name)!;
		const requests = () => events.events.filter((e) => e.event === "tool_result_requested");

		// The client tool that asks for approval waits for it first: no result is asked for, and one posted now is refused.
		const approval = await events.waitForType("approval_requested");
		expect(approval.data.toolName).toBe("pick_size");
		expect((await post(id, approval.data.toolCallId, { content: "L" })).status).toBe(404);
		expect(requests().map((e) => e.data.toolName)).not.toContain("pick_size");
		await server.request("POST", `/v1/sessions/${id}/approvals/${approval.data.toolCallId}`, {
			body: { approve: true },
		});
		const requested = await events.waitFor(
			(e) => e.event === "tool_result_requested" && e.data.toolName === "pick_color",
		);
		const sizeRequested = await events.waitFor(
			(e) => e.event === "tool_result_requested" && e.data.toolName === "pick_size",
		);
		await events.waitFor((e) => e.event === "tool_execution_end" && e.data.toolName === "calculate");
		expect(requested.id).toBeGreaterThan(started("pick_color").id!);
		expect(requested.data).toEqual({
			type: "tool_result_requested",
			toolCallId: started("pick_color").data.toolCallId,
			toolName: "pick_color",
			args: { question: "colour?" },
			createdAt: expect.any(Number),
			expiresAt: expect.any(Number),
		});
		expect(requested.data.expiresAt).toBeGreaterThan(requested.data.createdAt);
		const approved = events.events.find((e) => e.event === "approval_resolved")!;
		expect(sizeRequested.id).toBeGreaterThan(approved.id!);
		expect(sizeRequested.data.toolCallId).toBe(approval.data.toolCallId);
		// When the events are out, the waits are in the store (an answer may reach another replica).
		const stored = await server.app.wheelhouse.sessions.store.listPending(id);
		expect(stored.filter((p) => p.kind === "client_tool").map((p) => p.toolCallId)).toEqual(
			expect.arrayContaining([requested.data.toolCallId, sizeRequested.data.toolCallId]),
		);

		// A resume from just before the event replays it, with its id.
		const resumed = await openSse(`${server.url}/v1/sessions/${id}/events`, {
			headers: { "last-event-id": String(requested.id! - 1) },
		});
		readers.push(resumed);
		await resumed.waitForType("tool_result_requested");
		expect(resumed.events[0]).toEqual(requested);

		await post(id, requested.data.toolCallId, { content: "red" });
		await post(id, sizeRequested.data.toolCallId, { content: "L" });
		await events.waitForType("agent_end");
		// Only the two client tools' waits were announced, each once (none for the server tool).
		expect(
			requests()
				.map((e) => e.data.toolName)
				.sort(),
		).toEqual(["pick_color", "pick_size"]);
	});

	it("a new subscriber's snapshot lists the waiting call", async () => {
		await start();
		const id = await session();
		const stream = await prompt(id, '/tool pick_color {"question": "q"}');
		const { toolCallId } = (await stream.waitForType("tool_execution_start")).data;
		const late = await openSse(`${server.url}/v1/sessions/${id}/events`);
		readers.push(late);
		const snapshot = await late.waitForType("session_snapshot");
		expect(snapshot.data.state.pendingClientToolCalls).toMatchObject([{ toolCallId, toolName: "pick_color" }]);
		await post(id, toolCallId, { content: "ok" });
		await late.waitForType("agent_end");
	});

	it("PUT tool-declarations replaces client tools and approval policies of a live session", async () => {
		await start();
		const id = await session({});
		const put = await server.request("PUT", `/v1/sessions/${id}/tool-declarations`, {
			body: { clientTools: [pickColor], toolApprovals: { pick_color: "always" } },
		});
		expect(put.status).toBe(200);
		expect([put.body.clientTools, put.body.toolApprovals]).toEqual([[pickColor], { pick_color: "always" }]);

		const stream = await prompt(id, '/tool pick_color {"question": "q"}');
		const { toolCallId } = (await stream.waitForType("approval_requested")).data;
		await server.request("POST", `/v1/sessions/${id}/approvals/${toolCallId}`, { body: { approve: true } });
		await expect
			.poll(async () => (await server.request("GET", `/v1/sessions/${id}`)).body.pendingClientToolCalls.length)
			.toBe(1);
		await post(id, toolCallId, { content: "green" });
		expect(resultText(await stream.waitForType("tool_execution_end"))).toBe("green");
		await stream.waitForEnd();

		// Only the given field changes; a clash with a server tool is refused.
		const rules = await server.request("PUT", `/v1/sessions/${id}/tool-declarations`, { body: { toolApprovals: {} } });
		expect([rules.body.clientTools, rules.body.toolApprovals]).toEqual([[pickColor], {}]);
		const clash = await server.request("PUT", `/v1/sessions/${id}/tool-declarations`, {
			body: { clientTools: [{ name: "get_current_time", description: "d" }] },
		});
		expect([clash.status, clash.body.error.code]).toEqual([400, "VALIDATION_FAILED"]);
		const missing = await server.request("PUT", "/v1/sessions/ses_nope/tool-declarations", { body: {} });
		expect(missing.status).toBe(404);
	});

	it("validates declarations and result bodies", async () => {
		await start();
		const clash = await server.request("POST", "/v1/sessions", {
			body: { clientTools: [{ name: "calculate", description: "mine" }] },
		});
		expect([clash.status, clash.body.error.code]).toEqual([400, "VALIDATION_FAILED"]);
		expect(clash.body.error.message).toContain('"calculate" is already a server tool');
		const badName = await server.request("POST", "/v1/sessions", {
			body: { clientTools: [{ name: "has space", description: "d" }] },
		});
		expect(badName.status).toBe(400);
		const id = await session();
		const badBody = await post(id, "x", { content: 42 });
		expect([badBody.status, badBody.body.error.code]).toEqual([400, "VALIDATION_FAILED"]);
		const missing = await server.request("POST", "/v1/sessions/ses_nope/tool-results/x", { body: { content: "x" } });
		expect([missing.status, missing.body.error.code]).toEqual([404, "SESSION_NOT_FOUND"]);
	});
});
