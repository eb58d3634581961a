/**
 * What an operator reads in the log: JSON or readable lines by `LOG_FORMAT`, health probes not
 * request-logged at `info` while API requests are, and an MCP server that cannot be reached at
 * startup named in a warning (startup goes on; it keeps retrying).
 */
import { createServer } from "node:net";
import { PassThrough } from "node:stream";
import { afterEach, describe, expect, it } from "vitest";
import { startServer, type TestServer } from "../../helpers/server.js";

let server: TestServer | undefined;
afterEach(async () => {
	await server?.close();
	server = undefined;
});

/** A log destination whose lines can be read back. */
function logSink(): { stream: PassThrough; lines: () => string[] } {
	const stream = new PassThrough();
	let text = "";
	stream.on("data", (chunk: Buffer) => {
		text += chunk.toString();
	});
	return { stream, lines: () => text.split("\n").filter((line) => line !== "") };
}

/** A port nothing listens on: the connection is refused at once. */
async function closedPort(): Promise<number> {
	const probe = createServer().listen(0, "127.0.0.1");
	await new Promise((resolve) => probe.once("listening", resolve));
	const { port } = probe.address() as { port: number };
	await new Promise((resolve) => probe.close(resolve));
	return port;
}

describe("startup and request logs", () => {
	it("health probes are not request-logged at info; API requests are", async () => {
		const log = logSink();
		server = await startServer({ logStream: log.stream, config: { logLevel: "info", logFormat: "json" } });
		for (const path of ["/healthz", "/readyz", "/healthz"])
			expect((await server.request("GET", path)).status).toBe(200);
		expect((await server.request("GET", "/v1/models")).status).toBe(200);
		const urls = log
			.lines()
			.map((line) => JSON.parse(line) as { req?: { url?: string } })
			.map((entry) => entry.req?.url)
			.filter((url) => url !== undefined);
		expect(urls).toContain("/v1/models");
		expect(urls.filter((url) => url === "/healthz" || url === "/readyz")).toEqual([]);
	});

	it("LOG_FORMAT selects JSON lines or readable lines; without a terminal the default is JSON", async () => {
		const json = logSink();
		server = await startServer({ logStream: json.stream, env: {}, config: { logLevel: "info" } });
		await server.close();
		expect(json.lines().length).toBeGreaterThan(0);
		for (const line of json.lines()) expect(() => JSON.parse(line)).not.toThrow();

		const pretty = logSink();
		server = await startServer({
			logStream: pretty.stream,
			env: { LOG_FORMAT: "pretty" },
			config: { logLevel: "info" },
		});
		await server.request("GET", "/v1/models");
		await server.close();
		const lines = pretty.lines();
		expect(lines.some((line) => /INFO.*request completed/.test(line))).toBe(true);
		for (const line of lines) expect(line.startsWith("{")).toBe(false);
	});

	it("an MCP server that cannot be reached at startup is named in a warning, with the error", async () => {
		const log = logSink();
		const port = await closedPort();
		server = await startServer({
			logStream: log.stream,
			config: {
				logLevel: "warn",
				logFormat: "json",
				tools: { mcpServers: { docs: { url: `http://127.0.0.1:${port}/mcp`, reconnect: { initialDelayMs: 60_000 } } } },
			},
		});
		const warnings = log
			.lines()
			.map((line) => JSON.parse(line) as { level: number; msg: string; mcpServer?: string; error?: string })
			.filter((entry) => entry.mcpServer === "docs");
		expect(warnings).toHaveLength(1);
		expect(warnings[0]!.level).toBe(40);
		expect(warnings[0]!.msg).toMatch(/MCP server "docs" is unreachable \(.+\)/);
		expect(warnings[0]!.error).toBeTruthy();
		// ...and its state is there for anyone who asks later.
		const status = (await server.request("GET", "/v1/tools/mcp-servers")).body.servers[0];
		expect(status).toMatchObject({ name: "docs", lastError: warnings[0]!.error });
		expect(status.state).not.toBe("connected");
	});
});
