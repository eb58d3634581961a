import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { closeHttpPools } from "../../../src/ai/http.js";
import { encodeTextSignature } from "../../../src/ai/providers/openai-responses.js";
import { streamSimple } from "../../../src/ai/stream.js";
import type { Model } from "../../../src/ai/types.js";
import { type ReplayServer, startReplayServer } from "../../helpers/replay-server.js";
import { conversation, TOOL_PARAMETERS } from "./openai-conversation.js";
import { drain, testModel } from "./openai-protocol.js";

/** The exact JSON body the Responses provider sends, with encrypted reasoning replayed. */
let server: ReplayServer;
beforeAll(async () => {
	server = await startReplayServer();
});
afterAll(async () => {
	await server.close();
	await closeHttpPools();
});
afterEach(() => server.reset());

const OK = [
	'event: response.created\ndata: {"type":"response.created","response":{"id":"resp_1","status":"in_progress"}}\n\n',
	'event: response.completed\ndata: {"type":"response.completed","response":{"id":"resp_1","status":"completed","usage":{"input_tokens":3,"output_tokens":1,"total_tokens":4}}}\n\n',
].join("");
const DATA_URL = "data:image/png;base64,aGVsbG8=";
const REASONING_ITEM = {
	id: "rs_1",
	type: "reasoning",
	summary: [{ type: "summary_text", text: "Look closely" }],
	encrypted_content: "gAAAA-encrypted",
};

async function send(model: Model<any>, context: any, options = {}) {
	server.enqueue({ body: OK });
	const { message } = await drain(
		streamSimple(model, context, {
			apiKey: "sk-test",
			maxTokens: 1000,
			temperature: 0.2,
			sessionId: "sess-1",
			reasoning: "high",
			...options,
		}),
	);
	expect(message.errorMessage).toBeUndefined();
	expect(message.responseId).toBe("resp_1");
	return server.requests[0]!;
}

describe("openai-responses request", () => {
	it("replays encrypted reasoning, message ids and phases, function calls and outputs with images; store false", async () => {
		const model = testModel("openai-responses", `${server.url}/v1`, { reasoning: true });
		const context = conversation(model, {
			thinking: JSON.stringify(REASONING_ITEM),
			text: encodeTextSignature("msg_1", "commentary"),
			toolCallId: "call_1|fc_1",
		});
		const request = await send(model, context);
		expect(request.url).toBe("/v1/responses");
		expect(request.headers.authorization).toBe("Bearer sk-test");
		expect(request.json).toEqual({
			model: "gpt-test",
			input: [
				{ role: "developer", content: "You are terse." },
				{
					role: "user",
					content: [
						{ type: "input_text", text: "What is in this image?" },
						{ type: "input_image", detail: "auto", image_url: DATA_URL },
					],
				},
				REASONING_ITEM,
				{
					type: "message",
					role: "assistant",
					id: "msg_1",
					phase: "commentary",
					status: "completed",
					content: [{ type: "output_text", text: "A cat. Checking the weather.", annotations: [] }],
				},
				{ type: "function_call", id: "fc_1", call_id: "call_1", name: "get_weather", arguments: '{"city":"Paris"}' },
				{
					type: "function_call_output",
					call_id: "call_1",
					output: [
						{ type: "input_text", text: "18°C" },
						{ type: "input_image", detail: "auto", image_url: DATA_URL },
					],
				},
				{ role: "user", content: [{ type: "input_text", text: "Thanks. And now?" }] },
			],
			stream: true,
			store: false,
			include: ["reasoning.encrypted_content"],
			reasoning: { effort: "high", summary: "auto" },
			max_output_tokens: 1000,
			temperature: 0.2,
			tools: [
				{
					type: "function",
					name: "get_weather",
					description: "Weather for a city",
					parameters: TOOL_PARAMETERS,
					strict: false,
				},
			],
			prompt_cache_key: "sess-1",
		});
	});

	it("turns another model's reasoning into text and drops its item ids", async () => {
		const model = testModel("openai-responses", `${server.url}/v1`, { reasoning: true });
		const other = conversation(
			{ ...model, provider: "anthropic", api: "anthropic-messages", id: "claude" },
			{
				thinking: "anthropic-signature",
				toolCallId: "toolu_01A.B",
			},
		);
		const input = (await send(model, other)).json.input;
		expect(input[2]).toEqual({
			type: "message",
			role: "assistant",
			status: "completed",
			content: [{ type: "output_text", text: "Look closely", annotations: [] }],
		});
		expect(input[4]).toEqual({
			type: "function_call",
			call_id: "toolu_01A_B",
			name: "get_weather",
			arguments: '{"city":"Paris"}',
		});
		expect(input[5].call_id).toBe("toolu_01A_B");
	});

	it("a non-reasoning model gets no reasoning or include fields; system role", async () => {
		const model = testModel("openai-responses", `${server.url}/v1`, { reasoning: false });
		const body = (await send(model, { systemPrompt: "S", messages: [{ role: "user", content: "hi", timestamp: 0 }] }))
			.json;
		expect(body.input).toEqual([
			{ role: "system", content: "S" },
			{ role: "user", content: [{ type: "input_text", text: "hi" }] },
		]);
		expect(body.reasoning).toBeUndefined();
		expect(body.include).toBeUndefined();
	});
});
