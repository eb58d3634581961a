import { afterEach, describe, expect, it } from "vitest";
import type { AssistantMessageEventStream } from "../../src/ai/event-stream.js";
import {
	type FauxProviderRegistration,
	fauxAssistantMessage,
	fauxText,
	fauxThinking,
	fauxToolCall,
	registerFauxProvider,
	streamScriptedTurn,
} from "../../src/ai/providers/faux.js";
import { getApiProvider } from "../../src/ai/registry.js";
import { streamSimple } from "../../src/ai/stream.js";
import type { AssistantMessageEvent, Context, Model } from "../../src/ai/types.js";

const model: Model<"faux"> = {
	id: "m",
	name: "m",
	api: "faux",
	provider: "faux",
	baseUrl: "",
	reasoning: false,
	input: ["text"],
	cost: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0 },
	contextWindow: 100,
	maxTokens: 10,
};

const context: Context = { messages: [{ role: "user", content: "hello", timestamp: 1 }] };

async function collect(stream: AssistantMessageEventStream): Promise<AssistantMessageEvent[]> {
	const events: AssistantMessageEvent[] = [];
	for await (const event of stream) events.push(event);
	return events;
}

describe("streamScriptedTurn", () => {
	it("streams text one delta per word with the full protocol and growing snapshot partials", async () => {
		const stream = streamScriptedTurn(model, { content: "Hello big world" });
		const events = await collect(stream);
		expect(events.map((e) => e.type)).toEqual([
			"start",
			"text_start",
			"text_delta",
			"text_delta",
			"text_delta",
			"text_end",
			"done",
		]);
		const deltas = events.filter((e) => e.type === "text_delta");
		expect(deltas.map((e) => e.delta)).toEqual(["Hello ", "big ", "world"]);
		expect(deltas.map((e) => (e.partial.content[0] as any).text)).toEqual(["Hello ", "Hello big ", "Hello big world"]);
		expect(events[0]).toMatchObject({
			type: "start",
			partial: { role: "assistant", content: [], api: "faux", model: "m" },
		});
		expect(events[5]).toMatchObject({ type: "text_end", contentIndex: 0, content: "Hello big world" });
		const done = events.at(-1) as Extract<AssistantMessageEvent, { type: "done" }>;
		expect(done.reason).toBe("stop");
		expect(done.message.content).toEqual([{ type: "text", text: "Hello big world" }]);
		expect(done.message.usage.output).toBeGreaterThan(0);
		expect(await stream.result()).toBe(done.message);
	});

	it("streams thinking and tool calls; tool deltas are JSON pieces with arguments growing", async () => {
		const args = { city: "Mexico City", units: "metric" };
		const events = await collect(
			streamScriptedTurn(model, { content: [fauxThinking("let me see"), fauxToolCall("weather", args, { id: "t1" })] }),
		);
		const types = events.map((e) => e.type);
		expect(types.slice(0, 2)).toEqual(["start", "thinking_start"]);
		expect(types).toContain("thinking_end");
		const toolDeltas = events.filter((e) => e.type === "toolcall_delta");
		expect(toolDeltas.length).toBeGreaterThan(2);
		expect(toolDeltas.map((e) => e.delta).join("")).toBe(JSON.stringify(args));
		const seen = toolDeltas.map((e) => JSON.stringify((e.partial.content[1] as any).arguments));
		expect(seen.at(-1)).toBe(JSON.stringify(args));
		expect(toolDeltas.every((e) => e.contentIndex === 1)).toBe(true);
		const end = events.find((e) => e.type === "toolcall_end") as Extract<
			AssistantMessageEvent,
			{ type: "toolcall_end" }
		>;
		expect(end.toolCall).toEqual({ type: "toolCall", id: "t1", name: "weather", arguments: args });
		const done = events.at(-1) as Extract<AssistantMessageEvent, { type: "done" }>;
		expect(done.reason).toBe("toolUse");
		expect(done.message.content[0]).toEqual({ type: "thinking", thinking: "let me see" });
	});

	it("hands out independent snapshots (later deltas do not change earlier partials)", async () => {
		const events = await collect(streamScriptedTurn(model, { content: "a b c" }));
		const first = events.find((e) => e.type === "text_delta") as any;
		expect(first.partial.content[0].text).toBe("a ");
	});

	it("an error turn streams its content and ends with an error event", async () => {
		const stream = streamScriptedTurn(model, {
			content: "partial",
			stopReason: "error",
			errorMessage: "HTTP 529 overloaded",
		});
		const events = await collect(stream);
		const last = events.at(-1) as Extract<AssistantMessageEvent, { type: "error" }>;
		expect(last).toMatchObject({ type: "error", reason: "error" });
		expect(last.error).toMatchObject({
			stopReason: "error",
			errorMessage: "HTTP 529 overloaded",
			content: [{ type: "text", text: "partial" }],
		});
		expect(await stream.result()).toBe(last.error);
	});

	it("abort mid-stream ends with stopReason aborted and the content so far", async () => {
		const controller = new AbortController();
		const stream = streamScriptedTurn(
			model,
			{ content: "one two three four", delayMs: 60_000 },
			{ signal: controller.signal },
		);
		const events: AssistantMessageEvent[] = [];
		for await (const event of stream) {
			events.push(event);
			if (event.type === "text_start") controller.abort();
		}
		const last = events.at(-1) as Extract<AssistantMessageEvent, { type: "error" }>;
		expect(last.reason).toBe("aborted");
		expect(last.error.stopReason).toBe("aborted");
		expect(last.error.errorMessage).toBe("Request was aborted");
		expect(last.error.content).toEqual([{ type: "text", text: "" }]);
	});

	it("an already aborted signal ends at once with an aborted error and no start", async () => {
		const controller = new AbortController();
		controller.abort();
		const events = await collect(streamScriptedTurn(model, { content: "x" }, { signal: controller.signal }));
		expect(events.map((e) => e.type)).toEqual(["error"]);
		expect((events[0] as any).error.stopReason).toBe("aborted");
	});

	it("honours chunk settings and explicit usage", async () => {
		const bySize = await collect(streamScriptedTurn(model, { content: "abcdefg", chunk: 3 }));
		expect(bySize.filter((e) => e.type === "text_delta").map((e: any) => e.delta)).toEqual(["abc", "def", "g"]);
		const custom = await collect(
			streamScriptedTurn(model, {
				content: "xy",
				chunk: (t) => t.split(""),
				usage: {
					input: 1,
					output: 2,
					cacheRead: 0,
					cacheWrite: 0,
					totalTokens: 3,
					cost: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0, total: 0 },
				},
			}),
		);
		expect(custom.filter((e) => e.type === "text_delta").map((e: any) => e.delta)).toEqual(["x", "y"]);
		expect((custom.at(-1) as any).message.usage.totalTokens).toBe(3);
	});

	it("a complete assistant message can be streamed as a turn", async () => {
		const events = await collect(
			streamScriptedTurn(model, fauxAssistantMessage([fauxText("hi")], { responseId: "r1" })),
		);
		const done = events.at(-1) as any;
		expect(done.message).toMatchObject({
			content: [{ type: "text", text: "hi" }],
			responseId: "r1",
			stopReason: "stop",
			api: "faux",
		});
	});
});

describe("registerFauxProvider", () => {
	let faux: FauxProviderRegistration | undefined;
	afterEach(() => faux?.unregister());

	it("registers api faux with a default model and plays responses in order through streamSimple", async () => {
		faux = registerFauxProvider();
		expect(faux.api).toBe("faux");
		const m = faux.getModel();
		expect(m).toMatchObject({ id: "faux-1", api: "faux", provider: "faux" });
		expect(faux.getModel("nope")).toBeUndefined();
		faux.setResponses([{ content: "first" }, fauxAssistantMessage("second")]);
		expect(faux.getPendingResponseCount()).toBe(2);
		const first = await streamSimple(m, context).result();
		expect(first.content).toEqual([{ type: "text", text: "first" }]);
		faux.appendResponses([{ content: "third" }]);
		expect((await streamSimple(m, context).result()).content).toEqual([{ type: "text", text: "second" }]);
		expect((await streamSimple(m, context).result()).content).toEqual([{ type: "text", text: "third" }]);
		expect(faux.getPendingResponseCount()).toBe(0);
		expect(faux.state.callCount).toBe(3);
	});

	it("answers with an error when the script is empty", async () => {
		faux = registerFauxProvider();
		const result = await streamSimple(faux.getModel(), context).result();
		expect(result).toMatchObject({ stopReason: "error", errorMessage: "No more faux responses queued" });
	});

	it("factories see the context, options and call count; a throwing factory becomes an error", async () => {
		faux = registerFauxProvider({ models: [{ id: "a" }, { id: "b", name: "B" }] });
		expect(faux.models.map((m) => m.id)).toEqual(["a", "b"]);
		const seen: unknown[] = [];
		faux.setResponses([
			(ctx, options, state, m) => {
				seen.push([ctx.messages.length, options?.sessionId, state.callCount, m.id]);
				return { content: "from factory" };
			},
			async () => {
				throw new Error("factory broke");
			},
		]);
		const ok = await streamSimple(faux.getModel("b")!, context, { sessionId: "s" }).result();
		expect(ok.content).toEqual([{ type: "text", text: "from factory" }]);
		expect(seen).toEqual([[1, "s", 1, "b"]]);
		const failed = await streamSimple(faux.getModel(), context).result();
		expect(failed).toMatchObject({ stopReason: "error", errorMessage: "factory broke" });
	});

	it("calls onResponse and unregisters only its own registration", async () => {
		faux = registerFauxProvider({ api: "faux-test" });
		faux.setResponses([{ content: "x" }]);
		const statuses: number[] = [];
		await streamSimple(faux.getModel(), context, { onResponse: (r) => void statuses.push(r.status) }).result();
		expect(statuses).toEqual([200]);
		const newer = registerFauxProvider({ api: "faux-test" });
		faux.unregister();
		expect(getApiProvider("faux-test")).toBe(newer.stream);
		newer.unregister();
		expect(getApiProvider("faux-test")).toBeUndefined();
	});

	it("uses the registration's default delay and chunking", async () => {
		faux = registerFauxProvider({ chunk: 1 });
		faux.setResponses([{ content: "abc" }]);
		const events = await collect(faux.stream(faux.getModel(), context));
		expect(events.filter((e) => e.type === "text_delta")).toHaveLength(3);
	});
});

describe("pacing", () => {
	it("yields to the event loop between deltas even with a 0 ms delay", async () => {
		const stream = streamScriptedTurn(model, { content: "a b c d", delayMs: 0 });
		const order: string[] = [];
		const tick = () =>
			setImmediate(() => {
				order.push("tick");
				if (order.length < 40) tick();
			});
		tick();
		for await (const event of stream) if (event.type === "text_delta") order.push("delta");
		// Macrotasks ran between the deltas, so the stream never monopolised the loop.
		const deltas = order.map((entry, i) => (entry === "delta" ? i : -1)).filter((i) => i >= 0);
		expect(deltas).toHaveLength(4);
		for (let i = 1; i < deltas.length; i++)
			expect(order.slice(deltas[i - 1]! + 1, deltas[i]).includes("tick")).toBe(true);
	});
});
