/**
 * A response id names its session, so `previous_response_id` continues a conversation after the
 * server restarted on the same SQLite store; the response objects themselves are kept in memory,
 * so `GET /responses/:id` of one from before the restart is a 404 that says so.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import OpenAI from "openai";
import { afterEach, expect, it } from "vitest";
import { openSqliteStore, type SqliteSessionStore } from "../../src/store/sqlite/index.js";
import { startServer, type TestServer } from "../helpers/server.js";

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
	for (const gone of [after.responses.retrieve(first.id), after.responses.cancel(first.id)]) {
		const err = await gone.catch((e: unknown) => e);
		expect(err).toBeInstanceOf(OpenAI.NotFoundError);
		expect((err as Error).message).toContain("responses are kept in memory");
		expect((err as Error).message).toContain(`GET /v1/sessions/${sessionId}/messages`);
	}
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
