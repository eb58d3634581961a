import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { AssistantMessageEventStream } from "../../src/ai/event-stream.js";
import { closeHttpPools } from "../../src/ai/http.js";
import { OutputBuilder } from "../../src/ai/providers/output-builder.js";
import { ProviderError, parseErrorBody, parseRetryAfter } from "../../src/ai/providers/provider-errors.js";
import { streamProvider, type WireHandler } from "../../src/ai/providers/provider-stream.js";
import type { AssistantMessageEvent, Model, StreamOptions } from "../../src/ai/types.js";
import { type ReplayServer, startReplayServer } from "../helpers/replay-server.js";

/**
 * The shared driver, exercised through a tiny test wire format:
 *   {"t":"text","v":"..."} | {"t":"think","v":"..."} | {"t":"tool","id","name","args"} | {"t":"end","reason"} | {"t":"fail"}
 */
let server: ReplayServer;
beforeAll(async () => {
	server = await startReplayServer();
});
afterAll(async () => {
	await server.close();
	await closeHttpPools();
});
afterEach(() => {
	server.reset();
});

function model(): Model<"test-wire"> {
	return {
		id: "m1",
		name: "Test",
		api: "test-wire",
		provider: "test",
		baseUrl: server.url,
		reasoning: false,
		input: ["text"],
		cost: { input: 2, output: 10, cacheRead: 0.5, cacheWrite: 0 },
		contextWindow: 1000,
		maxTokens: 100,
		headers: { "x-model-header": "m" },
	} as Model<any>;
}

function handler(out: OutputBuilder): WireHandler {
	let text = -1;
	let thinking = -1;
	return {
		onEvent(data) {
			switch (data.t) {
				case "text":
					if (text < 0) text = out.startText();
					out.appendText(text, data.v);
					return;
				case "think":
					if (thinking < 0) thinking = out.startThinking();
					out.appendThinking(thinking, data.v);
					return;
				case "tool": {
					const index = out.startToolCall(data.id, data.name);
					for (const piece of data.args) out.appendToolArgs(index, piece);
					out.endBlock(index);
					return;
				}
				case "usage":
					out.setUsage({ input: data.input, output: data.output, cacheRead: data.cacheRead });
					return;
				case "end":
					out.setStopReason(data.reason);
					return true;
				case "fail":
					throw new ProviderError(data.message, { retryable: data.retryable });
			}
		},
	};
}

function sse(...events: unknown[]): string {
	return events.map((event) => `data: ${JSON.stringify(event)}\n\n`).join("");
}

async function run(options: StreamOptions & Record<string, unknown> = {}, body: unknown = { hello: 1 }) {
	const stream = streamProvider({
		model: model(),
		options,
		buildRequest: () => ({ url: `${server.url}/v1/test`, headers: { Authorization: "Bearer k" }, body }),
		createHandler: handler,
	});
	const events: AssistantMessageEvent[] = [];
	for await (const event of stream) events.push(event);
	return { events, message: await stream.result(), types: events.map((event) => event.type) };
}

const fast = { retryBaseDelayMs: 1 };

describe("streamProvider: parsing", () => {
	const body = `${sse({ t: "think", v: "hmm " }, { t: "think", v: "ok" }, { t: "text", v: "Héllo ’×° 👋🏽" }, { t: "text", v: " world" })}${sse(
		{ t: "tool", id: "c1", name: "f", args: ['{"a":', ' "ü', 'ber"}'] },
		{ t: "usage", input: 1000, output: 500, cacheRead: 2000 },
		{ t: "end", reason: "toolUse" },
	)}`;
	const crlf = body.replace(/\n/g, "\r\n");

	for (const [label, text] of [
		["LF", body],
		["CRLF", crlf],
	] as const) {
		for (const split of ["whole", "bytes", "random"] as const) {
			it(`${label} framing, body sent ${split}`, async () => {
				server.enqueue({ body: text, split, seed: 7 });
				const { message, types } = await run();
				expect(message.stopReason).toBe("toolUse");
				expect(message.content).toEqual([
					{ type: "thinking", thinking: "hmm ok" },
					{ type: "text", text: "Héllo ’×° 👋🏽 world" },
					{ type: "toolCall", id: "c1", name: "f", arguments: { a: "über" } },
				]);
				expect(types).toEqual([
					"start",
					"thinking_start",
					"thinking_delta",
					"thinking_delta",
					"text_start",
					"text_delta",
					"text_delta",
					"toolcall_start",
					"toolcall_delta",
					"toolcall_delta",
					"toolcall_delta",
					"toolcall_end",
					"thinking_end",
					"text_end",
					"done",
				]);
				expect(message.usage).toMatchObject({ input: 1000, output: 500, cacheRead: 2000, totalTokens: 3500 });
				expect(message.usage.cost.input).toBeCloseTo(0.002, 10);
				expect(message.usage.cost.output).toBeCloseTo(0.005, 10);
				expect(message.usage.cost.cacheRead).toBeCloseTo(0.001, 10);
				expect(message.usage.cost.total).toBeCloseTo(0.008, 10);
			});
		}
	}

	it("grows partial tool arguments as they stream (OutputBuilder)", () => {
		const stream = new AssistantMessageEventStream();
		const snapshots: string[] = [];
		const push = stream.push.bind(stream);
		stream.push = (event) => {
			if (event.type === "toolcall_delta") snapshots.push(JSON.stringify(event.partial.content[event.contentIndex]));
			push(event);
		};
		const out = new OutputBuilder(model(), stream);
		const index = out.startToolCall("c", "f");
		for (const piece of ['{"city": "Mex', 'ico", "n": [1,', "2]}"]) out.appendToolArgs(index, piece);
		out.endBlock(index);
		out.finish();
		expect(snapshots.map((s) => JSON.parse(s).arguments)).toEqual([
			{ city: "Mex" },
			{ city: "Mexico", n: [1] },
			{ city: "Mexico", n: [1, 2] },
		]);
	});

	it("sends merged headers, onPayload's replacement body, and reports the response to onResponse", async () => {
		server.enqueue({
			body: sse({ t: "text", v: "x" }, { t: "end", reason: "stop" }),
			headers: { "x-request-id": "r1" },
		});
		const seen: { status: number; headers: Record<string, string> }[] = [];
		const { message } = await run({
			headers: { "X-Extra": "e", authorization: "Bearer override" },
			onPayload: (payload) => ({ ...(payload as object), added: true }),
			onResponse: (response) => {
				seen.push(response);
			},
		});
		expect(message.stopReason).toBe("stop");
		const req = server.requests[0]!;
		expect(req.json).toEqual({ hello: 1, added: true });
		expect(req.headers.authorization).toBe("Bearer override");
		expect(req.headers["x-extra"]).toBe("e");
		expect(req.headers["x-model-header"]).toBe("m");
		expect(req.headers["content-type"]).toBe("application/json");
		expect(seen).toHaveLength(1);
		expect(seen[0]!.status).toBe(200);
		expect(seen[0]!.headers["x-request-id"]).toBe("r1");
	});

	it("[DONE] ends the call even if the server keeps the connection open", async () => {
		const text = `${sse({ t: "text", v: "hi" })}data: [DONE]\n\n`;
		server.enqueue({ body: `${text}data: {"t":"text","v":"ignored"}\n\n`, stallAfterBytes: Buffer.byteLength(text) });
		const { message } = await run({ timeoutMs: 60_000 });
		expect(message.stopReason).toBe("stop");
		expect(message.content).toEqual([{ type: "text", text: "hi" }]);
	});

	it("runs many concurrent calls to one origin through the pool", async () => {
		for (let i = 0; i < 20; i++) server.enqueue({ body: sse({ t: "text", v: "same" }), split: "random", seed: i + 1 });
		const results = await Promise.all(Array.from({ length: 20 }, () => run()));
		for (const { message } of results) expect(message.content).toEqual([{ type: "text", text: "same" }]);
		expect(server.requests).toHaveLength(20);
	});

	it("reuses one keep-alive connection for sequential calls", async () => {
		const before = server.connections;
		for (let i = 0; i < 3; i++) {
			server.enqueue({ body: sse({ t: "text", v: `n${i}` }) });
			const { message } = await run();
			expect(message.content[0]).toEqual({ type: "text", text: `n${i}` });
		}
		expect(server.connections - before).toBeLessThanOrEqual(1);
	});
});

describe("streamProvider: failures are error events", () => {
	it("HTTP 400 with an OpenAI error body: provider message and status, no retry", async () => {
		server.enqueue({
			status: 400,
			body: JSON.stringify({ error: { message: "Invalid 'messages[0]'", type: "invalid_request_error", code: null } }),
		});
		const { message, types } = await run(fast);
		expect(types).toEqual(["error"]);
		expect(message.stopReason).toBe("error");
		expect(message.errorMessage).toBe("HTTP 400: Invalid 'messages[0]'");
		expect(message.diagnostics).toContainEqual({ type: "http_error", status: 400, errorType: "invalid_request_error" });
		expect(server.requests).toHaveLength(1);
	});

	it("a body that ends cleanly before the end marker (a handler without `finished`) is an error, not an answer", async () => {
		server.enqueue({ body: sse({ t: "text", v: "half an ans" }) });
		const { message, types } = await run({ ...fast, maxRetries: 0 });
		expect(types.at(-1)).toBe("error");
		expect(message.stopReason).toBe("error");
		expect(message.errorMessage).toBe(
			"The stream ended before the provider finished the response (no end marker); the answer is incomplete",
		);
		expect(message.content).toEqual([{ type: "text", text: "half an ans" }]);
	});

	it("HTTP 401 with an Anthropic error body", async () => {
		server.enqueue({
			status: 401,
			body: JSON.stringify({ type: "error", error: { type: "authentication_error", message: "invalid x-api-key" } }),
		});
		const { message } = await run(fast);
		expect(message.errorMessage).toBe("HTTP 401: invalid x-api-key");
	});

	it("HTTP 404 with a non-JSON body keeps the text", async () => {
		server.enqueue({ status: 404, body: "<html>not here</html>" });
		const { message } = await run(fast);
		expect(message.errorMessage).toBe("HTTP 404: <html>not here</html>");
	});

	it("invalid JSON in a chunk", async () => {
		server.enqueue({ body: `${sse({ t: "text", v: "a" })}data: {"t": "text", "v": oops}\n\n` });
		const { message } = await run(fast);
		expect(message.stopReason).toBe("error");
		expect(message.errorMessage).toMatch(/^Invalid JSON in stream event: \{"t": "text", "v": oops\}/);
		expect(message.content).toEqual([{ type: "text", text: "a" }]);
	});

	it("connection reset mid-stream after output: error with partial content, no retry", async () => {
		const text = sse({ t: "text", v: "partial" });
		let sawDelta!: () => void;
		const resetWhen = new Promise<void>((resolve) => {
			sawDelta = resolve;
		});
		server.enqueue({
			body: `${text}${sse({ t: "text", v: "more" })}`,
			resetAfterBytes: Buffer.byteLength(text) + 5,
			resetWhen,
		});
		const stream = streamProvider({
			model: model(),
			options: fast,
			buildRequest: () => ({ url: `${server.url}/v1/test`, body: {} }),
			createHandler: handler,
		});
		const types: string[] = [];
		for await (const event of stream) {
			types.push(event.type);
			if (event.type === "text_delta") sawDelta();
		}
		const message = await stream.result();
		expect(message.stopReason).toBe("error");
		expect(message.errorMessage).toMatch(
			/^Connection error \(UND_ERR_SOCKET\) talking to http:\/\/127\.0\.0\.1:\d+: other side closed/,
		);
		expect(message.content).toEqual([{ type: "text", text: "partial" }]);
		expect(types.at(-1)).toBe("error");
		expect(server.requests).toHaveLength(1);
	});

	it("idle timeout while the body stalls", async () => {
		const text = sse({ t: "text", v: "slow" });
		server.enqueue({ body: `${text}${sse({ t: "text", v: "never" })}`, stallAfterBytes: Buffer.byteLength(text) });
		// A second: long against a loaded machine's delay before the first bytes arrive (150 ms was not).
		const { message } = await run({ ...fast, timeoutMs: 1000 });
		expect(message.stopReason).toBe("error");
		expect(message.errorMessage).toBe("Request timed out: no data from the provider for 1000 ms");
		expect(message.content).toEqual([{ type: "text", text: "slow" }]);
	});

	it("idle timeout while waiting for headers", async () => {
		server.enqueue({ stall: true });
		const { message } = await run({ ...fast, timeoutMs: 150, maxRetries: 0 });
		expect(message.errorMessage).toMatch(/timed out/);
		// The request reached the server (and took its stalled response), even if after the timeout.
		await server.waitForRequests(1);
	});

	it("the model's idleTimeoutMs applies when the call sets no timeoutMs; the call's own wins", async () => {
		const call = (options: StreamOptions) =>
			streamProvider({
				model: { ...model(), idleTimeoutMs: 120 },
				options: { ...fast, maxRetries: 0, ...options },
				buildRequest: () => ({ url: `${server.url}/v1/test`, body: {} }),
				createHandler: handler,
			}).result();
		// Every request stalls after its headers, not only the next two queued: on a loaded machine the
		// server may take a request an earlier test's call gave up on only now, and it would use one.
		const fallback = server.fallback;
		server.fallback = { stallAfterBytes: 0 };
		try {
			expect((await call({})).errorMessage).toBe("Request timed out: no data from the provider for 120 ms");
			expect((await call({ timeoutMs: 60 })).errorMessage).toBe(
				"Request timed out: no data from the provider for 60 ms",
			);
		} finally {
			server.fallback = fallback;
		}
	});

	it("buildRequest throwing ends in an error event", async () => {
		const stream = streamProvider({
			model: model(),
			buildRequest: () => {
				throw new Error("No API key for provider test: set TEST_API_KEY or pass options.apiKey");
			},
			createHandler: handler,
		});
		const message = await stream.result();
		expect(message.stopReason).toBe("error");
		expect(message.errorMessage).toContain("No API key");
	});

	it("a handler error is an error event", async () => {
		server.enqueue({ body: sse({ t: "text", v: "a" }, { t: "fail", message: "boom" }) });
		const { message } = await run(fast);
		expect(message.errorMessage).toBe("boom");
	});
});

describe("streamProvider: abort", () => {
	it("abort mid-stream → aborted with the content so far", async () => {
		const controller = new AbortController();
		const text = sse({ t: "text", v: "first" });
		server.enqueue({ body: `${text}${sse({ t: "text", v: "never" })}`, stallAfterBytes: Buffer.byteLength(text) });
		const stream = streamProvider({
			model: model(),
			options: { signal: controller.signal },
			buildRequest: () => ({ url: `${server.url}/v1/test`, body: {} }),
			createHandler: handler,
		});
		const types: string[] = [];
		for await (const event of stream) {
			types.push(event.type);
			if (event.type === "text_delta") controller.abort();
		}
		const message = await stream.result();
		expect(message.stopReason).toBe("aborted");
		expect(message.errorMessage).toBe("Request was aborted");
		expect(message.content).toEqual([{ type: "text", text: "first" }]);
		expect(types.at(-1)).toBe("error");
	});

	it("already-aborted signal → aborted without a request", async () => {
		const { message, types } = await run({ signal: AbortSignal.abort() });
		expect(types).toEqual(["error"]);
		expect(message.stopReason).toBe("aborted");
		expect(server.requests).toHaveLength(0);
	});

	it("abort while waiting to retry → aborted", async () => {
		const controller = new AbortController();
		server.enqueue({ status: 503, body: "{}", headers: { "retry-after": "30" } });
		const resultPromise = run({ signal: controller.signal, maxRetryDelayMs: 0 });
		await server.waitForRequests(1);
		controller.abort();
		const { message } = await resultPromise;
		expect(message.stopReason).toBe("aborted");
		expect(server.requests).toHaveLength(1);
	});
});

describe("streamProvider: retries", () => {
	it("retries 429/500/503 before output, up to maxRetries, then reports the last error", async () => {
		server.enqueue(
			{ status: 429, body: JSON.stringify({ error: { message: "slow down" } }) },
			{ status: 500, body: JSON.stringify({ error: { message: "oops" } }) },
			{ status: 503, body: JSON.stringify({ error: { message: "unavailable" } }) },
		);
		const { message, types } = await run({ ...fast, maxRetries: 2 });
		expect(server.requests).toHaveLength(3);
		expect(types).toEqual(["error"]);
		expect(message.errorMessage).toBe("HTTP 503: unavailable");
		const retries = message.diagnostics?.find((d) => d.type === "retries") as any;
		expect(retries.retries.map((r: any) => r.status)).toEqual([429, 500]);
	});

	it("succeeds after retryable failures (408, 409, 529 overloaded)", async () => {
		server.enqueue(
			{ status: 408, body: "" },
			{ status: 409, body: "" },
			{
				status: 529,
				body: JSON.stringify({ type: "error", error: { type: "overloaded_error", message: "Overloaded" } }),
			},
			{ body: sse({ t: "text", v: "finally" }, { t: "end", reason: "stop" }) },
		);
		const { message, types } = await run({ ...fast, maxRetries: 3 });
		expect(server.requests).toHaveLength(4);
		expect(message.stopReason).toBe("stop");
		expect(message.content).toEqual([{ type: "text", text: "finally" }]);
		expect(types.filter((t) => t === "start")).toHaveLength(1);
	});

	it("does not retry when maxRetries is 0", async () => {
		server.enqueue({ status: 429, body: "{}" });
		const { message } = await run({ ...fast, maxRetries: 0 });
		expect(server.requests).toHaveLength(1);
		expect(message.errorMessage).toBe("HTTP 429: {}");
	});

	it("honours retry-after-ms", async () => {
		server.enqueue(
			{ status: 429, body: "{}", headers: { "retry-after-ms": "120" } },
			{ body: sse({ t: "text", v: "ok" }, { t: "end", reason: "stop" }) },
		);
		const { message } = await run({ retryBaseDelayMs: 0, maxRetries: 1 });
		expect(message.stopReason).toBe("stop");
		const [first, second] = server.requests;
		expect(second!.at - first!.at).toBeGreaterThanOrEqual(110);
		const retries = message.diagnostics?.find((d) => d.type === "retries") as any;
		expect(retries.retries[0].delayMs).toBe(120);
	});

	it("caps retry-after (seconds) at maxRetryDelayMs", async () => {
		server.enqueue(
			{ status: 503, body: "{}", headers: { "retry-after": "3600" } },
			{ body: sse({ t: "text", v: "ok" }, { t: "end", reason: "stop" }) },
		);
		const { message } = await run({ maxRetries: 1, maxRetryDelayMs: 50 });
		expect(message.stopReason).toBe("stop");
		const retries = message.diagnostics?.find((d) => d.type === "retries") as any;
		expect(retries.retries[0].delayMs).toBe(50);
	});

	it("retries a connection reset before any output", async () => {
		server.enqueue({ resetAfterBytes: 0 }, { body: sse({ t: "text", v: "second try" }) });
		const { message } = await run({ ...fast, maxRetries: 1 });
		expect(server.requests).toHaveLength(2);
		expect(message.content).toEqual([{ type: "text", text: "second try" }]);
	});

	it("retries a retryable mid-stream error before output, never after", async () => {
		server.enqueue(
			{ body: sse({ t: "fail", message: "overloaded", retryable: true }) },
			{ body: sse({ t: "text", v: "a" }, { t: "fail", message: "overloaded again", retryable: true }) },
			{ body: sse({ t: "text", v: "not reached" }) },
		);
		const { message } = await run({ ...fast, maxRetries: 5 });
		expect(server.requests).toHaveLength(2);
		expect(message.stopReason).toBe("error");
		expect(message.errorMessage).toBe("overloaded again");
		expect(message.content).toEqual([{ type: "text", text: "a" }]);
		expect(server.pending).toBe(1);
	});
});

describe("error and retry-after parsing", () => {
	it("parses the providers' error bodies", () => {
		expect(
			parseErrorBody(429, JSON.stringify({ error: { message: "Rate limit", type: "rate_limit_exceeded" } })),
		).toMatchObject({
			message: "Rate limit",
			type: "rate_limit_exceeded",
			retryable: true,
		});
		expect(
			parseErrorBody(
				429,
				JSON.stringify([
					{
						error: {
							code: 429,
							message: "Quota",
							status: "RESOURCE_EXHAUSTED",
							details: [{ "@type": "type.googleapis.com/google.rpc.RetryInfo", retryDelay: "37s" }],
						},
					},
				]),
			),
		).toEqual({ message: "Quota", type: "RESOURCE_EXHAUSTED", retryable: true, retryAfterMs: 37_000 });
		expect(parseErrorBody(400, JSON.stringify({ error: "bad thing" }))).toEqual({ message: "bad thing" });
	});

	it("parses retry-after in seconds, as an HTTP date, and retry-after-ms", () => {
		expect(parseRetryAfter({ "retry-after": "2" })).toBe(2000);
		expect(parseRetryAfter({ "retry-after-ms": "150", "retry-after": "2" })).toBe(150);
		const now = Date.parse("Wed, 02 Dec 2026 10:00:00 GMT");
		expect(parseRetryAfter({ "retry-after": "Wed, 02 Dec 2026 10:00:05 GMT" }, now)).toBe(5000);
		expect(parseRetryAfter({ "retry-after": "soon" })).toBeUndefined();
		expect(parseRetryAfter({})).toBeUndefined();
	});
});
