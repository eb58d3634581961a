/**
 * The MCP session id is a name, not a credential (docs/mcp-server.md, Cancellation and Tasks): key B
 * sending key A's `Mcp-Session-Id` reaches nothing of A's. B's `tools/call` on A's session is an
 * error result, A's task is unknown to B's `tasks/get`, `tasks/result` and `tasks/cancel`, and B's
 * `notifications/cancelled` for A's in-flight call leaves A's run alone — while the same
 * notification with A's key does abort it. Real server, the MCP SDK client.
 */
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { CallToolResultSchema } from "@modelcontextprotocol/sdk/types.js";
import { afterEach, expect, it } from "vitest";
import { startServer, type TestServer } from "../../helpers/server.js";

const A = "mcp-iso-key-a-0123456789";
const B = "mcp-iso-key-b-0123456789";
let server: TestServer;
const clients: Client[] = [];
afterEach(async () => {
	for (const client of clients.splice(0)) await client.close().catch(() => undefined);
	await server?.close();
});

/** A connected client for `key`; `sessionId` makes it send that MCP session id instead of getting its own. */
async function connect(
	key: string,
	options: { sessionId?: string; onRequest?: (message: { id?: unknown; method?: string }) => void } = {},
): Promise<{ client: Client; transport: StreamableHTTPClientTransport }> {
	const transport = new StreamableHTTPClientTransport(new URL(`${server.url}/mcp`), {
		requestInit: { headers: { authorization: `Bearer ${key}` } },
		...(options.sessionId ? { sessionId: options.sessionId } : {}),
		fetch: async (input, init) => {
			if (options.onRequest && typeof init?.body === "string") options.onRequest(JSON.parse(init.body));
			return fetch(input, init);
		},
	});
	const client = new Client({ name: "iso", version: "1.0.0" });
	clients.push(client);
	await client.connect(transport);
	return { client, transport };
}

const textOf = (result: Record<string, unknown>) =>
	(result.content as { type: string; text: string }[]).map((c) => c.text).join("");

const words = (n: number) => Array.from({ length: n }, (_, i) => `w${i}`).join(" ");

/** Sends `notifications/cancelled` for `requestId` under MCP session `mcpSession` with `key`. */
async function cancelNotification(key: string, mcpSession: string, protocol: string, requestId: unknown) {
	const res = await fetch(`${server.url}/mcp`, {
		method: "POST",
		headers: {
			authorization: `Bearer ${key}`,
			"content-type": "application/json",
			accept: "application/json, text/event-stream",
			"mcp-session-id": mcpSession,
			"mcp-protocol-version": protocol,
		},
		body: JSON.stringify({
			jsonrpc: "2.0",
			method: "notifications/cancelled",
			params: { requestId, reason: "probe" },
		}),
	});
	await res.text();
	return res.status;
}

/** Polls until `check` holds (generous: the machine may be busy). */
async function until(check: () => Promise<boolean>, what: string, ms = 20_000): Promise<void> {
	const deadline = Date.now() + ms;
	while (!(await check())) {
		if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
		await new Promise((resolve) => setTimeout(resolve, 50));
	}
}

it("another key sending A's Mcp-Session-Id cannot see or act on A's sessions, tasks or calls", {
	timeout: 150_000,
}, async () => {
	server = await startServer({ config: { apiKeys: [A, B], fauxDelayMs: 25 } });
	const calls: unknown[] = [];
	const alice = await connect(A, {
		onRequest: (message) => {
			if (message.method === "tools/call") calls.push(message.id);
		},
	});
	const mcpSession = alice.transport.sessionId;
	expect(mcpSession).toEqual(expect.any(String));
	const protocol = alice.transport.protocolVersion!;

	// A's session, and a task of A's still running.
	const first = await alice.client.callTool({ name: "agent", arguments: { message: "mine" } });
	const sessionId = (first.structuredContent as { sessionId: string }).sessionId;
	const long = words(120);
	// Long enough to outlast the probes below on a busy machine.
	const longer = words(400);
	const stream = alice.client.experimental.tasks.callToolStream(
		{ name: "agent", arguments: { message: longer } },
		CallToolResultSchema,
		{ task: { ttl: 60_000 } },
	);
	const created = await stream.next();
	const taskId = (created.value as { task: { taskId: string } }).task.taskId;

	// B, naming A's MCP session.
	const bob = await connect(B, { sessionId: mcpSession });
	expect(bob.transport.sessionId).toBe(mcpSession);
	const onA = await bob.client.callTool({ name: "agent", arguments: { message: "intrude", sessionId } });
	expect(onA.isError).toBe(true);
	expect(textOf(onA)).toContain(`no session "${sessionId}" exists for this key`);
	await expect(bob.client.experimental.tasks.getTask(taskId)).rejects.toThrow(/No task/);
	await expect(bob.client.experimental.tasks.cancelTask(taskId)).rejects.toThrow(/No task/);
	await expect(bob.client.experimental.tasks.getTaskResult(taskId, CallToolResultSchema)).rejects.toThrow(/No task/);

	// A's task goes on untouched and ends with its whole answer.
	expect((await alice.client.experimental.tasks.getTask(taskId)).status).toBe("working");
	await until(
		async () => (await alice.client.experimental.tasks.getTask(taskId)).status === "completed",
		"A's task to complete",
		60_000,
	);
	await stream.return(undefined);
	const taskResult = await alice.client.experimental.tasks.getTaskResult(taskId, CallToolResultSchema);
	expect(textOf(taskResult)).toBe(longer);

	// B's cancellation of A's in-flight plain call (same MCP session id, same request id) is ignored.
	const sent = calls.length;
	let progress = 0;
	const onprogress = () => {
		progress++;
	};
	const plain = alice.client.callTool({ name: "agent", arguments: { message: long } }, undefined, {
		timeout: 60_000,
		onprogress,
	});
	await until(async () => calls.length === sent + 1, "A's call to be sent");
	const requestId = calls[sent];
	// Streaming: the call's run is recorded (before its first delta can go out).
	await until(async () => progress >= 2, "A's call to stream");
	expect(await cancelNotification(B, mcpSession!, protocol, requestId)).toBe(202);
	const answered = await plain;
	expect(answered.structuredContent).toMatchObject({ status: "completed" });
	expect(textOf(answered)).toBe(long);

	// The same notification with A's key aborts A's next call: the probe above was a real cancellation.
	progress = 0;
	const aborted = alice.client.callTool({ name: "agent", arguments: { message: longer } }, undefined, {
		timeout: 60_000,
		onprogress,
	});
	await until(async () => calls.length === sent + 2, "A's next call to be sent");
	await until(async () => progress >= 2, "A's next call to stream");
	expect(await cancelNotification(A, mcpSession!, protocol, calls[sent + 1])).toBe(202);
	const cut = await aborted;
	expect(cut.structuredContent).toMatchObject({ status: "aborted" });
	expect(textOf(cut).length).toBeLessThan(longer.length);

	// Nothing of B's landed in A's sessions; B's own list has only the session its refused call did not make.
	const own = await server.request("GET", `/v1/sessions/${sessionId}/messages`, { key: A });
	expect(JSON.stringify(own.body.messages)).not.toContain("intrude");
	expect((await server.request("GET", `/v1/sessions/${sessionId}`, { key: B })).status).toBe(404);
	expect((await server.request("GET", "/v1/sessions", { key: B })).body.sessions).toEqual([]);
});
