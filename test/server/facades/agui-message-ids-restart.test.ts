/**
 * The client's ids of the messages an AG-UI thread was prompted with are stored with its session,
 * so after a restart on the same SQLite store a client that sends its messages again (one that did
 * not keep the answer, or whose run was aborted before one) gets only its new message prompted.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { HttpAgent } from "@ag-ui/client";
import { afterEach, expect, it } from "vitest";
import { openSqliteStore, type SqliteSessionStore } from "../../../src/store/sqlite/index.js";
import { quietConsole, runOnce } from "../../helpers/agui.js";
import { startServer, type TestServer } from "../../helpers/server.js";

const KEY = "agui-restart-key";
const dir = mkdtempSync(path.join(tmpdir(), "wh-agui-restart-"));
const servers: TestServer[] = [];
const stores: SqliteSessionStore[] = [];
afterEach(async () => {
	for (const server of servers.splice(0)) await server.close();
	for (const store of stores.splice(0)) store.close();
	rmSync(dir, { recursive: true, force: true });
});

async function start(): Promise<TestServer> {
	const store = openSqliteStore({ path: path.join(dir, "wheelhouse.db") });
	stores.push(store);
	const server = await startServer({ store, config: { apiKeys: [KEY] } });
	servers.push(server);
	return server;
}

function agent(server: TestServer, messages: { id: string; role: "user"; content: string }[]): HttpAgent {
	return new HttpAgent({
		url: `${server.url}/agui/v1/run`,
		headers: { authorization: `Bearer ${KEY}` },
		threadId: "restart-thread",
		initialMessages: messages,
	});
}

it("a message the thread was prompted with before a restart is not prompted again after it", async () => {
	const console_ = quietConsole();
	try {
		const before = await start();
		const first = { id: "client-u1", role: "user" as const, content: "first" };
		const { events } = await runOnce(agent(before, [first]));
		const sessionId = (events[0] as unknown as { metadata: { wheelhouse: { sessionId: string } } }).metadata.wheelhouse
			.sessionId;
		await servers.pop()?.close();
		stores.pop()?.close();

		const after = await start();
		// The same client message, then a new one, without the answer in between.
		await runOnce(agent(after, [first, { id: "client-u2", role: "user", content: "second" }]));
		const transcript = await after.request("GET", `/v1/sessions/${sessionId}/messages`, { key: KEY });
		expect(transcript.body.messages.map((m: { role: string }) => m.role)).toEqual([
			"user",
			"assistant",
			"user",
			"assistant",
		]);
		const texts = transcript.body.messages
			.filter((m: { role: string }) => m.role === "user")
			.map((m: { content: string | { text?: string }[] }) =>
				typeof m.content === "string" ? m.content : m.content.map((b) => b.text ?? "").join(""),
			);
		expect(texts).toEqual(["first", "second"]);
		console_.check();
	} finally {
		console_.restore();
	}
});
