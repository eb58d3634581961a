/**
 * docs/client.md's first example runs as pasted against a real server: `wheelhouse-agents/client` resolves to
 * src/client and `localhost:3000` to the test server; nothing else changes. The example's tool call
 * waits for approval, so its approval branch runs too.
 */
import { execFile } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import path from "node:path";
import { promisify } from "node:util";
import { afterAll, beforeAll, expect, it } from "vitest";
import { repoRoot } from "../helpers/main-process.js";
import { startServer, type TestServer } from "../helpers/server.js";

const exec = promisify(execFile);
let server: TestServer;
let dir: string;

beforeAll(async () => {
	server = await startServer();
	dir = mkdtempSync(path.join(repoRoot, "test/client/.doc-example-"));
});

afterAll(async () => {
	await server?.close();
	rmSync(dir, { recursive: true, force: true });
});

it("the WheelhouseClient example in docs/client.md runs", { timeout: 60_000 }, async () => {
	const doc = readFileSync(path.join(repoRoot, "docs/client.md"), "utf8");
	const example = /```ts\n([\s\S]*?)```/.exec(doc)![1]!;
	expect(example).toContain("new WheelhouseClient");
	const file = path.join(dir, "example.ts");
	writeFileSync(
		file,
		example
			.replace('"wheelhouse-agents/client"', JSON.stringify(path.join(repoRoot, "src/client/index.ts")))
			.replace("localhost:3000", new URL(server.url).host),
	);
	const { stdout } = await exec(process.execPath, ["--import", "tsx", file], { cwd: repoRoot, timeout: 30_000 });
	expect(stdout).toMatch(/Tool results: calculate: 42/);
	const sessions = (await server.request("GET", "/v1/sessions")).body.sessions;
	const messages = (await server.request("GET", `/v1/sessions/${sessions[0].id}/messages`)).body.messages;
	expect(messages.filter((m: any) => m.role === "user").map((m: any) => m.content[0].text)).toEqual([
		'/tool calculate {"expression": "6 * 7"}',
		"again",
	]);
});
