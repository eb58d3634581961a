import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { CallToolResultSchema, ElicitRequestSchema } from "@modelcontextprotocol/sdk/types.js";
import { afterEach, describe, expect, it } from "vitest";
import { startServer, type TestServer } from "../../helpers/server.js";

const KEY = "mcp-key-0123456789";
const OTHER = "mcp-other-0123456789";
let server: TestServer;
const clients: Client[] = [];
afterEach(async () => {
	for (const client of clients.splice(0)) await client.close().catch(() => undefined);
	await server?.close();
});

async function start(config: Record<string, unknown> = {}): Promise<void> {
	server = await startServer({ config: { apiKeys: [KEY, OTHER], ...config } });
}

async function connect(
	key: string | undefined,
	elicit?: (params: { message: string }) => {
		action: "accept" | "decline" | "cancel";
		content?: Record<string, string>;
	},
): Promise<Client> {
	const transport = new StreamableHTTPClientTransport(new URL(`${server.url}/mcp`), {
		requestInit: { headers: key ? { authorization: `Bearer ${key}` } : {} },
	});
	const client = new Client({ name: "test", version: "1.0.0" }, elicit ? { capabilities: { elicitation: {} } } : {});
	if (elicit)
		client.setRequestHandler(ElicitRequestSchema, async (request) => elicit(request.params as { message: string }));
	clients.push(client);
	await client.connect(transport);
	return client;
}

const textOf = (result: Record<string, unknown>) =>
	(result.content as { type: string; text: string }[]).map((c) => c.text).join("");

describe("Wheelhouse agents as an MCP server, with the MCP SDK client", () => {
	it("lists one tool per profile; refuses a client without a key", async () => {
		await start({
			profiles: {
				helper: { model: "faux/echo", systemPrompt: "Answers questions." },
				"the+writer": { model: "faux/echo" },
			},
		});
		await expect(connect(undefined)).rejects.toThrow();
		const client = await connect(KEY);
		const { tools } = await client.listTools();
		expect(tools.map((tool) => tool.name)).toEqual(["agent_helper", "agent_the_writer"]);
		expect(tools[0]!.description).toContain("Answers questions.");
		expect(tools[0]!.inputSchema).toMatchObject({ required: ["message"] });
	});

	it("a call answers with text, progress and structured content; sessionId continues the conversation", async () => {
		// Words further apart than the progress notifications' least interval: one notification each.
		await start({ fauxDelayMs: 80 });
		const client = await connect(KEY);
		expect((await client.listTools()).tools.map((t) => t.name)).toEqual(["agent"]);
		const progress: { progress: number; message?: string }[] = [];
		const result = await client.callTool({ name: "agent", arguments: { message: "one two three four" } }, undefined, {
			onprogress: (p) => progress.push(p),
		});
		expect(textOf(result)).toBe("one two three four");
		const structured = result.structuredContent as { sessionId: string; runId: string; status: string; usage: object };
		expect(structured).toMatchObject({ status: "completed", sessionId: expect.stringMatching(/^ses_/) });
		expect(structured.runId).toEqual(expect.any(String));
		expect(progress.length).toBeGreaterThan(1);
		expect(progress.map((p) => p.message).join("")).toBe("one two three four");

		const again = await client.callTool({
			name: "agent",
			arguments: { message: "five", sessionId: structured.sessionId },
		});
		expect((again.structuredContent as { sessionId: string }).sessionId).toBe(structured.sessionId);
		const transcript = await server.request("GET", `/v1/sessions/${structured.sessionId}/messages`, { key: KEY });
		expect(transcript.body.messages.filter((m: { role: string }) => m.role === "user")).toHaveLength(2);

		// Another key's session is not found.
		const other = await connect(OTHER);
		const refused = await other.callTool({
			name: "agent",
			arguments: { message: "x", sessionId: structured.sessionId },
		});
		expect(refused.isError).toBe(true);
	});

	it("cancelling the call aborts the run", async () => {
		await start({ fauxDelayMs: 40 });
		const client = await connect(KEY);
		const words = Array.from({ length: 200 }, (_, i) => `w${i}`).join(" ");
		const controller = new AbortController();
		let sessionId: string | undefined;
		const call = client.callTool({ name: "agent", arguments: { message: words } }, undefined, {
			signal: controller.signal,
			onprogress: () => controller.abort(),
		});
		await expect(call).rejects.toThrow();
		// The run is aborted on the server: the session's last message says so.
		const deadline = Date.now() + 10_000;
		let last: { role?: string; stopReason?: string } | undefined;
		while (Date.now() < deadline) {
			const sessions = (await server.request("GET", "/v1/sessions", { key: KEY })).body.sessions;
			sessionId = sessions[0]?.id;
			if (sessionId) {
				const state = (await server.request("GET", `/v1/sessions/${sessionId}`, { key: KEY })).body;
				const messages = (await server.request("GET", `/v1/sessions/${sessionId}/messages`, { key: KEY })).body
					.messages;
				last = messages.at(-1);
				if (state.status === "idle" && last?.role === "assistant") break;
			}
			await new Promise((resolve) => setTimeout(resolve, 50));
		}
		expect(last).toMatchObject({ role: "assistant", stopReason: "aborted" });
		expect((last as { content: { text: string }[] }).content[0]!.text.length).toBeLessThan(words.length);
	});

	it("an approval ends the call with the pending call named; the session waits for /v1", async () => {
		await start({ tools: { approval: { calculate: "always" } } });
		const client = await connect(KEY);
		const result = await client.callTool({
			name: "agent",
			arguments: { message: '/tool calculate {"expression": "6 * 7"}' },
		});
		const structured = result.structuredContent as {
			sessionId: string;
			status: string;
			pending: { toolCallId: string; toolName: string }[];
		};
		expect(structured.status).toBe("input_required");
		expect(structured.pending[0]).toMatchObject({ kind: "approval", toolName: "calculate" });
		const { toolCallId } = structured.pending[0]!;
		expect(textOf(result)).toContain(`/v1/sessions/${structured.sessionId}/approvals/${toolCallId}`);
		const approved = await server.request("POST", `/v1/sessions/${structured.sessionId}/approvals/${toolCallId}`, {
			key: KEY,
			body: { approve: true },
		});
		expect(approved.status).toBe(200);
	});

	it("a client that declares elicitation is asked: accept approves, decline denies, and the call completes", async () => {
		await start({ tools: { approval: { calculate: "always" } } });
		const asked: string[] = [];
		const approving = await connect(KEY, (params) => {
			asked.push(params.message);
			return { action: "accept" };
		});
		const approved = await approving.callTool({
			name: "agent",
			arguments: { message: '/tool calculate {"expression": "6 * 7"}' },
		});
		expect(asked).toHaveLength(1);
		expect(asked[0]).toContain("calculate");
		expect(approved.structuredContent).toMatchObject({ status: "completed" });
		expect(textOf(approved)).toContain("42");

		const declining = await connect(KEY, () => ({ action: "decline" }));
		const denied = await declining.callTool({
			name: "agent",
			arguments: { message: '/tool calculate {"expression": "1 + 1"}' },
		});
		expect(denied.structuredContent).toMatchObject({ status: "completed" });
		expect(textOf(denied)).toContain("declined");
	});

	it("a task-augmented call returns a task at once; polled to completed, its result is the run's answer; cancel aborts", async () => {
		await start({ fauxDelayMs: 20 });
		const client = await connect(KEY);
		const seen: { type: string; status?: string }[] = [];
		let result: Record<string, unknown> | undefined;
		for await (const message of client.experimental.tasks.callToolStream(
			{ name: "agent", arguments: { message: "a b c d e f" } },
			CallToolResultSchema,
			{ task: { ttl: 60_000 } },
		)) {
			if (message.type === "taskCreated" || message.type === "taskStatus")
				seen.push({ type: message.type, status: message.task.status });
			if (message.type === "result") result = message.result as Record<string, unknown>;
			if (message.type === "error") throw message.error;
		}
		expect(seen[0]).toEqual({ type: "taskCreated", status: "working" });
		expect(seen.at(-1)).toEqual({ type: "taskStatus", status: "completed" });
		expect(textOf(result!)).toBe("a b c d e f");
		expect(result!.structuredContent).toMatchObject({ status: "completed" });

		// A long one, canceled: the run is aborted.
		const words = Array.from({ length: 300 }, (_, i) => `w${i}`).join(" ");
		const stream = client.experimental.tasks.callToolStream(
			{ name: "agent", arguments: { message: words } },
			CallToolResultSchema,
			{ task: { ttl: 60_000 } },
		);
		const first = await stream.next();
		const taskId = (first.value as { task: { taskId: string } }).task.taskId;
		const canceled = await client.experimental.tasks.cancelTask(taskId);
		expect(canceled.status).toBe("cancelled");
		expect((await client.experimental.tasks.getTask(taskId)).status).toBe("cancelled");
		await stream.return(undefined);
		// Another key does not see it.
		const other = await connect(OTHER);
		await expect(other.experimental.tasks.getTask(taskId)).rejects.toThrow(/No task/);
	});
});
