/**
 * docs/facades.md's AG-UI example works when pasted: its ```js block runs as written with node (the
 * client from this repository's dev dependencies) against a real server with API keys set.
 */
import { execFile } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";
import { afterEach, expect, it } from "vitest";
import { startServer, type TestServer } from "../../helpers/server.js";

const run = promisify(execFile);
const root = path.join(path.dirname(fileURLToPath(import.meta.url)), "../../..");
const readme = readFileSync(path.join(root, "docs/facades.md"), "utf8");
const blocks = [...readme.matchAll(/```js\n([\s\S]*?)```/g)]
	.map((m) => m[1] as string)
	.filter((b) => b.includes('from "@ag-ui/client"'));

let server: TestServer | undefined;
let dir: string | undefined;
afterEach(async () => {
	await server?.close();
	if (dir) rmSync(dir, { recursive: true, force: true });
});

it("the AG-UI example of docs/facades.md runs against the server", async () => {
	expect(blocks).toHaveLength(1);
	server = await startServer({ config: { apiKeys: ["first-key-1234"], shutdownGraceMs: 50 } });
	dir = mkdtempSync(path.join(tmpdir(), "wheelhouse-readme-"));
	symlinkSync(path.join(root, "node_modules"), path.join(dir, "node_modules"));
	const file = path.join(dir, "example.mjs");
	writeFileSync(file, (blocks[0] as string).replaceAll("localhost:3000", new URL(server.url).host));
	const { stdout } = await run("node", [file], { timeout: 20_000 });
	expect(stdout).toBe("hello from AG-UI\nTool results: pick_color: teal\n");
});
