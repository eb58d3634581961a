/**
 * Tracing on the GenAI conventions, through the real server over HTTP with scripted models and an
 * in-memory exporter: the span of each request, run, model call and tool call, with their
 * attributes and parents; a caller's `traceparent`; failures; message content only when enabled;
 * the facades' runs under their requests.
 */
import { SpanKind, SpanStatusCode } from "@opentelemetry/api";
import type { ReadableSpan } from "@opentelemetry/sdk-trace-base";
import { afterEach, describe, expect, it } from "vitest";
import { promptAndWait, scriptedModel, text400, usage } from "../../helpers/scripted-session.js";
import { startServer, type TestServer } from "../../helpers/server.js";
import { recordSpans, type SpanRecorder } from "../../helpers/spans.js";
import { promptSse } from "../../helpers/sse.js";

const model = scriptedModel("tracing-spans-faux");

const servers: TestServer[] = [];
afterEach(async () => {
	for (const server of servers.splice(0)) await server.close();
});

async function start(recorder: SpanRecorder, options: Parameters<typeof startServer>[0] = {}): Promise<TestServer> {
	const server = await startServer({ tracerProvider: recorder.provider, models: [model.faux.getModel()], ...options });
	servers.push(server);
	return server;
}

async function createSession(server: TestServer, body: Record<string, unknown> = {}): Promise<string> {
	const created = await server.request("POST", "/v1/sessions", { body });
	expect(created.status).toBe(201);
	return created.body.id;
}

const named = (name: string) => (span: ReadableSpan) => span.name === name;

describe("tracing: spans of a prompt", () => {
	it("a prompt with a tool call: request → invoke_agent → chat, execute_tool, on the GenAI conventions", async () => {
		const recorder = recordSpans();
		const server = await start(recorder);
		const id = await createSession(server);
		const run = await promptSse(server.url, id, { message: '/tool calculate {"expression": "6 * 7"}' });
		await run.waitForEnd();
		const request = await recorder.waitFor(named("POST /v1/sessions/:id/prompt"));
		const agent = await recorder.waitFor(named("invoke_agent"));

		// The request's server span: the route pattern, never the session id in its name.
		expect(request.kind).toBe(SpanKind.SERVER);
		expect(request.attributes).toMatchObject({
			"http.request.method": "POST",
			"http.route": "/v1/sessions/:id/prompt",
			"url.path": `/v1/sessions/${id}/prompt`,
			"http.response.status_code": 200,
		});
		const create = recorder.one("POST /v1/sessions");
		expect(create.attributes["http.response.status_code"]).toBe(201);

		// The run, under the request that started it.
		expect(recorder.parentOf(agent)).toBe(request.spanContext().spanId);
		expect(agent.spanContext().traceId).toBe(request.spanContext().traceId);
		expect(agent.attributes).toMatchObject({
			"gen_ai.operation.name": "invoke_agent",
			"gen_ai.conversation.id": id,
			"gen_ai.provider.name": "faux",
			"gen_ai.request.model": "echo",
		});
		// Only a run that did not complete says how it ended.
		expect(agent.attributes["wheelhouse.run.status"]).toBeUndefined();
		expect(agent.attributes["wheelhouse.run.id"]).toBeTypeOf("string");
		expect(agent.status.code).toBe(SpanStatusCode.UNSET);

		// Two model calls (the tool call, then the answer to its result) and the tool call, under the run.
		const chats = recorder.spans().filter(named("chat echo"));
		expect(chats).toHaveLength(2);
		for (const chat of chats) {
			expect(chat.kind).toBe(SpanKind.CLIENT);
			expect(recorder.parentOf(chat)).toBe(agent.spanContext().spanId);
			expect(chat.attributes).toMatchObject({
				"gen_ai.operation.name": "chat",
				"gen_ai.provider.name": "faux",
				"gen_ai.request.model": "echo",
				"gen_ai.response.model": "echo",
				"gen_ai.conversation.id": id,
			});
			expect(chat.attributes["gen_ai.usage.input_tokens"]).toBeTypeOf("number");
			expect(chat.attributes["gen_ai.usage.output_tokens"]).toBeTypeOf("number");
		}
		const reasons = chats
			.sort((a, b) => a.startTime[0] - b.startTime[0] || a.startTime[1] - b.startTime[1])
			.map((chat) => chat.attributes["gen_ai.response.finish_reasons"]);
		expect(reasons).toEqual([["tool_call"], ["stop"]]);
		const tool = recorder.one("execute_tool calculate");
		expect(recorder.parentOf(tool)).toBe(agent.spanContext().spanId);
		expect(tool.attributes).toMatchObject({
			"gen_ai.operation.name": "execute_tool",
			"gen_ai.tool.name": "calculate",
			"gen_ai.tool.type": "function",
			"gen_ai.conversation.id": id,
		});
		expect(tool.attributes["gen_ai.tool.call.id"]).toBeTypeOf("string");
		expect(tool.status.code).toBe(SpanStatusCode.UNSET);
		// The run's token counts are its model calls'.
		const sum = (key: string) => chats.reduce((total, chat) => total + (chat.attributes[key] as number), 0);
		expect(agent.attributes["gen_ai.usage.input_tokens"]).toBe(sum("gen_ai.usage.input_tokens"));
		expect(agent.attributes["gen_ai.usage.output_tokens"]).toBe(sum("gen_ai.usage.output_tokens"));
		// Message content is not recorded by default.
		for (const span of recorder.spans()) {
			expect(Object.keys(span.attributes).filter((key) => /messages|instructions|arguments|result/.test(key))).toEqual(
				[],
			);
		}
		expect(JSON.stringify(recorder.spans().map((span) => span.attributes))).not.toContain("6 * 7");
	});

	it("continues the caller's trace (traceparent) and ends a run that outlives its request", async () => {
		const recorder = recordSpans();
		const server = await start(recorder);
		const id = await createSession(server);
		const traceId = "0af7651916cd43dd8448eb211c80319c";
		const callerSpan = "b7ad6b7169203331";
		// 202: the request ends at once, the run goes on.
		const accepted = await server.request("POST", `/v1/sessions/${id}/prompt`, {
			body: { message: "hello there" },
			headers: { traceparent: `00-${traceId}-${callerSpan}-01` },
		});
		expect(accepted.status).toBe(202);
		const agent = await recorder.waitFor(named("invoke_agent"));
		const request = recorder.one("POST /v1/sessions/:id/prompt");
		expect(request.spanContext().traceId).toBe(traceId);
		expect(recorder.parentOf(request)).toBe(callerSpan);
		expect(request.attributes["http.response.status_code"]).toBe(202);
		expect(recorder.parentOf(agent)).toBe(request.spanContext().spanId);
		expect(agent.spanContext().traceId).toBe(traceId);
		expect(agent.attributes["wheelhouse.run.id"]).toBe(accepted.body.runId);
		expect(agent.endTime[0] * 1e9 + agent.endTime[1]).toBeGreaterThan(request.endTime[0] * 1e9 + request.endTime[1]);
		expect(recorder.one("chat echo").attributes["gen_ai.response.finish_reasons"]).toEqual(["stop"]);
		// A malformed traceparent starts a trace of its own.
		await server.request("GET", "/v1/sessions", { headers: { traceparent: `00-${"0".repeat(32)}-${callerSpan}-01` } });
		const list = await recorder.waitFor(named("GET /v1/sessions"));
		expect(list.spanContext().traceId).not.toBe("0".repeat(32));
		expect(recorder.parentOf(list)).toBeUndefined();
	});

	it("a session made from a profile: the profile is the agent's name", async () => {
		const recorder = recordSpans();
		const server = await start(recorder, { config: { profiles: { support: { model: "faux/echo" } } } });
		const id = await createSession(server, { profile: "support" });
		const run = await promptSse(server.url, id, { message: "hello" });
		await run.waitForEnd();
		const agent = await recorder.waitFor(named("invoke_agent support"));
		expect(agent.attributes["gen_ai.agent.name"]).toBe("support");
	});

	it("a failed model call: chat and invoke_agent carry error.type and an error status", async () => {
		const recorder = recordSpans();
		const server = await start(recorder);
		const id = await createSession(server, { model: model.spec });
		model.script({ content: "partial", stopReason: "error", errorMessage: "upstream exploded", responseId: "resp-9" });
		const run = await promptSse(server.url, id, { message: "go" });
		await run.waitForEnd();
		const agent = await recorder.waitFor(named("invoke_agent"));
		const chat = recorder.one("chat small");
		expect(chat.status).toEqual({ code: SpanStatusCode.ERROR, message: "upstream exploded" });
		expect(chat.attributes).toMatchObject({
			"gen_ai.provider.name": "scripted",
			"gen_ai.request.model": "small",
			"gen_ai.response.id": "resp-9",
			"gen_ai.response.finish_reasons": ["error"],
			"error.type": "_OTHER",
		});
		expect(agent.status.code).toBe(SpanStatusCode.ERROR);
		expect(agent.attributes).toMatchObject({ "wheelhouse.run.status": "error", "error.type": "_OTHER" });
	});

	it("a failed tool call: execute_tool carries error.type and an error status, the run completes", async () => {
		const recorder = recordSpans();
		const server = await start(recorder);
		const id = await createSession(server);
		const run = await promptSse(server.url, id, { message: '/tool calculate {"expression": "1 / 0"}' });
		await run.waitForEnd();
		await recorder.waitFor(named("invoke_agent"));
		const tool = recorder.one("execute_tool calculate");
		expect(tool.status.code).toBe(SpanStatusCode.ERROR);
		expect(tool.attributes["error.type"]).toBe("tool_error");
		expect(recorder.one("invoke_agent").status.code).toBe(SpanStatusCode.UNSET);
	});

	it("a retry after a context overflow is a second chat span of the same run", async () => {
		const recorder = recordSpans();
		const server = await start(recorder);
		const id = await createSession(server, {
			model: model.spec,
			compaction: { reserveTokens: 1000, keepRecentTokens: 150 },
		});
		model.script({ content: text400("A1"), usage: usage(300) }, { content: text400("A2"), usage: usage(500) });
		await promptAndWait(server, id, text400("U1"));
		await promptAndWait(server, id, text400("U2"));
		model.requests.length = 0;
		model.script(
			{ content: [], stopReason: "error", errorMessage: "prompt is too long: 5210 tokens > 4000 maximum" },
			{ content: "SUMMARY", usage: usage(400) },
			{ content: "answered", usage: usage(700) },
		);
		await promptAndWait(server, id, text400("U3"));
		expect(model.requests).toHaveLength(3);
		await recorder.waitFor(() => recorder.spans().filter(named("invoke_agent")).length === 3);
		const last = recorder
			.spans()
			.filter(named("invoke_agent"))
			.sort((a, b) => b.startTime[0] - a.startTime[0] || b.startTime[1] - a.startTime[1])[0];
		const calls = recorder
			.spans()
			.filter((span) => span.name === "chat small" && recorder.parentOf(span) === last.spanContext().spanId)
			.sort((a, b) => a.startTime[0] - b.startTime[0] || a.startTime[1] - b.startTime[1]);
		// The refused call and the retry; the summary request is the compaction's, not a call of the loop.
		expect(calls.map((span) => span.attributes["gen_ai.response.finish_reasons"])).toEqual([["error"], ["stop"]]);
		expect(calls[0].status.code).toBe(SpanStatusCode.ERROR);
		expect(last.status.code).toBe(SpanStatusCode.UNSET);
	});

	it("records message content only when OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT=true", async () => {
		const recorder = recordSpans();
		const server = await start(recorder, { env: { OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT: "true" } });
		const id = await createSession(server, { systemPrompt: "be brief" });
		const run = await promptSse(server.url, id, { message: '/tool calculate {"expression": "6 * 7"}' });
		await run.waitForEnd();
		await recorder.waitFor(named("invoke_agent"));
		const chats = recorder
			.spans()
			.filter(named("chat echo"))
			.sort((a, b) => a.startTime[0] - b.startTime[0] || a.startTime[1] - b.startTime[1]);
		const input = JSON.parse(chats[0].attributes["gen_ai.input.messages"] as string);
		expect(input).toEqual([
			{ role: "user", parts: [{ type: "text", content: '/tool calculate {"expression": "6 * 7"}' }] },
		]);
		expect(JSON.parse(chats[0].attributes["gen_ai.system_instructions"] as string)).toEqual([
			{ type: "text", content: "be brief" },
		]);
		const output = JSON.parse(chats[0].attributes["gen_ai.output.messages"] as string);
		expect(output).toMatchObject([
			{
				role: "assistant",
				finish_reason: "tool_call",
				parts: [{ type: "tool_call", name: "calculate", arguments: { expression: "6 * 7" } }],
			},
		]);
		// The second call's input has the tool's result.
		const second = JSON.parse(chats[1].attributes["gen_ai.input.messages"] as string);
		expect(second.at(-1)).toMatchObject({ role: "tool", parts: [{ type: "tool_call_response" }] });
		const tool = recorder.one("execute_tool calculate");
		expect(JSON.parse(tool.attributes["gen_ai.tool.call.arguments"] as string)).toEqual({ expression: "6 * 7" });
		expect(tool.attributes["gen_ai.tool.call.result"]).toContain("42");
	});
});

describe("tracing: runs started by the facades", () => {
	it("AG-UI POST /agui/v1/run and OpenAI chat completions: invoke_agent under their request spans", async () => {
		const recorder = recordSpans();
		const server = await start(recorder);
		const agui = await fetch(`${server.url}/agui/v1/run`, {
			method: "POST",
			headers: { "content-type": "application/json", accept: "text/event-stream" },
			body: JSON.stringify({
				threadId: "thread-1",
				runId: "run-1",
				messages: [{ id: "m1", role: "user", content: "hi agui" }],
				tools: [],
				context: [],
				state: {},
				forwardedProps: {},
			}),
		});
		expect(agui.status).toBe(200);
		await agui.text();
		const aguiRequest = await recorder.waitFor(named("POST /agui/v1/run"));
		const aguiRun = await recorder.waitFor(
			(span) => span.name === "invoke_agent" && recorder.parentOf(span) === aguiRequest.spanContext().spanId,
		);
		expect(aguiRun.status.code).toBe(SpanStatusCode.UNSET);

		const chat = await fetch(`${server.url}/openai/v1/chat/completions`, {
			method: "POST",
			headers: { "content-type": "application/json" },
			body: JSON.stringify({ model: "faux/echo", messages: [{ role: "user", content: "hi openai" }] }),
		});
		expect(chat.status).toBe(200);
		await chat.json();
		const chatRequest = await recorder.waitFor(named("POST /openai/v1/chat/completions"));
		const chatRun = await recorder.waitFor(
			(span) => span.name === "invoke_agent" && recorder.parentOf(span) === chatRequest.spanContext().spanId,
		);
		const modelCall = await recorder.waitFor(
			(span) => span.name === "chat echo" && recorder.parentOf(span) === chatRun.spanContext().spanId,
		);
		expect(modelCall.attributes["gen_ai.response.finish_reasons"]).toEqual(["stop"]);
	});

	it("pi's POST /api/stream: one chat span under the request", async () => {
		const recorder = recordSpans();
		const server = await start(recorder, { config: { piProxy: "on" } });
		const res = await fetch(`${server.url}/api/stream`, {
			method: "POST",
			headers: { "content-type": "application/json" },
			body: JSON.stringify({
				model: { provider: "faux", id: "echo" },
				context: { messages: [{ role: "user", content: "hi pi", timestamp: Date.now() }] },
			}),
		});
		expect(res.status).toBe(200);
		await res.text();
		const request = await recorder.waitFor(named("POST /api/stream"));
		const chat = await recorder.waitFor(named("chat echo"));
		expect(recorder.parentOf(chat)).toBe(request.spanContext().spanId);
		expect(chat.attributes).toMatchObject({
			"gen_ai.operation.name": "chat",
			"gen_ai.response.finish_reasons": ["stop"],
		});
		expect(recorder.spans().filter(named("invoke_agent"))).toEqual([]);
	});
});
