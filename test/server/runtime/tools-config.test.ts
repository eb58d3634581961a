import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { buildApp } from "../../../src/server/http/app.js";
import { startServer, type TestServer } from "../../helpers/server.js";
import { promptSse, type SseReader } from "../../helpers/sse.js";
import { fixtureCommand } from "../../tools/helpers.js";

const ENV = (name: string) => `$${"{"}${name}}`;

let api: Server;
let apiBase: string;
let server: TestServer | undefined;
const readers: SseReader[] = [];

beforeAll(async () => {
	api = createServer((req, res) => {
		res.writeHead(200, { "content-type": "application/json" });
		res.end(JSON.stringify({ url: req.url, key: req.headers["x-key"] ?? null }));
	});
	await new Promise<void>((resolve) => api.listen(0, "127.0.0.1", resolve));
	apiBase = `http://127.0.0.1:${(api.address() as AddressInfo).port}`;
});
afterAll(() => new Promise((resolve) => api.close(resolve)));
afterEach(async () => {
	for (const r of readers.splice(0)) r.close();
	await server?.close();
	server = undefined;
});

const resultText = (e: { data: any }) => e.data.result.content.map((c: any) => c.text).join("");

describe("tools from the config file", () => {
	it("serves HTTP and MCP tools next to the built-ins, with their origins, and runs them in sessions", {
		timeout: 45_000,
	}, async () => {
		server = await startServer({
			env: { WH_TEST_LOOKUP_KEY: "k-9" },
			config: {
				tools: {
					httpTools: [
						{
							name: "lookup",
							description: "Look an item up",
							url: `${apiBase}/items/{id}`,
							headers: { "X-Key": ENV("WH_TEST_LOOKUP_KEY") },
						},
					],
					mcpServers: { fx: { ...fixtureCommand(), pingIntervalMs: 0, idempotent: true } },
				},
			},
		});
		const tools = (await server.request("GET", "/v1/tools")).body.tools as {
			name: string;
			origin: string;
			idempotent: boolean;
		}[];
		const origin = Object.fromEntries(tools.map((t) => [t.name, t.origin]));
		expect(origin).toMatchObject({ calculate: "builtin", get_current_time: "builtin", lookup: "http", fx__add: "mcp" });
		// Declared in the config (an HTTP tool's default is false) or by the built-in itself.
		const idempotent = Object.fromEntries(tools.map((t) => [t.name, t.idempotent]));
		expect(idempotent).toMatchObject({ calculate: true, get_current_time: true, lookup: false, fx__add: true });

		const mcp = (await server.request("GET", "/v1/tools/mcp-servers")).body.servers;
		expect(mcp).toMatchObject([{ name: "fx", transport: "stdio", state: "connected", attempt: 0 }]);
		expect(mcp[0].tools).toContain("fx__echo");
		expect(mcp[0].toolCount).toBe(mcp[0].tools.length);

		const id = (await server.request("POST", "/v1/sessions", { body: {} })).body.id;
		const http = await promptSse(server.url, id, { message: '/tool lookup {"id": "a/b c"}' });
		readers.push(http);
		const httpEnd = await http.waitForType("tool_execution_end");
		expect(JSON.parse(resultText(httpEnd))).toEqual({ url: "/items/a%2Fb%20c", key: "k-9" });
		await http.waitForEnd();

		const slow = await promptSse(server.url, id, { message: '/tool fx__slow {"steps": 2, "stepMs": 30}' });
		readers.push(slow);
		const update = await slow.waitForType("tool_execution_update");
		expect(update.data.partialResult.content[0].text).toBe("step 1");
		const slowEnd = await slow.waitForType("tool_execution_end");
		expect([resultText(slowEnd), slowEnd.data.isError]).toEqual(["done after 2 steps", false]);
		await slow.waitForEnd();

		const failing = await promptSse(server.url, id, { message: "/tool fx__fail {}" });
		readers.push(failing);
		const failEnd = await failing.waitForType("tool_execution_end");
		expect([resultText(failEnd), failEnd.data.isError]).toEqual(["it broke on purpose", true]);
		await failing.waitForEnd();
	});

	it("enables a tool an MCP server lists later in sessions whose selectors match it, from their next run", {
		timeout: 45_000,
	}, async () => {
		server = await startServer({
			config: { tools: { mcpServers: { fx: { ...fixtureCommand(), pingIntervalMs: 0 } } } },
		});
		const create = async (body: object) => (await server!.request("POST", "/v1/sessions", { body })).body;
		const everything = await create({});
		const ofFx = await create({ tools: ["fx__*"] });
		const fixed = await create({ tools: ["calculate", "fx__add_tool"] });
		expect(everything.activeTools).toEqual(expect.arrayContaining(["calculate", "fx__echo"]));
		expect(ofFx.activeTools).not.toContain("calculate");

		const add = await promptSse(server.url, fixed.id, { message: '/tool fx__add_tool {"name": "late"}' });
		readers.push(add);
		expect(resultText(await add.waitForType("tool_execution_end"))).toBe("added");
		await add.waitForEnd();
		const listed = async () =>
			((await server!.request("GET", "/v1/tools")).body.tools as { name: string }[]).map((t) => t.name);
		for (let i = 0; i < 100 && !(await listed()).includes("fx__late"); i++) await new Promise((r) => setTimeout(r, 50));

		const view = async (id: string) => (await server!.request("GET", `/v1/sessions/${id}`)).body;
		expect((await view(everything.id)).activeTools).toContain("fx__late");
		expect((await view(ofFx.id)).activeTools).toContain("fx__late");
		expect((await view(fixed.id)).activeTools).toEqual(["calculate", "fx__add_tool"]);

		const late = await promptSse(server.url, ofFx.id, { message: "/tool fx__late {}" });
		readers.push(late);
		const end = await late.waitForType("tool_execution_end");
		expect([resultText(end), end.data.isError]).toEqual(["dynamic late", false]);
		await late.waitForEnd();
		const refused = await promptSse(server.url, fixed.id, { message: "/tool fx__late {}" });
		readers.push(refused);
		const refusedEnd = await refused.waitForType("tool_execution_end");
		expect(refusedEnd.data.isError).toBe(true);
		expect(resultText(refusedEnd)).toContain("fx__late");
		await refused.waitForEnd();
	});

	it("stops startup with the field and the reason on a bad tools section", async () => {
		await expect(
			buildApp({
				env: {},
				config: {
					logLevel: "silent",
					tools: {
						httpTools: [{ name: "x", description: "d", url: "http://h/{id}", headers: { A: ENV("WH_UNSET_1") } }],
					},
				},
			}),
		).rejects.toThrow(
			"Invalid configuration: tools.httpTools[0].headers.A: environment variable WH_UNSET_1 is not set",
		);
		await expect(
			buildApp({ env: {}, config: { logLevel: "silent", tools: { httpTools: [{ name: "x", url: "http://h/" }] } } }),
		).rejects.toThrow(/Invalid configuration: tools\.httpTools\.0(\.description)?:/);
		await expect(
			buildApp({
				env: {},
				config: { logLevel: "silent", tools: { httpTools: [{ name: "y", description: "d", url: "http://{host}/" }] } },
			}),
		).rejects.toThrow("Invalid configuration: tools.httpTools[0].url: placeholders are not allowed in the host");
		await expect(
			buildApp({
				env: {},
				config: {
					logLevel: "silent",
					tools: { httpTools: [{ name: "calculate", description: "d", url: "http://h/" }] },
				},
			}),
		).rejects.toThrow('"calculate" is already a built-in or library tool');
		await expect(
			buildApp({
				env: {},
				config: { logLevel: "silent", tools: { mcpServers: { m: { url: "http://x/mcp", args: [] } } } },
			}),
		).rejects.toThrow(/Invalid configuration: tools\.mcpServers\.m(\.args)?: /);
		await expect(
			buildApp({ env: {}, config: { logLevel: "silent", tools: { mcpServers: { m: { command: 42 } } } } }),
		).rejects.toThrow("Invalid configuration: tools.mcpServers.m.command: expected string (got 42)");
	});
});
