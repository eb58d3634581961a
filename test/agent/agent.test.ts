import { describe, expect, it } from "vitest";
import { Agent } from "../../src/agent/agent.js";
import type { AgentEvent, AgentMessage, StreamFn } from "../../src/agent/types.js";
import type { AssistantMessage, ImageContent } from "../../src/ai/types.js";
import { assistant, call, coarse, deferred, model, rawStream, scripted, tool, user } from "./support.js";

function agentWith(streamFn: StreamFn, extra: ConstructorParameters<typeof Agent>[0] = {}) {
	const agent = new Agent({ initialState: { model, tools: [tool("echo")], systemPrompt: "sys" }, streamFn, ...extra });
	const events: AgentEvent[] = [];
	agent.subscribe((event) => void events.push(event));
	return { agent, events };
}

describe("Agent defaults and state", () => {
	it("starts empty with the reference defaults", () => {
		const agent = new Agent();
		expect(agent.state.systemPrompt).toBe("");
		expect(agent.state.model.id).toBe("unknown");
		expect(agent.state.thinkingLevel).toBe("off");
		expect(agent.state.tools).toEqual([]);
		expect(agent.state.messages).toEqual([]);
		expect(agent.state.isStreaming).toBe(false);
		expect(agent.state.pendingToolCalls.size).toBe(0);
		expect(agent.transport).toBe("auto");
		expect(agent.toolExecution).toBe("parallel");
		expect(agent.steeringMode).toBe("one-at-a-time");
		expect(agent.followUpMode).toBe("one-at-a-time");
		expect(agent.signal).toBeUndefined();
	});

	it("copies the top-level arrays assigned to state.tools and state.messages (and the initial ones)", () => {
		const initial = [user("a")];
		const agent = new Agent({ initialState: { messages: initial } });
		initial.push(user("b"));
		expect(agent.state.messages).toHaveLength(1);
		const next = [user("x"), user("y")];
		agent.state.messages = next;
		next.pop();
		expect(agent.state.messages).toHaveLength(2);
		agent.state.messages.push(user("z"));
		expect(agent.state.messages).toHaveLength(3);
		const tools = [tool("echo")];
		agent.state.tools = tools;
		tools.pop();
		expect(agent.state.tools).toHaveLength(1);
	});

	it("the default convertToLlm keeps user, assistant and toolResult messages only", async () => {
		const streamFn = scripted([{ content: "ok" }]);
		const agent = new Agent({ initialState: { model }, streamFn });
		agent.state.messages = [{ role: "note", text: "x", timestamp: 1 } as unknown as AgentMessage, user("kept")];
		await agent.prompt("hi");
		expect(streamFn.calls[0]?.context.messages.map((m) => m.role)).toEqual(["user", "user"]);
	});
});

describe("prompt", () => {
	it("runs a prompt, appends every message to state and emits the loop's events", async () => {
		const { agent, events } = agentWith(
			scripted([{ content: [call("echo", { value: "v" }, "c1")] }, { content: "done" }]),
		);
		await agent.prompt("hello");
		expect(agent.state.messages.map((m) => m.role)).toEqual(["user", "assistant", "toolResult", "assistant"]);
		expect(agent.state.messages[0]).toMatchObject({ role: "user", content: [{ type: "text", text: "hello" }] });
		expect(coarse(events)[0]).toBe("agent_start");
		expect(coarse(events).at(-1)).toBe("agent_end");
		expect(agent.state.isStreaming).toBe(false);
		expect(agent.state.streamingMessage).toBeUndefined();
		expect(agent.state.errorMessage).toBeUndefined();
	});

	it("accepts text with images, a message, or a batch of messages", async () => {
		const streamFn = scripted([{ content: "1" }, { content: "2" }, { content: "3" }]);
		const { agent } = agentWith(streamFn);
		const image: ImageContent = { type: "image", data: "AAAA", mimeType: "image/png" };
		await agent.prompt("look", [image]);
		expect(agent.state.messages[0]).toMatchObject({ content: [{ type: "text", text: "look" }, image] });
		await agent.prompt(user("single"));
		await agent.prompt([user("first"), user("second")]);
		expect(agent.state.messages.filter((m) => m.role === "user").map((m: any) => m.content)).toEqual([
			[{ type: "text", text: "look" }, image],
			"single",
			"first",
			"second",
		]);
	});

	it("passes model, reasoning (none when off), session and transport options to the stream function", async () => {
		const streamFn = scripted([{ content: "1" }, { content: "2" }]);
		const { agent } = agentWith(streamFn, {
			sessionId: "sess",
			transport: "sse",
			maxRetryDelayMs: 5,
			thinkingBudgets: { low: 10 },
		});
		await agent.prompt("a");
		agent.state.thinkingLevel = "high";
		await agent.prompt("b");
		expect(streamFn.calls[0]?.options).toMatchObject({
			sessionId: "sess",
			transport: "sse",
			maxRetryDelayMs: 5,
			thinkingBudgets: { low: 10 },
		});
		expect(streamFn.calls[0]?.options?.reasoning).toBeUndefined();
		expect(streamFn.calls[1]?.options?.reasoning).toBe("high");
		expect(streamFn.calls[1]?.context.systemPrompt).toBe("sys");
	});

	it("refuses a second prompt or continue while running, with the reference's wording", async () => {
		const gate = deferred();
		const { agent } = agentWith(scripted([{ content: "slow" }]));
		agent.subscribe(async (event) => {
			if (event.type === "agent_start") await gate.promise;
		});
		const run = agent.prompt("first");
		await expect(agent.prompt("second")).rejects.toThrow(
			"Agent is already processing a prompt. Use steer() or followUp() to queue messages, or wait for completion.",
		);
		await expect(agent.continue()).rejects.toThrow(
			"Agent is already processing. Wait for completion before continuing.",
		);
		expect(agent.state.isStreaming).toBe(true);
		gate.resolve();
		await run;
		expect(agent.state.messages.filter((m) => m.role === "user")).toHaveLength(1);
	});

	it("reduces events into state: streamingMessage while streaming, pendingToolCalls while tools run", async () => {
		const gate = deferred();
		const slow = tool("slow", async () => {
			await gate.promise;
			return { content: [], details: {} };
		});
		const { agent } = agentWith(scripted([{ content: [call("slow", { value: "x" }, "s1")] }, { content: "ok" }]));
		agent.state.tools = [slow];
		const snapshots: string[] = [];
		agent.subscribe((event) => {
			if (event.type === "message_update") {
				expect(agent.state.streamingMessage).toBe(event.message);
			}
			if (event.type === "tool_execution_start") {
				snapshots.push(`pending:${[...agent.state.pendingToolCalls].join(",")}`);
				setImmediate(() => gate.resolve());
			}
			if (event.type === "tool_execution_end") snapshots.push(`pending:${[...agent.state.pendingToolCalls].join(",")}`);
			if (event.type === "message_end") {
				expect(agent.state.streamingMessage).toBeUndefined();
				expect(agent.state.messages.at(-1)).toBe(event.message);
			}
		});
		await agent.prompt("go");
		expect(snapshots).toEqual(["pending:s1", "pending:"]);
	});

	it("beforeToolCall sees state that already includes the assistant message", async () => {
		let lastRole: string | undefined;
		const { agent } = agentWith(scripted([{ content: [call("echo", { value: "x" })] }, { content: "ok" }]));
		agent.beforeToolCall = async () => {
			lastRole = agent.state.messages.at(-1)?.role;
			return undefined;
		};
		await agent.prompt("go");
		expect(lastRole).toBe("assistant");
	});

	it("records the error message of a failed turn", async () => {
		const { agent } = agentWith(scripted([{ content: "partial", stopReason: "error", errorMessage: "HTTP 500" }]));
		await agent.prompt("go");
		expect(agent.state.errorMessage).toBe("HTTP 500");
		expect((agent.state.messages.at(-1) as AssistantMessage).stopReason).toBe("error");
	});
});

describe("listeners and settlement", () => {
	it("awaits listeners in subscription order; idle only after agent_end listeners finish", async () => {
		const order: string[] = [];
		const { agent } = agentWith(scripted([{ content: "ok" }]));
		const release = deferred();
		let signalSeen: AbortSignal | undefined;
		agent.subscribe(async (event, signal) => {
			if (event.type !== "agent_end") return;
			signalSeen = signal;
			order.push("first:start");
			await release.promise;
			order.push("first:end");
		});
		agent.subscribe((event) => {
			if (event.type === "agent_end") order.push("second");
		});
		const run = agent.prompt("go");
		let idle = false;
		const waiting = agent.waitForIdle().then(() => {
			idle = true;
		});
		await new Promise((r) => setImmediate(r));
		while (order.length === 0) await new Promise((r) => setImmediate(r));
		expect(order).toEqual(["first:start"]);
		expect(idle).toBe(false);
		expect(agent.state.isStreaming).toBe(true);
		release.resolve();
		await run;
		await waiting;
		expect(order).toEqual(["first:start", "first:end", "second"]);
		expect(signalSeen).toBeInstanceOf(AbortSignal);
		expect(agent.state.isStreaming).toBe(false);
		await agent.waitForIdle();
	});

	it("a listener's promise on a streamed delta holds the listeners after it and the next event", async () => {
		const partial = assistant([{ type: "text", text: "" }]);
		const final = assistant([{ type: "text", text: "ab" }]);
		const { agent } = agentWith(
			scripted([
				() =>
					rawStream([
						{ type: "start", partial },
						{ type: "text_start", contentIndex: 0, partial },
						{ type: "text_delta", contentIndex: 0, delta: "a", partial },
						{ type: "text_delta", contentIndex: 0, delta: "b", partial },
						{ type: "done", reason: "stop", message: final },
					]),
			]),
		);
		const seen: string[] = [];
		const label = (event: AgentEvent) =>
			event.type === "message_update" && event.assistantMessageEvent.type === "text_delta"
				? `delta:${event.assistantMessageEvent.delta}`
				: event.type;
		const gate = deferred();
		let held = false;
		agent.subscribe((event) => void seen.push(`first ${label(event)}`));
		agent.subscribe((event) => {
			if (label(event) !== "delta:a") return undefined;
			held = true;
			return gate.promise;
		});
		agent.subscribe((event) => void seen.push(`third ${label(event)}`));
		const run = agent.prompt("go");
		while (!held) await new Promise((r) => setImmediate(r));
		for (let i = 0; i < 5; i++) await new Promise((r) => setImmediate(r));
		expect(seen.slice(-2)).toEqual(["third message_update", "first delta:a"]);
		gate.resolve();
		await run;
		const deltas = seen.filter((entry) => entry.includes("delta:"));
		expect(deltas).toEqual(["first delta:a", "third delta:a", "first delta:b", "third delta:b"]);
		expect(seen.at(-1)).toBe("third agent_end");
	});

	it("unsubscribe stops delivery", async () => {
		const { agent } = agentWith(scripted([{ content: "1" }, { content: "2" }]));
		let count = 0;
		const off = agent.subscribe(() => {
			count++;
		});
		await agent.prompt("a");
		const first = count;
		off();
		await agent.prompt("b");
		expect(first).toBeGreaterThan(0);
		expect(count).toBe(first);
	});

	it("a throwing listener fails the run into an error assistant message and agent_end", async () => {
		const { agent, events } = agentWith(scripted([{ content: "ok" }]));
		agent.subscribe((event) => {
			if (event.type === "turn_start") throw new Error("listener broke");
		});
		await agent.prompt("go");
		const last = agent.state.messages.at(-1) as AssistantMessage;
		expect(last).toMatchObject({
			role: "assistant",
			stopReason: "error",
			errorMessage: "listener broke",
			content: [{ type: "text", text: "" }],
		});
		expect(agent.state.errorMessage).toBe("listener broke");
		const end = events.at(-1) as Extract<AgentEvent, { type: "agent_end" }>;
		expect(end.type).toBe("agent_end");
		expect(end.messages).toEqual([last]);
	});
});

describe("failures and abort", () => {
	it("a throwing stream function becomes an error assistant message and agent_end", async () => {
		const { agent, events } = agentWith((() => {
			throw new Error("no network");
		}) as StreamFn);
		await agent.prompt("go");
		expect(agent.state.messages.map((m) => m.role)).toEqual(["user", "assistant"]);
		expect(agent.state.messages[1]).toMatchObject({
			stopReason: "error",
			errorMessage: "no network",
			api: "faux",
			model: "test-model",
		});
		expect(coarse(events).slice(-1)).toEqual(["agent_end"]);
		expect(agent.state.isStreaming).toBe(false);
	});

	it("abort() ends the streaming turn as aborted; a failure after abort is recorded as aborted", async () => {
		const { agent } = agentWith(scripted([{ content: "one two three four five", delayMs: 2 }]));
		agent.subscribe((event) => {
			if (event.type === "message_update" && event.assistantMessageEvent.type === "text_delta") agent.abort();
		});
		await agent.prompt("go");
		expect((agent.state.messages.at(-1) as AssistantMessage).stopReason).toBe("aborted");
		expect(agent.state.errorMessage).toBe("Request was aborted");

		const failing = new Agent({
			initialState: { model },
			streamFn: async (_m, _c, options) => {
				await new Promise((r) => setImmediate(r));
				if (options?.signal?.aborted) throw new Error("cancelled");
				throw new Error("unexpected");
			},
		});
		const run = failing.prompt("go");
		failing.abort();
		await run;
		expect(failing.state.messages.at(-1)).toMatchObject({ stopReason: "aborted", errorMessage: "cancelled" });
	});

	it("abort during a tool: the tool sees the signal, its failure becomes a result, the next call ends aborted", async () => {
		const streamFn = scripted([{ content: [call("wait", { value: "x" }, "w1")] }, { content: "never streamed" }]);
		const waiting = tool("wait", (_id, _params, signal) => {
			return new Promise((_resolve, reject) => {
				signal?.addEventListener("abort", () => reject(new Error("tool aborted")), { once: true });
			});
		});
		const { agent, events } = agentWith(streamFn);
		agent.state.tools = [waiting];
		agent.subscribe((event) => {
			if (event.type === "tool_execution_start") setImmediate(() => agent.abort());
		});
		await agent.prompt("go");
		expect(agent.state.messages.map((m) => m.role)).toEqual(["user", "assistant", "toolResult", "assistant"]);
		expect(agent.state.messages[2]).toMatchObject({ isError: true, content: [{ type: "text", text: "tool aborted" }] });
		expect(agent.state.messages[3]).toMatchObject({ stopReason: "aborted", content: [] });
		expect(coarse(events).slice(-3)).toEqual(["message_end:assistant", "turn_end:0", "agent_end"]);
	});

	it("signal is the active run's abort signal and is cleared after the run", async () => {
		const { agent } = agentWith(scripted([{ content: "ok" }]));
		let during: AbortSignal | undefined;
		agent.subscribe(() => {
			during = agent.signal;
		});
		await agent.prompt("go");
		expect(during).toBeInstanceOf(AbortSignal);
		expect(agent.signal).toBeUndefined();
	});
});

describe("queues and continue", () => {
	it("steer() during a run is injected after the current turn; followUp() after the agent would stop", async () => {
		const streamFn = scripted([
			{ content: [call("echo", { value: "x" })] },
			{ content: "after steer" },
			{ content: "after follow-up" },
		]);
		const { agent, events } = agentWith(streamFn);
		agent.subscribe((event) => {
			if (event.type === "tool_execution_start") {
				agent.followUp(user("follow"));
				agent.steer(user("steer"));
			}
		});
		await agent.prompt("go");
		const userTexts = events
			.filter((e) => e.type === "message_end" && e.message.role === "user")
			.map((e: any) => (typeof e.message.content === "string" ? e.message.content : e.message.content[0].text));
		expect(userTexts).toEqual(["go", "steer", "follow"]);
		expect(streamFn.calls).toHaveLength(3);
		expect(agent.hasQueuedMessages()).toBe(false);
	});

	it("one-at-a-time drains one message per poll, all drains everything", async () => {
		const oneByOne = scripted([{ content: "1" }, { content: "2" }, { content: "3" }]);
		const { agent } = agentWith(oneByOne);
		agent.followUp(user("f1"));
		agent.followUp(user("f2"));
		expect(agent.hasQueuedMessages()).toBe(true);
		await agent.prompt("go");
		expect(oneByOne.calls).toHaveLength(3);

		const all = scripted([{ content: "1" }, { content: "2" }]);
		const second = agentWith(all, { followUpMode: "all" }).agent;
		second.followUp(user("f1"));
		second.followUp(user("f2"));
		await second.prompt("go");
		expect(all.calls).toHaveLength(2);
		expect(all.calls[1]?.context.messages.map((m: any) => m.content)).toEqual([
			[{ type: "text", text: "go" }],
			expect.anything(),
			"f1",
			"f2",
		]);
		second.steeringMode = "all";
		expect(second.steeringMode).toBe("all");
	});

	it("clear*Queue and reset drop queued messages; reset clears the transcript", async () => {
		const { agent } = agentWith(scripted([{ content: "ok" }]));
		agent.steer(user("s"));
		agent.clearSteeringQueue();
		expect(agent.hasQueuedMessages()).toBe(false);
		agent.followUp(user("f"));
		expect(agent.hasQueuedMessages()).toBe(true);
		agent.clearFollowUpQueue();
		expect(agent.hasQueuedMessages()).toBe(false);
		agent.steer(user("s"));
		agent.followUp(user("f"));
		agent.clearAllQueues();
		expect(agent.hasQueuedMessages()).toBe(false);
		await agent.prompt("go");
		agent.steer(user("s"));
		agent.reset();
		expect(agent.state.messages).toEqual([]);
		expect(agent.hasQueuedMessages()).toBe(false);
		expect(agent.state.errorMessage).toBeUndefined();
	});

	it("continue() throws without messages, and after an assistant message with empty queues", async () => {
		const { agent } = agentWith(scripted([{ content: "ok" }]));
		await expect(agent.continue()).rejects.toThrow("No messages to continue from");
		await agent.prompt("go");
		await expect(agent.continue()).rejects.toThrow("Cannot continue from message role: assistant");
	});

	it("continue() from a user message resumes without re-emitting it", async () => {
		const streamFn = scripted([{ content: "answer" }]);
		const { agent, events } = agentWith(streamFn);
		agent.state.messages = [user("pending question")];
		await agent.continue();
		expect(coarse(events)).toEqual([
			"agent_start",
			"turn_start",
			"message_start:assistant",
			"message_end:assistant",
			"turn_end:0",
			"agent_end",
		]);
		expect(agent.state.messages.map((m) => m.role)).toEqual(["user", "assistant"]);
		expect(streamFn.calls[0]?.context.messages).toHaveLength(1);
	});

	it("continue() after an assistant message runs queued steering, skipping the initial steering poll", async () => {
		const streamFn = scripted([{ content: "first" }, { content: "second" }, { content: "third" }]);
		const { agent, events } = agentWith(streamFn);
		agent.state.messages = [user("q"), assistant([{ type: "text", text: "a" }])];
		agent.steer(user("s1"));
		agent.steer(user("s2"));
		await agent.continue();
		// s1 runs as the prompt; s2 is not taken by the initial poll but after the first turn.
		expect(streamFn.calls[0]?.context.messages.map((m: any) => m.content)).toEqual(["q", expect.anything(), "s1"]);
		expect(streamFn.calls[1]?.context.messages.at(-1)).toMatchObject({ content: "s2" });
		expect(coarse(events).slice(0, 4)).toEqual(["agent_start", "turn_start", "message_start:user", "message_end:user"]);
		expect(streamFn.calls).toHaveLength(2);
	});

	it("continue() after an assistant message runs queued follow-ups when no steering is queued", async () => {
		const streamFn = scripted([{ content: "first" }, { content: "second" }]);
		const { agent } = agentWith(streamFn);
		agent.state.messages = [user("q"), assistant([{ type: "text", text: "a" }])];
		agent.followUp(user("f1"));
		agent.steeringMode = "all";
		await agent.continue();
		expect(streamFn.calls[0]?.context.messages.at(-1)).toMatchObject({ content: "f1" });
		expect(agent.state.messages.map((m) => m.role)).toEqual(["user", "assistant", "user", "assistant"]);
	});

	it("runs on a snapshot: edits to state during a run do not change the run's context", async () => {
		const streamFn = scripted([{ content: [call("echo", { value: "x" })] }, { content: "ok" }]);
		const { agent } = agentWith(streamFn);
		agent.subscribe((event) => {
			if (event.type === "tool_execution_start") agent.state.tools = [];
		});
		await agent.prompt("go");
		expect(agent.state.messages[2]).toMatchObject({ role: "toolResult", isError: false });
	});
});
