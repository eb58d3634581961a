import { Type } from "@sinclair/typebox";
import { afterEach, describe, expect, it } from "vitest";
import type { AgentTool } from "../../src/agent/types.js";
import { ServerTools } from "../../src/tools/index.js";
import { fixtureCommand } from "./helpers.js";

const libraryTool = (name: string): AgentTool => ({
	name,
	label: name,
	description: `library ${name}`,
	parameters: Type.Object({}),
	execute: async () => ({ content: [{ type: "text", text: name }], details: {} }),
});

let tools: ServerTools | undefined;
afterEach(async () => {
	await tools?.stop();
	tools = undefined;
});

describe("ServerTools", () => {
	it("combines built-ins, library, HTTP and MCP tools with their origins and policies", async () => {
		tools = new ServerTools(
			{
				httpTools: [{ name: "lookup", description: "d", url: "http://127.0.0.1:9/x/{id}", approval: "always" }],
				mcpServers: {
					fx: { ...fixtureCommand(), pingIntervalMs: 0, approval: "always", includeTools: ["echo", "add"] },
				},
				approval: { fx__add: "never", "calc*": "always" },
				approvalTimeoutMs: 1234,
			},
			{ libraryTools: [libraryTool("mine"), libraryTool("calculate")] },
		);
		expect(tools.approvalTimeoutMs).toBe(1234);
		expect(tools.clientToolTimeoutMs).toBe(300_000);
		await tools.start();
		const list = tools.list();
		expect(list.map((t) => [t.name, t.origin.kind, t.approval, t.available])).toEqual([
			["get_current_time", "builtin", "never", true],
			["mine", "library", "never", true],
			["calculate", "library", "always", true],
			["lookup", "http", "always", true],
			["fx__echo", "mcp", "always", true],
			["fx__add", "mcp", "never", true],
		]);
		// The library's calculate replaced the built-in one.
		expect(list.find((t) => t.name === "calculate")!.description).toBe("library calculate");
		expect(list.find((t) => t.name === "fx__echo")!.origin).toEqual({ kind: "mcp", server: "fx", tool: "echo" });
		expect(tools.select(["mine", "fx__add", "nope"]).map((t) => t.name)).toEqual(["mine", "fx__add"]);
		expect(tools.has("lookup")).toBe(true);
		// A session's rules win.
		expect(tools.approvalPolicy("fx__add", { "fx__*": "always" })).toBe("always");
		expect(tools.approvalPolicy("fx__add", { fx__add: "never", "fx__*": "always" })).toBe("never");

		await tools.stop();
		expect(tools.list().find((t) => t.name === "fx__echo")!.available).toBe(false);
	});

	it("refuses an HTTP tool that shadows a built-in, and can leave the built-ins out", () => {
		expect(() => new ServerTools({ httpTools: [{ name: "calculate", description: "d", url: "http://h/" }] })).toThrow(
			'tools.httpTools: "calculate" is already a built-in or library tool',
		);
		expect(new ServerTools({}, { builtins: false }).tools()).toEqual([]);
	});
});
