/**
 * `POST /api/stream` refuses what every provider refuses — a tool or tool call name outside the
 * providers' alphabet, tool parameters that are no object schema, an image that is no image or no
 * base64, a temperature past 2 — as a 400 naming the field, before any model call, instead of the
 * provider's error inside the stream.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { postProxy, userMessage } from "../../helpers/pi-proxy.js";
import { startServer, type TestServer } from "../../helpers/server.js";
import { type StrictProvider, startStrictProvider } from "../../helpers/strict-provider.js";

const KEY = "pi-proxy-validation-key";
let server: TestServer;
let provider: StrictProvider;

beforeAll(async () => {
	provider = await startStrictProvider();
	server = await startServer({
		env: { STRICT_API_KEY: "strict-key" },
		config: {
			apiKeys: [KEY],
			models: [{ provider: "strict", id: "m", baseUrl: provider.baseUrl, apiKeyEnv: "STRICT_API_KEY" }],
		},
	});
});
afterAll(async () => {
	await server.close();
	await provider.close();
});

const model = { provider: "strict", id: "m" };
const tool = { name: "lookup", description: "x", parameters: { type: "object", properties: {} } };
const call = { type: "toolCall", id: "c1", name: "lookup", arguments: {} };
const usage = {
	input: 0,
	output: 0,
	cacheRead: 0,
	cacheWrite: 0,
	totalTokens: 0,
	cost: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0, total: 0 },
};
const assistant = (block: object) => ({
	role: "assistant",
	content: [block],
	api: "openai-completions",
	provider: "strict",
	model: "m",
	usage,
	stopReason: "toolUse",
	timestamp: 1,
});
const image = (data: string, mimeType: string) => ({
	role: "user",
	content: [
		{ type: "text", text: "see" },
		{ type: "image", data, mimeType },
	],
	timestamp: 1,
});

async function refused(body: object, field: string): Promise<void> {
	const res = await postProxy(server.url, { model, ...body }, KEY);
	expect(res.status, res.text).toBe(400);
	const error = JSON.parse(res.text);
	expect(error.code).toBe("VALIDATION_FAILED");
	expect(error.error.startsWith(field), error.error).toBe(true);
}

describe("POST /api/stream: what a provider would refuse", () => {
	it("is refused with the field named; the provider never sees it", async () => {
		const hi = [userMessage("hi")];
		await refused(
			{ context: { messages: hi, tools: [{ ...tool, name: "look up" }] } },
			"body.context.tools[0].name must match",
		);
		await refused(
			{ context: { messages: hi, tools: [{ ...tool, parameters: { type: "string" } }] } },
			"body.context.tools[0].parameters",
		);
		await refused(
			{ context: { messages: hi, tools: [{ ...tool, parameters: {} }] } },
			"body.context.tools[0].parameters",
		);
		await refused(
			{ context: { messages: [userMessage("hi"), assistant({ ...call, name: "a b" })] } },
			"body.context.messages[1].content[0].name must match",
		);
		await refused({ context: { messages: [image("!!!", "image/png")] } }, "body.context.messages[0].content[1].data");
		await refused(
			{ context: { messages: [image("iVBORw0KGgo=", "text/html")] } },
			"body.context.messages[0].content[1].mimeType",
		);
		await refused({ context: { messages: hi }, options: { temperature: 3 } }, "body.options.temperature");
		expect(provider.refusals).toEqual([]);

		const fine = await postProxy(
			server.url,
			{ model, context: { messages: [image("iVBORw0KGgo=", "image/png")], tools: [tool] } },
			KEY,
		);
		expect(fine.events.at(-1)).toMatchObject({ type: "done" });
	});
});
