import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { closeHttpPools } from "../../../src/ai/http.js";
import { streamSimple } from "../../../src/ai/stream.js";
import type { Context } from "../../../src/ai/types.js";
import { type ReplayServer, startReplayServer } from "../../helpers/replay-server.js";
import { checkProtocol, drain, testModel } from "./openai-protocol.js";

/** Failures of the OpenAI wire APIs end in an `error` event (never a throw), and wire variants parse. */
let server: ReplayServer;
beforeAll(async () => {
	server = await startReplayServer();
});
afterAll(async () => {
	await server.close();
	await closeHttpPools();
});
afterEach(() => server.reset());

const context: Context = { messages: [{ role: "user", content: "hi", timestamp: 0 }] };
const fast = { apiKey: "sk-test", retryBaseDelayMs: 1 } as const;
const chunk = (delta: unknown, finish: string | null = null, extra: object = {}) =>
	`data: ${JSON.stringify({ id: "chatcmpl-x", model: "m", choices: [{ index: 0, delta, finish_reason: finish }], ...extra })}\n\n`;
const completions = () => testModel("openai-completions", `${server.url}/v1`);
const responses = () => testModel("openai-responses", `${server.url}/v1`, { reasoning: true });
const event = (type: string, payload: object) => `event: ${type}\ndata: ${JSON.stringify({ type, ...payload })}\n\n`;

describe("openai-completions failures and variants", () => {
	it("HTTP 401: the provider's message, no retry", async () => {
		server.enqueue({
			status: 401,
			body: JSON.stringify({
				error: {
					message: "Incorrect API key provided: sk-test.",
					type: "invalid_request_error",
					code: "invalid_api_key",
				},
			}),
		});
		const { message, events } = await drain(streamSimple(completions(), context, fast));
		expect(events.map((e) => e.type)).toEqual(["error"]);
		expect(message.errorMessage).toBe("HTTP 401: Incorrect API key provided: sk-test.");
		expect(server.requests).toHaveLength(1);
	});

	it("HTTP 429 with retry-after-ms, then success", async () => {
		server.enqueue(
			{
				status: 429,
				headers: { "retry-after-ms": "20" },
				body: JSON.stringify({ error: { message: "Rate limit reached", type: "requests" } }),
			},
			{ body: `${chunk({ content: "ok" }, "stop")}data: [DONE]\n\n` },
		);
		const { message } = await drain(streamSimple(completions(), context, fast));
		expect(message.stopReason).toBe("stop");
		expect(message.content).toEqual([{ type: "text", text: "ok" }]);
		expect(server.requests).toHaveLength(2);
	});

	it("a mid-stream {error} chunk after output: error, content kept, no retry", async () => {
		server.enqueue({
			body: `${chunk({ content: "Hel" })}data: ${JSON.stringify({ error: { message: "Provider returned error", code: 502 } })}\n\n`,
		});
		const { message, events } = await drain(streamSimple(completions(), context, fast));
		expect(message.stopReason).toBe("error");
		expect(message.errorMessage).toBe("Provider returned error");
		expect(message.content).toEqual([{ type: "text", text: "Hel" }]);
		expect(server.requests).toHaveLength(1);
		checkProtocol(events, message);
	});

	it("a mid-stream {error} chunk before output is retried", async () => {
		server.enqueue(
			{ body: `data: ${JSON.stringify({ error: { message: "Overloaded", code: 503 } })}\n\n` },
			{ body: `${chunk({ content: "fine" }, "stop")}data: [DONE]\n\n` },
		);
		const { message } = await drain(streamSimple(completions(), context, fast));
		expect(message.content).toEqual([{ type: "text", text: "fine" }]);
		expect(server.requests).toHaveLength(2);
	});

	it("finish_reason content_filter is an error; an unknown finish_reason is a stop", async () => {
		server.enqueue({ body: `${chunk({ content: "x" }, "content_filter")}data: [DONE]\n\n` });
		const filtered = await drain(streamSimple(completions(), context, fast));
		expect(filtered.message.stopReason).toBe("error");
		expect(filtered.message.errorMessage).toMatch(/content_filter/);
		server.enqueue({ body: `${chunk({ content: "y" }, "eos_token_weird")}data: [DONE]\n\n` });
		const unknown = await drain(streamSimple(completions(), context, fast));
		expect(unknown.message.stopReason).toBe("stop");
	});

	it("reasoning fields (reasoning_content / reasoning) become thinking, then text; a tool call without finish_reason still ends toolUse", async () => {
		server.enqueue({
			body: [
				chunk({ role: "assistant", reasoning_content: "Let me " }),
				chunk({ reasoning_content: "think." }),
				chunk({ content: "Answer" }),
				chunk({
					tool_calls: [{ index: 0, id: "call_a", type: "function", function: { name: "f", arguments: '{"a":' } }],
				}),
				chunk({ tool_calls: [{ index: 0, function: { arguments: "1}" } }] }),
				// a server that reuses index 0 for the next call, with a new id
				chunk({ tool_calls: [{ index: 0, id: "call_b", type: "function", function: { name: "g", arguments: "{}" } }] }),
				chunk({}, null, {
					usage: { prompt_tokens: 10, completion_tokens: 5, prompt_tokens_details: { cached_tokens: 4 } },
				}),
				"data: [DONE]\n\n",
			].join(""),
		});
		const { message, events } = await drain(streamSimple(completions(), context, fast));
		expect(message.content).toEqual([
			{ type: "thinking", thinking: "Let me think.", thinkingSignature: "reasoning_content" },
			{ type: "text", text: "Answer" },
			{ type: "toolCall", id: "call_a", name: "f", arguments: { a: 1 } },
			{ type: "toolCall", id: "call_b", name: "g", arguments: {} },
		]);
		expect(message.stopReason).toBe("toolUse");
		expect(message.usage).toMatchObject({ input: 6, cacheRead: 4, output: 5, totalTokens: 15 });
		checkProtocol(events, message);

		server.enqueue({ body: `${chunk({ reasoning: "hmm" })}${chunk({ content: "ok" }, "stop")}` });
		const ollama = await drain(streamSimple(completions(), context, fast));
		expect(ollama.message.content).toEqual([
			{ type: "thinking", thinking: "hmm", thinkingSignature: "reasoning" },
			{ type: "text", text: "ok" },
		]);
	});

	it("abort mid-stream → aborted", async () => {
		const controller = new AbortController();
		const first = chunk({ content: "partial" });
		server.enqueue({
			body: `${first}${chunk({ content: "rest" }, "stop")}`,
			stallAfterBytes: Buffer.byteLength(first),
		});
		const stream = streamSimple(completions(), context, { ...fast, signal: controller.signal });
		const types: string[] = [];
		for await (const e of stream) {
			types.push(e.type);
			if (e.type === "text_delta") controller.abort();
		}
		const message = await stream.result();
		expect(message.stopReason).toBe("aborted");
		expect(message.content).toEqual([{ type: "text", text: "partial" }]);
		expect(types.at(-1)).toBe("error");
	});

	it("a missing key for api.openai.com names the variable, without a request", async () => {
		const saved = process.env.OPENAI_API_KEY;
		delete process.env.OPENAI_API_KEY;
		try {
			const model = testModel("openai-completions", "https://api.openai.com/v1");
			const { message } = await drain(streamSimple(model, context, {}));
			expect(message.stopReason).toBe("error");
			expect(message.errorMessage).toBe('No API key for provider "openai": set OPENAI_API_KEY or pass options.apiKey');
		} finally {
			if (saved !== undefined) process.env.OPENAI_API_KEY = saved;
		}
	});

	it("the key comes from OPENAI_API_KEY when options have none, and is never in an error", async () => {
		const saved = process.env.OPENAI_API_KEY;
		process.env.OPENAI_API_KEY = "sk-from-env-123";
		try {
			server.enqueue({ status: 400, body: JSON.stringify({ error: { message: "bad" } }) });
			const { message } = await drain(streamSimple(completions(), context, { retryBaseDelayMs: 1 } as any));
			expect(server.requests[0]!.headers.authorization).toBe("Bearer sk-from-env-123");
			expect(JSON.stringify(message)).not.toContain("sk-from-env-123");
		} finally {
			if (saved === undefined) delete process.env.OPENAI_API_KEY;
			else process.env.OPENAI_API_KEY = saved;
		}
	});
});

describe("openai-responses failures and variants", () => {
	it("response.incomplete (max_output_tokens) → length", async () => {
		server.enqueue({
			body: [
				event("response.created", { response: { id: "resp_9" } }),
				event("response.output_item.added", { output_index: 0, item: { id: "msg_1", type: "message" } }),
				event("response.output_text.delta", { output_index: 0, delta: "cut" }),
				event("response.output_item.done", {
					output_index: 0,
					item: { id: "msg_1", type: "message", content: [{ type: "output_text", text: "cut" }] },
				}),
				event("response.incomplete", {
					response: {
						id: "resp_9",
						status: "incomplete",
						incomplete_details: { reason: "max_output_tokens" },
						usage: { input_tokens: 5, output_tokens: 1 },
					},
				}),
			].join(""),
		});
		const { message, events } = await drain(streamSimple(responses(), context, fast));
		expect(message.stopReason).toBe("length");
		expect(message.content).toEqual([{ type: "text", text: "cut", textSignature: '{"v":1,"id":"msg_1"}' }]);
		checkProtocol(events, message);
	});

	it("response.failed with a server error before output is retried", async () => {
		server.enqueue(
			{
				body: [
					event("response.created", { response: { id: "resp_1" } }),
					event("response.failed", {
						response: {
							id: "resp_1",
							status: "failed",
							error: { code: "server_error", message: "The server had an error" },
						},
					}),
				].join(""),
			},
			{
				body: [
					event("response.output_item.added", { output_index: 0, item: { id: "msg_2", type: "message" } }),
					event("response.output_text.delta", { output_index: 0, delta: "ok" }),
					event("response.output_item.done", { output_index: 0, item: { id: "msg_2", type: "message" } }),
					event("response.completed", { response: { id: "resp_2", status: "completed" } }),
				].join(""),
			},
		);
		const { message } = await drain(streamSimple(responses(), context, fast));
		expect(server.requests).toHaveLength(2);
		expect(message.stopReason).toBe("stop");
		expect(message.responseId).toBe("resp_2");
	});

	it("a stream that ends before response.completed is an error", async () => {
		server.enqueue({
			body: [
				event("response.output_item.added", { output_index: 0, item: { id: "msg_1", type: "message" } }),
				event("response.output_text.delta", { output_index: 0, delta: "half" }),
			].join(""),
		});
		const { message } = await drain(streamSimple(responses(), context, fast));
		expect(message.stopReason).toBe("error");
		expect(message.errorMessage).toBe(
			"The stream ended before the provider finished the response (no response.completed); the answer is incomplete",
		);
		expect(message.content).toEqual([{ type: "text", text: "half" }]);
	});
});

describe("nothing ever throws out of streamSimple", () => {
	it("bad base URL, throwing hooks, unknown api, odd context: all error events", async () => {
		const cases = [
			streamSimple(testModel("openai-completions", "not a url"), context, fast),
			streamSimple(testModel("openai-responses", "not a url"), context, fast),
			streamSimple(completions(), context, {
				...fast,
				onPayload: () => {
					throw new Error("payload hook failed");
				},
			}),
			streamSimple(
				completions(),
				{ messages: [{ role: "user", content: [{ type: "weird" } as any], timestamp: 0 }] },
				{
					...fast,
					onResponse: () => {
						throw new Error("response hook failed");
					},
				},
			),
			streamSimple(testModel("no-such-api", server.url), context, fast),
			streamSimple(completions(), null as any, fast),
		];
		server.fallback = { body: `${chunk({ content: "x" }, "stop")}data: [DONE]\n\n` };
		try {
			const results = await Promise.all(cases.map((stream) => drain(stream)));
			for (const { message, events } of results) {
				expect(message.stopReason).toBe("error");
				expect(typeof message.errorMessage).toBe("string");
				expect(events.at(-1)!.type).toBe("error");
			}
			expect(results[2]!.message.errorMessage).toBe("payload hook failed");
			expect(results[3]!.message.errorMessage).toBe("response hook failed");
			expect(results[4]!.message.errorMessage).toMatch(/No provider registered for api "no-such-api"/);
		} finally {
			server.fallback = { status: 500, body: JSON.stringify({ error: { message: "no scripted response" } }) };
		}
	});
});

describe("openai-completions: responses that are not a stream", () => {
	it("a 200 JSON body (stream ignored) is an error naming it", async () => {
		server.enqueue({
			headers: { "content-type": "application/json" },
			body: JSON.stringify({
				id: "chatcmpl-1",
				choices: [{ index: 0, message: { role: "assistant", content: "hi" } }],
			}),
		});
		const { message } = await drain(streamSimple(completions(), context, fast));
		expect(message.stopReason).toBe("error");
		expect(message.errorMessage).toMatch(/^Expected an event stream, got a JSON body/);
	});

	it("an empty stream is retried, then reported", async () => {
		server.enqueue({ body: "" }, { body: "" });
		const { message } = await drain(streamSimple(completions(), context, { ...fast, maxRetries: 1 }));
		expect(server.requests).toHaveLength(2);
		expect(message.stopReason).toBe("error");
		expect(message.errorMessage).toBe(
			"The stream ended before the provider finished the response (no finish_reason or [DONE]); the answer is incomplete",
		);
	});
});

describe("openai-completions: OpenRouter reasoning_details", () => {
	it("merges streamed reasoning_details by index and replays them with the reasoning text", async () => {
		const model = testModel("openai-completions", `${server.url}/v1`, { provider: "openrouter", reasoning: true });
		server.enqueue({
			body: [
				chunk({
					role: "assistant",
					reasoning: "Think",
					reasoning_details: [{ type: "reasoning.text", text: "Think", index: 0, format: "anthropic-claude-v1" }],
				}),
				chunk({ reasoning: "ing.", reasoning_details: [{ type: "reasoning.text", text: "ing.", index: 0 }] }),
				chunk({ reasoning_details: [{ type: "reasoning.text", signature: "sig-123", index: 0 }] }),
				chunk({ reasoning_details: [{ type: "reasoning.encrypted", data: "ENC", index: 1 }] }),
				chunk(
					{ tool_calls: [{ index: 0, id: "call_1", type: "function", function: { name: "f", arguments: "{}" } }] },
					"tool_calls",
				),
				"data: [DONE]\n\n",
			].join(""),
		});
		const { message, events } = await drain(streamSimple(model, context, fast));
		checkProtocol(events, message);
		const thinking = message.content[0]!;
		expect(thinking.type).toBe("thinking");
		if (thinking.type !== "thinking") return;
		expect(thinking.thinking).toBe("Thinking.");
		const details = [
			{ type: "reasoning.text", text: "Thinking.", index: 0, format: "anthropic-claude-v1", signature: "sig-123" },
			{ type: "reasoning.encrypted", data: "ENC", index: 1 },
		];
		expect(JSON.parse(thinking.thinkingSignature!)).toEqual({ v: 1, field: "reasoning", details });

		// Next call: the details go back on the assistant message, with the reasoning text.
		server.enqueue({ body: `${chunk({ content: "done" }, "stop")}data: [DONE]\n\n` });
		const next: Context = {
			messages: [
				...context.messages,
				message,
				{
					role: "toolResult",
					toolCallId: "call_1",
					toolName: "f",
					content: [{ type: "text", text: "ok" }],
					isError: false,
					timestamp: 1,
				},
			],
		};
		await drain(streamSimple(model, next, fast));
		const assistant = server.requests[1]!.json.messages[1];
		expect(assistant).toEqual({
			role: "assistant",
			content: null,
			reasoning: "Thinking.",
			reasoning_details: details,
			tool_calls: [{ id: "call_1", type: "function", function: { name: "f", arguments: "{}" } }],
		});
	});
});
