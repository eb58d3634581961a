/**
 * The quick starts of docs/a2a.md and docs/mcp-server.md, and the A2A and MCP clients of README.md,
 * work when pasted: each ```js block runs as written with node (the clients from this repository's
 * dependencies) against a real server — with API keys set for the docs, without any like the
 * README's quick start server — and prints what the page says it prints.
 */
import { execFile } from "node:child_process";
import { mkdtempSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";
import { afterEach, expect, it } from "vitest";
import { docBlock, docBlocks } from "../../helpers/doc-blocks.js";
import { startServer, type TestServer } from "../../helpers/server.js";

const run = promisify(execFile);
const root = path.join(path.dirname(fileURLToPath(import.meta.url)), "../../..");
const KEY = "docs-key-0123456789";

let server: TestServer | undefined;
let dir: string | undefined;
afterEach(async () => {
	await server?.close();
	if (dir) rmSync(dir, { recursive: true, force: true });
});

async function runBlock(block: string, apiKeys: string[] = [KEY]): Promise<string> {
	server = await startServer({ config: { apiKeys, shutdownGraceMs: 50 } });
	dir = mkdtempSync(path.join(tmpdir(), "wheelhouse-docs-"));
	symlinkSync(path.join(root, "node_modules"), path.join(dir, "node_modules"));
	const file = path.join(dir, "example.mjs");
	writeFileSync(file, block.replaceAll("localhost:3000", new URL(server.url).host));
	const { stdout } = await run("node", [file], {
		timeout: 20_000,
		env: { ...process.env, WHEELHOUSE_API_KEY: KEY },
	});
	return stdout;
}

it("docs/a2a.md's quick start runs against the server", async () => {
	expect(docBlocks("docs/a2a.md").filter((b) => b.lang === "js")).toHaveLength(2);
	const block = docBlock("docs/a2a.md", "js", "sendMessageStream").code;
	expect(await runBlock(block)).toBe("TASK_STATE_COMPLETED\nhello from A2A\n");
});

it("docs/a2a.md's push notification example runs against the server", async () => {
	const block = docBlock("docs/a2a.md", "js", "createTaskPushNotificationConfig").code;
	expect(await runBlock(block)).toBe("TASK_STATE_COMPLETED my-secret-token\n");
});

it("docs/mcp-server.md's quick start runs against the server", async () => {
	expect(docBlocks("docs/mcp-server.md").filter((b) => b.lang === "js")).toHaveLength(1);
	const block = docBlock("docs/mcp-server.md", "js", "StreamableHTTPClientTransport").code;
	expect(await runBlock(block)).toBe("agent\nhello from MCP\ncompleted\n");
});

it("README.md's A2A client runs against a server without API keys", async () => {
	expect(docBlocks("README.md").filter((b) => b.lang === "js")).toHaveLength(2);
	const block = docBlock("README.md", "js", "@a2a-js/sdk").code;
	expect(await runBlock(block, [])).toBe("hello from A2A\n");
});

it("README.md's MCP client runs against a server without API keys", async () => {
	const block = docBlock("README.md", "js", "@modelcontextprotocol/sdk").code;
	expect(await runBlock(block, [])).toBe("hello from MCP\n");
});
