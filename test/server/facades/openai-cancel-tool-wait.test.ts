/**
 * Cancelling a response that ended with function calls, with the openai SDK: its run, which waits
 * for the outputs, is aborted so the session is free; a later function_call_output for it is a
 * ConflictError that says it was cancelled; a cancel that comes after the outputs were sent
 * touches nothing.
 */
import OpenAI from "openai";
import { afterEach, describe, expect, it } from "vitest";
import { fauxToolCall, registerFauxProvider } from "../../../src/ai/providers/faux.js";
import { startServer, type TestServer } from "../../helpers/server.js";

const KEY = "test-key";
const faux = registerFauxProvider({ api: "openai-cancel-faux", provider: "scripted" });
const MODEL = `scripted/${faux.getModel().id}`;
let server: TestServer;
afterEach(async () => {
	await server?.close();
});

const pickColor = { type: "function" as const, name: "pick_color", parameters: { type: "object" }, strict: false };

async function start(): Promise<OpenAI> {
	server = await startServer({ config: { apiKeys: [KEY] }, models: [faux.getModel()] });
	return new OpenAI({ apiKey: KEY, baseURL: `${server.url}/openai/v1`, maxRetries: 0 });
}

function sessionIdOf(response: OpenAI.Responses.Response): string {
	return `ses_${response.id.split("_")[1]}`;
}

async function session(response: OpenAI.Responses.Response): Promise<Record<string, any>> {
	return (await server.request("GET", `/v1/sessions/${sessionIdOf(response)}`, { key: KEY })).body;
}

function callOf(response: OpenAI.Responses.Response): OpenAI.Responses.ResponseFunctionToolCall {
	const call = response.output.find((item) => item.type === "function_call");
	if (call?.type !== "function_call") throw new Error("expected a function call");
	return call;
}

describe("cancel of a response that waits for function call outputs", () => {
	it("aborts the waiting run; its outputs are refused afterwards, and the session takes a new message", async () => {
		const client = await start();
		faux.setResponses([{ content: fauxToolCall("pick_color", {}) }]);
		const first = await client.responses.create({ model: MODEL, input: "pick one", tools: [pickColor] });
		const call = callOf(first);
		expect(await session(first)).toMatchObject({
			status: "running",
			pendingClientToolCalls: [{ toolCallId: call.call_id }],
		});

		const cancelled = await client.responses.cancel(first.id);
		expect(cancelled.status).toBe("cancelled");
		expect(cancelled.output.map((item) => item.type)).toEqual(["function_call"]);
		const after = await session(first);
		expect(after.status).toBe("idle");
		expect(after.pendingClientToolCalls ?? []).toEqual([]);
		expect((await client.responses.retrieve(first.id)).status).toBe("cancelled");

		const err = await client.responses
			.create({
				model: MODEL,
				previous_response_id: first.id,
				input: [{ type: "function_call_output", call_id: call.call_id, output: "teal" }],
				tools: [pickColor],
			})
			.catch((e: unknown) => e);
		expect(err).toBeInstanceOf(OpenAI.ConflictError);
		expect((err as InstanceType<typeof OpenAI.ConflictError>).code).toBe("TOOL_CALL_FINISHED");
		expect((err as Error).message).toContain(`${first.id} was cancelled`);

		faux.setResponses([{ content: "a new answer" }]);
		const next = await client.responses.create({ model: MODEL, previous_response_id: first.id, input: "never mind" });
		expect(next.status).toBe("completed");
		expect(next.output_text).toBe("a new answer");
	});

	it("a streamed response that ended with function calls is cancelled the same way", async () => {
		const client = await start();
		faux.setResponses([{ content: fauxToolCall("pick_color", {}) }]);
		const first = await client.responses
			.stream({ model: MODEL, input: "pick one", tools: [pickColor] })
			.finalResponse();
		expect(first.status).toBe("completed");
		expect((await session(first)).status).toBe("running");
		expect((await client.responses.cancel(first.id)).status).toBe("cancelled");
		expect((await session(first)).status).toBe("idle");
	});

	it("a cancel after the outputs were sent leaves the run that goes on alone", async () => {
		const client = await start();
		faux.setResponses([
			{ content: fauxToolCall("pick_color", {}) },
			{ content: fauxToolCall("pick_color", {}) },
			{ content: "done" },
		]);
		const first = await client.responses.create({ model: MODEL, input: "pick two", tools: [pickColor] });
		const second = await client.responses.create({
			model: MODEL,
			previous_response_id: first.id,
			input: [{ type: "function_call_output", call_id: callOf(first).call_id, output: "teal" }],
			tools: [pickColor],
		});
		const secondCall = callOf(second);

		const late = await client.responses.cancel(first.id);
		expect(late.status).toBe("completed");
		// The run still waits for the second response's call, and takes its output.
		expect(await session(second)).toMatchObject({
			status: "running",
			pendingClientToolCalls: [{ toolCallId: secondCall.call_id }],
		});
		const third = await client.responses.create({
			model: MODEL,
			previous_response_id: second.id,
			input: [{ type: "function_call_output", call_id: secondCall.call_id, output: "navy" }],
			tools: [pickColor],
		});
		expect(third.output_text).toBe("done");
	});
});
