/**
 * The server tools a session resolves follow the tool registry as it is now: a tool added or
 * removed at runtime (`SessionManager.addTool` / `removeTool`, as MCP servers connecting do) is
 * seen by every session made afterwards — the default selection (`"*"`), whose list the manager
 * shares between sessions, included — while a session's own selection and its client tools still
 * apply.
 */
import { Type } from "@sinclair/typebox";
import { afterEach, describe, expect, it } from "vitest";
import type { AgentTool } from "../../../src/agent/types.js";
import { startServer, type TestServer } from "../../helpers/server.js";

let server: TestServer | undefined;
afterEach(async () => {
	await server?.close();
	server = undefined;
});

function tool(name: string): AgentTool<any> {
	return {
		name,
		label: name,
		description: `The test tool ${name}.`,
		parameters: Type.Object({}),
		execute: async () => ({ content: [{ type: "text", text: name }], details: {} }),
	};
}

describe("session tools and the tool registry", () => {
	it("a tool added or removed at runtime is seen by the sessions made afterwards; each keeps its own selection", async () => {
		server = await startServer();
		const s = server;
		const sessions = s.app.wheelhouse.sessions;
		const create = async (body: Record<string, unknown>) => {
			const res = await s.request("POST", "/v1/sessions", { body: { model: "faux/echo", ...body } });
			expect(res.status).toBe(201);
			return res.body as { id: string; activeTools: string[] };
		};
		const activeTools = async (id: string) =>
			((await s.request("GET", `/v1/sessions/${id}`)).body as { activeTools: string[] }).activeTools;

		const before = await create({});
		expect(before.activeTools).toContain("calculate");
		expect(before.activeTools).not.toContain("extra_one");

		sessions.addTool(tool("extra_one"));
		const all = await create({});
		const byPattern = await create({ tools: ["extra_*"] });
		const exact = await create({ tools: ["calculate"] });
		const withClient = await create({
			clientTools: [{ name: "pick_color", description: "Asks the user for a color" }],
		});
		expect(all.activeTools).toEqual([...before.activeTools, "extra_one"]);
		expect(byPattern.activeTools).toEqual(["extra_one"]);
		expect(exact.activeTools).toEqual(["calculate"]);
		expect(withClient.activeTools).toEqual([...before.activeTools, "extra_one", "pick_color"]);

		// Two default sessions, then one more tool: the list of the first two is not the next one's.
		sessions.addTool(tool("extra_two"));
		const after = await create({});
		expect(after.activeTools).toEqual([...before.activeTools, "extra_one", "extra_two"]);
		expect(await activeTools(all.id)).toEqual([...before.activeTools, "extra_one"]);

		expect(sessions.removeTool("extra_one")).toBe(true);
		const removed = await create({});
		expect(removed.activeTools).toEqual([...before.activeTools, "extra_two"]);
		expect((await create({ tools: ["extra_*"] })).activeTools).toEqual(["extra_two"]);

		// A session loaded from the store resolves its tools from the registry as it is then.
		expect(sessions.evictIdle(0)).toBeGreaterThan(0);
		expect(await activeTools(all.id)).toEqual([...before.activeTools, "extra_two"]);
		expect(await activeTools(byPattern.id)).toEqual(["extra_two"]);
		expect(await activeTools(withClient.id)).toEqual([...before.activeTools, "extra_two", "pick_color"]);
	});
});
