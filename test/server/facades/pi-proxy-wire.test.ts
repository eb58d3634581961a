/**
 * The wire of `POST /api/stream` as pi's streamProxy parses it: `data:` lines split on LF only,
 * `start` first, exactly one `done` or `error` as the last event, never `[DONE]`. A model stream
 * that ends without its final event still ends the proxy stream with `error`: pi's client would
 * otherwise wait forever.
 */
import { afterEach, describe, expect, it } from "vitest";
import { createAssistantMessage } from "../../../src/ai/assistant-message.js";
import { AssistantMessageEventStream } from "../../../src/ai/event-stream.js";
import { fauxThinking, fauxToolCall, registerFauxProvider, type ScriptedTurn } from "../../../src/ai/providers/faux.js";
import { registerApiProvider } from "../../../src/ai/registry.js";
import type { AssistantMessage, Model } from "../../../src/ai/types.js";
import { type ProxyWire, postProxy, proxyAgent, userMessage } from "../../helpers/pi-proxy.js";
import { startServer, type TestServer } from "../../helpers/server.js";

const KEY = "pi-proxy-key-3";
const faux = registerFauxProvider({ api: "pi-proxy-wire-faux", provider: "scripted" });
let server: TestServer | undefined;
afterEach(async () => {
	await server?.close();
	server = undefined;
});

/** A model whose stream ends after one delta, without `done` or `error` (a broken provider). */
const CUT_API = "pi-proxy-cut";
const cutModel: Model<any> = { ...faux.getModel(), api: CUT_API, provider: "cut", id: "cut-1" };
registerApiProvider(CUT_API, (model) => {
	const stream = new AssistantMessageEventStream();
	const message = createAssistantMessage(model);
	setImmediate(() => {
		message.content.push({ type: "text", text: "half" });
		stream.push({ type: "start", partial: message });
		stream.push({ type: "text_start", contentIndex: 0, partial: message });
		stream.push({ type: "text_delta", contentIndex: 0, delta: "half", partial: message });
		stream.end();
	});
	return stream;
});

/** Every property of the wire that pi's client depends on. */
function expectClientWire(wire: ProxyWire): void {
	expect(wire.status).toBe(200);
	expect(wire.contentType).toMatch(/^text\/event-stream/);
	expect(wire.text).not.toContain("\r");
	expect(wire.text).not.toContain("[DONE]");
	for (const line of wire.text.split("\n")) {
		// data lines (the client reads only those), comments, the retry field, and blank separators.
		expect(line === "" || line.startsWith("data: ") || line.startsWith(":") || line.startsWith("retry: "), line).toBe(
			true,
		);
	}
	expect(wire.events[0]).toEqual({ type: "start" });
	const terminals = wire.events.filter((e) => e.type === "done" || e.type === "error");
	expect(terminals).toHaveLength(1);
	expect(wire.events.at(-1)).toBe(terminals[0]);
	expect(terminals[0]!.usage).toMatchObject({ input: expect.any(Number), output: expect.any(Number) });
}

async function wireOf(turn: ScriptedTurn): Promise<ProxyWire> {
	faux.setResponses([turn]);
	return postProxy(server!.url, { model: faux.getModel(), context: { messages: [userMessage("go")] } }, KEY);
}

describe("POST /api/stream: the wire pi's streamProxy reads", () => {
	it("text, thinking, tool calls and failures: start first, one final event, LF, no [DONE]", async () => {
		server = await startServer({ config: { apiKeys: [KEY] }, models: [faux.getModel(), cutModel] });

		const text = await wireOf({ content: "one two three" });
		expectClientWire(text);
		expect(text.events.map((e) => e.type)).toEqual([
			"start",
			"text_start",
			"text_delta",
			"text_delta",
			"text_delta",
			"text_end",
			"done",
		]);
		expect(text.events.filter((e) => e.type === "text_delta").map((e) => e.delta)).toEqual(["one ", "two ", "three"]);
		expect(text.events.at(-1)).toMatchObject({ reason: "stop" });
		// Deltas carry no partial message: the client rebuilds it.
		expect(text.text).not.toContain('"partial"');

		const tools = await wireOf({
			content: [fauxThinking("hmm"), fauxToolCall("add", { a: 1, b: 2 }, { id: "call_9" })],
			chunk: 4,
		});
		expectClientWire(tools);
		expect(tools.events.find((e) => e.type === "toolcall_start")).toEqual({
			type: "toolcall_start",
			contentIndex: 1,
			id: "call_9",
			toolName: "add",
		});
		const argText = tools.events
			.filter((e) => e.type === "toolcall_delta")
			.map((e) => e.delta)
			.join("");
		expect(JSON.parse(argText)).toEqual({ a: 1, b: 2 });
		expect(tools.events.filter((e) => e.type === "toolcall_delta").length).toBeGreaterThan(1);
		expect(tools.events.at(-1)).toMatchObject({ type: "done", reason: "toolUse" });

		const failed = await wireOf({ content: "partial answer", stopReason: "error", errorMessage: "upstream exploded" });
		expectClientWire(failed);
		expect(failed.events.at(-1)).toMatchObject({ type: "error", reason: "error", errorMessage: "upstream exploded" });

		const cut = await postProxy(server.url, { model: cutModel, context: { messages: [userMessage("go")] } }, KEY);
		expectClientWire(cut);
		expect(cut.events.at(-1)).toMatchObject({
			type: "error",
			reason: "error",
			errorMessage: "The model stream ended without a final event.",
		});
	});

	it("pi's Agent does not hang on a model stream that ends without its final event", async () => {
		server = await startServer({ config: { apiKeys: [KEY] }, models: [cutModel] });
		const agent = proxyAgent(server.url, KEY, { model: cutModel });
		await agent.prompt("go");
		const answer = agent.state.messages.at(-1) as AssistantMessage;
		expect(answer).toMatchObject({
			stopReason: "error",
			errorMessage: "The model stream ended without a final event.",
			content: [{ type: "text", text: "half" }],
		});
	});
});
