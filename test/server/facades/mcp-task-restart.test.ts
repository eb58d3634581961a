/**
 * An MCP task outlives its process (docs/mcp-server.md, Tasks): a real server process on a SQLite
 * file is SIGKILLed while a task-augmented `tools/call` runs, and a new process on the same file
 * answers `tasks/get` for it. On a session that continues after a restart (`onInterrupt:
 * "continue"`, the default) the task follows the run that continues it to `completed`, and
 * `tasks/result` answers the tool result; on one that does not (`onInterrupt: "stop"`) the task is
 * `failed`, its status message saying the run was interrupted. Another key does not see either.
 */
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { CallToolResultSchema } from "@modelcontextprotocol/sdk/types.js";
import { afterEach, expect, it } from "vitest";
import { type MainProcess, startMain, stopAll } from "../../helpers/main-process.js";

const KEY = "mcp-restart-key-0123456789";
const OTHER = "mcp-restart-other-0123456789";
const dirs: string[] = [];
const clients: Client[] = [];
afterEach(async () => {
	for (const client of clients.splice(0)) await client.close().catch(() => undefined);
	stopAll();
	for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});

async function connect(server: MainProcess, key: string): Promise<Client> {
	const transport = new StreamableHTTPClientTransport(new URL(`${server.url}/mcp`), {
		requestInit: { headers: { authorization: `Bearer ${key}` } },
	});
	const client = new Client({ name: "restart", version: "1.0.0" });
	clients.push(client);
	await client.connect(transport);
	return client;
}

/** Starts a task-augmented call of `tool`; resolves with its task id once the task is created. */
async function startTask(client: Client, tool: string, message: string): Promise<string> {
	const stream = client.experimental.tasks.callToolStream(
		{ name: tool, arguments: { message } },
		CallToolResultSchema,
		{ task: { ttl: 600_000 } },
	);
	const first = await stream.next();
	const value = first.value as { type: string; task?: { taskId: string; status: string } };
	expect(value.type).toBe("taskCreated");
	expect(value.task!.status).toBe("working");
	// The task is the run, in the store; nothing of this stream is needed later.
	void stream.return(undefined).catch(() => undefined);
	return value.task!.taskId;
}

/** Polls until `check` holds (generous: the machine may be busy). */
async function until(check: () => Promise<boolean>, what: string, ms = 45_000): Promise<void> {
	const deadline = Date.now() + ms;
	while (!(await check())) {
		if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
		await new Promise((resolve) => setTimeout(resolve, 100));
	}
}

const textOf = (result: Record<string, unknown>) =>
	(result.content as { type: string; text: string }[]).map((c) => c.text).join("");

it("a task whose process was SIGKILLed mid-run: completed after the restart when its session continues, failed when it stops", {
	timeout: 180_000,
}, async () => {
	const dir = mkdtempSync(path.join(tmpdir(), "wh-mcp-task-restart-"));
	dirs.push(dir);
	const config = path.join(dir, "config.json");
	writeFileSync(
		config,
		JSON.stringify({
			apiKeys: [KEY, OTHER],
			profiles: {
				goes_on: { model: "faux/echo", systemPrompt: "Continues after a restart." },
				halts: { model: "faux/echo", systemPrompt: "Stops at a restart.", onInterrupt: "stop" },
			},
		}),
	);
	const db = path.join(dir, "wheelhouse.db");
	// Slow enough that both runs are still streaming when the process is killed.
	const env = { WHEELHOUSE_CONFIG: config, WHEELHOUSE_FAUX_DELAY_MS: "40" };
	const message = Array.from({ length: 400 }, (_, i) => `w${i}`).join(" ");

	const first = await startMain({ db, env });
	const before = await connect(first, KEY);
	expect((await before.listTools()).tools.map((t) => t.name)).toEqual(["agent_goes_on", "agent_halts"]);
	const continued = await startTask(before, "agent_goes_on", message);
	const stopped = await startTask(before, "agent_halts", message);
	// Both runs stream: each session has started its answer.
	await until(async () => {
		const res = await fetch(`${first.url}/v1/sessions`, { headers: { authorization: `Bearer ${KEY}` } });
		const sessions = ((await res.json()) as { sessions: { status: string }[] }).sessions;
		return sessions.length === 2 && sessions.every((s) => s.status === "running");
	}, "both runs to start");
	for (const taskId of [continued, stopped])
		expect((await before.experimental.tasks.getTask(taskId)).status).toBe("working");
	first.child.kill("SIGKILL");
	expect((await first.exited).signal).toBe("SIGKILL");

	const second = await startMain({ db, env: { ...env, WHEELHOUSE_FAUX_DELAY_MS: "0" } });
	const after = await connect(second, KEY);
	const stateOf = async (taskId: string) => after.experimental.tasks.getTask(taskId);

	await until(async () => (await stateOf(continued)).status === "completed", "the continued task to complete");
	const result = await after.experimental.tasks.getTaskResult(continued, CallToolResultSchema);
	expect(result.isError).not.toBe(true);
	expect(result.structuredContent).toMatchObject({ status: "completed", runId: continued });
	// The message that was streaming when the process died was not kept: the answer is the continuation's.
	expect(textOf(result)).toBe(message);

	const halted = await stateOf(stopped);
	expect(halted.status).toBe("failed");
	expect(halted.statusMessage).toMatch(/interrupted/i);
	// Terminal: it stays failed.
	await new Promise((resolve) => setTimeout(resolve, 500));
	expect((await stateOf(stopped)).status).toBe("failed");

	// After the restart too, another key does not see them.
	const other = await connect(second, OTHER);
	for (const taskId of [continued, stopped])
		await expect(other.experimental.tasks.getTask(taskId)).rejects.toThrow(/No task/);
});
