/**
 * Approval rules fail closed: an entry that names no tool and matches none is refused where it is
 * written — a startup error naming the config field, 400 naming the body field on a session's
 * create, PATCH and PUT tool-declarations — with the tools it could have meant. Names of an MCP
 * server that is down at startup are accepted under its prefix; if the server then lists no such
 * tool, every tool of that server asks for approval.
 */
import { Writable } from "node:stream";
import { afterEach, describe, expect, it } from "vitest";
import { freePort } from "../../helpers/main-process.js";
import { startServer, type TestServer } from "../../helpers/server.js";
import { promptSse, type SseReader } from "../../helpers/sse.js";
import { killChild, startHttpFixture } from "../../tools/helpers.js";

let server: TestServer | undefined;
const readers: SseReader[] = [];
const cleanups: (() => Promise<void>)[] = [];
afterEach(async () => {
	for (const r of readers.splice(0)) r.close();
	await server?.close();
	server = undefined;
	for (const cleanup of cleanups.splice(0)) await cleanup();
});

/** The message startup fails with, or "started". */
async function startupError(config: Record<string, unknown>): Promise<string> {
	return startServer({ config }).then(
		async (s) => {
			await s.close();
			return "started";
		},
		(error: Error) => error.message,
	);
}

const pickColor = {
	name: "pick_color",
	description: "Ask the user to pick a color",
	parameters: { type: "object", properties: {} },
};

describe("approval rules that match no tool", () => {
	it("stop startup naming the config field and the tool meant", async () => {
		const typo = await startupError({ tools: { approval: { calculte: "always" } } });
		expect(typo).toContain("Invalid configuration: tools.approval.calculte:");
		expect(typo).toContain('did you mean "calculate"?');
		expect(await startupError({ tools: { approval: { "calx*": "always" } } })).toContain(
			'tools.approval.calx*: "calx*" matches no tool',
		);
		const profile = await startupError({
			profiles: { support: { model: "faux/echo", toolApprovals: { get_curent_time: "always" } } },
		});
		expect(profile).toContain("profiles.support.toolApprovals.get_curent_time:");
		expect(profile).toContain('did you mean "get_current_time"?');
		expect(await startupError({ tools: { approval: { calculate: "always", "calc*": "never", "*": "never" } } })).toBe(
			"started",
		);
	});

	it("are refused with 400 on a session's create, PATCH and PUT tool-declarations", async () => {
		server = await startServer();
		const create = await server.request("POST", "/v1/sessions", { body: { toolApprovals: { calculte: "always" } } });
		expect([create.status, create.body.error.code]).toEqual([400, "VALIDATION_FAILED"]);
		expect(create.body.error.message).toMatch(
			/^body\.toolApprovals\.calculte: "calculte" names no tool; did you mean "calculate"\?/,
		);

		// A client tool of the session counts, in the same body or already declared.
		const client = await server.request("POST", "/v1/sessions", {
			body: { clientTools: [pickColor], toolApprovals: { pick_colour: "always" } },
		});
		expect(client.status).toBe(400);
		expect(client.body.error.message).toContain('did you mean "pick_color"?');
		const created = await server.request("POST", "/v1/sessions", {
			body: { clientTools: [pickColor], toolApprovals: { pick_color: "always", "calc*": "always" } },
		});
		expect(created.status).toBe(201);
		const id = created.body.id;

		const patch = await server.request("PATCH", `/v1/sessions/${id}`, {
			body: { toolApprovals: { pick_colr: "always" } },
		});
		expect([patch.status, patch.body.error.message]).toEqual([
			400,
			expect.stringContaining("body.toolApprovals.pick_colr"),
		]);
		const put = await server.request("PUT", `/v1/sessions/${id}/tool-declarations`, {
			body: { toolApprovals: { calculat: "always" } },
		});
		expect([put.status, put.body.error.message]).toEqual([400, expect.stringContaining('did you mean "calculate"?')]);
		// Nothing changed, and approval still applies.
		expect((await server.request("GET", `/v1/sessions/${id}`)).body.toolApprovals).toEqual({
			pick_color: "always",
			"calc*": "always",
		});
		const run = await promptSse(server.url, id, { message: '/tool calculate {"expression": "1 + 1"}' });
		readers.push(run);
		await run.waitForType("approval_requested");
	});

	it("name a down MCP server's tools by its prefix; a name its list lacks makes all its tools ask", async () => {
		const port = await freePort();
		let log = "";
		const logStream = new Writable({
			write(chunk, _encoding, done) {
				log += chunk.toString();
				done();
			},
		});
		server = await startServer({
			logStream,
			config: {
				logLevel: "warn",
				logFormat: "json",
				tools: {
					mcpServers: {
						fx: {
							url: `http://127.0.0.1:${port}/mcp`,
							pingIntervalMs: 0,
							connectTimeoutMs: 2000,
							reconnect: { initialDelayMs: 50, maxDelayMs: 100 },
						},
					},
					// A misspelling of fx__add: the server is down, so it cannot be checked yet.
					approval: { fx__ad: "always" },
				},
			},
		});
		const fixture = await startHttpFixture(port);
		cleanups.push(() => killChild(fixture.child));
		await expect
			.poll(async () => (await server!.request("GET", "/v1/tools/mcp-servers")).body.servers[0].state, {
				timeout: 15_000,
			})
			.toBe("connected");
		// Now the list is known: the same misspelling in a session is refused.
		const refused = await server.request("POST", "/v1/sessions", { body: { toolApprovals: { fx__ad: "always" } } });
		expect(refused.status).toBe(400);
		// The fixture server also has fx__ask: both are one edit away, and both are named.
		expect(refused.body.error.message).toContain('did you mean "fx__add" or "fx__ask"?');

		const id = (await server.request("POST", "/v1/sessions", { body: {} })).body.id;
		const run = await promptSse(server.url, id, { message: '/tool fx__add {"a": 1, "b": 2}' });
		readers.push(run);
		const requested = await run.waitForType("approval_requested");
		expect(requested.data.toolName).toBe("fx__add");
		expect(log).toContain('approval rules name tools MCP server \\"fx\\" does not list (fx__ad)');
	});
});
