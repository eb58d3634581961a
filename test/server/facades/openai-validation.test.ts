/**
 * The OpenAI facade refuses what `/v1` refuses, before any run starts, with a 400 naming the field
 * in OpenAI's error shape (not a 200 that fails later at a provider); an unknown model is what
 * OpenAI answers (404 `model_not_found`, which the openai SDK raises as `NotFoundError` and
 * LangChain marks `MODEL_NOT_FOUND`); unknown paths answer in OpenAI's shape; error messages quote
 * at most a few hundred characters of a bad value; a client tool's timeout is reported exactly.
 */
import { ChatOpenAI } from "@langchain/openai";
import OpenAI from "openai";
import { afterEach, describe, expect, it } from "vitest";
import { startServer, type TestServer } from "../../helpers/server.js";

const KEY = "test-key";
let server: TestServer;
afterEach(async () => {
	await server?.close();
});

async function start(config: Record<string, unknown> = {}): Promise<OpenAI> {
	server = await startServer({ config: { apiKeys: [KEY], ...config } });
	return new OpenAI({ apiKey: KEY, baseURL: `${server.url}/openai/v1`, maxRetries: 0 });
}

const chatTool = (fn: Record<string, unknown>) => ({ type: "function", function: { description: "d", ...fn } });

/** The 400 of a request, in OpenAI's shape, whose message names `field`. */
async function expect400(path: string, body: unknown, field: string): Promise<string> {
	const res = await server.request("POST", path, { key: KEY, body });
	expect(res.status).toBe(400);
	expect(res.body.error).toMatchObject({ type: "invalid_request_error", param: null, code: "VALIDATION_FAILED" });
	expect(res.body.error.message).toContain(field);
	return res.body.error.message;
}

describe("the OpenAI facade validates as /v1 does", () => {
	it("Chat Completions: bad function names, parameters and image data are 400s naming the field", async () => {
		const client = await start();
		const user = [{ role: "user", content: "hi" }];
		await expect400(
			"/openai/v1/chat/completions",
			{ model: "faux/echo", messages: user, tools: [chatTool({ name: "a b c" })] },
			"body.tools[0].function.name",
		);
		await expect400(
			"/openai/v1/chat/completions",
			{ model: "faux/echo", messages: user, tools: [chatTool({ name: "ok", parameters: "x" })] },
			"body.tools[0].function.parameters",
		);
		await expect400(
			"/openai/v1/chat/completions",
			{
				model: "faux/echo",
				messages: user,
				tools: [chatTool({ name: "ok", parameters: { type: "array" } })],
			},
			"body.tools[0].function.parameters",
		);
		await expect400(
			"/openai/v1/chat/completions",
			{ model: "faux/echo", messages: user, tools: [chatTool({ name: "ok" }), chatTool({ name: "ok" })] },
			"body.tools[1].function.name",
		);
		await expect400(
			"/openai/v1/chat/completions",
			{
				model: "faux/echo",
				messages: [{ role: "user", content: [{ type: "image_url", image_url: { url: "data:image/png;base64,!!!" } }] }],
			},
			"body.messages[0].content[0].image_url.url",
		);
		await expect400(
			"/openai/v1/chat/completions",
			{
				model: "faux/echo",
				messages: [
					{ role: "user", content: [{ type: "image_url", image_url: { url: "data:text/html;base64,AAAA" } }] },
				],
			},
			"body.messages[0].content[0].image_url.url",
		);
		// The SDK raises it as a BadRequestError; nothing was created.
		const err = await client.chat.completions
			.create({
				model: "faux/echo",
				messages: [{ role: "user", content: "hi" }],
				tools: [{ type: "function", function: { name: "a b c", parameters: {} } }],
			})
			.catch((e: unknown) => e);
		expect(err).toBeInstanceOf(OpenAI.BadRequestError);
		expect((await server.request("GET", "/v1/sessions", { key: KEY })).body.sessions).toEqual([]);

		// What is valid still works: a real image, and a tool without parameters.
		const ok = await client.chat.completions.create({
			model: "faux/echo",
			messages: [
				{
					role: "user",
					content: [
						{ type: "text", text: "look" },
						{ type: "image_url", image_url: { url: "data:image/png;base64,iVBORw0KGgo=" } },
					],
				},
			],
			tools: [{ type: "function", function: { name: "ok", parameters: {} } }],
		});
		expect(ok.choices[0]?.message.content).toBe("look");
	});

	it("Responses: the same checks, with the Responses field names", async () => {
		await start();
		const tool = (fn: Record<string, unknown>) => ({ type: "function", description: "d", ...fn });
		await expect400(
			"/openai/v1/responses",
			{ model: "faux/echo", input: "hi", tools: [tool({ name: "a b c" })] },
			"body.tools[0].name",
		);
		await expect400(
			"/openai/v1/responses",
			{ model: "faux/echo", input: "hi", tools: [tool({ name: "ok", parameters: "x" })] },
			"body.tools[0].parameters",
		);
		await expect400(
			"/openai/v1/responses",
			{
				model: "faux/echo",
				input: [{ role: "user", content: [{ type: "input_image", image_url: "data:image/png;base64,!!!" }] }],
			},
			"body.input[0].content[0].image_url",
		);
	});

	it("a tool call in the history names a function as a declaration must (a provider refuses anything else)", async () => {
		await start();
		await expect400(
			"/openai/v1/chat/completions",
			{
				model: "faux/echo",
				messages: [
					{ role: "user", content: "hi" },
					{
						role: "assistant",
						content: null,
						tool_calls: [{ id: "call_1", type: "function", function: { name: "*", arguments: "{}" } }],
					},
					{ role: "tool", tool_call_id: "call_1", content: "x" },
				],
			},
			"body.messages[1].tool_calls[0].function.name",
		);
		await expect400(
			"/openai/v1/responses",
			{
				model: "faux/echo",
				input: [
					{ role: "user", content: "hi" },
					{ type: "function_call", call_id: "call_1", name: "a b", arguments: "{}" },
					{ type: "function_call_output", call_id: "call_1", output: "x" },
				],
			},
			"body.input[1].name",
		);
	});

	it("quotes at most a few hundred characters of a bad value", async () => {
		await start();
		const huge = "x".repeat(1_000_000);
		for (const [path, body] of [
			[
				"/openai/v1/chat/completions",
				{ model: "faux/echo", messages: [{ role: "user", content: "hi" }], tools: [chatTool({ name: huge })] },
			],
			["/openai/v1/responses", { model: huge, input: "hi" }],
			["/openai/v1/chat/completions", { model: `x/${huge}`, messages: [{ role: "user", content: "hi" }] }],
			["/openai/v1/responses", { model: "faux/echo", input: [{ role: huge, content: "hi" }] }],
		] as const) {
			const res = await server.request("POST", path, { key: KEY, body });
			expect(res.status).toBeGreaterThanOrEqual(400);
			expect(res.status).toBeLessThan(500);
			expect(JSON.stringify(res.body).length).toBeLessThan(1_000);
			// The length given is the value's own (1,000,000, or 1,000,002 with the provider prefix), not its JSON quotes'.
			expect(res.body.error.message).toMatch(/100000[02] characters/);
		}
	});
});

describe("OpenAI's answers for what does not exist", () => {
	it("an unknown model is 404 model_not_found: the SDK's NotFoundError, LangChain's MODEL_NOT_FOUND", async () => {
		const client = await start();
		for (const model of ["nope", "nope/none"]) {
			const err = await client.chat.completions
				.create({ model, messages: [{ role: "user", content: "hi" }] })
				.catch((e: unknown) => e);
			expect(err).toBeInstanceOf(OpenAI.NotFoundError);
			expect(err).toMatchObject({ status: 404, type: "invalid_request_error", code: "model_not_found" });
			expect((err as Error).message).toContain(model);
		}
		const responses = await client.responses.create({ model: "nope", input: "hi" }).catch((e: unknown) => e);
		expect(responses).toMatchObject({ status: 404, code: "model_not_found" });

		for (const useResponsesApi of [false, true]) {
			const langchain = new ChatOpenAI({
				model: "nope/none",
				apiKey: KEY,
				configuration: { baseURL: `${server.url}/openai/v1` },
				useResponsesApi,
				maxRetries: 0,
			});
			const lcErr = await langchain.invoke("hi").catch((e: unknown) => e);
			expect((lcErr as { lc_error_code?: string }).lc_error_code).toBe("MODEL_NOT_FOUND");
		}

		// The native API keeps its own answer.
		const native = await server.request("POST", "/v1/sessions", { key: KEY, body: { model: "nope/none" } });
		expect([native.status, native.body.error.code]).toEqual([400, "UNKNOWN_MODEL"]);
	});

	it("unknown paths under /openai/v1 answer in OpenAI's error shape", async () => {
		const client = await start();
		const missing = await server.request("POST", "/openai/v1/embeddings", { key: KEY, body: { input: "x" } });
		expect(missing.status).toBe(404);
		expect(missing.body.error).toMatchObject({ type: "invalid_request_error", param: null, code: "NOT_FOUND" });
		expect(missing.body.error.message).toContain("/openai/v1/embeddings");
		await expect(client.get("/nothing/here")).rejects.toBeInstanceOf(OpenAI.NotFoundError);
		const wrongMethod = await server.request("DELETE", "/openai/v1/chat/completions", { key: KEY });
		expect(wrongMethod.status).toBe(405);
		expect(wrongMethod.headers.get("allow")).toBe("POST");
		expect(wrongMethod.body.error).toMatchObject({ type: "invalid_request_error", code: "METHOD_NOT_ALLOWED" });
	});
});

it("a client tool's timeout is reported exactly (1,500 ms is 1.5 s)", async () => {
	const client = await start({ tools: { clientToolTimeoutMs: 1_500 } });
	const first = await client.chat.completions.create({
		model: "faux/echo",
		messages: [{ role: "user", content: '/tool pick_color {"question":"q"}' }],
		tools: [{ type: "function", function: { name: "pick_color", parameters: { type: "object" } } }],
	});
	expect(first.choices[0]?.finish_reason).toBe("tool_calls");
	const sessionId = (await server.request("GET", "/v1/sessions", { key: KEY })).body.sessions[0].id;
	const session = await server.app.wheelhouse.sessions.load(sessionId, null);
	await session.waitForIdle();
	const transcript = await server.request("GET", `/v1/sessions/${sessionId}/messages`, { key: KEY });
	const result = transcript.body.messages.find((m: { role: string }) => m.role === "toolResult");
	expect(result.content[0].text).toBe("The client did not return a result for pick_color within 1.5 s");
});
