import OpenAI from "openai";
import { afterEach, describe, expect, it } from "vitest";
import { startServer, type TestServer } from "../../helpers/server.js";

const KEY = "test-key";
let server: TestServer;
afterEach(async () => {
	await server?.close();
});

async function start(config: Record<string, unknown> = {}): Promise<OpenAI> {
	server = await startServer({ config: { apiKeys: [KEY], fauxDelayMs: 1, ...config } });
	return new OpenAI({ apiKey: KEY, baseURL: `${server.url}/openai/v1`, maxRetries: 0 });
}

const pickColor = {
	type: "function" as const,
	function: {
		name: "pick_color",
		description: "Ask the user to pick a color",
		parameters: { type: "object", properties: { question: { type: "string" } }, required: ["question"] },
	},
};

describe("OpenAI Chat Completions with the openai SDK", () => {
	it("lists the models in OpenAI's list shape", async () => {
		const client = await start();
		const ids: string[] = [];
		for await (const model of client.models.list()) ids.push(model.id);
		expect(ids).toContain("faux/echo");
	});

	it("answers a completion, with the conversation's earlier turns as the session's transcript", async () => {
		const client = await start();
		const completion = await client.chat.completions.create({
			model: "faux/echo",
			messages: [
				{ role: "system", content: "be brief" },
				{ role: "user", content: "first" },
				{ role: "assistant", content: "first" },
				{ role: "user", content: "hello there" },
			],
		});
		expect(completion.object).toBe("chat.completion");
		expect(completion.choices[0]?.message).toMatchObject({ role: "assistant", content: "hello there" });
		expect(completion.choices[0]?.finish_reason).toBe("stop");
		expect(completion.usage?.completion_tokens).toBeGreaterThan(0);

		// The same request through the raw API names its session, whose transcript is the whole conversation.
		const raw = await client.chat.completions
			.create({ model: "faux/echo", messages: [{ role: "user", content: "hi" }] })
			.withResponse();
		const sessionId = raw.response.headers.get("x-wheelhouse-session-id");
		const transcript = await server.request("GET", `/v1/sessions/${sessionId}/messages`, { key: KEY });
		expect(transcript.body.messages.map((m: { role: string }) => m.role)).toEqual(["user", "assistant"]);
	});

	it("streams text deltas, the finish reason and the usage chunk", async () => {
		const client = await start();
		const stream = await client.chat.completions.create({
			model: "faux/echo",
			messages: [{ role: "user", content: "one two three four" }],
			stream: true,
			stream_options: { include_usage: true },
		});
		const deltas: string[] = [];
		let finish: string | null | undefined;
		let usage: OpenAI.CompletionUsage | null | undefined;
		for await (const chunk of stream) {
			const choice = chunk.choices[0];
			if (choice?.delta.content) deltas.push(choice.delta.content);
			if (choice?.finish_reason) finish = choice.finish_reason;
			if (chunk.usage) usage = chunk.usage;
		}
		expect(deltas.length).toBeGreaterThan(1);
		expect(deltas.join("")).toBe("one two three four");
		expect(finish).toBe("stop");
		expect(usage?.completion_tokens).toBeGreaterThan(0);
	});

	it("returns the client's tool calls with finish_reason tool_calls, then continues the run with the tool message", async () => {
		const client = await start();
		const messages: OpenAI.ChatCompletionMessageParam[] = [
			{ role: "user", content: '/tool pick_color {"question": "favourite?"}' },
		];
		const { data: first, response } = await client.chat.completions
			.create({ model: "faux/echo", messages, tools: [pickColor] })
			.withResponse();
		const sessionId = response.headers.get("x-wheelhouse-session-id");
		const choice = first.choices[0];
		expect(choice?.finish_reason).toBe("tool_calls");
		const call = choice?.message.tool_calls?.[0];
		expect(call?.type).toBe("function");
		if (call?.type !== "function") throw new Error("expected a function call");
		expect(call.function.name).toBe("pick_color");
		expect(JSON.parse(call.function.arguments)).toEqual({ question: "favourite?" });

		messages.push(choice!.message, { role: "tool", tool_call_id: call.id, content: "teal" });
		const { data: stream, response: second } = await client.chat.completions
			.create({ model: "faux/echo", messages, tools: [pickColor], stream: true })
			.withResponse();
		let text = "";
		for await (const chunk of stream) text += chunk.choices[0]?.delta.content ?? "";
		expect(text).toContain("teal");
		// The same run went on: the session's one run waited for the result and then answered.
		expect(second.headers.get("x-wheelhouse-session-id")).toBe(sessionId);
		const transcript = await server.request("GET", `/v1/sessions/${sessionId}/messages`, { key: KEY });
		expect(transcript.body.messages.map((m: { role: string }) => m.role)).toEqual([
			"user",
			"assistant",
			"toolResult",
			"assistant",
		]);
	});

	it("asks for the results of every call of the batch before the run goes on", async () => {
		const client = await start();
		const messages: OpenAI.ChatCompletionMessageParam[] = [
			{
				role: "user",
				content:
					'/tools [{"name": "pick_color", "arguments": {"question": "a"}}, {"name": "pick_color", "arguments": {"question": "b"}}]',
			},
		];
		const first = await client.chat.completions.create({ model: "faux/echo", messages, tools: [pickColor] });
		const calls = first.choices[0]?.message.tool_calls ?? [];
		expect(calls).toHaveLength(2);
		messages.push(first.choices[0]!.message, { role: "tool", tool_call_id: calls[0]!.id, content: "red" });
		const partial = await client.chat.completions
			.create({ model: "faux/echo", messages, tools: [pickColor] })
			.catch((err: unknown) => err);
		expect(partial).toBeInstanceOf(OpenAI.BadRequestError);
		expect((partial as Error).message).toContain(calls[1]!.id);

		messages.push({ role: "tool", tool_call_id: calls[1]!.id, content: "blue" });
		const done = await client.chat.completions.create({ model: "faux/echo", messages, tools: [pickColor] });
		expect(done.choices[0]?.message.content).toContain("red");
		expect(done.choices[0]?.message.content).toContain("blue");
	});

	it("continues from tool results in a new session when no run waits for them", async () => {
		const client = await start();
		const completion = await client.chat.completions.create({
			model: "faux/echo",
			tools: [pickColor],
			messages: [
				{ role: "user", content: "pick one" },
				{
					role: "assistant",
					content: null,
					tool_calls: [{ id: "call_1", type: "function", function: { name: "pick_color", arguments: "{}" } }],
				},
				{ role: "tool", tool_call_id: "call_1", content: "amber" },
			],
		});
		expect(completion.choices[0]?.message.content).toContain("amber");
	});

	it("surfaces errors as the SDK's error classes, in OpenAI's error shape", async () => {
		const client = await start();
		const badModel = await client.chat.completions
			.create({ model: "nope/none", messages: [{ role: "user", content: "hi" }] })
			.catch((err: unknown) => err);
		// As OpenAI answers an unknown model: 404 model_not_found, of type invalid_request_error.
		expect(badModel).toBeInstanceOf(OpenAI.NotFoundError);
		expect((badModel as InstanceType<typeof OpenAI.NotFoundError>).status).toBe(404);
		expect((badModel as InstanceType<typeof OpenAI.NotFoundError>).message).toContain("nope/none");
		expect((badModel as InstanceType<typeof OpenAI.NotFoundError>).type).toBe("invalid_request_error");
		expect((badModel as InstanceType<typeof OpenAI.NotFoundError>).code).toBe("model_not_found");

		const noKey = new OpenAI({ apiKey: "wrong", baseURL: `${server.url}/openai/v1`, maxRetries: 0 });
		await expect(noKey.models.list()).rejects.toBeInstanceOf(OpenAI.AuthenticationError);

		// The shape itself, for the errors the router, the auth hook and validation raise too.
		const unauthorized = await server.request("GET", "/openai/v1/models");
		expect(unauthorized).toMatchObject({
			status: 401,
			body: { error: { type: "authentication_error", param: null, code: "UNAUTHORIZED" } },
		});
		const invalid = await server.request("POST", "/openai/v1/chat/completions", {
			key: KEY,
			body: { model: "faux/echo" },
		});
		expect(invalid).toMatchObject({
			status: 400,
			body: { error: { type: "invalid_request_error", code: "VALIDATION_FAILED" } },
		});
		expect(invalid.body.error.message).toContain("messages");

		const badTurn = await client.chat.completions
			.create({ model: "faux/echo", messages: [{ role: "assistant", content: "hi" }] })
			.catch((err: unknown) => err);
		expect(badTurn).toBeInstanceOf(OpenAI.BadRequestError);
		expect((badTurn as Error).message).toContain("body.messages");
	});

	it("aborting the stream aborts the run", async () => {
		const client = await start({ fauxDelayMs: 20 });
		const controller = new AbortController();
		const words = Array.from({ length: 200 }, (_, i) => `w${i}`).join(" ");
		const { data: stream, response } = await client.chat.completions
			.create(
				{ model: "faux/echo", messages: [{ role: "user", content: words }], stream: true },
				{ signal: controller.signal },
			)
			.withResponse();
		const sessionId = response.headers.get("x-wheelhouse-session-id");
		for await (const chunk of stream) {
			if (chunk.choices[0]?.delta.content) break; // leaving the loop aborts the request
		}
		const session = server.app.wheelhouse.sessions.get(sessionId as string, null);
		await session.waitForIdle();
		const view = await server.request("GET", `/v1/sessions/${sessionId}/messages`, { key: KEY });
		const last = view.body.messages.at(-1);
		expect(last.stopReason).toBe("aborted");
	});
});
