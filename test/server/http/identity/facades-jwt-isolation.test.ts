/**
 * The A2A and MCP facades keep JWT callers apart as `/v1` does (docs/identity.md, Ownership and
 * visibility; docs/a2a.md; docs/mcp-server.md): alice and bob are in org A, carol in org B, tokens
 * from a local identity provider. Carol cannot get, cancel or resubscribe to alice's A2A task, nor
 * see alice's MCP task, nor drive alice's sessions through either facade; bob (same tenant) cannot
 * reach alice's own session either, but drives the session she shares with the tenant
 * (`visibility: "tenant"`) through both facades. Real server, the A2A and MCP SDK clients.
 */
import { Client as McpClient } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { CallToolResultSchema } from "@modelcontextprotocol/sdk/types.js";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { a2aClient, collect, TaskState, userMessage } from "../../../helpers/a2a.js";
import {
	type IdentityProvider,
	jwtAuthConfig,
	startIdentityProvider,
	type UserName,
} from "../../../helpers/jwks-server.js";
import { startServer, type TestServer } from "../../../helpers/server.js";

let idp: IdentityProvider;
let server: TestServer;
const tokens = {} as Record<UserName, string>;
const mcpClients: McpClient[] = [];
/** Alice's sessions: her own, and one shared with org A. */
let own: string;
let shared: string;

const words = (n: number) => Array.from({ length: n }, (_, i) => `w${i}`).join(" ");

async function call(user: UserName, method: string, url: string, body?: unknown) {
	return server.request(method, url, { key: tokens[user], ...(body === undefined ? {} : { body }) });
}

/** Polls until `check` holds (generous: the machine may be busy). */
async function until(check: () => Promise<boolean>, what: string, ms = 20_000): Promise<void> {
	const deadline = Date.now() + ms;
	while (!(await check())) {
		if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
		await new Promise((resolve) => setTimeout(resolve, 50));
	}
}

const idle = (id: string) =>
	until(async () => (await call("alice", "GET", `/v1/sessions/${id}`)).body.status === "idle", `${id} idle`);

/** The user messages' texts of one of alice's sessions. */
async function userTexts(id: string): Promise<string[]> {
	const messages = (await call("alice", "GET", `/v1/sessions/${id}/messages`)).body.messages as {
		role: string;
		content: string | { type: string; text?: string }[];
	}[];
	return messages
		.filter((m) => m.role === "user")
		.map((m) => (typeof m.content === "string" ? m.content : m.content.map((c) => c.text ?? "").join("")));
}

async function mcp(user: UserName): Promise<McpClient> {
	const transport = new StreamableHTTPClientTransport(new URL(`${server.url}/mcp`), {
		requestInit: { headers: { authorization: `Bearer ${tokens[user]}` } },
	});
	const client = new McpClient({ name: `iso-${user}`, version: "1.0.0" });
	mcpClients.push(client);
	await client.connect(transport);
	return client;
}

const textOf = (result: Record<string, unknown>) =>
	(result.content as { type: string; text: string }[]).map((c) => c.text).join("");

beforeAll(async () => {
	idp = await startIdentityProvider();
	server = await startServer({ config: { fauxDelayMs: 20, authConfig: jwtAuthConfig(idp) } });
	for (const user of ["alice", "bob", "carol"] as const) tokens[user] = await idp.token(user);
	own = (await call("alice", "POST", "/v1/sessions", { model: "faux/echo" })).body.id;
	const made = await call("alice", "POST", "/v1/sessions", { model: "faux/echo", visibility: "tenant" });
	expect(made.status).toBe(201);
	shared = made.body.id;
});

afterAll(async () => {
	for (const client of mcpClients.splice(0)) await client.close().catch(() => undefined);
	await server?.close();
	await idp?.close();
});

describe("A2A with JWT callers", () => {
	it("carol and bob cannot get, cancel or resubscribe to alice's running task; it runs on to completed", {
		timeout: 120_000,
	}, async () => {
		const alice = await a2aClient(server.url, tokens.alice);
		// Long enough to outlast the probes below on a busy machine.
		const long = words(400);
		const task = (await alice.sendMessage({
			message: userMessage([long], { contextId: own }),
			configuration: { returnImmediately: true },
		} as never)) as { id: string; contextId: string };
		expect(task.contextId).toBe(own);
		expect((await alice.getTask({ id: task.id } as never)).status?.state).toBe(TaskState.TASK_STATE_WORKING);

		for (const user of ["carol", "bob"] as const) {
			const other = await a2aClient(server.url, tokens[user]);
			await expect(other.getTask({ id: task.id } as never), user).rejects.toMatchObject({ name: "TaskNotFoundError" });
			await expect(other.cancelTask({ id: task.id } as never), user).rejects.toMatchObject({
				name: "TaskNotFoundError",
			});
			await expect(collect(other.resubscribeTask({ id: task.id } as never)), user).rejects.toMatchObject({
				name: "TaskNotFoundError",
			});
			expect(
				(await other.listTasks({ contextId: own, status: TaskState.TASK_STATE_UNSPECIFIED } as never)).tasks,
				user,
			).toEqual([]);
		}
		// Still running, never cancelled: it completes with the whole answer.
		expect((await alice.getTask({ id: task.id } as never)).status?.state).toBe(TaskState.TASK_STATE_WORKING);
		await until(
			async () => (await alice.getTask({ id: task.id } as never)).status?.state === TaskState.TASK_STATE_COMPLETED,
			"alice's task to complete",
			60_000,
		);
		await idle(own);
		const messages = (await call("alice", "GET", `/v1/sessions/${own}/messages`)).body.messages;
		expect(messages.at(-1)).toMatchObject({ role: "assistant", stopReason: "stop" });
	});

	it("a context id naming alice's own session reaches it for neither carol nor bob; the shared one opens to bob only", {
		timeout: 120_000,
	}, async () => {
		for (const user of ["carol", "bob"] as const) {
			const other = await a2aClient(server.url, tokens[user]);
			await expect(
				other.sendMessage({ message: userMessage([`${user} was here`], { contextId: own }) } as never),
				user,
			).rejects.toThrow(`no session "${own}" exists`);
		}
		const carol = await a2aClient(server.url, tokens.carol);
		await expect(
			carol.sendMessage({ message: userMessage(["carol was here"], { contextId: shared }) } as never),
		).rejects.toThrow(`no session "${shared}" exists`);

		const bob = await a2aClient(server.url, tokens.bob);
		const bobs = (await bob.sendMessage({
			message: userMessage(["bob in the shared one"], { contextId: shared }),
		} as never)) as {
			contextId: string;
			status?: { state: number };
			metadata?: { wheelhouse?: { sessionId?: string } };
		};
		expect(bobs.contextId).toBe(shared);
		expect(bobs.metadata?.wheelhouse?.sessionId).toBe(shared);
		expect(bobs.status?.state).toBe(TaskState.TASK_STATE_COMPLETED);
		await idle(shared);

		expect((await userTexts(shared)).filter((t) => t.includes("was here") || t.includes("bob"))).toEqual([
			"bob in the shared one",
		]);
		expect((await userTexts(own)).some((t) => t.includes("was here"))).toBe(false);
		// Carol has no session of her own from it either.
		expect((await call("carol", "GET", "/v1/sessions")).body.sessions).toEqual([]);
	});
});

describe("MCP with JWT callers", () => {
	it("carol and bob do not see alice's task; only bob reaches the shared session by sessionId", {
		timeout: 120_000,
	}, async () => {
		const alice = await mcp("alice");
		const stream = alice.experimental.tasks.callToolStream(
			{ name: "agent", arguments: { message: words(100), sessionId: own } },
			CallToolResultSchema,
			{ task: { ttl: 60_000 } },
		);
		const created = await stream.next();
		const taskId = (created.value as { task: { taskId: string } }).task.taskId;
		await stream.return(undefined);

		const carol = await mcp("carol");
		const bob = await mcp("bob");
		for (const [user, client] of [
			["carol", carol],
			["bob", bob],
		] as const) {
			await expect(client.experimental.tasks.getTask(taskId), user).rejects.toThrow(/No task/);
			await expect(client.experimental.tasks.cancelTask(taskId), user).rejects.toThrow(/No task/);
			const onOwn = await client.callTool({ name: "agent", arguments: { message: `${user} mcp`, sessionId: own } });
			expect(onOwn.isError, user).toBe(true);
			expect(textOf(onOwn), user).toContain(`no session "${own}"`);
		}
		const carolOnShared = await carol.callTool({
			name: "agent",
			arguments: { message: "carol mcp", sessionId: shared },
		});
		expect(carolOnShared.isError).toBe(true);

		await until(
			async () => (await alice.experimental.tasks.getTask(taskId)).status === "completed",
			"alice's task",
			60_000,
		);
		await idle(shared);
		const bobOnShared = await bob.callTool({ name: "agent", arguments: { message: "bob mcp", sessionId: shared } });
		expect(bobOnShared.isError).not.toBe(true);
		expect(bobOnShared.structuredContent).toMatchObject({ status: "completed", sessionId: shared });
		expect(textOf(bobOnShared)).toBe("bob mcp");

		expect((await userTexts(shared)).filter((t) => t.endsWith(" mcp"))).toEqual(["bob mcp"]);
		expect((await userTexts(own)).some((t) => t.endsWith(" mcp"))).toBe(false);
		expect((await call("carol", "GET", "/v1/sessions")).body.sessions).toEqual([]);
	});
});
