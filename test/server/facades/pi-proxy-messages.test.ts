/**
 * pi's own Agent (pi-agent-core 0.73.1) with its unmodified `streamProxy` against the real server
 * ends with the same transcript as the same Agent calling the model directly: text, thinking with
 * signatures, a tool-call turn whose arguments stream in pieces, and a model whose final blocks
 * differ from what it streamed (a tool call id learned late, text cleaned up at the end).
 */
import { afterEach, describe, expect, it } from "vitest";
import { createAssistantMessage } from "../../../src/ai/assistant-message.js";
import { AssistantMessageEventStream } from "../../../src/ai/event-stream.js";
import { fauxToolCall, registerFauxProvider, type ScriptedTurn } from "../../../src/ai/providers/faux.js";
import { registerApiProvider } from "../../../src/ai/registry.js";
import type { AssistantMessage, Context, Model, ToolCall } from "../../../src/ai/types.js";
import { type AgentSetup, addTool, comparable, directAgent, proxyAgent } from "../../helpers/pi-proxy.js";
import { startServer, type TestServer } from "../../helpers/server.js";

const KEY = "pi-proxy-key-1";
const faux = registerFauxProvider({ api: "pi-proxy-messages-faux", provider: "scripted" });
let server: TestServer | undefined;
afterEach(async () => {
	await server?.close();
	server = undefined;
});

/** Runs `prompt` through a direct Agent and a proxied one, each from the same script. */
async function bothWays(setup: AgentSetup, script: () => ScriptedTurn[], prompt: string) {
	faux.setResponses(script());
	const direct = directAgent(faux.stream, setup);
	await direct.prompt(prompt);
	faux.setResponses(script());
	const proxied = proxyAgent(server!.url, KEY, setup);
	await proxied.prompt(prompt);
	expect(faux.getPendingResponseCount()).toBe(0);
	return { direct: comparable(direct.state.messages), proxied: comparable(proxied.state.messages) };
}

describe("POST /api/stream with pi's streamProxy: the same messages as a direct call", () => {
	it("text", async () => {
		server = await startServer({ config: { apiKeys: [KEY] }, models: [faux.getModel()] });
		const { direct, proxied } = await bothWays(
			{ model: faux.getModel(), systemPrompt: "Be brief." },
			() => [{ content: "The quick brown fox jumps over the lazy dog." }],
			"say something",
		);
		expect(proxied).toEqual(direct);
		expect(proxied.at(-1)).toMatchObject({
			role: "assistant",
			content: [{ type: "text", text: "The quick brown fox jumps over the lazy dog." }],
			stopReason: "stop",
		});
	});

	it("thinking and text with their signatures", async () => {
		server = await startServer({ config: { apiKeys: [KEY] }, models: [faux.getModel()] });
		const { direct, proxied } = await bothWays(
			{ model: faux.getModel(), thinkingLevel: "high" },
			() => [
				{
					content: [
						{ type: "thinking", thinking: "First I consider the question.", thinkingSignature: "sig-think-1" },
						{ type: "text", text: "Here is the answer.", textSignature: "sig-text-1" },
					],
				},
			],
			"think first",
		);
		expect(proxied).toEqual(direct);
		expect((proxied.at(-1) as AssistantMessage).content).toEqual([
			{ type: "thinking", thinking: "First I consider the question.", thinkingSignature: "sig-think-1" },
			{ type: "text", text: "Here is the answer.", textSignature: "sig-text-1" },
		]);
	});

	it("a tool-call turn (arguments in 3-character pieces), the tool run by the client, then the answer", async () => {
		server = await startServer({ config: { apiKeys: [KEY] }, models: [faux.getModel()] });
		const { direct, proxied } = await bothWays(
			{ model: faux.getModel(), tools: [addTool] },
			() => [
				{ content: [fauxToolCall("add", { a: 2, b: 3 }, { id: "call_add_1" })], chunk: 3 },
				{ content: "The sum is 5." },
			],
			"add 2 and 3",
		);
		expect(proxied).toEqual(direct);
		expect(proxied.map((m) => (m as { role: string }).role)).toEqual(["user", "assistant", "toolResult", "assistant"]);
		expect(proxied[1]).toMatchObject({
			content: [{ type: "toolCall", id: "call_add_1", name: "add", arguments: { a: 2, b: 3 } }],
			stopReason: "toolUse",
		});
		expect(proxied[2]).toMatchObject({ toolCallId: "call_add_1", content: [{ type: "text", text: "5" }] });
	});

	it("blocks whose final form differs from what was streamed arrive as the model ended them", async () => {
		const late = lateModel();
		server = await startServer({ config: { apiKeys: [KEY] }, models: [late] });
		const setup = { model: late, tools: [addTool] };
		const direct = directAgent(streamLate, setup);
		await direct.prompt("go");
		const proxied = proxyAgent(server.url, KEY, setup);
		await proxied.prompt("go");
		expect(comparable(proxied.state.messages)).toEqual(comparable(direct.state.messages));
		expect((proxied.state.messages[1] as AssistantMessage).content).toEqual([
			{ type: "text", text: "Hello world" },
			{ type: "toolCall", id: "call_late", name: "add", arguments: { a: 2, b: 3 } },
		]);
		expect(proxied.state.messages[2]).toMatchObject({ role: "toolResult", toolCallId: "call_late" });
	});
});

const LATE_API = "pi-proxy-late";

function lateModel(): Model<any> {
	return { ...faux.getModel(), api: LATE_API, provider: "late", id: "late-1" };
}

/**
 * A model that, like some providers, ends blocks differently from how it streamed them: the text
 * streamed as "Hello wrld" ends as "Hello world"; the tool call starts without an id and learns it
 * before its end. After a tool result it answers "done".
 */
function streamLate(model: Model<any>, context: Context): AssistantMessageEventStream {
	const stream = new AssistantMessageEventStream();
	const message = createAssistantMessage(model);
	setImmediate(() => {
		stream.push({ type: "start", partial: message });
		if (context.messages.at(-1)?.role === "toolResult") {
			message.content.push({ type: "text", text: "done" });
			stream.push({ type: "text_start", contentIndex: 0, partial: message });
			stream.push({ type: "text_delta", contentIndex: 0, delta: "done", partial: message });
			stream.push({ type: "text_end", contentIndex: 0, content: "done", partial: message });
			stream.push({ type: "done", reason: "stop", message });
			return;
		}
		const text = { type: "text" as const, text: "" };
		message.content.push(text);
		stream.push({ type: "text_start", contentIndex: 0, partial: message });
		text.text = "Hello wrld";
		stream.push({ type: "text_delta", contentIndex: 0, delta: "Hello wrld", partial: message });
		text.text = "Hello world";
		stream.push({ type: "text_end", contentIndex: 0, content: text.text, partial: message });
		const call: ToolCall = { type: "toolCall", id: "", name: "add", arguments: {} };
		message.content.push(call);
		stream.push({ type: "toolcall_start", contentIndex: 1, partial: message });
		call.arguments = { a: 2 };
		stream.push({ type: "toolcall_delta", contentIndex: 1, delta: '{"a":2,', partial: message });
		call.arguments = { a: 2, b: 3 };
		stream.push({ type: "toolcall_delta", contentIndex: 1, delta: '"b":3}', partial: message });
		call.id = "call_late";
		stream.push({ type: "toolcall_end", contentIndex: 1, toolCall: call, partial: message });
		message.stopReason = "toolUse";
		stream.push({ type: "done", reason: "toolUse", message });
	});
	return stream;
}
registerApiProvider(LATE_API, streamLate);
