import type { ChildProcess } from "node:child_process";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { AgentToolResult } from "../../../src/agent/types.js";
import { type McpAgentTool, McpManager } from "../../../src/tools/mcp/index.js";
import { killChild, startHttpFixture, waitForStatus } from "../helpers.js";

/** `${NAME}` config syntax, built without a template-looking string literal. */
const ENV = (name: string) => `$${"{"}${name}}`;

function tool(manager: McpManager, name: string): McpAgentTool {
	const found = manager.tools().find((t) => t.name === name);
	if (!found) throw new Error(`no tool ${name}`);
	return found;
}

function text(result: AgentToolResult<unknown>): string {
	return result.content.map((c) => (c.type === "text" ? c.text : `[${c.type}]`)).join("");
}

describe("MCP over Streamable HTTP", () => {
	let child: ChildProcess;
	let port: number;
	let url: string;
	let manager: McpManager;

	beforeAll(async () => {
		({ child, port, url } = await startHttpFixture());
		manager = new McpManager(
			{
				remote: {
					url,
					headers: { "X-Api-Key": ENV("WH_TEST_MCP_KEY") },
					pingIntervalMs: 0,
					reconnect: { initialDelayMs: 20, maxDelayMs: 200 },
				},
			},
			{ env: { WH_TEST_MCP_KEY: "key-123" } },
		);
		await manager.start();
	});
	afterAll(async () => {
		await manager.stop();
		await killChild(child);
	});

	it("connects, lists and calls tools, sending the configured headers with env placeholders substituted", async () => {
		expect(manager.status()[0]).toMatchObject({ name: "remote", transport: "http", state: "connected" });
		expect(text(await tool(manager, "remote__echo").execute("h1", { text: "over http" }))).toBe("over http");
		const headers = JSON.parse(text(await tool(manager, "remote__headers").execute("h2", {})));
		expect(headers["x-api-key"]).toBe("key-123");
	});

	it("forwards progress and maps isError", async () => {
		const updates: string[] = [];
		const result = await tool(manager, "remote__slow").execute("h3", { steps: 2, stepMs: 20 }, undefined, (u) =>
			updates.push(text(u)),
		);
		expect(text(result)).toBe("done after 2 steps");
		expect(updates[0]).toBe("step 1");
		await expect(tool(manager, "remote__fail").execute("h4", {})).rejects.toThrow("it broke on purpose");
	});

	it("picks up tools/list_changed over the server's event stream", async () => {
		const before = manager.status()[0]!.toolCount;
		await tool(manager, "remote__add_tool").execute("h5", { name: "late" });
		await waitForStatus(manager, "remote", (s) => s.toolCount === before + 1);
		expect(text(await tool(manager, "remote__late").execute("h6", {}))).toBe("dynamic late");
	});

	it("reconnects after the server process dies and comes back", { timeout: 45_000 }, async () => {
		await killChild(child);
		const echo = tool(manager, "remote__echo");
		await expect(echo.execute("h7", { text: "x" })).rejects.toThrow(/MCP server remote is (unreachable|disconnected)/);
		const down = await waitForStatus(manager, "remote", (s) => s.state === "connecting");
		expect(down.lastError).toBeTruthy();
		await expect(echo.execute("h8", { text: "x" })).rejects.toThrow(
			/MCP server remote is disconnected; reconnecting \(attempt \d+\)/,
		);
		({ child } = await startHttpFixture(port));
		await waitForStatus(manager, "remote", (s) => s.state === "connected");
		expect(text(await echo.execute("h9", { text: "again" }))).toBe("again");
	});

	it("notices a dead server by ping, without a call", { timeout: 45_000 }, async () => {
		const own = await startHttpFixture();
		const pinged = new McpManager({
			p: { url: own.url, pingIntervalMs: 100, reconnect: { initialDelayMs: 50, maxDelayMs: 100 } },
		});
		try {
			await pinged.start();
			expect(pinged.status()[0]!.state).toBe("connected");
			await killChild(own.child);
			const down = await waitForStatus(pinged, "p", (s) => s.state === "connecting");
			expect(down.lastError).toMatch(/ping failed|connection closed|fetch failed/);
		} finally {
			await pinged.stop();
			await killChild(own.child);
		}
	});

	it("ends its server-side session (DELETE) when stopped", async () => {
		const other = new McpManager({ other: { url, pingIntervalMs: 0 } });
		await other.start();
		const count = async () => text(await tool(manager, "remote__sessions").execute("s", {}));
		const before = Number(await count());
		await other.stop();
		expect(Number(await count())).toBe(before - 1);
	});
});
