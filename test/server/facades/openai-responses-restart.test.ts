/**
 * A response id names its session, so `previous_response_id` continues a conversation after the
 * server restarted on the same SQLite store; the response objects, their items and the session of
 * each function call are stored with the session, so `GET /responses/:id`, cancel, item
 * references and the lookup of a tool call's session work after the restart too.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import OpenAI from "openai";
import { afterEach, expect, it } from "vitest";
import { openSqliteStore, type SqliteSessionStore } from "../../../src/store/sqlite/index.js";
import { startServer, type TestServer } from "../../helpers/server.js";

const KEY = "test-key";
const dir = mkdtempSync(path.join(tmpdir(), "wh-openai-restart-"));
const servers: TestServer[] = [];
const stores: SqliteSessionStore[] = [];
afterEach(async () => {
	for (const server of servers.splice(0)) await server.close();
	for (const store of stores.splice(0)) store.close();
	rmSync(dir, { recursive: true, force: true });
});

async function start(): Promise<OpenAI> {
	const store = openSqliteStore({ path: path.join(dir, "wheelhouse.db") });
	stores.push(store);
	const server = await startServer({ store, config: { apiKeys: [KEY] } });
	servers.push(server);
	return new OpenAI({ apiKey: KEY, baseURL: `${server.url}/openai/v1`, maxRetries: 0 });
}

it("previous_response_id continues the session after a restart", async () => {
	const before = await start();
	const first = await before.responses.create({ model: "faux/echo", input: "remember me" });
	await servers.pop()?.close();
	stores.pop()?.close();

	const after = await start();
	const sessionId = `ses_${first.id.split("_")[1]}`;
	// Stored, not kept in the process: the same object after the restart; a finished one cancels to itself.
	// (`output_text` is the SDK's own addition to what `create` returns.)
	const { output_text: _, ...stored } = first;
	expect(await after.responses.retrieve(first.id)).toMatchObject(stored);
	expect(await after.responses.cancel(first.id)).toMatchObject(stored);
	const second = await after.responses.create({
		model: "faux/echo",
		input: "still here",
		previous_response_id: first.id,
	});
	expect(second.output_text).toBe("still here");
	expect((await after.responses.retrieve(second.id)).output_text).toBe("still here");
	const transcript = await servers[0]!.request("GET", `/v1/sessions/${sessionId}/messages`, { key: KEY });
	expect(transcript.body.messages.map((m: { role: string }) => m.role)).toEqual([
		"user",
		"assistant",
		"user",
		"assistant",
	]);
});

it("the session of a function call and the items of a response are found after a restart", async () => {
	const before = await start();
	const first = await before.responses.create({
		model: "faux/echo",
		input: '/tool pick_color {"question":"q"}',
		tools: [{ type: "function", name: "pick_color", parameters: { type: "object" }, strict: false }],
	});
	const call = first.output.find((item) => item.type === "function_call");
	if (call?.type !== "function_call") throw new Error("expected a function call");
	const sessionId = `ses_${first.id.split("_")[1]}`;
	const ownerId = (await stores[0]!.getSession(sessionId))?.ownerId ?? null;
	await servers.pop()?.close();
	stores.pop()?.close();

	const after = await start();
	// The lookup a request carrying the call's output uses, read back from the file.
	expect(
		(await stores[0]!.findFacadeRecords("openai.tool_call", call.call_id, ownerId)).map((r) => r.sessionId),
	).toEqual([sessionId]);
	expect((await after.responses.retrieve(first.id)).output).toEqual(first.output);
	// An item reference to that response's function call resolves after the restart.
	const third = await after.responses.create({
		model: "faux/echo",
		input: [
			{ role: "user", content: '/tool pick_color {"question":"q"}' },
			{ type: "item_reference", id: call.id } as never,
			{ type: "function_call_output", call_id: call.call_id, output: "teal" },
		],
	});
	expect(third.output_text).toContain("teal");
});
