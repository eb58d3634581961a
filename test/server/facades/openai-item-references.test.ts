/**
 * `item_reference` input items: the AI SDK's Responses provider sends them (it stores by default)
 * for the assistant messages of `result.response.messages` that a caller appends to the next
 * call, as its docs show. The server resolves them to the items it produced; a reference to an
 * item it never produced, or to another key's, is a 400 naming the field.
 */
import { createOpenAI } from "@ai-sdk/openai";
import { generateText, type ModelMessage } from "ai";
import { afterEach, expect, it } from "vitest";
import { startServer, type TestServer } from "../../helpers/server.js";

const KEY = "test-key";
const OTHER = "other-key";
let server: TestServer;
afterEach(async () => {
	await server?.close();
});

it("the AI SDK's appended response.messages (item references) continue the conversation", async () => {
	server = await startServer({ config: { apiKeys: [KEY, OTHER] } });
	const requests: unknown[] = [];
	const openai = createOpenAI({
		apiKey: KEY,
		baseURL: `${server.url}/openai/v1`,
		fetch: async (input, init) => {
			requests.push(JSON.parse(String(init?.body)));
			return fetch(input, init);
		},
	});
	const model = openai.responses("faux/echo");
	const messages: ModelMessage[] = [{ role: "user", content: "hello there" }];
	const first = await generateText({ model, messages, maxRetries: 0 });
	expect(first.text).toBe("hello there");
	messages.push(...first.response.messages, { role: "user", content: "and again" });
	const second = await generateText({ model, messages, maxRetries: 0 });
	expect(second.text).toBe("and again");

	// The library referred to the first answer by its item id instead of sending it.
	const sent = (requests[1] as { input: { type?: string; id?: string }[] }).input;
	const reference = sent.find((item) => item.type === "item_reference");
	expect(reference?.id).toMatch(/^msg_/);
	// The session that answered holds the referenced text as the assistant's turn.
	const sessionId = (await server.request("GET", "/v1/sessions", { key: KEY })).body.sessions[1].id;
	const transcript = await server.request("GET", `/v1/sessions/${sessionId}/messages`, { key: KEY });
	expect(transcript.body.messages.map((m: { role: string }) => m.role)).toEqual([
		"user",
		"assistant",
		"user",
		"assistant",
	]);
	expect(transcript.body.messages[1].content[0].text).toBe("hello there");

	// Another key cannot reach that item: to it, it does not exist.
	const foreign = await server.request("POST", "/openai/v1/responses", {
		key: OTHER,
		body: {
			model: "faux/echo",
			input: [
				{ role: "user", content: "hi" },
				{ type: "item_reference", id: reference?.id },
				{ role: "user", content: "x" },
			],
		},
	});
	expect(foreign.status).toBe(400);
	expect(foreign.body.error.message).toContain("body.input[1].id");
});

it("a reference to no item of this server is a 400 naming the field, in OpenAI's shape", async () => {
	server = await startServer({ config: { apiKeys: [KEY] } });
	const unknown = await server.request("POST", "/openai/v1/responses", {
		key: KEY,
		body: {
			model: "faux/echo",
			input: [
				{ type: "item_reference", id: "msg_nope" },
				{ role: "user", content: "x" },
			],
		},
	});
	expect(unknown.status).toBe(400);
	expect(unknown.body.error).toMatchObject({ type: "invalid_request_error", code: "VALIDATION_FAILED" });
	expect(unknown.body.error.message).toContain("body.input[0].id");
	expect(unknown.body.error.message).toContain("msg_nope");
	const noId = await server.request("POST", "/openai/v1/responses", {
		key: KEY,
		body: { model: "faux/echo", input: [{ type: "item_reference" }, { role: "user", content: "x" }] },
	});
	expect(noId.status).toBe(400);
	expect(noId.body.error.message).toContain("body.input[0].id");
});
