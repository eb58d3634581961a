import type { ChildProcess } from "node:child_process";
import { afterEach, describe, expect, it } from "vitest";
import type { AgentToolResult } from "../../../src/agent/types.js";
import { type McpAgentTool, McpManager } from "../../../src/tools/mcp/index.js";
import { killChild, startHttpFixture } from "../helpers.js";

/**
 * A Streamable HTTP MCP server that is restarted or redeployed between two calls forgets the
 * client's session and answers it with 404, which per the spec means the request was not run.
 * The call must re-initialise and go through, not cost the model a failed tool call.
 */
const children: ChildProcess[] = [];
let manager: McpManager | undefined;
afterEach(async () => {
	await manager?.stop();
	manager = undefined;
	for (const child of children.splice(0)) await killChild(child);
});

function tool(name: string): McpAgentTool {
	const found = manager!.tools().find((t) => t.name === name);
	if (!found) throw new Error(`no tool ${name}`);
	return found;
}

function text(result: AgentToolResult<unknown>): string {
	return result.content.map((c) => (c.type === "text" ? c.text : `[${c.type}]`)).join("");
}

describe("MCP over Streamable HTTP: a redeployed server", () => {
	it("a call after a restart (new process, same port) re-initialises and succeeds", { timeout: 30_000 }, async () => {
		const first = await startHttpFixture();
		children.push(first.child);
		manager = new McpManager({
			remote: { url: first.url, pingIntervalMs: 0, reconnect: { initialDelayMs: 20, maxDelayMs: 100 } },
		});
		await manager.start();
		expect(text(await tool("remote__echo").execute("c1", { text: "before" }))).toBe("before");
		const connectedAt = manager.status()[0]!.connectedAt!;

		await killChild(first.child);
		const second = await startHttpFixture(first.port);
		children.push(second.child);

		// Several calls at once share one re-initialisation.
		const results = await Promise.all(
			["after", "and again"].map((value, i) => tool("remote__echo").execute(`c${i + 2}`, { text: value })),
		);
		expect(results.map(text)).toEqual(["after", "and again"]);
		const status = manager.status()[0]!;
		expect(status).toMatchObject({ state: "connected", attempt: 0 });
		expect(status.connectedAt).toBeGreaterThanOrEqual(connectedAt);
		// One new session on the new process, not one per call.
		expect(text(await tool("remote__sessions").execute("c4", {}))).toBe("1");
	});
});
