import { afterEach, describe, expect, it } from "vitest";
import { startServer, type TestServer } from "../../helpers/server.js";
import { openSse, promptSse, type SseReader } from "../../helpers/sse.js";

let server: TestServer;
const readers: SseReader[] = [];
afterEach(async () => {
	for (const r of readers.splice(0)) r.close();
	await server?.close();
});

async function start(tools: Record<string, unknown> = {}): Promise<void> {
	server = await startServer({ config: { tools: { approval: { calculate: "always" }, ...tools } } });
}

async function session(body: Record<string, unknown> = {}): Promise<string> {
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

describe("approvals over HTTP", () => {
	it("approve: approval_requested on the stream, visible in state, the tool runs after the POST", async () => {
		await start();
		const id = await session();
		const stream = await prompt(id, '/tool calculate {"expression": "6 * 7"}');
		const requested = await stream.waitForType("approval_requested");
		expect(requested.data).toMatchObject({ toolName: "calculate", args: { expression: "6 * 7" } });
		const { toolCallId } = requested.data;
		expect(stream.types()).not.toContain("tool_execution_end");

		const state = (await server.request("GET", `/v1/sessions/${id}`)).body;
		expect(state.pendingApprovals).toMatchObject([
			{ toolCallId, toolName: "calculate", args: { expression: "6 * 7" } },
		]);
		expect(state.pendingApprovals[0].expiresAt).toBeGreaterThan(Date.now());

		const res = await server.request("POST", `/v1/sessions/${id}/approvals/${toolCallId}`, { body: { approve: true } });
		expect(res).toMatchObject({ status: 200, body: { toolCallId, status: "accepted" } });
		const end = await stream.waitForType("tool_execution_end");
		expect([resultText(end), end.data.isError]).toEqual(["42", false]);
		expect((await stream.waitForType("approval_resolved")).data.outcome).toEqual({ kind: "approved" });
		await stream.waitForEnd();
		expect(stream.events.at(-1)!.event).toBe("agent_end");

		const again = await server.request("POST", `/v1/sessions/${id}/approvals/${toolCallId}`, {
			body: { approve: true },
		});
		expect([again.status, again.body.error.code]).toEqual([409, "TOOL_CALL_FINISHED"]);
		const unknown = await server.request("POST", `/v1/sessions/${id}/approvals/nope`, { body: { approve: true } });
		expect([unknown.status, unknown.body.error.code]).toEqual([404, "TOOL_CALL_NOT_FOUND"]);
		expect((await server.request("GET", `/v1/sessions/${id}`)).body.pendingApprovals).toEqual([]);
	});

	it("deny: the reason is the error result the model sees; the tool never runs", async () => {
		await start();
		const id = await session();
		const stream = await prompt(id, '/tool calculate {"expression": "1 + 1"}');
		const { toolCallId } = (await stream.waitForType("approval_requested")).data;
		await server.request("POST", `/v1/sessions/${id}/approvals/${toolCallId}`, {
			body: { approve: false, reason: "not today" },
		});
		const end = await stream.waitForType("tool_execution_end");
		expect([resultText(end), end.data.isError]).toEqual(["The user denied the call to calculate: not today", true]);
		await stream.waitForEnd();
		// The echo model answers with the tool results it saw.
		const answer = stream.events.filter((e) => e.event === "message_end").at(-1)!.data.message;
		expect(answer.content[0].text).toContain("not today");
	});

	it("timeout blocks the call", async () => {
		await start({ approvalTimeoutMs: 150 });
		const id = await session();
		const stream = await prompt(id, '/tool calculate {"expression": "2"}');
		const resolved = await stream.waitForType("approval_resolved");
		expect(resolved.data.outcome).toEqual({ kind: "timeout", timeoutMs: 150 });
		const end = await stream.waitForType("tool_execution_end");
		expect(end.data.isError).toBe(true);
		expect(resultText(end)).toBe("No approval for calculate within 150 ms; the tool was not run");
		await stream.waitForEnd();
	});

	it("abort while waiting ends the wait and the run; a late answer is 409", async () => {
		await start();
		const id = await session();
		const stream = await prompt(id, '/tool calculate {"expression": "3"}');
		const { toolCallId } = (await stream.waitForType("approval_requested")).data;
		expect((await server.request("POST", `/v1/sessions/${id}/abort`)).body.aborted).toBe(true);
		await stream.waitForEnd();
		expect((await stream.waitForType("approval_resolved")).data.outcome).toEqual({ kind: "aborted" });
		expect(stream.events.at(-1)!.event).toBe("agent_end");
		const late = await server.request("POST", `/v1/sessions/${id}/approvals/${toolCallId}`, {
			body: { approve: true },
		});
		expect(late.status).toBe(409);
		const state = (await server.request("GET", `/v1/sessions/${id}`)).body;
		expect([state.status, state.pendingApprovals]).toEqual(["idle", []]);
	});

	it("a new subscriber sees pending approvals in its snapshot; a resuming one gets the event replayed", async () => {
		await start();
		const id = await session();
		const stream = await prompt(id, '/tool calculate {"expression": "4"}');
		const requested = await stream.waitForType("approval_requested");
		stream.close();

		const late = await openSse(`${server.url}/v1/sessions/${id}/events`);
		readers.push(late);
		const snapshot = await late.waitForType("session_snapshot");
		expect(snapshot.data.state.pendingApprovals).toMatchObject([{ toolCallId: requested.data.toolCallId }]);

		const resumed = await openSse(`${server.url}/v1/sessions/${id}/events`, {
			headers: { "last-event-id": String(requested.id! - 1) },
		});
		readers.push(resumed);
		expect((await resumed.waitForType("approval_requested")).data.toolCallId).toBe(requested.data.toolCallId);

		await server.request("POST", `/v1/sessions/${id}/approvals/${requested.data.toolCallId}`, {
			body: { approve: true },
		});
		expect(resultText(await late.waitForType("tool_execution_end"))).toBe("4");
	});

	it("per-session policies win over the config", async () => {
		await start();
		const id = await session({ toolApprovals: { calculate: "never", "get_*": "always" } });
		expect((await server.request("GET", `/v1/sessions/${id}`)).body.toolApprovals).toEqual({
			calculate: "never",
			"get_*": "always",
		});
		const stream = await prompt(
			id,
			'/tools [{"name": "calculate", "arguments": {"expression": "5"}}, {"name": "get_current_time", "arguments": {}}]',
		);
		const requested = await stream.waitForType("approval_requested");
		expect(requested.data.toolName).toBe("get_current_time");
		expect(stream.events.filter((e) => e.event === "approval_requested")).toHaveLength(1);
		// Approvals are asked while the batch is prepared: no call of the batch runs before they are answered.
		expect(stream.types()).not.toContain("tool_execution_end");
		await server.request("POST", `/v1/sessions/${id}/approvals/${requested.data.toolCallId}`, {
			body: { approve: true },
		});
		const calc = await stream.waitFor((e) => e.event === "tool_execution_end" && e.data.toolName === "calculate");
		expect(resultText(calc)).toBe("5");
		const time = await stream.waitFor(
			(e) => e.event === "tool_execution_end" && e.data.toolName === "get_current_time",
		);
		expect(time.data.isError).toBe(false);
		await stream.waitForEnd();
	});

	it("rejects bad bodies", async () => {
		await start();
		const id = await session();
		const res = await server.request("POST", `/v1/sessions/${id}/approvals/x`, { body: { approve: "yes" } });
		expect([res.status, res.body.error.code]).toEqual([400, "VALIDATION_FAILED"]);
		const missing = await server.request("POST", "/v1/sessions/ses_nope/approvals/x", { body: { approve: true } });
		expect([missing.status, missing.body.error.code]).toEqual([404, "SESSION_NOT_FOUND"]);
	});
});
