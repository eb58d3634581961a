import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import type { AgentToolResult } from "../../../src/agent/types.js";
import { type McpAgentTool, McpManager } from "../../../src/tools/mcp/index.js";
import { eventually, fixtureCommand, waitForStatus } from "../helpers.js";

/** `${NAME}` config syntax, built without a template-looking string literal. */
const ENV = (name: string) => `$${"{"}${name}}`;

function tool(manager: McpManager, name: string): McpAgentTool {
	const found = manager.tools().find((t) => t.name === name);
	if (!found) throw new Error(`no tool ${name} in ${manager.tools().map((t) => t.name)}`);
	return found;
}

function text(result: AgentToolResult<unknown>): string {
	return result.content.map((c) => (c.type === "text" ? c.text : `[${c.type}]`)).join("");
}

describe("MCP over stdio", () => {
	let manager: McpManager;

	beforeAll(async () => {
		manager = new McpManager(
			{ fx: { ...fixtureCommand(), env: { FIXTURE_SECRET: ENV("WH_TEST_MCP_SECRET") }, pingIntervalMs: 0 } },
			{ env: { ...process.env, WH_TEST_MCP_SECRET: "s3cret" } },
		);
		await manager.start();
	});
	afterAll(() => manager.stop());

	it("exposes the server's tools as server__tool with their JSON Schema", () => {
		const [status] = manager.status();
		expect(status).toMatchObject({ name: "fx", transport: "stdio", state: "connected", attempt: 0 });
		expect(status!.serverInfo).toEqual({ name: "wheelhouse-fixture", version: "1.0.0" });
		const add = tool(manager, "fx__add");
		expect(add.origin).toEqual({ kind: "mcp", server: "fx", tool: "add" });
		expect(add.description).toBe("Add two numbers");
		expect(add.parameters).toMatchObject({
			type: "object",
			required: ["a", "b"],
			properties: { a: { type: "number" } },
		});
		expect(status!.toolCount).toBe(manager.tools().length);
	});

	it("maps text, structured and image results", async () => {
		expect(text(await tool(manager, "fx__echo").execute("c1", { text: "hi there" }))).toBe("hi there");
		const sum = await tool(manager, "fx__add").execute("c2", { a: 2, b: 40 });
		expect(text(sum)).toBe("42");
		expect(sum.details).toEqual({ server: "fx", tool: "add", structuredContent: { sum: 42 } });
		const image = await tool(manager, "fx__image").execute("c3", {});
		expect(image.content[0]).toMatchObject({ type: "image", mimeType: "image/png" });
	});

	it("turns isError results into a thrown error with the server's text", async () => {
		await expect(tool(manager, "fx__fail").execute("c4", {})).rejects.toThrow("it broke on purpose");
	});

	it("forwards progress notifications as partial results", async () => {
		const updates: AgentToolResult<any>[] = [];
		const result = await tool(manager, "fx__slow").execute("c5", { steps: 3, stepMs: 20 }, undefined, (u) =>
			updates.push(u),
		);
		expect(text(result)).toBe("done after 3 steps");
		// The SDK handles a progress notification a microtask late, so one that arrives in the same
		// chunk as the response is dropped: the last update may be missing, never reordered.
		expect(updates.length).toBeGreaterThanOrEqual(2);
		expect(updates.map(text)).toEqual(["step 1", "step 2", "step 3"].slice(0, updates.length));
		expect(updates[1]!.details.progress).toMatchObject({ progress: 2, total: 3 });
	});

	it("cancels the remote request when the signal aborts", async () => {
		const controller = new AbortController();
		const call = tool(manager, "fx__slow").execute("c6", { steps: 1000, stepMs: 20 }, controller.signal, () =>
			controller.abort(new Error("user abort")),
		);
		await expect(call).rejects.toThrow("user abort");
		// The server saw notifications/cancelled: its handler stopped and counted it.
		const count = await eventually(async () => {
			const n = text(await tool(manager, "fx__cancelled").execute("c7", {}));
			return n === "1" ? n : undefined;
		});
		expect(count).toBe("1");
	});

	it("passes configured env with env placeholders substituted, but not the parent's other variables", async () => {
		expect(text(await tool(manager, "fx__env").execute("c8", { name: "FIXTURE_SECRET" }))).toBe("s3cret");
		process.env.WH_TEST_PARENT_ONLY = "leak";
		// The child was spawned before; in any case it got a minimal environment.
		expect(text(await tool(manager, "fx__env").execute("c9", { name: "WH_TEST_PARENT_ONLY" }))).toBe("");
		delete process.env.WH_TEST_PARENT_ONLY;
	});

	it("picks up tools/list_changed", async () => {
		const before = manager.status()[0]!.toolCount;
		await tool(manager, "fx__add_tool").execute("c10", { name: "extra" });
		await waitForStatus(manager, "fx", (s) => s.toolCount === before + 1);
		expect(text(await tool(manager, "fx__extra").execute("c11", {}))).toBe("dynamic extra");
	});
});

describe("MCP stdio crash and reconnect", () => {
	let dir: string;
	let manager: McpManager | undefined;

	beforeAll(() => {
		dir = mkdtempSync(path.join(tmpdir(), "wh-mcp-"));
	});
	afterEach(async () => {
		await manager?.stop();
	});
	afterAll(() => rmSync(dir, { recursive: true, force: true }));

	it("reports a clear error while down and reconnects with backoff", { timeout: 45_000 }, async () => {
		const gate = path.join(dir, "gate");
		manager = new McpManager({
			fx: {
				...fixtureCommand(),
				env: { MCP_FIXTURE_GATE: gate },
				pingIntervalMs: 0,
				reconnect: { initialDelayMs: 20, maxDelayMs: 200 },
			},
		});
		await manager.start();
		expect(manager.status()[0]!.state).toBe("connected");
		const echo = tool(manager, "fx__echo");

		// Hold the server down: while the gate file exists, restarts exit at once.
		writeFileSync(gate, "");
		await expect(tool(manager, "fx__crash").execute("k1", {})).rejects.toThrow(
			"MCP server fx disconnected during the call to crash; reconnecting",
		);
		const down = await waitForStatus(manager, "fx", (s) => s.state === "connecting" && s.attempt >= 2);
		expect(down.lastError).toBeTruthy();
		await expect(echo.execute("k2", { text: "x" })).rejects.toThrow(
			/^MCP server fx is disconnected; reconnecting \(attempt \d+\)/,
		);
		// The tools stay listed so the model gets that clear error rather than "unknown tool".
		expect(manager.tools().some((t) => t.name === "fx__echo")).toBe(true);

		rmSync(gate);
		await waitForStatus(manager, "fx", (s) => s.state === "connected");
		expect(manager.status()[0]!.attempt).toBe(0);
		expect(text(await echo.execute("k3", { text: "back" }))).toBe("back");
	});

	it("gives up after maxAttempts and says so", async () => {
		manager = new McpManager({
			broken: {
				command: process.execPath,
				args: ["-e", "console.error('boom: bad config'); process.exit(1)"],
				reconnect: { initialDelayMs: 5, maxAttempts: 2 },
			},
		});
		await manager.start();
		const status = await waitForStatus(manager, "broken", (s) => s.state === "failed");
		expect(status.lastError).toContain("boom: bad config");
		expect(status.toolCount).toBe(0);
		expect(manager.tools()).toEqual([]);
	});

	it("fails config resolution naming a missing env placeholder variable", () => {
		expect(
			() => new McpManager({ fx: { ...fixtureCommand(), env: { K: ENV("WH_DEFINITELY_UNSET") } } }, { env: {} }),
		).toThrow("tools.mcpServers.fx.env.K: environment variable WH_DEFINITELY_UNSET is not set");
	});
});
