/**
 * `POST /agui/v1/run` refuses what a provider would refuse later (as a 502 mid-stream) with a 400
 * `VALIDATION_FAILED` before anything runs, naming the field as `/v1` does: tool names outside the
 * providers' alphabet, duplicate or server-shadowing tools, parameters that are no object schema,
 * images that are no image or no base64.
 */
import { HttpAgent } from "@ag-ui/client";
import { afterEach, beforeAll, describe, expect, it, vi } from "vitest";
import { startServer, type TestServer } from "../../helpers/server.js";

const KEY = "agui-validation-key";
let server: TestServer;
let thread = 0;

beforeAll(async () => {
	server = await startServer({ config: { apiKeys: [KEY] } });
	return () => server.close();
});
afterEach(() => {
	thread++;
});

const PIXEL = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg==";

async function run(body: Record<string, unknown>) {
	return server.request("POST", "/agui/v1/run", {
		key: KEY,
		body: {
			threadId: `validation-${thread}`,
			runId: "r1",
			messages: [{ id: "u1", role: "user", content: "hi" }],
			...body,
		},
	});
}

function refused(res: { status: number; body: any }, field: string): void {
	expect(res.status, JSON.stringify(res.body)).toBe(400);
	expect(res.body.error.code).toBe("VALIDATION_FAILED");
	expect(res.body.error.message.startsWith(field), res.body.error.message).toBe(true);
}

describe("AG-UI input a provider would refuse", () => {
	it("a tool name with spaces or past 64 characters", async () => {
		refused(await run({ tools: [{ name: "a b c", description: "x" }] }), "body.tools.0.name must match pattern");
		refused(await run({ tools: [{ name: "x".repeat(65), description: "x" }] }), "body.tools.0.name must match pattern");
	});

	it("the same name twice, a server tool's name, parameters that are no object schema", async () => {
		const pick = { name: "pick", description: "x" };
		refused(await run({ tools: [pick, pick] }), 'body.tools[1].name: duplicate tool name "pick"');
		refused(
			await run({ tools: [{ name: "calculate", description: "x" }] }),
			'body.tools[0].name: "calculate" is already a server tool',
		);
		refused(
			await run({ tools: [{ ...pick, parameters: "x" }] }),
			"body.tools[0].parameters: must be a JSON Schema object",
		);
		refused(await run({ tools: [{ ...pick, parameters: { type: "string" } }] }), "body.tools[0].parameters:");
	});

	it("a tool call in the conversation whose name has spaces", async () => {
		const messages = [
			{ id: "u0", role: "user", content: "hi" },
			{
				id: "a0",
				role: "assistant",
				toolCalls: [{ id: "c1", type: "function", function: { name: "a b", arguments: "{}" } }],
			},
			{ id: "t0", role: "tool", toolCallId: "c1", content: "ok" },
			{ id: "u1", role: "user", content: "go on" },
		];
		refused(await run({ messages }), "body.messages[1].toolCalls[0].function.name: must match pattern");
	});

	it("an image that is not base64, or not an image", async () => {
		const image = (source: Record<string, unknown>) => [
			{
				id: "u1",
				role: "user",
				content: [
					{ type: "text", text: "see" },
					{ type: "image", source },
				],
			},
		];
		refused(
			await run({ messages: image({ type: "url", value: "data:image/png;base64,!!!" }) }),
			"body.messages[0].content[1].source.value: must be base64 data",
		);
		refused(
			await run({ messages: image({ type: "data", value: "!!!", mimeType: "image/png" }) }),
			"body.messages[0].content[1].source.value: must be base64 data",
		);
		refused(
			await run({ messages: image({ type: "data", value: PIXEL, mimeType: "text/html" }) }),
			"body.messages[0].content[1].source.mimeType:",
		);
		const fine = await run({ messages: image({ type: "data", value: PIXEL, mimeType: "image/png" }) });
		expect(fine.status).toBe(200);
	});

	it("HttpAgent rejects runAgent with the 400 and the envelope", async () => {
		// The client logs the failure it rejects with.
		const logged = vi.spyOn(console, "error").mockImplementation(() => {});
		const agent = new HttpAgent({ url: `${server.url}/agui/v1/run`, headers: { authorization: `Bearer ${KEY}` } });
		agent.addMessage({ id: "u1", role: "user", content: "hi" });
		await expect(
			agent.runAgent({ tools: [{ name: "pick a color", description: "x", parameters: {} }] }),
		).rejects.toMatchObject({
			status: 400,
			payload: { error: { code: "VALIDATION_FAILED", message: expect.stringContaining("body.tools.0.name") } },
		});
		logged.mockRestore();
	});
});
