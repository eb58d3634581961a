/**
 * An upstream MCP server (a real child process) asks for input during a tool call: the session
 * shows a pending elicitation on its stream and in its state, the answer posted over /v1 goes back
 * to the MCP server (checked against the requested schema first), and the tool call completes
 * with it; no answer in time or an aborted run cancels it. A restart while it waits ends it for
 * good: answering then is 409.
 */
import { execFile } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { promisify } from "node:util";
import { afterEach, describe, expect, it } from "vitest";
import { docBlock } from "../../helpers/doc-blocks.js";
import { json, startMain, stopAll } from "../../helpers/main-process.js";
import { startServer, type TestServer } from "../../helpers/server.js";
import { openSse, promptSse, type SseReader } from "../../helpers/sse.js";
import { fixtureCommand } from "../../tools/helpers.js";

let server: TestServer | undefined;
const readers: SseReader[] = [];
const dirs: string[] = [];
afterEach(async () => {
	for (const r of readers.splice(0)) r.close();
	await server?.close();
	server = undefined;
	stopAll();
	for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});

const resultText = (e: { data: any }) => e.data.result.content.map((c: any) => c.text).join("");

async function startWithFixture(timeoutMs?: number, approvalTimeoutMs?: number): Promise<TestServer> {
	const fx = { ...fixtureCommand(), pingIntervalMs: 0, ...(timeoutMs ? { timeoutMs } : {}) };
	return startServer({
		config: { tools: { mcpServers: { fx }, ...(approvalTimeoutMs ? { approvalTimeoutMs } : {}) } },
	});
}

describe("elicitation from an upstream MCP server", () => {
	it("shows the question on the stream, refuses content that does not fit, and completes the call with the accepted answer", {
		timeout: 45_000,
	}, async () => {
		server = await startWithFixture();
		const id = (await server.request("POST", "/v1/sessions", { body: {} })).body.id;
		const run = await promptSse(server.url, id, { message: '/tool fx__ask {"question": "Who are you?"}' });
		readers.push(run);
		const start = await run.waitForType("tool_execution_start");
		const requested = await run.waitForType("elicitation_requested");
		expect(requested.data).toMatchObject({
			type: "elicitation_requested",
			elicitationId: expect.stringMatching(/^eli_/),
			server: "fx",
			toolCallId: start.data.toolCallId,
			toolName: "fx__ask",
			message: "Who are you?",
			requestedSchema: { type: "object", required: ["name", "age"] },
			expiresAt: expect.any(Number),
		});
		const { elicitationId } = requested.data;
		const state = (await server.request("GET", `/v1/sessions/${id}`)).body;
		expect(state.pendingElicitations).toEqual([
			expect.objectContaining({ elicitationId, message: "Who are you?", toolCallId: start.data.toolCallId }),
		]);

		const answer = (body: unknown) =>
			server!.request("POST", `/v1/sessions/${id}/elicitations/${elicitationId}`, { body });
		// Content that does not fit the requested schema: 400 naming the field, and it still waits.
		const wrongType = await answer({ action: "accept", content: { name: "Ada", age: 36.5 } });
		expect([wrongType.status, wrongType.body.error.code]).toEqual([400, "VALIDATION_FAILED"]);
		expect(wrongType.body.error.message).toBe("body.content.age: must be an integer");
		const missing = await answer({ action: "accept", content: { age: 36 } });
		expect(missing.body.error.message).toBe("body.content.name: is required");
		const notInEnum = await answer({ action: "accept", content: { name: "Ada", age: 36, color: "pink" } });
		expect([notInEnum.status, notInEnum.body.error.message]).toEqual([
			400,
			'body.content.color: must be one of "red", "green", "blue"',
		]);
		const unknownField = await answer({ action: "accept", content: { name: "Ada", age: 36, pet: "cat" } });
		expect(unknownField.body.error.message).toBe("body.content.pet: is not a field of the requested schema");
		expect((await server.request("GET", `/v1/sessions/${id}`)).body.pendingElicitations).toHaveLength(1);
		expect(run.events.some((e) => e.event === "tool_execution_end")).toBe(false);

		const accepted = await answer({
			action: "accept",
			content: { name: "Ada", age: 36, color: "green", subscribe: true },
		});
		expect([accepted.status, accepted.body]).toEqual([200, { elicitationId, status: "accepted" }]);
		const resolved = await run.waitForType("elicitation_resolved");
		expect(resolved.data).toEqual({
			type: "elicitation_resolved",
			elicitationId,
			toolCallId: start.data.toolCallId,
			toolName: "fx__ask",
			outcome: { kind: "accepted", content: { name: "Ada", age: 36, color: "green", subscribe: true } },
		});
		const end = await run.waitForType("tool_execution_end");
		expect(end.data.isError).toBe(false);
		expect(resultText(end)).toBe(
			'answer: {"action":"accept","content":{"name":"Ada","age":36,"color":"green","subscribe":true}}',
		);
		await run.waitForEnd();
		expect((await server.request("GET", `/v1/sessions/${id}`)).body.pendingElicitations).toEqual([]);

		// Answered: a second answer is 409, an unknown id 404.
		const again = await answer({ action: "decline" });
		expect([again.status, again.body.error.code]).toEqual([409, "ELICITATION_FINISHED"]);
		const unknown = await server.request("POST", `/v1/sessions/${id}/elicitations/eli_nope`, {
			body: { action: "decline" },
		});
		expect([unknown.status, unknown.body.error.code]).toEqual([404, "ELICITATION_NOT_FOUND"]);
	});

	it("sends a decline to the MCP server (a decline carries no content); an abort ends the question", {
		timeout: 45_000,
	}, async () => {
		server = await startWithFixture();
		const id = (await server.request("POST", "/v1/sessions", { body: {} })).body.id;
		const run = await promptSse(server.url, id, { message: "/tool fx__ask {}" });
		readers.push(run);
		const { elicitationId } = (await run.waitForType("elicitation_requested")).data;
		const path = `/v1/sessions/${id}/elicitations/${elicitationId}`;
		const withContent = await server.request("POST", path, { body: { action: "decline", content: { name: "x" } } });
		expect([withContent.status, withContent.body.error.message]).toEqual([
			400,
			'body.content: only an "accept" carries content (action is "decline")',
		]);
		expect((await server.request("POST", path, { body: { action: "decline" } })).status).toBe(200);
		expect((await run.waitForType("elicitation_resolved")).data.outcome).toEqual({ kind: "declined" });
		const end = await run.waitForType("tool_execution_end");
		expect(resultText(end)).toBe('answer: {"action":"decline","content":null}');
		await run.waitForEnd();

		// A run aborted while its call waits for an answer ends the question.
		const aborted = await promptSse(server.url, id, { message: "/tool fx__ask {}" });
		readers.push(aborted);
		const abortedId = (await aborted.waitForType("elicitation_requested")).data.elicitationId;
		expect((await server.request("POST", `/v1/sessions/${id}/abort`)).status).toBe(200);
		expect((await aborted.waitForType("elicitation_resolved")).data.outcome).toEqual({ kind: "aborted" });
		await aborted.waitForEnd();
		expect((await server.request("GET", `/v1/sessions/${id}`)).body.pendingElicitations).toEqual([]);
		const late = await server.request("POST", `/v1/sessions/${id}/elicitations/${abortedId}`, {
			body: { action: "decline" },
		});
		expect([late.status, late.body.error.code]).toEqual([409, "ELICITATION_FINISHED"]);
	});

	it("does not count the time a human takes against the call's timeout", { timeout: 45_000 }, async () => {
		server = await startWithFixture(2000);
		const id = (await server.request("POST", "/v1/sessions", { body: {} })).body.id;
		const run = await promptSse(server.url, id, { message: "/tool fx__ask {}" });
		readers.push(run);
		const { elicitationId } = (await run.waitForType("elicitation_requested")).data;
		// Longer than the call's 2 s timeout: the call still waits.
		await new Promise((resolve) => setTimeout(resolve, 3000));
		expect(run.events.some((e) => e.event === "tool_execution_end")).toBe(false);
		const answered = await server.request("POST", `/v1/sessions/${id}/elicitations/${elicitationId}`, {
			body: { action: "cancel" },
		});
		expect(answered.status).toBe(200);
		expect((await run.waitForType("elicitation_resolved")).data.outcome).toEqual({ kind: "cancelled" });
		const end = await run.waitForType("tool_execution_end");
		expect([end.data.isError, resultText(end)]).toEqual([false, 'answer: {"action":"cancel","content":null}']);
		await run.waitForEnd();
	});

	it("cancels the question at the approval timeout", {
		timeout: 45_000,
	}, async () => {
		server = await startWithFixture(undefined, 1000);
		const id = (await server.request("POST", "/v1/sessions", { body: {} })).body.id;
		const timed = await promptSse(server.url, id, { message: "/tool fx__ask {}" });
		readers.push(timed);
		await timed.waitForType("elicitation_requested");
		expect((await timed.waitForType("elicitation_resolved")).data.outcome).toEqual({
			kind: "timeout",
			timeoutMs: 1000,
		});
		expect(resultText(await timed.waitForType("tool_execution_end"))).toBe(
			'answer: {"action":"cancel","content":null}',
		);
		await timed.waitForEnd();
	});

	it("docs/tools.md: the pasted answer is accepted and reaches the MCP server", { timeout: 45_000 }, async () => {
		server = await startWithFixture();
		const id = (await server.request("POST", "/v1/sessions", { body: {} })).body.id;
		const run = await promptSse(server.url, id, { message: "/tool fx__ask {}" });
		readers.push(run);
		const { elicitationId } = (await run.waitForType("elicitation_requested")).data;
		const block = docBlock("docs/tools.md", "sh", "/elicitations/").code;
		const { stdout } = await promisify(execFile)("bash", ["-c", `set -e\n${block}`], {
			env: { PATH: process.env.PATH, S: server.url, ID: id, ELI: elicitationId },
			timeout: 30_000,
		});
		expect(JSON.parse(stdout)).toEqual({ elicitationId, status: "accepted" });
		const end = await run.waitForType("tool_execution_end");
		expect(resultText(end)).toBe('answer: {"action":"accept","content":{"name":"Ada","age":36}}');
		await run.waitForEnd();
	});

	it("is settled as interrupted by a restart, and answering it then is 409 ELICITATION_INTERRUPTED", {
		timeout: 90_000,
	}, async () => {
		const dir = mkdtempSync(path.join(tmpdir(), "wh-elicit-"));
		dirs.push(dir);
		const { command, args } = fixtureCommand();
		writeFileSync(
			path.join(dir, "config.json"),
			JSON.stringify({ tools: { mcpServers: { fx: { command, args, pingIntervalMs: 0 } } } }),
		);
		const options = { db: path.join(dir, "wh.db"), env: { WHEELHOUSE_CONFIG: path.join(dir, "config.json") } };

		const first = await startMain(options);
		const id = (await json(`${first.url}/v1/sessions`, "POST", { onInterrupt: "stop" })).body.id;
		const events = await openSse(`${first.url}/v1/sessions/${id}/events`);
		readers.push(events);
		expect((await json(`${first.url}/v1/sessions/${id}/prompt`, "POST", { message: "/tool fx__ask {}" })).status).toBe(
			202,
		);
		const requested = await events.waitForType("elicitation_requested", 15_000);
		const { elicitationId, toolCallId } = requested.data;
		const lastSeen = events.events.at(-1)!.id!;
		events.close();
		first.child.kill("SIGKILL");
		await first.exited;

		const second = await startMain(options);
		const base = `${second.url}/v1/sessions/${id}`;
		const resumed = await openSse(`${base}/events`, { headers: { "last-event-id": String(lastSeen) } });
		readers.push(resumed);
		await resumed.waitForType("run_interrupted", 15_000);
		const after = resumed.events.filter((e) => e.id! > lastSeen);
		expect(after[0]!.data).toEqual({
			type: "elicitation_resolved",
			elicitationId,
			toolCallId,
			toolName: "fx__ask",
			outcome: { kind: "interrupted" },
		});
		// The call that asked is not run again (it would ask again): it gets an error result.
		const callEnd = after.find((e) => e.event === "tool_execution_end")!;
		expect(callEnd.data).toMatchObject({ toolCallId, isError: true });
		expect((await json(base)).body.pendingElicitations).toEqual([]);

		const late = await json(`${base}/elicitations/${elicitationId}`, "POST", {
			action: "accept",
			content: { name: "Ada", age: 36 },
		});
		expect([late.status, late.body.error.code]).toEqual([409, "ELICITATION_INTERRUPTED"]);
		expect(late.body.error.message).toMatch(/cannot be resumed/);
	});
});
