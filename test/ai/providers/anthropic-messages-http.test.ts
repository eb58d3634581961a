import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from "vitest";
import { closeHttpPools } from "../../../src/ai/http.js";
import {
	buildParams,
	streamAnthropicMessages,
	toAnthropicOptions,
} from "../../../src/ai/providers/anthropic-messages.js";
import { streamSimple } from "../../../src/ai/stream.js";
import type { Context, Model } from "../../../src/ai/types.js";
import { type ReplayServer, startReplayServer } from "../../helpers/replay-server.js";
import { collect, expectProtocol } from "./event-protocol.js";

/** Anthropic over a real local HTTP server: what is sent, and every failure ending in an `error` event. */
let server: ReplayServer;
beforeAll(async () => {
	server = await startReplayServer();
});
afterEach(() => {
	server.reset();
	vi.unstubAllEnvs();
});
afterAll(async () => {
	await server.close();
	await closeHttpPools();
});

function model(): Model<"anthropic-messages"> {
	return {
		id: "claude-sonnet-4-5-20250929",
		name: "Claude Sonnet 4.5",
		api: "anthropic-messages",
		provider: "anthropic",
		baseUrl: server.url,
		reasoning: true,
		input: ["text", "image"],
		cost: { input: 3, output: 15, cacheRead: 0.3, cacheWrite: 3.75 },
		contextWindow: 200_000,
		maxTokens: 64_000,
	};
}

const context: Context = {
	systemPrompt: "Be brief.",
	messages: [{ role: "user", content: "Hello", timestamp: 1 }],
};

/** An SSE body from `[event, data]` pairs. */
function sse(...events: [string, unknown][]): string {
	return events.map(([event, data]) => `event: ${event}\ndata: ${JSON.stringify(data)}\n\n`).join("");
}

const messageStart = [
	"message_start",
	{
		type: "message_start",
		message: { id: "msg_1", model: "claude-sonnet-4-5-20250929", usage: { input_tokens: 10, output_tokens: 1 } },
	},
] as [string, unknown];
const textBlock: [string, unknown][] = [
	["content_block_start", { type: "content_block_start", index: 0, content_block: { type: "text", text: "" } }],
	["content_block_delta", { type: "content_block_delta", index: 0, delta: { type: "text_delta", text: "Hi there" } }],
	["content_block_stop", { type: "content_block_stop", index: 0 }],
];
function end(stopReason: string, extra: Record<string, unknown> = {}): [string, unknown][] {
	return [
		[
			"message_delta",
			{ type: "message_delta", delta: { stop_reason: stopReason, ...extra }, usage: { output_tokens: 7 } },
		],
		["message_stop", { type: "message_stop" }],
	];
}
const okBody = sse(messageStart, ...textBlock, ...end("end_turn"));
const fast = { retryBaseDelayMs: 1 };

describe("anthropic-messages over HTTP", () => {
	it("POSTs buildParams to /v1/messages with x-api-key and anthropic-version; streamSimple dispatches here", async () => {
		server.enqueue({ body: okBody });
		const options = { apiKey: "sk-ant-test", reasoning: "low" as const, metadata: { user_id: "u-1" } };
		const { message } = await collect(streamSimple(model(), context, options));
		expect(message.stopReason).toBe("stop");
		expect(message.content).toEqual([{ type: "text", text: "Hi there" }]);
		const [request] = server.requests;
		expect(request.method).toBe("POST");
		expect(request.url).toBe("/v1/messages");
		expect(request.headers["x-api-key"]).toBe("sk-ant-test");
		expect(request.headers["anthropic-version"]).toBe("2023-06-01");
		expect(request.headers["content-type"]).toBe("application/json");
		expect(request.json).toEqual(
			JSON.parse(JSON.stringify(buildParams(model(), context, toAnthropicOptions(model(), options)))),
		);
		expect(request.json.thinking).toEqual({ type: "enabled", budget_tokens: 2048 });
		expect(request.json.metadata).toEqual({ user_id: "u-1" });
	});

	it("sends what onPayload returns, with caller headers", async () => {
		server.enqueue({ body: okBody });
		const replaced = { model: "x", max_tokens: 5, stream: true, messages: [{ role: "user", content: "swapped" }] };
		const { message } = await collect(
			streamAnthropicMessages(model(), context, {
				apiKey: "k",
				headers: { "x-trace": "t-1" },
				onPayload: (payload: any) => (payload.system ? replaced : undefined),
			}),
		);
		expect(message.stopReason).toBe("stop");
		expect(server.requests[0].json).toEqual(replaced);
		expect(server.requests[0].headers["x-trace"]).toBe("t-1");
	});

	it("takes the key from ANTHROPIC_API_KEY, and fails without a request when there is none", async () => {
		vi.stubEnv("ANTHROPIC_API_KEY", "env-key");
		server.enqueue({ body: okBody });
		await collect(streamAnthropicMessages(model(), context));
		expect(server.requests[0].headers["x-api-key"]).toBe("env-key");

		vi.stubEnv("ANTHROPIC_API_KEY", "");
		const { events, message } = await collect(streamAnthropicMessages(model(), context));
		expect(events.map((e) => e.type)).toEqual(["error"]);
		expect(message.errorMessage).toContain("ANTHROPIC_API_KEY");
		expect(server.requests).toHaveLength(1);
	});

	it("turns an HTTP error body into errorMessage with the status and Anthropic's message, without retrying a 400", async () => {
		server.enqueue({
			status: 400,
			body: JSON.stringify({
				type: "error",
				error: { type: "invalid_request_error", message: "max_tokens: 100000 > 64000, which is the maximum" },
			}),
		});
		const { events, message } = await collect(streamAnthropicMessages(model(), context, { apiKey: "k", ...fast }));
		expect(events.at(-1)?.type).toBe("error");
		expect(message.stopReason).toBe("error");
		expect(message.errorMessage).toBe("HTTP 400: max_tokens: 100000 > 64000, which is the maximum");
		expect(server.requests).toHaveLength(1);
	});

	it("retries 529 overloaded_error honouring retry-after, then streams", async () => {
		const overloaded = JSON.stringify({ type: "error", error: { type: "overloaded_error", message: "Overloaded" } });
		server.enqueue({ status: 529, headers: { "retry-after": "0" }, body: overloaded }, { body: okBody });
		const { events, message } = await collect(streamAnthropicMessages(model(), context, { apiKey: "k", ...fast }));
		expectProtocol(events, message);
		expect(message.stopReason).toBe("stop");
		expect(server.requests).toHaveLength(2);
		expect(message.diagnostics?.find((d) => d.type === "retries")).toMatchObject({
			retries: [{ attempt: 1, status: 529, error: "HTTP 529: Overloaded" }],
		});
	});

	it("gives up after maxRetries with the last error", async () => {
		const overloaded = JSON.stringify({ type: "error", error: { type: "overloaded_error", message: "Overloaded" } });
		server.enqueue({ status: 529, body: overloaded }, { status: 529, body: overloaded });
		const { message } = await collect(
			streamAnthropicMessages(model(), context, { apiKey: "k", maxRetries: 1, ...fast }),
		);
		expect(message.errorMessage).toBe("HTTP 529: Overloaded");
		expect(server.requests).toHaveLength(2);
	});

	it("retries a mid-stream overloaded_error that came before any content, not one after", async () => {
		const overloadedEvent: [string, unknown] = [
			"error",
			{ type: "error", error: { type: "overloaded_error", message: "Overloaded" } },
		];
		server.enqueue({ body: sse(messageStart, overloadedEvent) }, { body: okBody });
		const first = await collect(streamAnthropicMessages(model(), context, { apiKey: "k", ...fast }));
		expect(first.message.stopReason).toBe("stop");
		expect(server.requests).toHaveLength(2);

		server.reset();
		server.enqueue({ body: sse(messageStart, ...textBlock.slice(0, 2), overloadedEvent) }, { body: okBody });
		const second = await collect(streamAnthropicMessages(model(), context, { apiKey: "k", ...fast }));
		expectProtocol(second.events, second.message);
		expect(second.message.stopReason).toBe("error");
		expect(second.message.errorMessage).toBe("Anthropic stream error (overloaded_error): Overloaded");
		expect(second.message.content).toEqual([{ type: "text", text: "Hi there" }]);
		expect(server.requests).toHaveLength(1);
		expect(server.pending).toBe(1);
	});

	it("ends in error when the stream stops before message_stop", async () => {
		server.enqueue({ body: sse(messageStart, ...textBlock) });
		const { events, message } = await collect(
			streamAnthropicMessages(model(), context, { apiKey: "k", maxRetries: 0 }),
		);
		expectProtocol(events, message);
		expect(message.errorMessage).toBe(
			"The stream ended before the provider finished the response (no message_stop); the answer is incomplete",
		);
		expect(message.content).toEqual([{ type: "text", text: "Hi there" }]);
	});

	it("ends in error on a connection reset mid-stream, keeping what was streamed (no retry after output)", async () => {
		const body = sse(messageStart, ...textBlock.slice(0, 2));
		let sawDelta!: () => void;
		const resetWhen = new Promise<void>((resolve) => {
			sawDelta = resolve;
		});
		server.enqueue(
			{ body: `${body}event: content_block_delta\n`, resetAfterBytes: Buffer.byteLength(body) + 10, resetWhen },
			{ body: okBody },
		);
		const stream = streamAnthropicMessages(model(), context, { apiKey: "k", ...fast });
		for await (const event of stream) if (event.type === "text_delta") sawDelta();
		const message = await stream.result();
		expect(message.stopReason).toBe("error");
		expect(message.errorMessage).toMatch(/^Connection error \(UND_ERR_SOCKET\) talking to http:\/\/127\.0\.0\.1:\d+: /);
		expect(message.content).toEqual([{ type: "text", text: "Hi there" }]);
		expect(server.requests).toHaveLength(1);
	});

	it("aborts mid-stream: stopReason aborted, content so far kept", async () => {
		const body = sse(messageStart, ...textBlock.slice(0, 2));
		server.enqueue({
			body: `${body}${sse(...textBlock.slice(2), ...end("end_turn"))}`,
			stallAfterBytes: Buffer.byteLength(body),
		});
		const controller = new AbortController();
		const stream = streamAnthropicMessages(model(), context, { apiKey: "k", signal: controller.signal });
		const types: string[] = [];
		for await (const event of stream) {
			types.push(event.type);
			if (event.type === "text_delta") controller.abort();
		}
		const message = await stream.result();
		expect(types).toEqual(["start", "text_start", "text_delta", "error"]);
		expect(message.stopReason).toBe("aborted");
		expect(message.errorMessage).toBe("Request was aborted");
		expect(message.content).toEqual([{ type: "text", text: "Hi there" }]);
	});

	it("maps a refusal stop to an error carrying the explanation", async () => {
		server.enqueue({
			body: sse(
				messageStart,
				...end("refusal", { stop_details: { type: "refusal", explanation: "Blocked by policy." } }),
			),
		});
		const { message } = await collect(streamAnthropicMessages(model(), context, { apiKey: "k" }));
		expect(message.stopReason).toBe("error");
		expect(message.errorMessage).toBe('Anthropic stopped with stop_reason "refusal": Blocked by policy.');
		expect(message.usage.output).toBe(7);
	});

	it("ends normally on pause_turn, stop_sequence and unknown stop reasons", async () => {
		for (const reason of ["pause_turn", "stop_sequence", "brand_new_reason"]) {
			server.enqueue({ body: sse(messageStart, ...textBlock, ...end(reason)) });
			const { events, message } = await collect(streamAnthropicMessages(model(), context, { apiKey: "k" }));
			expect(events.at(-1)?.type).toBe("done");
			expect(message.stopReason).toBe("stop");
		}
	});

	it("fails on invalid JSON in a chunk", async () => {
		server.enqueue({
			body: `${sse(messageStart)}event: content_block_start\ndata: {"type":"content_block_start",\n\n`,
		});
		const { message } = await collect(streamAnthropicMessages(model(), context, { apiKey: "k", maxRetries: 0 }));
		expect(message.stopReason).toBe("error");
		expect(message.errorMessage).toContain("Invalid JSON");
	});

	it("replays a streamed turn's signed thinking, redacted thinking and tool call into the next request", async () => {
		const turn1 = sse(
			messageStart,
			[
				"content_block_start",
				{ type: "content_block_start", index: 0, content_block: { type: "thinking", thinking: "", signature: "" } },
			],
			[
				"content_block_delta",
				{ type: "content_block_delta", index: 0, delta: { type: "thinking_delta", thinking: "Use the tool." } },
			],
			[
				"content_block_delta",
				{ type: "content_block_delta", index: 0, delta: { type: "signature_delta", signature: "EqQBCkYI" } },
			],
			["content_block_stop", { type: "content_block_stop", index: 0 }],
			[
				"content_block_start",
				{ type: "content_block_start", index: 1, content_block: { type: "redacted_thinking", data: "EmwKAhgB" } },
			],
			["content_block_stop", { type: "content_block_stop", index: 1 }],
			[
				"content_block_start",
				{
					type: "content_block_start",
					index: 2,
					content_block: { type: "tool_use", id: "toolu_9", name: "get_weather", input: {} },
				},
			],
			[
				"content_block_delta",
				{ type: "content_block_delta", index: 2, delta: { type: "input_json_delta", partial_json: '{"city": "Par' } },
			],
			[
				"content_block_delta",
				{ type: "content_block_delta", index: 2, delta: { type: "input_json_delta", partial_json: 'is"}' } },
			],
			["content_block_stop", { type: "content_block_stop", index: 2 }],
			...end("tool_use"),
		);
		server.enqueue({ body: turn1 }, { body: okBody });
		const first = await collect(streamAnthropicMessages(model(), context, { apiKey: "k" }));
		expect(first.message.stopReason).toBe("toolUse");
		expect(first.message.content).toEqual([
			{ type: "thinking", thinking: "Use the tool.", thinkingSignature: "EqQBCkYI" },
			{ type: "thinking", thinking: "", thinkingSignature: "EmwKAhgB", redacted: true },
			{ type: "toolCall", id: "toolu_9", name: "get_weather", arguments: { city: "Paris" } },
		]);
		const next: Context = {
			...context,
			messages: [
				...context.messages,
				first.message,
				{
					role: "toolResult",
					toolCallId: "toolu_9",
					toolName: "get_weather",
					content: [{ type: "text", text: "sunny" }],
					isError: false,
					timestamp: 2,
				},
			],
		};
		const second = await collect(streamAnthropicMessages(model(), next, { apiKey: "k", cacheRetention: "none" }));
		expect(second.message.stopReason).toBe("stop");
		expect(server.requests[1].json.messages.slice(1)).toEqual([
			{
				role: "assistant",
				content: [
					{ type: "thinking", thinking: "Use the tool.", signature: "EqQBCkYI" },
					{ type: "redacted_thinking", data: "EmwKAhgB" },
					{ type: "tool_use", id: "toolu_9", name: "get_weather", input: { city: "Paris" } },
				],
			},
			{ role: "user", content: [{ type: "tool_result", tool_use_id: "toolu_9", content: "sunny", is_error: false }] },
		]);
	});

	it("ends in error when the provider goes silent for timeoutMs", async () => {
		const body = sse(messageStart, ...textBlock.slice(0, 2));
		server.enqueue({ body: body + sse(...end("end_turn")), stallAfterBytes: Buffer.byteLength(body) });
		const { events, message } = await collect(
			streamAnthropicMessages(model(), context, { apiKey: "k", timeoutMs: 150 }),
		);
		expectProtocol(events, message);
		expect(message.stopReason).toBe("error");
		expect(message.errorMessage).toBe("Request timed out: no data from the provider for 150 ms");
		expect(message.content).toEqual([{ type: "text", text: "Hi there" }]);
	});

	it("uses a tool_use block's start input when no input_json_delta follows", async () => {
		const block = { type: "tool_use", id: "toolu_5", name: "lookup", input: { q: "x", n: 2 } };
		server.enqueue({
			body: sse(
				messageStart,
				["content_block_start", { type: "content_block_start", index: 0, content_block: block }],
				["content_block_stop", { type: "content_block_stop", index: 0 }],
				...end("tool_use"),
			),
		});
		const { events, message } = await collect(streamAnthropicMessages(model(), context, { apiKey: "k" }));
		expectProtocol(events, message);
		expect(message.stopReason).toBe("toolUse");
		expect(message.content).toEqual([{ type: "toolCall", id: "toolu_5", name: "lookup", arguments: { q: "x", n: 2 } }]);
	});
});
