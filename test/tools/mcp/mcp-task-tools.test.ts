import { Writable } from "node:stream";
import { afterEach, describe, expect, it } from "vitest";
import { McpManager } from "../../../src/tools/mcp/index.js";
import { startServer, type TestServer } from "../../helpers/server.js";
import { fixtureCommand, killChild, startHttpFixture } from "../helpers.js";

/**
 * A tool whose listing says `execution.taskSupport: "required"` (MCP 2025-11) can only run as a
 * task, which this client does not do: offered to a model, every call of it would fail. It is left
 * out, said once in the log, and shown as skipped by `GET /v1/tools/mcp-servers`; a tool that only
 * allows tasks (`optional`) is offered and runs as a plain call.
 */
let server: TestServer | undefined;
let manager: McpManager | undefined;
afterEach(async () => {
	await manager?.stop();
	manager = undefined;
	await server?.close();
	server = undefined;
});

const REASON = 'requires task-based execution (execution.taskSupport "required"), which is not supported yet';

describe("MCP tools that require task-based execution", () => {
	it("are not offered; the reason is logged once, not again after a reconnect", { timeout: 30_000 }, async () => {
		const { child, port, url } = await startHttpFixture();
		const warnings: { details: Record<string, unknown>; message: string }[] = [];
		manager = new McpManager(
			{ fx: { url, pingIntervalMs: 0, reconnect: { initialDelayMs: 20, maxDelayMs: 100 } } },
			{ logger: { warn: (details, message) => warnings.push({ details, message }) } },
		);
		try {
			await manager.start();
			const names = manager.tools().map((t) => t.name);
			expect(names).toContain("fx__echo");
			expect(names).toContain("fx__task_optional");
			expect(names).not.toContain("fx__task_only");
			const status = manager.status()[0]!;
			expect(status.skippedTools).toEqual([{ name: "task_only", reason: REASON }]);
			expect(status.toolCount).toBe(names.length);
			const optional = manager.tools().find((t) => t.name === "fx__task_optional")!;
			expect((await optional.execute("t1", {})).content).toEqual([{ type: "text", text: "ran without a task" }]);
			expect(warnings).toEqual([
				{
					details: { mcpServer: "fx", skippedTools: ["task_only"] },
					message: `MCP server fx: tools left out: task_only; each ${REASON}`,
				},
			]);

			// A restarted server lists the same tools: nothing new to say.
			await killChild(child);
			const again = await startHttpFixture(port);
			try {
				const echo = manager.tools().find((t) => t.name === "fx__echo")!;
				expect((await echo.execute("t2", { text: "back" })).content).toEqual([{ type: "text", text: "back" }]);
				expect(manager.status()[0]!.connectedAt).toBeGreaterThanOrEqual(status.connectedAt!);
				expect(manager.status()[0]!.skippedTools).toEqual([{ name: "task_only", reason: REASON }]);
				expect(warnings).toHaveLength(1);
			} finally {
				await killChild(again.child);
			}
		} finally {
			await killChild(child);
		}
	});

	it("GET /v1/tools/mcp-servers shows them as skipped, and sessions never get them", { timeout: 30_000 }, async () => {
		let logs = "";
		const logStream = new Writable({
			write(chunk, _encoding, callback) {
				logs += chunk.toString();
				callback();
			},
		});
		server = await startServer({
			logStream,
			config: { logLevel: "warn", tools: { mcpServers: { fx: { ...fixtureCommand(), pingIntervalMs: 0 } } } },
		});
		const [fx] = (await server.request("GET", "/v1/tools/mcp-servers")).body.servers;
		expect(fx.state).toBe("connected");
		expect(fx.tools).toContain("fx__task_optional");
		expect(fx.tools).not.toContain("fx__task_only");
		expect(fx.skippedTools).toEqual([{ name: "task_only", reason: REASON }]);
		const tools = (await server.request("GET", "/v1/tools")).body.tools as { name: string }[];
		expect(tools.map((t) => t.name)).not.toContain("fx__task_only");
		expect(logs).toContain("MCP server fx: tools left out: task_only");
	});
});
