/**
 * A session's client tools over the MCP facade, with the real MCP SDK client against a real
 * server: a client that declared elicitation is asked for the tool's result (accept gives the
 * result, stored in the transcript, and the call completes using it; decline gives the model an
 * error result and the run goes on), and one without the capability gets the call ended naming
 * the pending client tool, the session left waiting as `/v1` shows it.
 */
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { ElicitRequestSchema } from "@modelcontextprotocol/sdk/types.js";
import { afterEach, describe, expect, it } from "vitest";
import { startServer, type TestServer } from "../../helpers/server.js";

const KEY = "mcp-tools-key-0123456789";
let server: TestServer;
const clients: Client[] = [];
afterEach(async () => {
	for (const client of clients.splice(0)) await client.close().catch(() => undefined);
	await server?.close();
});

const pickColor = {
	name: "pick_color",
	description: "Ask the user to pick a color",
	parameters: { type: "object", properties: { question: { type: "string" } }, required: ["question"] },
};

interface Asked {
	message: string;
	requestedSchema: { properties: Record<string, unknown>; required?: string[] };
}

async function connect(
	elicit?: (params: Asked) => { action: "accept" | "decline" | "cancel"; content?: Record<string, string> },
): Promise<Client> {
	const transport = new StreamableHTTPClientTransport(new URL(`${server.url}/mcp`), {
		requestInit: { headers: { authorization: `Bearer ${KEY}` } },
	});
	const client = new Client({ name: "test", version: "1.0.0" }, elicit ? { capabilities: { elicitation: {} } } : {});
	if (elicit) client.setRequestHandler(ElicitRequestSchema, async (request) => elicit(request.params as Asked));
	clients.push(client);
	await client.connect(transport);
	return client;
}

/** A session (of the key) that declares the client tool `pick_color`. */
async function sessionWithClientTool(): Promise<string> {
	const res = await server.request("POST", "/v1/sessions", { key: KEY, body: { clientTools: [pickColor] } });
	expect(res.status).toBe(201);
	return res.body.id;
}

const textOf = (result: Record<string, unknown>) =>
	(result.content as { type: string; text: string }[]).map((c) => c.text).join("");

interface ToolResult {
	role: string;
	toolCallId: string;
	toolName: string;
	isError: boolean;
	content: { type: string; text?: string }[];
}

async function toolResults(sessionId: string): Promise<ToolResult[]> {
	const page = await server.request("GET", `/v1/sessions/${sessionId}/messages`, { key: KEY });
	expect(page.status).toBe(200);
	return (page.body.messages as ToolResult[]).filter((m) => m.role === "toolResult");
}

const CALL = '/tool pick_color {"question": "favourite?"}';

describe("a session's client tools over MCP", () => {
	it("a client that declares elicitation is asked for the result; accept gives it to the model", async () => {
		server = await startServer({ config: { apiKeys: [KEY] } });
		const sessionId = await sessionWithClientTool();
		const asked: Asked[] = [];
		const client = await connect((params) => {
			asked.push(params);
			return { action: "accept", content: { result: "teal" } };
		});
		const result = await client.callTool({ name: "agent", arguments: { message: CALL, sessionId } }, undefined, {
			timeout: 60_000,
		});
		expect(asked).toHaveLength(1);
		expect(asked[0]!.message).toContain("pick_color");
		expect(asked[0]!.message).toContain("favourite?");
		expect(asked[0]!.requestedSchema.required).toEqual(["result"]);
		expect(asked[0]!.requestedSchema.properties).toHaveProperty("result");
		expect(result.structuredContent).toMatchObject({ sessionId, status: "completed" });
		expect(textOf(result)).toBe("Tool results: pick_color: teal");
		const [stored] = await toolResults(sessionId);
		expect(stored).toMatchObject({ toolName: "pick_color", isError: false, content: [{ type: "text", text: "teal" }] });
	});

	it("decline gives the model an error result saying so, and the call completes", async () => {
		server = await startServer({ config: { apiKeys: [KEY] } });
		const sessionId = await sessionWithClientTool();
		const client = await connect(() => ({ action: "decline" }));
		const result = await client.callTool({ name: "agent", arguments: { message: CALL, sessionId } }, undefined, {
			timeout: 60_000,
		});
		expect(result.structuredContent).toMatchObject({ sessionId, status: "completed" });
		expect(textOf(result)).toContain("pick_color (error)");
		expect(textOf(result)).toContain("declined");
		const [stored] = await toolResults(sessionId);
		expect(stored).toMatchObject({ toolName: "pick_color", isError: true });
		expect(stored!.content[0]!.text).toContain("declined");
	});

	it("a client tool that needs approval is asked twice: the approval, then the result", async () => {
		server = await startServer({ config: { apiKeys: [KEY] } });
		const res = await server.request("POST", "/v1/sessions", {
			key: KEY,
			body: { clientTools: [{ ...pickColor, approval: "always" }] },
		});
		expect(res.status).toBe(201);
		const sessionId = res.body.id as string;
		const asked: Asked[] = [];
		const client = await connect((params) => {
			asked.push(params);
			return "result" in params.requestedSchema.properties
				? { action: "accept", content: { result: "ochre" } }
				: { action: "accept" };
		});
		const result = await client.callTool({ name: "agent", arguments: { message: CALL, sessionId } }, undefined, {
			timeout: 60_000,
		});
		expect(asked.map((a) => Object.keys(a.requestedSchema.properties))).toEqual([["reason"], ["result"]]);
		expect(result.structuredContent).toMatchObject({ status: "completed" });
		expect(textOf(result)).toBe("Tool results: pick_color: ochre");
	});

	it("without elicitation the call ends naming the pending client tool; the session waits for /v1", async () => {
		server = await startServer({ config: { apiKeys: [KEY] } });
		const sessionId = await sessionWithClientTool();
		const client = await connect();
		const result = await client.callTool({ name: "agent", arguments: { message: CALL, sessionId } }, undefined, {
			timeout: 60_000,
		});
		const structured = result.structuredContent as {
			status: string;
			pending: { kind: string; toolCallId: string; toolName: string; args: unknown }[];
		};
		expect(structured.status).toBe("input_required");
		expect(structured.pending).toMatchObject([
			{ kind: "client_tool", toolName: "pick_color", args: { question: "favourite?" } },
		]);
		const { toolCallId } = structured.pending[0]!;
		expect(textOf(result)).toContain(`/v1/sessions/${sessionId}/tool-results/${toolCallId}`);
		const state = await server.request("GET", `/v1/sessions/${sessionId}`, { key: KEY });
		expect(state.body.pendingClientToolCalls).toMatchObject([{ toolCallId, toolName: "pick_color" }]);
		const answered = await server.request("POST", `/v1/sessions/${sessionId}/tool-results/${toolCallId}`, {
			key: KEY,
			body: { content: "teal" },
		});
		expect(answered.status).toBe(200);
	});
});
