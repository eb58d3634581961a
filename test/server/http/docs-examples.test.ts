/**
 * The examples of the reference that no other test runs, run as pasted against a real server:
 * - docs/agui.md: the `HttpAgent` subclass whose `connectAgent()` catches up on a thread (ts, with
 *   the few lines that use it after it);
 * - docs/api.md: the resumed prompt with an `Idempotency-Key` (curl), and the package imports (ts);
 * - docs/facades.md: the curl lines of the OpenAI facade and of the pi proxy;
 * - docs/long-sessions.md: the key budgets config, and the usage query with one of its keys;
 * - docs/operations.md: a delivery has the body it shows, and its receiver's `standardwebhooks` lines
 *   verify a real delivery (ts, given the `rawBody` and `req` it leaves to the reader);
 * - docs/tools.md: the calculator call, the HTTP tool, MCP and approval configs, the per-session
 *   approvals, the built-in clock, and a library user's own tool served by `buildApp` (ts, given
 *   the `myTool` it leaves to the reader).
 * Shell blocks run in bash with curl and jq; `localhost:3000` (or `$S`) becomes the server's address,
 * and what a block leaves to the reader (`$ID`, `$KEY`) is set in its environment, nothing else. A
 * JSON config block is written to a file as pasted and given to the server as `WHEELHOUSE_CONFIG`.
 */
import { execFile } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { createServer, type IncomingHttpHeaders } from "node:http";
import type { AddressInfo } from "node:net";
import path from "node:path";
import { promisify } from "node:util";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { loadConfig } from "../../../src/server/config/config.js";
import { aguiAgent, runOnce } from "../../helpers/agui.js";
import { docBlock } from "../../helpers/doc-blocks.js";
import { freePort, repoRoot } from "../../helpers/main-process.js";
import { startServer, type TestServer } from "../../helpers/server.js";
import { newSecret } from "../../helpers/webhook-receiver.js";

const exec = promisify(execFile);
let server: TestServer | undefined;
let dir: string;

beforeAll(() => {
	// Inside the repository, so that a pasted TypeScript file resolves this checkout's packages.
	dir = mkdtempSync(path.join(repoRoot, "test/server/.docs-examples-"));
});
afterEach(async () => {
	await server?.close();
	server = undefined;
});
afterAll(() => {
	rmSync(dir, { recursive: true, force: true });
});

/** Runs a shell block as pasted in bash against `server`, with `env` for what it leaves to the reader. */
async function paste(block: string, env: Record<string, string> = {}): Promise<string> {
	const host = new URL(server!.url).host;
	const { stdout } = await exec("bash", ["-c", `set -e\n${block.replaceAll("localhost:3000", host)}`], {
		env: { PATH: process.env.PATH, S: server!.url, ...env },
		timeout: 30_000,
	});
	return stdout;
}

const PACKAGE = JSON.parse(readFileSync(path.join(repoRoot, "package.json"), "utf8")) as {
	name: string;
	exports: Record<string, { import: string }>;
};

/** Each import name of the package (`wheelhouse-agents/server`) with the source file its build comes from. */
function packageSources(): Map<string, string> {
	return new Map(
		Object.entries(PACKAGE.exports).map(([entry, target]) => [
			path.posix.join(PACKAGE.name, entry),
			path.join(repoRoot, target.import.replace(/^\.\/dist\//, "src/").replace(/\.js$/, ".ts")),
		]),
	);
}

/** A JSON config block written to a file as pasted; its path. */
function configFile(page: string, marker: string): string {
	const file = path.join(dir, `${path.basename(page, ".md")}-${marker.replace(/\W/g, "")}.json`);
	writeFileSync(file, docBlock(page, "json", marker).code);
	return file;
}

/** Whether `actual` has every key of `shown`, with a value of the same JSON type, at every depth. */
function sameShape(shown: unknown, actual: unknown, at = "body"): string[] {
	const kind = (v: unknown) => (v === null ? "null" : Array.isArray(v) ? "array" : typeof v);
	if (kind(shown) !== kind(actual)) return [`${at}: ${kind(actual)}, shown as ${kind(shown)}`];
	if (kind(shown) !== "object") return [];
	return Object.entries(shown as object).flatMap(([key, value]) =>
		sameShape(value, (actual as Record<string, unknown>)[key], `${at}.${key}`),
	);
}

/** The SSE `id:` lines of `text`. */
function ids(text: string): number[] {
	return [...text.matchAll(/^id: (\d+)$/gm)].map((m) => Number(m[1]));
}

async function createSession(body: unknown = {}, key?: string): Promise<string> {
	const res = await server!.request("POST", "/v1/sessions", { body, key });
	expect(res.status).toBe(201);
	return res.body.id as string;
}

describe("docs examples as pasted", { timeout: 60_000 }, () => {
	it("docs/api.md: the same prompt with its key and Last-Event-ID continues the run after id 7", async () => {
		const block = docBlock("docs/api.md", "sh", "idempotency-key").code;
		const [first, second] = block.split(/^# the connection dropped.*$/m) as [string, string];
		expect(second, "the block's second half, after the comment").toBeDefined();
		server = await startServer();
		const id = await createSession();
		// Both halves in one shell: the second uses the key the first made.
		const stdout = await paste(`${first}\necho '### resumed'\n${second}`, { ID: id });
		const [run, resumed] = stdout.split("### resumed\n") as [string, string];
		expect(run).toMatch(/^event: agent_end$/m);
		expect(ids(run)[0]).toBeLessThanOrEqual(7);
		expect(ids(resumed).length).toBeGreaterThan(0);
		expect(ids(resumed).every((n) => n > 7)).toBe(true);
		expect(resumed).toMatch(/^event: agent_end$/m);
		// One run: the repeat did not prompt again.
		const messages = (await server.request("GET", `/v1/sessions/${id}/messages`)).body.messages;
		expect(messages.map((m: { role: string }) => m.role)).toEqual(["user", "assistant"]);
	});

	it("docs/agui.md: the HttpAgent subclass catches up on a thread", async () => {
		const block = docBlock("docs/agui.md", "ts", "class WheelhouseAgent").code;
		server = await startServer({ config: { apiKeys: ["first-key-1234"] } });
		const { agent } = aguiAgent(server, "first-key-1234", { threadId: "docs-thread" });
		agent.addMessage({ id: "u1", role: "user", content: "hello from the thread" });
		await runOnce(agent);
		// What a reader writes after the class: an agent on the thread, caught up.
		const use = `
const agent = new WheelhouseAgent({
  url: "http://localhost:3000/agui/v1/run",
  threadId: "docs-thread",
  headers: { authorization: "Bearer first-key-1234" },
});
await agent.connectAgent();
console.log(JSON.stringify(agent.messages.map((m) => [m.role, m.content])));
`;
		const file = path.join(dir, "agui-connect.ts");
		writeFileSync(file, `${block}${use}`.replaceAll("localhost:3000", new URL(server.url).host));
		const { stdout } = await exec(process.execPath, ["--import", "tsx", file], { cwd: repoRoot, timeout: 30_000 });
		expect(JSON.parse(stdout)).toEqual([
			["user", "hello from the thread"],
			["assistant", "hello from the thread"],
		]);
	});

	it("docs/api.md: the imports of the package resolve to what they name", async () => {
		const block = docBlock("docs/api.md", "ts", "wheelhouse-agents/server").code;
		// Each entry as its source: dist/X.js is built from src/X.ts.
		let code = block;
		for (const [name, source] of packageSources()) code = code.replaceAll(`"${name}"`, JSON.stringify(source));
		expect(code).not.toContain(`"${PACKAGE.name}`);
		const names = [...block.matchAll(/import \{([^}]*)\}/g)].flatMap((m) => m[1]!.split(",").map((n) => n.trim()));
		const file = path.join(dir, "imports.ts");
		writeFileSync(file, `${code}\nconsole.log(JSON.stringify([${names.map((n) => `typeof ${n}`).join(", ")}]));\n`);
		const { stdout } = await exec(process.execPath, ["--import", "tsx", file], { cwd: repoRoot, timeout: 30_000 });
		expect(JSON.parse(stdout)).toEqual(names.map(() => "function"));
	});

	it("docs/facades.md: the curl lines of the OpenAI facade answer", async () => {
		server = await startServer();
		const stdout = await paste(docBlock("docs/facades.md", "sh", "/openai/v1/chat/completions").code);
		expect(stdout).toMatch(/"content":"hello from curl"/);
		expect(stdout).toMatch(/^event: response\.completed$/m);
	});

	it("docs/facades.md: the curl line of the pi proxy streams the answer", async () => {
		server = await startServer({ config: { apiKeys: ["first-key-1234"] } });
		const stdout = await paste(docBlock("docs/facades.md", "sh", "/api/stream").code);
		expect(stdout).toMatch(/"type":"text_delta"/);
		expect(stdout).toMatch(/"type":"done"/);
		expect(stdout).toContain("hello");
	});

	it("docs/long-sessions.md: the key budgets config starts the server, and the usage query answers for a key", async () => {
		server = await startServer({ env: { WHEELHOUSE_CONFIG: configFile("docs/long-sessions.md", "keyBudgets") } });
		const KEY = "sk-alice-0123456789";
		expect((await server.request("GET", "/v1/models")).status).toBe(401);
		const id = await createSession({}, KEY);
		const res = await server.request("GET", `/v1/sessions/${id}`, { key: KEY });
		expect(res.body.keyBudget).toMatchObject({
			period: "month",
			maxCostUsd: 25,
			maxTokens: 5000000,
			maxTurnsPerRun: 40,
		});
		const stdout = await paste(docBlock("docs/long-sessions.md", "sh", "/v1/usage").code, { KEY });
		const usage = JSON.parse(stdout);
		expect(usage).toMatchObject({ from: "2026-12-01", to: "2026-12-31", budget: { maxCostUsd: 25 } });
	});

	it("docs/operations.md: a run.completed delivery has the body shown, and the receiver's lines verify it", async () => {
		const deliveries: { body: string; headers: IncomingHttpHeaders }[] = [];
		const receiver = createServer((req, res) => {
			let body = "";
			req.on("data", (chunk: Buffer) => {
				body += chunk.toString();
			});
			req.on("end", () => {
				deliveries.push({ body, headers: req.headers });
				res.writeHead(204).end();
			});
		}).listen(0, "127.0.0.1");
		try {
			await new Promise((resolve) => receiver.once("listening", resolve));
			const secret = newSecret();
			const url = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}/hook`;
			server = await startServer({
				config: { webhooks: { pollMs: 20, endpoints: [{ url, secret, events: ["run.completed"] }] } as never },
			});
			const id = await createSession();
			await server.request("POST", `/v1/sessions/${id}/prompt`, { body: { message: "hello" } });
			const deadline = Date.now() + 20_000;
			while (deliveries.length === 0 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 50));
			expect(deliveries).toHaveLength(1);
			const [delivery] = deliveries as [{ body: string; headers: IncomingHttpHeaders }];
			const shown = JSON.parse(docBlock("docs/operations.md", "json", '"run.completed", "timestamp"').code);
			expect(sameShape(shown, JSON.parse(delivery.body))).toEqual([]);

			const block = docBlock("docs/operations.md", "ts", "standardwebhooks").code;
			const given = `const rawBody = ${JSON.stringify(delivery.body)};\nconst req = { headers: ${JSON.stringify(delivery.headers)} };\n`;
			const file = path.join(dir, "verify.ts");
			writeFileSync(file, `${given}${block}console.log(JSON.stringify(event));\n`);
			const { stdout } = await exec(process.execPath, ["--import", "tsx", file], {
				cwd: repoRoot,
				env: { PATH: process.env.PATH, WHEELHOUSE_HOOK_SECRET: secret },
				timeout: 30_000,
			});
			expect(JSON.parse(stdout)).toEqual(JSON.parse(delivery.body));
			// Signed with another secret, the same lines throw.
			await expect(
				exec(process.execPath, ["--import", "tsx", file], {
					cwd: repoRoot,
					env: { PATH: process.env.PATH, WHEELHOUSE_HOOK_SECRET: newSecret() },
					timeout: 30_000,
				}),
			).rejects.toThrow(/signature/i);
		} finally {
			receiver.close();
		}
	});

	it("docs/tools.md: the calculator call returns 2", async () => {
		server = await startServer();
		const stdout = await paste(docBlock("docs/tools.md", "sh", "sqrt(16)").code);
		expect(stdout).toMatch(/^event: tool_execution_end\ndata: .*"text":"2".*"isError":false/m);
	});

	it("docs/tools.md: the HTTP tool config registers get_weather", async () => {
		server = await startServer({
			env: { WHEELHOUSE_CONFIG: configFile("docs/tools.md", "httpTools"), WEATHER_TOKEN: "t" },
		});
		const tools = (await server.request("GET", "/v1/tools")).body.tools as { name: string; origin: string }[];
		expect(tools).toContainEqual(expect.objectContaining({ name: "get_weather", origin: "http" }));
	});

	it("docs/tools.md: the MCP config is accepted", () => {
		// Not started: its servers come from the npm registry and mcp.example.com.
		const config = loadConfig({
			WHEELHOUSE_CONFIG: configFile("docs/tools.md", "mcpServers"),
			SEARCH_TOKEN: "t",
		});
		expect(Object.keys((config.tools as { mcpServers?: object } | undefined)?.mcpServers ?? {})).toEqual([
			"files",
			"search",
		]);
	});

	it("docs/tools.md: the approval config makes calculate wait for a decision", async () => {
		server = await startServer({ env: { WHEELHOUSE_CONFIG: configFile("docs/tools.md", "approvalTimeoutMs") } });
		const id = await createSession();
		await server.request("POST", `/v1/sessions/${id}/prompt`, {
			body: { message: '/tool calculate {"expression": "6 * 7"}' },
		});
		const deadline = Date.now() + 20_000;
		let pending: unknown[] = [];
		while (pending.length === 0 && Date.now() < deadline) {
			pending = (await server.request("GET", `/v1/sessions/${id}`)).body.pendingApprovals;
			if (pending.length === 0) await new Promise((resolve) => setTimeout(resolve, 50));
		}
		expect(pending).toEqual([expect.objectContaining({ toolName: "calculate" })]);
	});

	it("docs/tools.md: a session's own approvals", async () => {
		server = await startServer();
		const stdout = await paste(docBlock("docs/tools.md", "sh", '"get_current_time": "always"').code);
		expect(JSON.parse(stdout).toolApprovals).toEqual({ get_current_time: "always", calculate: "never" });
	});

	it("docs/tools.md: buildApp serves a library user's own tool", async () => {
		const block = docBlock("docs/tools.md", "ts", "buildApp({ tools: [myTool] })").code;
		expect(block).toContain("port: 3000");
		const port = await freePort();
		const source = packageSources().get(`${PACKAGE.name}/server`)!;
		const given = `import { Type } from "@sinclair/typebox";
const myTool = {
  name: "my_tool", label: "Mine", description: "Says mine", parameters: Type.Object({}),
  execute: async () => ({ content: [{ type: "text", text: "mine" }], details: {} }),
};
`;
		const after = `
const base = "http://127.0.0.1:${port}";
const { tools } = await (await fetch(base + "/v1/tools")).json();
const { id } = await (await fetch(base + "/v1/sessions", { method: "POST", headers: { "content-type": "application/json" }, body: "{}" })).json();
const run = await (await fetch(base + "/v1/sessions/" + id + "/prompt", {
  method: "POST", headers: { "content-type": "application/json", accept: "text/event-stream" },
  body: JSON.stringify({ message: "/tool my_tool {}" }),
})).text();
console.log(JSON.stringify({ names: tools.map((t) => t.name), ran: /"toolName":"my_tool".*"text":"mine"/.test(run) }));
await app.close();
`;
		const file = path.join(dir, "own-tool.ts");
		const code = block
			.replace('"wheelhouse-agents/server"', JSON.stringify(source))
			.replace("port: 3000", `port: ${port}`);
		writeFileSync(file, `${given}${code}${after}`);
		const { stdout } = await exec(process.execPath, ["--import", "tsx", file], { cwd: repoRoot, timeout: 30_000 });
		// The app logs JSON lines to the same stdout; pino may flush one after the script's own line.
		const line = stdout.split("\n").find((l) => l.startsWith('{"names":'));
		expect(line, stdout).toBeDefined();
		const result = JSON.parse(line!);
		expect(result.names).toEqual(expect.arrayContaining(["my_tool", "calculate", "get_current_time"]));
		expect(result.ran).toBe(true);
	});

	it("docs/tools.md: the clock in Tokyo", async () => {
		server = await startServer();
		const id = await createSession();
		const stdout = await paste(docBlock("docs/tools.md", "sh", "Asia/Tokyo").code, { ID: id });
		expect(stdout).toMatch(/^event: tool_execution_end\ndata: .*"toolName":"get_current_time".*"isError":false/m);
		expect(stdout).toMatch(/Asia\/Tokyo/);
	});
});
