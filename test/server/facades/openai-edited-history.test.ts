/**
 * The Chat Completions facade given an edited history: a request that names the session of an
 * earlier answer (`x-wheelhouse-session-id`) and sends its conversation with the second user
 * message changed forks that session at the divergence — the shared messages are the earlier
 * session's stored ones (not rebuilt from the request), the metadata names the parent and the cut,
 * the earlier session is unchanged. Without the header the request starts from scratch, as before.
 * A real server on a real socket, the `openai` SDK, on SQLite.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import OpenAI from "openai";
import { afterEach, expect, it } from "vitest";
import { openSqliteStore, type SqliteSessionStore } from "../../../src/store/sqlite/index.js";
import { startServer, type TestServer } from "../../helpers/server.js";

const KEY = "edited-history-key";
let server: TestServer | undefined;
let store: SqliteSessionStore | undefined;
let dir: string | undefined;
afterEach(async () => {
	await server?.close();
	store?.close();
	if (dir) rmSync(dir, { recursive: true, force: true });
	server = undefined;
	store = undefined;
	dir = undefined;
});

it("forks the named session where an edited conversation leaves it", async () => {
	dir = mkdtempSync(path.join(tmpdir(), "wh-edited-history-"));
	store = openSqliteStore({ path: path.join(dir, "wheelhouse.db") });
	server = await startServer({ store, config: { apiKeys: [KEY] } });
	const client = new OpenAI({ apiKey: KEY, baseURL: `${server.url}/openai/v1`, maxRetries: 0 });
	const ask = async (messages: OpenAI.ChatCompletionMessageParam[], session?: string) => {
		const { data, response } = await client.chat.completions
			.create({ model: "faux/echo", messages }, session ? { headers: { "x-wheelhouse-session-id": session } } : {})
			.withResponse();
		return { text: data.choices[0]!.message.content, session: response.headers.get("x-wheelhouse-session-id")! };
	};
	const transcript = async (id: string) =>
		(await server!.request("GET", `/v1/sessions/${id}/messages`, { key: KEY })).body.messages;

	const first = await ask([{ role: "user", content: "one" }]);
	const second = await ask(
		[
			{ role: "user", content: "one" },
			{ role: "assistant", content: first.text },
			{ role: "user", content: "two" },
		],
		first.session,
	);
	const parent = await transcript(second.session);
	expect(parent.map((m: any) => m.content[0].text)).toEqual(["one", "one", "two", "two"]);

	// The second user message edited: a fork of the second session after its first answer.
	const edited = await ask(
		[
			{ role: "user", content: "one" },
			{ role: "assistant", content: first.text },
			{ role: "user", content: "two, edited" },
		],
		second.session,
	);
	expect(edited.text).toBe("two, edited");
	expect(edited.session).not.toBe(second.session);
	const fork = (await server.request("GET", `/v1/sessions/${edited.session}`, { key: KEY })).body;
	expect(fork.metadata).toMatchObject({ "wheelhouse.forkedFrom": second.session, "wheelhouse.forkedAt": "wh-1" });
	const forked = await transcript(edited.session);
	expect(forked.slice(0, 2)).toEqual(parent.slice(0, 2)); // the stored messages, usage and timestamps included
	expect(forked.map((m: any) => m.content[0].text)).toEqual(["one", "one", "two, edited", "two, edited"]);
	expect(await transcript(second.session)).toEqual(parent);

	// Without the header: from scratch, no parent.
	const plain = await ask([
		{ role: "user", content: "one" },
		{ role: "assistant", content: first.text },
		{ role: "user", content: "two, edited" },
	]);
	const plainSession = (await server.request("GET", `/v1/sessions/${plain.session}`, { key: KEY })).body;
	expect(plainSession.metadata["wheelhouse.forkedFrom"]).toBeUndefined();
	expect((await transcript(plain.session))[1]).not.toEqual(parent[1]);

	// A session the key cannot see is a 404, not a silent fresh start.
	await expect(
		ask(
			[
				{ role: "user", content: "one" },
				{ role: "assistant", content: "one" },
				{ role: "user", content: "x" },
			],
			"ses_unknown",
		),
	).rejects.toMatchObject({ status: 404 });
});
