import OpenAI from "openai";
import { afterEach, describe, expect, it } from "vitest";
import { startServer, type TestServer } from "../../helpers/server.js";

const KEY = "test-key";
let server: TestServer;
afterEach(async () => {
	await server?.close();
});

async function start(config: Record<string, unknown> = {}): Promise<OpenAI> {
	server = await startServer({ config: { apiKeys: [KEY], fauxDelayMs: 1, ...config } });
	return new OpenAI({ apiKey: KEY, baseURL: `${server.url}/openai/v1`, maxRetries: 0 });
}

const pickColor = {
	type: "function" as const,
	name: "pick_color",
	description: "Ask the user to pick a color",
	parameters: { type: "object", properties: { question: { type: "string" } }, required: ["question"] },
	strict: false,
};

describe("OpenAI Responses with the openai SDK", () => {
	it("answers a response, and previous_response_id continues the same session", async () => {
		const client = await start();
		const first = await client.responses.create({ model: "faux/echo", input: "hello there", instructions: "be brief" });
		expect(first.object).toBe("response");
		expect(first.status).toBe("completed");
		expect(first.output_text).toBe("hello there");
		expect(first.usage?.output_tokens).toBeGreaterThan(0);

		const second = await client.responses.create({
			model: "faux/echo",
			input: "and again",
			previous_response_id: first.id,
		});
		expect(second.output_text).toBe("and again");
		expect(second.previous_response_id).toBe(first.id);

		const fetched = await client.responses.retrieve(first.id);
		expect(fetched.output_text ?? fetched.output).toBeTruthy();
		expect(fetched.id).toBe(first.id);

		// Both responses are turns of one session: its transcript holds both exchanges.
		const sessionId = `ses_${first.id.split("_")[1]}`;
		const transcript = await server.request("GET", `/v1/sessions/${sessionId}/messages`, { key: KEY });
		expect(transcript.body.messages.map((m: { role: string }) => m.role)).toEqual([
			"user",
			"assistant",
			"user",
			"assistant",
		]);
		expect(transcript.body.messages[3].content[0].text).toBe("and again");
	});

	it("streams the semantic events with sequence numbers, and responses.stream assembles them", async () => {
		const client = await start();
		const stream = await client.responses.create({ model: "faux/echo", input: "one two three", stream: true });
		const types: string[] = [];
		const sequence: number[] = [];
		let text = "";
		for await (const event of stream) {
			types.push(event.type);
			sequence.push(event.sequence_number);
			if (event.type === "response.output_text.delta") text += event.delta;
		}
		expect(text).toBe("one two three");
		expect(types[0]).toBe("response.created");
		expect(types.at(-1)).toBe("response.completed");
		expect(types).toContain("response.output_item.added");
		expect(sequence).toEqual(sequence.map((_, i) => i));

		const helper = client.responses.stream({ model: "faux/echo", input: "four five" });
		const deltas: string[] = [];
		helper.on("response.output_text.delta", (event) => deltas.push(event.delta));
		const final = await helper.finalResponse();
		expect(final.output_text).toBe("four five");
		expect(deltas.join("")).toBe("four five");
	});

	it("returns function calls as client tool calls and continues with function_call_output", async () => {
		const client = await start();
		const first = await client.responses.create({
			model: "faux/echo",
			input: '/tool pick_color {"question": "favourite?"}',
			tools: [pickColor],
		});
		const call = first.output.find((item) => item.type === "function_call");
		if (call?.type !== "function_call") throw new Error("expected a function call");
		expect(call.name).toBe("pick_color");
		expect(JSON.parse(call.arguments)).toEqual({ question: "favourite?" });

		const stream = client.responses.stream({
			model: "faux/echo",
			previous_response_id: first.id,
			input: [{ type: "function_call_output", call_id: call.call_id, output: "teal" }],
			tools: [pickColor],
		});
		const final = await stream.finalResponse();
		expect(final.output_text).toContain("teal");
	});

	it("a function_call_output for a run that no longer waits is a ConflictError", async () => {
		const client = await start();
		const first = await client.responses.create({
			model: "faux/echo",
			input: '/tool pick_color {"question": "favourite?"}',
			tools: [pickColor],
		});
		const call = first.output.find((item) => item.type === "function_call");
		if (call?.type !== "function_call") throw new Error("expected a function call");
		// The run is aborted through the native API: nothing waits for the output any more.
		const sessionId = `ses_${first.id.split("_")[1]}`;
		await server.request("POST", `/v1/sessions/${sessionId}/abort`, { key: KEY });
		await server.app.wheelhouse.sessions.get(sessionId, null).waitForIdle();
		const err = await client.responses
			.create({
				model: "faux/echo",
				previous_response_id: first.id,
				input: [{ type: "function_call_output", call_id: call.call_id, output: "teal" }],
			})
			.catch((e: unknown) => e);
		expect(err).toBeInstanceOf(OpenAI.ConflictError);
		expect((err as Error).message).toContain("no longer waits");
	});

	it("cancel aborts a response in progress", async () => {
		const client = await start({ fauxDelayMs: 20 });
		const words = Array.from({ length: 200 }, (_, i) => `w${i}`).join(" ");
		const stream = await client.responses.create({ model: "faux/echo", input: words, stream: true });
		let id: string | undefined;
		let cancelled: OpenAI.Responses.Response | undefined;
		let last: string | undefined;
		for await (const event of stream) {
			last = event.type;
			if (event.type === "response.created") id = event.response.id;
			if (event.type === "response.output_text.delta" && !cancelled) cancelled = await client.responses.cancel(id!);
		}
		expect(cancelled?.status).toBe("cancelled");
		expect(last).toBe("response.incomplete");
		expect((await client.responses.retrieve(id!)).status).toBe("cancelled");
	});

	it("errors: an unknown previous response is NotFoundError, a bad model NotFoundError model_not_found", async () => {
		const client = await start();
		await expect(
			client.responses.create({ model: "faux/echo", input: "hi", previous_response_id: "resp_nope" }),
		).rejects.toBeInstanceOf(OpenAI.NotFoundError);
		await expect(client.responses.retrieve("resp_nope")).rejects.toBeInstanceOf(OpenAI.NotFoundError);
		const bad = await client.responses.create({ model: "nope/none", input: "hi" }).catch((err: unknown) => err);
		expect(bad).toBeInstanceOf(OpenAI.NotFoundError);
		expect((bad as InstanceType<typeof OpenAI.NotFoundError>).code).toBe("model_not_found");
		expect((bad as Error).message).toContain("nope/none");
	});
});
