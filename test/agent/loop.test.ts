import { describe, expect, it } from "vitest";
import { agentLoop, agentLoopContinue, runAgentLoop, runAgentLoopContinue } from "../../src/agent/loop.js";
import type { AgentContext, AgentEvent, AgentLoopConfig, AgentMessage } from "../../src/agent/types.js";
import type { AssistantMessage, Message } from "../../src/ai/types.js";
import { assistant, call, coarse, identity, model, rawStream, scripted, tool, trace, user } from "./support.js";

function config(extra: Partial<AgentLoopConfig> = {}): AgentLoopConfig {
	return { model, convertToLlm: identity, ...extra };
}

function context(messages: AgentMessage[] = [], tools = [tool("echo")]): AgentContext {
	return { systemPrompt: "be brief", messages, tools };
}

async function run(
	prompts: AgentMessage[],
	ctx: AgentContext,
	cfg: AgentLoopConfig,
	streamFn: ReturnType<typeof scripted>,
	signal?: AbortSignal,
) {
	const events: AgentEvent[] = [];
	const messages = await runAgentLoop(prompts, ctx, cfg, (event) => void events.push(event), signal, streamFn);
	return { events, messages };
}

describe("prompt run", () => {
	it("emits agent_start, turn_start, the prompts, the streamed assistant message, turn_end, agent_end", async () => {
		const streamFn = scripted([{ content: "hello there" }]);
		const ctx = context([user("earlier")]);
		const { events, messages } = await run([user("hi")], ctx, config(), streamFn);
		expect(trace(events)).toEqual([
			"agent_start",
			"turn_start",
			"message_start:user",
			"message_end:user",
			"message_start:assistant",
			"update:text_start",
			"update:text_delta",
			"update:text_delta",
			"update:text_end",
			"message_end:assistant",
			"turn_end:0",
			"agent_end",
		]);
		expect(messages.map((m) => m.role)).toEqual(["user", "assistant"]);
		const end = events.at(-1) as Extract<AgentEvent, { type: "agent_end" }>;
		expect(end.messages).toBe(messages);
		// The run works on a copy: the caller's array is untouched.
		expect(ctx.messages).toHaveLength(1);
		// The model saw the earlier message, the prompt, the system prompt and the tools.
		expect(streamFn.calls[0]?.context.messages.map((m) => m.role)).toEqual(["user", "user"]);
		expect(streamFn.calls[0]?.context.systemPrompt).toBe("be brief");
		expect(streamFn.calls[0]?.context.tools?.map((t) => t.name)).toEqual(["echo"]);
	});

	it("message_update carries the protocol event and a shallow copy of its partial", async () => {
		const streamFn = scripted([{ content: "a b" }]);
		const { events } = await run([user("hi")], context(), config(), streamFn);
		const updates = events.filter((e) => e.type === "message_update");
		expect(updates).toHaveLength(4);
		for (const update of updates) {
			const partial =
				update.assistantMessageEvent.type === "done" ? undefined : (update.assistantMessageEvent as any).partial;
			expect(update.message).not.toBe(partial);
			expect(update.message).toEqual(partial);
		}
		const start = events.find((e) => e.type === "message_start" && e.message.role === "assistant") as any;
		expect(start.message.content).toEqual([]);
		const end = events.find((e) => e.type === "message_end" && e.message.role === "assistant") as any;
		expect(end.message.content).toEqual([{ type: "text", text: "a b" }]);
		expect(end.message.stopReason).toBe("stop");
	});

	it("gives a stream without a start event a message_start before message_end", async () => {
		const final = assistant([{ type: "text", text: "late" }]);
		const streamFn = scripted([
			() =>
				rawStream([
					{ type: "text_delta", contentIndex: 0, delta: "x", partial: final },
					{ type: "done", reason: "stop", message: final },
				]),
		]);
		const { events, messages } = await run([user("hi")], context(), config(), streamFn);
		expect(trace(events)).toEqual([
			"agent_start",
			"turn_start",
			"message_start:user",
			"message_end:user",
			"message_start:assistant",
			"message_end:assistant",
			"turn_end:0",
			"agent_end",
		]);
		expect(messages[1]).toBe(final);
		const start = events[4] as Extract<AgentEvent, { type: "message_start" }>;
		expect(start.message).not.toBe(final);
		expect(start.message).toEqual(final);
	});

	it("uses result() when the stream ends without a terminal event", async () => {
		const final = assistant([{ type: "text", text: "ended" }]);
		const streamFn = scripted([
			() => {
				const stream = rawStream([{ type: "start", partial: assistant([]) }]);
				stream.end(final);
				return stream;
			},
		]);
		const { events, messages } = await run([user("hi")], context(), config(), streamFn);
		expect(coarse(events)).toContain("message_end:assistant");
		expect(messages[1]).toBe(final);
	});

	for (const stopReason of ["error", "aborted"] as const) {
		it(`ends the run after a ${stopReason} turn: turn_end without tool results, then agent_end`, async () => {
			const streamFn = scripted([
				{ content: [call("echo", { value: "x" })], stopReason, errorMessage: "boom" },
				{ content: "never" },
			]);
			let followUpPolls = 0;
			const { events, messages } = await run(
				[user("hi")],
				context(),
				config({
					getFollowUpMessages: async () => {
						followUpPolls++;
						return [user("more")];
					},
				}),
				streamFn,
			);
			expect(coarse(events)).toEqual([
				"agent_start",
				"turn_start",
				"message_start:user",
				"message_end:user",
				"message_start:assistant",
				"message_end:assistant",
				"turn_end:0",
				"agent_end",
			]);
			const last = messages.at(-1) as AssistantMessage;
			expect(last.stopReason).toBe(stopReason);
			expect(last.errorMessage).toBe("boom");
			expect(streamFn.calls).toHaveLength(1);
			expect(followUpPolls).toBe(0);
		});
	}

	it("agentLoop returns the events as a stream whose result() is the new messages", async () => {
		const streamFn = scripted([{ content: "ok" }]);
		const stream = agentLoop([user("hi")], context(), config(), undefined, streamFn);
		const events: AgentEvent[] = [];
		for await (const event of stream) events.push(event);
		expect(events[0]?.type).toBe("agent_start");
		expect(events.at(-1)?.type).toBe("agent_end");
		const result = await stream.result();
		expect(result.map((m) => m.role)).toEqual(["user", "assistant"]);
	});

	it("agentLoop ends its stream with an error message when a callback breaks its contract", async () => {
		const stream = agentLoop(
			[user("hi")],
			context(),
			config({
				convertToLlm: () => {
					throw new Error("convert failed");
				},
			}),
			undefined,
			scripted([{ content: "ok" }]),
		);
		const events: AgentEvent[] = [];
		for await (const event of stream) events.push(event);
		const end = events.at(-1) as Extract<AgentEvent, { type: "agent_end" }>;
		expect(end.type).toBe("agent_end");
		expect((end.messages[0] as AssistantMessage).errorMessage).toBe("convert failed");
		expect((end.messages[0] as AssistantMessage).stopReason).toBe("error");
	});
});

describe("model-call boundary", () => {
	it("runs transformContext then convertToLlm once per call and sends the converted messages", async () => {
		const order: string[] = [];
		const note = { role: "note", text: "ui only", timestamp: 1 } as unknown as AgentMessage;
		const streamFn = scripted([{ content: [call("echo", { value: "a" })] }, { content: "done" }]);
		const signal = new AbortController().signal;
		let transformSignal: AbortSignal | undefined;
		await run(
			[user("hi")],
			context([note]),
			config({
				transformContext: async (messages, s) => {
					order.push(`transform:${messages.length}`);
					transformSignal = s;
					return messages.slice(1);
				},
				convertToLlm: (messages) => {
					order.push(`convert:${messages.length}`);
					return messages.filter((m): m is Message => m.role !== ("note" as string));
				},
			}),
			streamFn,
			signal,
		);
		// Second call: note, user, assistant, toolResult → transform drops the note.
		expect(order).toEqual(["transform:2", "convert:1", "transform:4", "convert:3"]);
		expect(transformSignal).toBe(signal);
		expect(streamFn.calls[1]?.context.messages.map((m) => m.role)).toEqual(["user", "assistant", "toolResult"]);
	});

	it("passes the config through to the stream function with the run's signal", async () => {
		const streamFn = scripted([{ content: "ok" }]);
		const signal = new AbortController().signal;
		await run(
			[user("hi")],
			context(),
			config({ reasoning: "high", sessionId: "s1", apiKey: "static" }),
			streamFn,
			signal,
		);
		const options = streamFn.calls[0]?.options;
		expect(options?.reasoning).toBe("high");
		expect(options?.sessionId).toBe("s1");
		expect(options?.apiKey).toBe("static");
		expect(options?.signal).toBe(signal);
	});

	it("getApiKey(provider) wins over apiKey, which remains the fallback", async () => {
		const providers: string[] = [];
		const keys = ["dynamic", undefined];
		const streamFn = scripted([{ content: [call("echo", { value: "a" })] }, { content: "ok" }]);
		await run(
			[user("hi")],
			context(),
			config({
				apiKey: "static",
				getApiKey: async (provider) => {
					providers.push(provider);
					return keys.shift();
				},
			}),
			streamFn,
		);
		expect(providers).toEqual(["test-provider", "test-provider"]);
		expect(streamFn.calls.map((c) => c.options?.apiKey)).toEqual(["dynamic", "static"]);
	});

	it("replaces the partial in the context as it streams and leaves the final message there", async () => {
		const seen: AgentMessage[][] = [];
		const streamFn = scripted([
			{ content: [call("echo", { value: "a" })] },
			(ctx) => {
				seen.push([...ctx.messages]);
				return rawStream([{ type: "done", reason: "stop", message: assistant([{ type: "text", text: "ok" }]) }]);
			},
		]);
		const ctx = context();
		let beforeCallContext: AgentMessage[] | undefined;
		await run(
			[user("hi")],
			ctx,
			config({
				beforeToolCall: async ({ context: c }) => {
					beforeCallContext = [...c.messages];
					return undefined;
				},
			}),
			streamFn,
		);
		// The tool hook saw the final assistant message (not a partial) at the end of the context.
		const last = beforeCallContext?.at(-1) as AssistantMessage;
		expect(last.role).toBe("assistant");
		expect(last.content).toEqual([call("echo", { value: "a" })]);
		expect(last.stopReason).toBe("toolUse");
		expect(seen[0]?.map((m) => m.role)).toEqual(["user", "assistant", "toolResult"]);
	});
});

describe("tool batches", () => {
	it("runs a tool call and feeds its result to the next turn", async () => {
		const streamFn = scripted([{ content: [call("echo", { value: "a" }, "c1")] }, { content: "done" }]);
		const { events, messages } = await run([user("hi")], context(), config(), streamFn);
		expect(coarse(events)).toEqual([
			"agent_start",
			"turn_start",
			"message_start:user",
			"message_end:user",
			"message_start:assistant",
			"message_end:assistant",
			"tool_execution_start:c1",
			"tool_execution_end:c1",
			"message_start:toolResult",
			"message_end:toolResult",
			"turn_end:1",
			"turn_start",
			"message_start:assistant",
			"message_end:assistant",
			"turn_end:0",
			"agent_end",
		]);
		const start = events.find((e) => e.type === "tool_execution_start") as any;
		expect(start).toMatchObject({ toolCallId: "c1", toolName: "echo", args: { value: "a" } });
		const end = events.find((e) => e.type === "tool_execution_end") as any;
		expect(end).toMatchObject({
			toolCallId: "c1",
			toolName: "echo",
			isError: false,
			result: { content: [{ type: "text", text: "echo:a" }] },
		});
		expect(messages[2]).toMatchObject({
			role: "toolResult",
			toolCallId: "c1",
			toolName: "echo",
			content: [{ type: "text", text: "echo:a" }],
			details: {},
			isError: false,
		});
		const turnEnd = events.find((e) => e.type === "turn_end") as any;
		expect(turnEnd.toolResults).toEqual([messages[2]]);
		expect(turnEnd.message).toBe(messages[1]);
	});

	it("turns an unknown tool into an error result and goes on", async () => {
		const streamFn = scripted([{ content: [call("nope", {}, "c1")] }, { content: "sorry" }]);
		const { messages } = await run([user("hi")], context(), config(), streamFn);
		expect(messages[2]).toMatchObject({
			role: "toolResult",
			isError: true,
			content: [{ type: "text", text: "Tool nope not found" }],
		});
		expect(streamFn.calls).toHaveLength(2);
	});

	it("turns a validation failure into an error result naming the path, without executing", async () => {
		let executed = false;
		const echo = tool("echo", async () => {
			executed = true;
			return { content: [], details: {} };
		});
		const streamFn = scripted([{ content: [call("echo", { value: { nested: true } }, "c1")] }, { content: "retry" }]);
		const { events, messages } = await run([user("hi")], context([], [echo]), config(), streamFn);
		expect(executed).toBe(false);
		const result = messages[2] as any;
		expect(result.isError).toBe(true);
		expect(result.content[0].text).toContain('Validation failed for tool "echo"');
		expect(result.content[0].text).toContain("value: Expected string");
		expect(coarse(events)).toContain("tool_execution_end:c1");
	});

	it("coerces arguments before execution and applies prepareArguments first", async () => {
		let received: unknown;
		const echo = tool(
			"echo",
			async (_id, params) => {
				received = params;
				return { content: [], details: {} };
			},
			{ prepareArguments: (args: any) => ({ value: args.legacy }) },
		);
		const streamFn = scripted([{ content: [call("echo", { legacy: 42 }, "c1")] }, { content: "ok" }]);
		const { events } = await run([user("hi")], context([], [echo]), config(), streamFn);
		expect(received).toEqual({ value: "42" });
		// Events report the arguments the model sent.
		expect((events.find((e) => e.type === "tool_execution_start") as any).args).toEqual({ legacy: 42 });
	});

	it("turns a throwing tool into an error result and goes on", async () => {
		const echo = tool("echo", async () => {
			throw new Error("disk full");
		});
		const streamFn = scripted([{ content: [call("echo", { value: "a" }, "c1")] }, { content: "sorry" }]);
		const { events, messages } = await run([user("hi")], context([], [echo]), config(), streamFn);
		expect(messages[2]).toMatchObject({ isError: true, content: [{ type: "text", text: "disk full" }], details: {} });
		expect((events.find((e) => e.type === "tool_execution_end") as any).isError).toBe(true);
		expect(streamFn.calls).toHaveLength(2);
	});

	it("beforeToolCall can block (with or without a reason) and a throwing hook becomes an error result", async () => {
		let executions = 0;
		const echo = tool("echo", async () => {
			executions++;
			return { content: [], details: {} };
		});
		const seenArgs: unknown[] = [];
		const streamFn = scripted([
			{
				content: [
					call("echo", { value: "a" }, "c1"),
					call("echo", { value: "b" }, "c2"),
					call("echo", { value: "c" }, "c3"),
				],
			},
			{ content: "ok" },
		]);
		const { messages } = await run(
			[user("hi")],
			context([], [echo]),
			config({
				beforeToolCall: async ({ toolCall, args, assistantMessage }) => {
					seenArgs.push(args);
					expect(assistantMessage.content).toHaveLength(3);
					if (toolCall.id === "c1") return { block: true, reason: "not allowed" };
					if (toolCall.id === "c2") return { block: true };
					throw new Error("hook broke");
				},
			}),
			streamFn,
		);
		expect(executions).toBe(0);
		expect(seenArgs).toEqual([{ value: "a" }, { value: "b" }, { value: "c" }]);
		expect(messages.slice(2, 5).map((m: any) => [m.isError, m.content[0].text])).toEqual([
			[true, "not allowed"],
			[true, "Tool execution was blocked"],
			[true, "hook broke"],
		]);
	});

	it("afterToolCall replaces fields one by one; a throwing afterToolCall becomes an error result", async () => {
		const echo = tool("echo", async (_id, params) => ({
			content: [{ type: "text", text: "original" }],
			details: { keep: params.value },
		}));
		const streamFn = scripted([
			{
				content: [
					call("echo", { value: "a" }, "c1"),
					call("echo", { value: "b" }, "c2"),
					call("echo", { value: "c" }, "c3"),
				],
			},
			{ content: "ok" },
		]);
		const contexts: any[] = [];
		const { messages } = await run(
			[user("hi")],
			context([], [echo]),
			config({
				afterToolCall: async (ctx) => {
					contexts.push({ id: ctx.toolCall.id, isError: ctx.isError, args: ctx.args, result: ctx.result });
					if (ctx.toolCall.id === "c1") return { isError: true, details: { replaced: true } };
					if (ctx.toolCall.id === "c2") return undefined;
					throw new Error("after broke");
				},
			}),
			streamFn,
		);
		expect(contexts[0]).toEqual({
			id: "c1",
			isError: false,
			args: { value: "a" },
			result: { content: [{ type: "text", text: "original" }], details: { keep: "a" } },
		});
		expect(messages[2]).toMatchObject({
			isError: true,
			content: [{ type: "text", text: "original" }],
			details: { replaced: true },
		});
		expect(messages[3]).toMatchObject({
			isError: false,
			content: [{ type: "text", text: "original" }],
			details: { keep: "b" },
		});
		expect(messages[4]).toMatchObject({ isError: true, content: [{ type: "text", text: "after broke" }], details: {} });
	});

	it("ends the run after a batch only when every finalized result asks to terminate", async () => {
		const stop = tool("stop", async () => ({ content: [], details: {}, terminate: true }));
		const go = tool("go", async () => ({ content: [], details: {} }));
		const allStop = scripted([
			{ content: [call("stop", { value: "1" }, "a"), call("stop", { value: "2" }, "b")] },
			{ content: "never" },
		]);
		const first = await run([user("hi")], context([], [stop, go]), config(), allStop);
		expect(allStop.calls).toHaveLength(1);
		expect(coarse(first.events).slice(-2)).toEqual(["turn_end:2", "agent_end"]);

		const mixed = scripted([
			{ content: [call("stop", { value: "1" }, "a"), call("go", { value: "2" }, "b")] },
			{ content: "next" },
		]);
		await run([user("hi")], context([], [stop, go]), config(), mixed);
		expect(mixed.calls).toHaveLength(2);

		// afterToolCall can set the hint too; an error result (unknown tool) does not carry it.
		const viaHook = scripted([{ content: [call("go", { value: "1" }, "a")] }, { content: "never" }]);
		await run(
			[user("hi")],
			context([], [stop, go]),
			config({ afterToolCall: async () => ({ terminate: true }) }),
			viaHook,
		);
		expect(viaHook.calls).toHaveLength(1);
		const unknown = scripted([
			{ content: [call("stop", { value: "1" }, "a"), call("missing", {}, "b")] },
			{ content: "next" },
		]);
		await run([user("hi")], context([], [stop, go]), config(), unknown);
		expect(unknown.calls).toHaveLength(2);
	});

	it("parallel: prepares in order, emits tool_execution_end in completion order, result messages in source order", async () => {
		const gates = new Map<string, () => void>();
		const slow = tool(
			"slow",
			(id) =>
				new Promise((resolve) => gates.set(id, () => resolve({ content: [{ type: "text", text: id }], details: {} }))),
		);
		const streamFn = scripted([
			{
				content: [
					call("slow", { value: "1" }, "a"),
					call("slow", { value: "2" }, "b"),
					call("slow", { value: "3" }, "c"),
				],
			},
			{ content: "ok" },
		]);
		const events: AgentEvent[] = [];
		const before: string[] = [];
		const sink = (event: AgentEvent) => {
			events.push(event);
			// Release in the order c, a, b once all three are running.
			if (event.type === "tool_execution_start" && event.toolCallId === "c") setImmediate(() => gates.get("c")?.());
			if (event.type === "tool_execution_end" && event.toolCallId === "c") setImmediate(() => gates.get("a")?.());
			if (event.type === "tool_execution_end" && event.toolCallId === "a") setImmediate(() => gates.get("b")?.());
		};
		const messages = await runAgentLoop(
			[user("hi")],
			context([], [slow]),
			config({ beforeToolCall: async ({ toolCall }) => void before.push(toolCall.id) }),
			sink,
			undefined,
			streamFn,
		);
		expect(before).toEqual(["a", "b", "c"]);
		expect(coarse(events).filter((e) => e.startsWith("tool_") || e.includes("toolResult"))).toEqual([
			"tool_execution_start:a",
			"tool_execution_start:b",
			"tool_execution_start:c",
			"tool_execution_end:c",
			"tool_execution_end:a",
			"tool_execution_end:b",
			"message_start:toolResult",
			"message_end:toolResult",
			"message_start:toolResult",
			"message_end:toolResult",
			"message_start:toolResult",
			"message_end:toolResult",
		]);
		expect(messages.filter((m) => m.role === "toolResult").map((m: any) => m.toolCallId)).toEqual(["a", "b", "c"]);
	});

	it("parallel: a call that fails preparation ends at once, before the others run", async () => {
		const streamFn = scripted([
			{ content: [call("echo", { value: "1" }, "a"), call("missing", {}, "b")] },
			{ content: "ok" },
		]);
		const { events } = await run([user("hi")], context(), config(), streamFn);
		expect(coarse(events).filter((e) => e.startsWith("tool_"))).toEqual([
			"tool_execution_start:a",
			"tool_execution_start:b",
			"tool_execution_end:b",
			"tool_execution_end:a",
		]);
	});

	const sequentialOrder = [
		"tool_execution_start:a",
		"tool_execution_end:a",
		"message_start:toolResult",
		"message_end:toolResult",
		"tool_execution_start:b",
		"tool_execution_end:b",
		"message_start:toolResult",
		"message_end:toolResult",
	];

	it("sequential by config: each call is prepared, executed, finalized and emitted before the next", async () => {
		let running = 0;
		let maxRunning = 0;
		const busy = tool("busy", async () => {
			running++;
			maxRunning = Math.max(maxRunning, running);
			await new Promise((r) => setImmediate(r));
			running--;
			return { content: [], details: {} };
		});
		const streamFn = scripted([
			{ content: [call("busy", { value: "1" }, "a"), call("busy", { value: "2" }, "b")] },
			{ content: "ok" },
		]);
		const { events } = await run([user("hi")], context([], [busy]), config({ toolExecution: "sequential" }), streamFn);
		expect(coarse(events).filter((e) => e.startsWith("tool_") || e.includes("toolResult"))).toEqual(sequentialOrder);
		expect(maxRunning).toBe(1);
	});

	it("sequential when any called tool says executionMode: sequential", async () => {
		const seq = tool("seq", undefined, { executionMode: "sequential" });
		const streamFn = scripted([
			{ content: [call("echo", { value: "1" }, "a"), call("seq", { value: "2" }, "b")] },
			{ content: "ok" },
		]);
		const { events } = await run([user("hi")], context([], [tool("echo"), seq]), config(), streamFn);
		expect(coarse(events).filter((e) => e.startsWith("tool_") || e.includes("toolResult"))).toEqual(sequentialOrder);
	});

	it("onUpdate becomes tool_execution_update, awaited before tool_execution_end", async () => {
		const progress = tool("progress", async (_id, _params, _signal, onUpdate) => {
			onUpdate?.({ content: [{ type: "text", text: "50%" }], details: { pct: 50 } });
			onUpdate?.({ content: [{ type: "text", text: "90%" }], details: { pct: 90 } });
			return { content: [{ type: "text", text: "done" }], details: {} };
		});
		const streamFn = scripted([{ content: [call("progress", { value: "x" }, "p")] }, { content: "ok" }]);
		const order: string[] = [];
		await runAgentLoop(
			[user("hi")],
			context([], [progress]),
			config(),
			async (event) => {
				if (event.type === "tool_execution_update") {
					// A slow sink: the end event must still come after both updates were handled.
					await new Promise((r) => setImmediate(r));
					order.push(`update:${event.partialResult.details.pct}:${JSON.stringify(event.args)}`);
				}
				if (event.type === "tool_execution_end") order.push("end");
			},
			undefined,
			streamFn,
		);
		expect(order).toEqual(['update:50:{"value":"x"}', 'update:90:{"value":"x"}', "end"]);
	});

	it("passes the run's signal to tools and hooks", async () => {
		const signal = new AbortController().signal;
		const seen: (AbortSignal | undefined)[] = [];
		const echo = tool("echo", async (_id, _p, s) => {
			seen.push(s);
			return { content: [], details: {} };
		});
		const streamFn = scripted([{ content: [call("echo", { value: "a" })] }, { content: "ok" }]);
		await run(
			[user("hi")],
			context([], [echo]),
			config({
				beforeToolCall: async (_c, s) => void seen.push(s),
				afterToolCall: async (_c, s) => void seen.push(s),
			}),
			streamFn,
			signal,
		);
		expect(seen).toEqual([signal, signal, signal]);
	});
});

describe("steering, follow-ups and stopping", () => {
	it("polls steering once before the first model call and injects it after the prompts", async () => {
		const queue: AgentMessage[][] = [[user("steer-early")]];
		const streamFn = scripted([{ content: "ok" }]);
		const { events, messages } = await run(
			[user("hi")],
			context(),
			config({ getSteeringMessages: async () => queue.shift() ?? [] }),
			streamFn,
		);
		expect(coarse(events)).toEqual([
			"agent_start",
			"turn_start",
			"message_start:user",
			"message_end:user",
			"message_start:user",
			"message_end:user",
			"message_start:assistant",
			"message_end:assistant",
			"turn_end:0",
			"agent_end",
		]);
		expect(messages.map((m: any) => m.content)).toEqual(["hi", "steer-early", expect.anything()]);
		expect(streamFn.calls[0]?.context.messages).toHaveLength(2);
	});

	it("polls steering after turn_end; the whole tool batch still runs and the message opens the next turn", async () => {
		const polls: string[] = [];
		let steeringCalls = 0;
		const streamFn = scripted([
			{ content: [call("echo", { value: "1" }, "a"), call("echo", { value: "2" }, "b")] },
			{ content: "ok" },
		]);
		const events: AgentEvent[] = [];
		await runAgentLoop(
			[user("hi")],
			context(),
			config({
				getSteeringMessages: async () => {
					steeringCalls++;
					polls.push(`steer-poll-after:${coarse(events).at(-1)}`);
					return steeringCalls === 2 ? [user("change course")] : [];
				},
			}),
			(e) => void events.push(e),
			undefined,
			streamFn,
		);
		expect(polls[0]).toBe("steer-poll-after:message_end:user");
		expect(polls[1]).toBe("steer-poll-after:turn_end:2");
		expect(coarse(events).slice(10)).toEqual([
			"message_start:toolResult",
			"message_end:toolResult",
			"message_start:toolResult",
			"message_end:toolResult",
			"turn_end:2",
			"turn_start",
			"message_start:user",
			"message_end:user",
			"message_start:assistant",
			"message_end:assistant",
			"turn_end:0",
			"agent_end",
		]);
		expect(streamFn.calls[1]?.context.messages.map((m) => m.role)).toEqual([
			"user",
			"assistant",
			"toolResult",
			"toolResult",
			"user",
		]);
	});

	it("polls follow-ups only when no tool calls and no steering remain, then runs another turn", async () => {
		const log: string[] = [];
		const steering: AgentMessage[][] = [[], [], [user("steer")], []];
		const followUps: AgentMessage[][] = [[user("follow")], []];
		const streamFn = scripted([
			{ content: [call("echo", { value: "1" }, "a")] },
			{ content: "plain answer" },
			{ content: "after steer" },
			{ content: "after follow" },
		]);
		const events: AgentEvent[] = [];
		await runAgentLoop(
			[user("hi")],
			context(),
			config({
				getSteeringMessages: async () => {
					log.push("steer");
					return steering.shift() ?? [];
				},
				getFollowUpMessages: async () => {
					log.push("follow");
					return followUps.shift() ?? [];
				},
			}),
			(e) => void events.push(e),
			undefined,
			streamFn,
		);
		// Initial poll; after the tool turn (tool calls left: no follow-up poll); after the plain answer
		// (steering arrived: no follow-up poll); after the steered turn (nothing left: follow-ups polled).
		expect(log).toEqual(["steer", "steer", "steer", "steer", "follow", "steer", "follow"]);
		expect(streamFn.calls).toHaveLength(4);
		const userContents = events
			.filter((e) => e.type === "message_start" && e.message.role === "user")
			.map((e: any) => e.message.content);
		expect(userContents).toEqual(["hi", "steer", "follow"]);
		// A follow-up opens its turn with turn_start then the injected message.
		const c = coarse(events);
		const followAt = c.lastIndexOf("message_start:user");
		expect(c[followAt - 1]).toBe("turn_start");
		expect(c[followAt - 2]).toBe("turn_end:0");
	});

	it("shouldStopAfterTurn true ends the run after turn_end without polling the queues", async () => {
		let steerPolls = 0;
		let followPolls = 0;
		const seen: any[] = [];
		const streamFn = scripted([{ content: [call("echo", { value: "1" }, "a")] }, { content: "never" }]);
		const { events, messages } = await run(
			[user("hi")],
			context(),
			config({
				getSteeringMessages: async () => {
					steerPolls++;
					return [];
				},
				getFollowUpMessages: async () => {
					followPolls++;
					return [user("x")];
				},
				shouldStopAfterTurn: async (ctx) => {
					seen.push({ ...ctx, newMessages: [...ctx.newMessages], contextLength: ctx.context.messages.length });
					return true;
				},
			}),
			streamFn,
		);
		expect(steerPolls).toBe(1);
		expect(followPolls).toBe(0);
		expect(streamFn.calls).toHaveLength(1);
		expect(coarse(events).slice(-2)).toEqual(["turn_end:1", "agent_end"]);
		expect(seen[0].message).toBe(messages[1]);
		expect(seen[0].toolResults).toEqual([messages[2]]);
		expect(seen[0].newMessages).toEqual(messages);
		expect(seen[0].contextLength).toBe(3);
	});

	it("shouldStopAfterTurn false lets the run go on", async () => {
		let calls = 0;
		const streamFn = scripted([{ content: [call("echo", { value: "1" }, "a")] }, { content: "ok" }]);
		await run(
			[user("hi")],
			context(),
			config({
				shouldStopAfterTurn: () => {
					calls++;
					return false;
				},
			}),
			streamFn,
		);
		expect(calls).toBe(2);
		expect(streamFn.calls).toHaveLength(2);
	});
});

describe("continue runs", () => {
	it("rejects an empty context and one ending with an assistant message", async () => {
		const streamFn = scripted([]);
		expect(() => agentLoopContinue(context([]), config(), undefined, streamFn)).toThrow(
			"Cannot continue: no messages in context",
		);
		expect(() => agentLoopContinue(context([user("a"), assistant([])]), config(), undefined, streamFn)).toThrow(
			"Cannot continue from message role: assistant",
		);
		await expect(runAgentLoopContinue(context([]), config(), () => {}, undefined, streamFn)).rejects.toThrow(
			"Cannot continue: no messages in context",
		);
		expect(streamFn.calls).toHaveLength(0);
	});

	it("emits agent_start and turn_start, no prompt events, returns only new messages and appends to the given array", async () => {
		const streamFn = scripted([{ content: "resumed" }]);
		const ctx = context([user("question")]);
		const events: AgentEvent[] = [];
		const messages = await runAgentLoopContinue(ctx, config(), (e) => void events.push(e), undefined, streamFn);
		expect(coarse(events)).toEqual([
			"agent_start",
			"turn_start",
			"message_start:assistant",
			"message_end:assistant",
			"turn_end:0",
			"agent_end",
		]);
		expect(messages.map((m) => m.role)).toEqual(["assistant"]);
		expect(ctx.messages.map((m) => m.role)).toEqual(["user", "assistant"]);
		expect(streamFn.calls[0]?.context.messages.map((m) => m.role)).toEqual(["user"]);
	});

	it("agentLoopContinue streams the events and resolves to the new messages", async () => {
		const streamFn = scripted([{ content: "resumed" }]);
		const stream = agentLoopContinue(context([user("q")]), config(), undefined, streamFn);
		const types: string[] = [];
		for await (const event of stream) types.push(event.type);
		expect(types[0]).toBe("agent_start");
		expect((await stream.result()).map((m) => m.role)).toEqual(["assistant"]);
	});
});

describe("abort", () => {
	it("an aborted model call ends the run with an aborted assistant message", async () => {
		const controller = new AbortController();
		const streamFn = scripted([{ content: "one two three four five six seven", delayMs: 5 }]);
		const events: AgentEvent[] = [];
		const messages = await runAgentLoop(
			[user("hi")],
			context(),
			config(),
			(event) => {
				events.push(event);
				if (event.type === "message_update" && event.assistantMessageEvent.type === "text_delta") controller.abort();
			},
			controller.signal,
			streamFn,
		);
		const last = messages.at(-1) as AssistantMessage;
		expect(last.stopReason).toBe("aborted");
		expect(last.content).toEqual([{ type: "text", text: "one " }]);
		expect(coarse(events).slice(-3)).toEqual(["message_end:assistant", "turn_end:0", "agent_end"]);
	});
});
