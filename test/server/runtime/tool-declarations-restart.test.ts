/**
 * A session's client-side tools and approval policies are part of its stored config: set by
 * `POST /v1/sessions`, changed by `PATCH` (and `PUT .../tool-declarations`), and still in force
 * after the server restarts on the same SQLite file. Real servers on ephemeral ports, a real file.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { streamScriptedTurn } from "../../../src/ai/providers/faux.js";
import { registerApiProvider, unregisterApiProvider } from "../../../src/ai/registry.js";
import type { Model, Tool } from "../../../src/ai/types.js";
import { echoTurn } from "../../../src/server/runtime/echo-model.js";
import { openSqliteStore, type SqliteSessionStore } from "../../../src/store/sqlite/index.js";
import { startServer, type TestServer } from "../../helpers/server.js";
import { promptSse, type SseReader } from "../../helpers/sse.js";

const pickColor = {
	name: "pick_color",
	description: "Ask the user to pick a color",
	parameters: { type: "object", properties: { question: { type: "string" } }, required: ["question"] },
};
const openFile = { name: "open_file", description: "Open a file on the user's machine", approval: "always" as const };

/** The tools each model call offered, by name (the echo model answers; this records what it was given). */
let offered: Tool[][] = [];
const recorder: Model<any> = {
	id: "rec",
	name: "recorder",
	api: "test-tool-recorder",
	provider: "test",
	baseUrl: "http://localhost:0",
	reasoning: false,
	input: ["text"],
	cost: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0 },
	contextWindow: 1000,
	maxTokens: 1000,
};

let dir: string;
let dbPath: string;
let server: TestServer | undefined;
let store: SqliteSessionStore | undefined;
const readers: SseReader[] = [];

beforeAll(() => {
	registerApiProvider("test-tool-recorder", (model, context, options) => {
		offered.push(context.tools ?? []);
		return streamScriptedTurn(model, echoTurn(context), { signal: options?.signal });
	});
});
afterAll(() => unregisterApiProvider("test-tool-recorder"));
beforeEach(() => {
	dir = mkdtempSync(path.join(tmpdir(), "wh-declarations-"));
	dbPath = path.join(dir, "wheelhouse.db");
	offered = [];
});
afterEach(async () => {
	await stop();
	rmSync(dir, { recursive: true, force: true });
});

/** Starts a server on the SQLite file `dbPath` (as main.ts does: the store outlives the app). */
async function start(): Promise<TestServer> {
	store = openSqliteStore({ path: dbPath });
	server = await startServer({ store, models: [recorder] });
	return server;
}

/** A graceful stop: the app closes (runs drained, streams ended), then the store. */
async function stop(): Promise<void> {
	for (const r of readers.splice(0)) r.close();
	await server?.close();
	store?.close();
	server = undefined;
	store = undefined;
}

async function restart(): Promise<TestServer> {
	await stop();
	return start();
}

async function prompt(s: TestServer, id: string, message: string): Promise<SseReader> {
	const reader = await promptSse(s.url, id, { message });
	readers.push(reader);
	return reader;
}

const resultText = (e: { data: any }) => e.data.result.content.map((c: any) => c.text).join("");
const toolEnd = (r: SseReader, name: string) =>
	r.waitFor((e) => e.event === "tool_execution_end" && e.data.toolName === name);

/** Runs `/tool NAME args` as a client tool: waits for its call, posts `answer`, returns the result the model saw. */
async function callClientTool(s: TestServer, id: string, name: string, args: object, answer: string) {
	const run = await prompt(s, id, `/tool ${name} ${JSON.stringify(args)}`);
	const started = await run.waitFor((e) => e.event === "tool_execution_start" && e.data.toolName === name);
	const posted = await s.request("POST", `/v1/sessions/${id}/tool-results/${started.data.toolCallId}`, {
		body: { content: answer },
	});
	expect(posted.status).toBe(200);
	const end = await toolEnd(run, name);
	await run.waitForEnd();
	return { text: resultText(end), isError: end.data.isError, events: run.types() };
}

/** Runs `/tool calculate` and answers its approval request; returns the result the model saw. */
async function calculateWithApproval(s: TestServer, id: string, approve: boolean) {
	const run = await prompt(s, id, '/tool calculate {"expression": "6 * 7"}');
	const requested = await run.waitForType("approval_requested");
	expect(requested.data).toMatchObject({ toolName: "calculate", args: { expression: "6 * 7" } });
	const answer = await s.request("POST", `/v1/sessions/${id}/approvals/${requested.data.toolCallId}`, {
		body: { approve, ...(approve ? {} : { reason: "not now" }) },
	});
	expect(answer.status).toBe(200);
	const end = await toolEnd(run, "calculate");
	await run.waitForEnd();
	return { text: resultText(end), isError: end.data.isError };
}

describe("client tools and approval policies are stored with the session", () => {
	it("survive a restart: the model is offered the client tool, can call it, and the policy still applies", {
		timeout: 30_000,
	}, async () => {
		let s = await start();
		const created = await s.request("POST", "/v1/sessions", {
			body: { model: "test/rec", clientTools: [pickColor], toolApprovals: { calculate: "always" } },
		});
		expect(created.status).toBe(201);
		const id = created.body.id;

		s = await restart();
		const state = (await s.request("GET", `/v1/sessions/${id}`)).body;
		expect([state.clientTools, state.toolApprovals]).toEqual([[pickColor], { calculate: "always" }]);

		const picked = await callClientTool(s, id, "pick_color", { question: "favourite?" }, "teal");
		expect(picked).toMatchObject({ text: "teal", isError: false });
		const tool = offered[0]?.find((t) => t.name === "pick_color");
		expect(tool).toMatchObject({ description: pickColor.description, parameters: pickColor.parameters });

		expect(await calculateWithApproval(s, id, true)).toEqual({ text: "42", isError: false });
		expect(await calculateWithApproval(s, id, false)).toEqual({
			text: "The user denied the call to calculate: not now",
			isError: true,
		});

		// Evicted from memory and loaded again from the store: still the same.
		s.app.wheelhouse.sessions.evictIdle(0);
		expect(await callClientTool(s, id, "pick_color", { question: "again?" }, "red")).toMatchObject({ text: "red" });
	});

	it("PATCH replaces them (a field left out stays); the change survives a restart", { timeout: 30_000 }, async () => {
		let s = await start();
		const id = (
			await s.request("POST", "/v1/sessions", {
				body: { model: "test/rec", clientTools: [pickColor], toolApprovals: { calculate: "always" } },
			})
		).body.id;

		const patched = await s.request("PATCH", `/v1/sessions/${id}`, {
			body: { clientTools: [openFile], toolApprovals: { get_current_time: "always" } },
		});
		expect(patched.status).toBe(200);
		expect([patched.body.clientTools, patched.body.toolApprovals]).toEqual([
			[openFile],
			{ get_current_time: "always" },
		]);
		// The old client tool is gone: the model is not offered it, and a call of it fails.
		const gone = await prompt(s, id, '/tool pick_color {"question": "?"}');
		expect(resultText(await toolEnd(gone, "pick_color"))).toBe("Tool pick_color not found");
		await gone.waitForEnd();
		expect(offered.at(-1)?.map((t) => t.name)).not.toContain("pick_color");
		expect(offered.at(-1)?.map((t) => t.name)).toContain("open_file");

		// A PATCH of other fields leaves the declarations alone.
		const other = await s.request("PATCH", `/v1/sessions/${id}`, { body: { systemPrompt: "terse" } });
		expect([other.body.clientTools, other.body.toolApprovals]).toEqual([[openFile], { get_current_time: "always" }]);

		s = await restart();
		const state = (await s.request("GET", `/v1/sessions/${id}`)).body;
		expect([state.systemPrompt, state.clientTools, state.toolApprovals]).toEqual([
			"terse",
			[openFile],
			{ get_current_time: "always" },
		]);

		// calculate no longer needs approval; open_file does (its own `approval`), then runs on the client.
		const calc = await prompt(s, id, '/tool calculate {"expression": "2 + 2"}');
		expect(resultText(await toolEnd(calc, "calculate"))).toBe("4");
		await calc.waitForEnd();
		expect(calc.types()).not.toContain("approval_requested");

		const run = await prompt(s, id, '/tool open_file {"path": "/tmp/x"}');
		const requested = await run.waitForType("approval_requested");
		expect(requested.data.toolName).toBe("open_file");
		await s.request("POST", `/v1/sessions/${id}/approvals/${requested.data.toolCallId}`, { body: { approve: true } });
		const started = await run.waitFor((e) => e.event === "tool_execution_start" && e.data.toolName === "open_file");
		await s.request("POST", `/v1/sessions/${id}/tool-results/${started.data.toolCallId}`, {
			body: { content: "opened" },
		});
		expect(resultText(await toolEnd(run, "open_file"))).toBe("opened");
		await run.waitForEnd();

		// Clearing both is a change like any other.
		const cleared = await s.request("PATCH", `/v1/sessions/${id}`, { body: { clientTools: [], toolApprovals: {} } });
		expect([cleared.body.clientTools, cleared.body.toolApprovals]).toEqual([[], {}]);
		s = await restart();
		const after = (await s.request("GET", `/v1/sessions/${id}`)).body;
		expect([after.clientTools, after.toolApprovals]).toEqual([[], {}]);
	});

	it("PUT tool-declarations stores them too", { timeout: 30_000 }, async () => {
		let s = await start();
		const id = (await s.request("POST", "/v1/sessions", { body: { model: "test/rec" } })).body.id;
		const put = await s.request("PUT", `/v1/sessions/${id}/tool-declarations`, {
			body: { clientTools: [pickColor], toolApprovals: { calculate: "always" } },
		});
		expect(put.status).toBe(200);

		s = await restart();
		expect(await callClientTool(s, id, "pick_color", { question: "?" }, "blue")).toMatchObject({ text: "blue" });
		expect(await calculateWithApproval(s, id, true)).toEqual({ text: "42", isError: false });
	});

	it("bad PATCH bodies get 400 VALIDATION_FAILED naming the field, and change nothing", async () => {
		const s = await start();
		const id = (
			await s.request("POST", "/v1/sessions", {
				body: { clientTools: [pickColor], toolApprovals: { calculate: "always" } },
			})
		).body.id;
		const cases: [unknown, string][] = [
			[{ clientTools: "pick_color" }, "body.clientTools must be array"],
			[{ clientTools: [{ name: "has space", description: "d" }] }, "body.clientTools.0.name must match pattern"],
			[{ clientTools: [{ name: "x" }] }, "body.clientTools.0.description is required"],
			[{ clientTools: [{ ...pickColor, color: "red" }] }, 'body.clientTools.0 has an unknown field "color"; remove it'],
			[
				{ clientTools: [{ ...pickColor, approval: "sometimes" }] },
				"body.clientTools.0.approval must be one of: always, never",
			],
			[
				{ clientTools: [{ name: "calculate", description: "mine" }] },
				'body.clientTools.0.name: "calculate" is already a server tool',
			],
			[{ clientTools: [pickColor, pickColor] }, 'body.clientTools.1.name: duplicate tool name "pick_color"'],
			[
				{ clientTools: [{ ...pickColor, parameters: { type: "array" } }] },
				'body.clientTools.0.parameters: must be a JSON Schema with "type": "object"',
			],
			[{ toolApprovals: { calculate: "sometimes" } }, "body.toolApprovals.calculate must be one of: always, never"],
			[{ toolApprovals: ["calculate"] }, "body.toolApprovals must be object"],
			// Valid declarations do not make a bad field elsewhere in the body pass.
			[{ clientTools: [pickColor], model: "nope" }, "body.model must match pattern"],
		];
		for (const [body, message] of cases) {
			const res = await s.request("PATCH", `/v1/sessions/${id}`, { body });
			expect([res.status, res.body.error?.code], JSON.stringify(body)).toEqual([400, "VALIDATION_FAILED"]);
			expect(res.body.error.message, JSON.stringify(body)).toContain(message);
		}
		const state = (await s.request("GET", `/v1/sessions/${id}`)).body;
		expect([state.clientTools, state.toolApprovals]).toEqual([[pickColor], { calculate: "always" }]);
		expect(await store?.getSession(id)).toMatchObject({
			clientTools: [pickColor],
			toolApprovals: { calculate: "always" },
		});
	});
});
