/**
 * docs/api.md's `@microsoft/fetch-event-source` example works when pasted: its ```js block runs as
 * written with node (the library from this repository's dependencies, the DOM stand-ins it needs
 * written in the block itself) against a real server whose heartbeats fall between the events. The
 * test supplies only what the block leaves to the reader — `base`, `id` and `render` — ahead of it.
 * fetch-event-source hands `onmessage` a message for every blank line, so a `retry:` or heartbeat
 * frame of its own would reach the block's `JSON.parse` as empty data, throw, and make the library
 * POST again every retry interval: the example must render the whole run and POST once.
 */
import { execFile } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";
import { afterEach, expect, it } from "vitest";
import { SSE_EVENT_NAMES } from "../../../src/wire/events.js";
import { startServer, type TestServer } from "../../helpers/server.js";

const run = promisify(execFile);
const root = path.join(path.dirname(fileURLToPath(import.meta.url)), "../../..");
const readme = readFileSync(path.join(root, "docs/api.md"), "utf8");
const blocks = [...readme.matchAll(/```js\n([\s\S]*?)```/g)]
	.map((m) => m[1]!)
	.filter((b) => b.includes('from "@microsoft/fetch-event-source"'));

let server: TestServer | undefined;
let dir: string | undefined;
afterEach(async () => {
	await server?.close();
	server = undefined;
	if (dir) rmSync(dir, { recursive: true, force: true });
	dir = undefined;
});

it("the fetch-event-source example of docs/api.md renders every event of the run and POSTs once", async () => {
	expect(blocks).toHaveLength(1);
	const prompts: string[] = [];
	server = await startServer({
		// Heartbeats every 5 ms while the stand-in model answers a word every 20 ms: several fall
		// between the run's events.
		config: { heartbeatMs: 5, fauxDelayMs: 20 },
		setup(app) {
			app.addHook("onRequest", async function countPrompts(request) {
				if (request.method === "POST" && request.url.endsWith("/prompt")) prompts.push(request.url);
			});
		},
	});
	const id = (await server.request("POST", "/v1/sessions", { body: {} })).body.id as string;

	dir = mkdtempSync(path.join(tmpdir(), "wheelhouse-fes-readme-"));
	symlinkSync(path.join(root, "node_modules"), path.join(dir, "node_modules"));
	const file = path.join(dir, "example.mjs");
	const given = [
		`const base = ${JSON.stringify(server.url)};`,
		`const id = ${JSON.stringify(id)};`,
		"const render = (type, data) => console.log(JSON.stringify({ type, dataType: data.type }));",
	].join("\n");
	writeFileSync(file, `${given}\n${blocks[0]}`);
	// The pasted block returns once the stream ends; one that loops on empty messages never does.
	const { stdout, stderr } = await run("node", [file], { timeout: 15_000 });

	expect(stderr).toBe("");
	const rendered = stdout
		.trim()
		.split("\n")
		.map((line) => JSON.parse(line) as { type: string; dataType: string });
	const types = rendered.map((r) => r.type);
	expect(types[0]).toBe("agent_start");
	expect(types.at(-1)).toBe("agent_end");
	expect(types).toContain("message_update");
	for (const r of rendered) {
		expect(SSE_EVENT_NAMES).toContain(r.type);
		expect(r.dataType).toBe(r.type);
	}
	expect(prompts).toHaveLength(1);

	const messages = (await server.request("GET", `/v1/sessions/${id}/messages`)).body.messages;
	expect(messages.map((m: { role: string }) => m.role)).toEqual(["user", "assistant"]);
});
