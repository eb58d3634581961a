/**
 * The OpenAI facade over a scripted model: server tools run inside the request and stay hidden,
 * and a provider failure reaches the SDK as an error.
 */
import OpenAI from "openai";
import { afterEach, describe, expect, it } from "vitest";
import { fauxToolCall, registerFauxProvider } from "../../../src/ai/providers/faux.js";
import { startServer, type TestServer } from "../../helpers/server.js";

const KEY = "test-key";
let server: TestServer;
const faux = registerFauxProvider({ api: "openai-facade-faux", provider: "scripted" });
const MODEL = `scripted/${faux.getModel().id}`;
afterEach(async () => {
	await server?.close();
});

async function start(): Promise<OpenAI> {
	server = await startServer({ config: { apiKeys: [KEY] }, models: [faux.getModel()] });
	return new OpenAI({ apiKey: KEY, baseURL: `${server.url}/openai/v1`, maxRetries: 0 });
}

describe("OpenAI facade over a scripted model", () => {
	it("runs server tools inside the request and answers with the final text only", async () => {
		const client = await start();
		faux.setResponses([
			{ content: fauxToolCall("calculate", { expression: "6 * 7" }) },
			(context) => {
				const result = context.messages.at(-1) as { role: string; content: { text: string }[] };
				return { content: `The answer is ${result.content[0]?.text}.` };
			},
		]);
		const completion = await client.chat.completions.create({
			model: MODEL,
			messages: [{ role: "user", content: "what is 6 * 7?" }],
		});
		expect(completion.choices[0]?.finish_reason).toBe("stop");
		expect(completion.choices[0]?.message.tool_calls).toBeUndefined();
		expect(completion.choices[0]?.message.content).toContain("42");
	});

	it("shows the server tools that ran when asked to (x-wheelhouse-server-tools: visible)", async () => {
		const client = await start();
		const script = () => [{ content: fauxToolCall("calculate", { expression: "6 * 7" }) }, { content: "Done." }];
		const headers = { "x-wheelhouse-server-tools": "visible" };
		faux.setResponses(script());
		const completion = await client.chat.completions.create(
			{ model: MODEL, messages: [{ role: "user", content: "what is 6 * 7?" }] },
			{ headers },
		);
		const message = completion.choices[0]?.message as unknown as { server_tool_calls: unknown[]; content: string };
		expect(message.server_tool_calls).toMatchObject([
			{ name: "calculate", arguments: JSON.stringify({ expression: "6 * 7" }), output: "42", is_error: false },
		]);
		expect(message.content).toBe("Done.");

		faux.setResponses(script());
		const stream = await client.chat.completions.create(
			{ model: MODEL, messages: [{ role: "user", content: "again" }], stream: true },
			{ headers },
		);
		const shown: unknown[] = [];
		for await (const chunk of stream) {
			const delta = chunk.choices[0]?.delta as { server_tool_calls?: unknown[] } | undefined;
			shown.push(...(delta?.server_tool_calls ?? []));
		}
		expect(shown).toMatchObject([{ name: "calculate", output: "42" }]);

		faux.setResponses(script());
		const response = await client.responses
			.stream({ model: MODEL, input: "and in Responses" }, { headers })
			.finalResponse();
		expect(response.output.map((item) => item.type)).toEqual(["mcp_call", "message"]);
		expect(response.output[0]).toMatchObject({ type: "mcp_call", name: "calculate", output: "42" });
		expect(response.output_text).toBe("Done.");

		// Hidden by default.
		faux.setResponses(script());
		const hidden = await client.responses.create({ model: MODEL, input: "hidden" });
		expect(hidden.output.map((item) => item.type)).toEqual(["message"]);
	});

	it("a provider error is MODEL_ERROR: a 502 for a completion, an error frame in a stream, response.failed", async () => {
		const client = await start();
		const failing = { content: "", stopReason: "error" as const, errorMessage: "upstream exploded" };
		faux.setResponses([failing, failing, failing]);
		const err = await client.chat.completions
			.create({ model: MODEL, messages: [{ role: "user", content: "hi" }] })
			.catch((e: unknown) => e);
		expect(err).toBeInstanceOf(OpenAI.InternalServerError);
		expect((err as Error).message).toContain("upstream exploded");

		const stream = await client.chat.completions.create({
			model: MODEL,
			messages: [{ role: "user", content: "hi" }],
			stream: true,
		});
		const streamed = await (async () => {
			for await (const _ of stream) {
				// drain
			}
		})().catch((e: unknown) => e);
		expect(streamed).toBeInstanceOf(OpenAI.APIError);
		expect((streamed as Error).message).toContain("upstream exploded");

		const events = await client.responses.create({ model: MODEL, input: "hi", stream: true });
		let failed: OpenAI.Responses.Response | undefined;
		for await (const event of events) if (event.type === "response.failed") failed = event.response;
		expect(failed?.status).toBe("failed");
		expect(failed?.error?.message).toContain("upstream exploded");
	});
});
