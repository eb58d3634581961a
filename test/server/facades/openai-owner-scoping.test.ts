/**
 * What the OpenAI facade stores is found by its owner only: another key's tool call id does not
 * attach to the run that waits for it (its request starts a session of its own), and another key's
 * response id is a 404 for `GET /responses/:id`, cancel and `previous_response_id`.
 */
import OpenAI from "openai";
import { afterEach, expect, it } from "vitest";
import { startServer, type TestServer } from "../../helpers/server.js";

const KEY = "owner-key";
const OTHER = "other-key";
let server: TestServer;
afterEach(async () => {
	await server?.close();
});

it("another key's tool call ids and response ids are unknown to a key", async () => {
	server = await startServer({ config: { apiKeys: [KEY, OTHER] } });
	const owner = new OpenAI({ apiKey: KEY, baseURL: `${server.url}/openai/v1`, maxRetries: 0 });
	const other = new OpenAI({ apiKey: OTHER, baseURL: `${server.url}/openai/v1`, maxRetries: 0 });
	const tools = [{ type: "function" as const, name: "pick_color", parameters: { type: "object" }, strict: false }];
	const input = '/tool pick_color {"question":"q"}';
	const first = await owner.responses.create({ model: "faux/echo", input, tools });
	const call = first.output.find((item) => item.type === "function_call");
	if (call?.type !== "function_call") throw new Error("expected a function call");
	const sessionId = `ses_${first.id.split("_")[1]}`;

	// The other key re-sends the conversation with the owner's call id: a session of its own answers.
	const foreign = await other.responses.create({
		model: "faux/echo",
		input: [
			{ role: "user", content: input },
			{ type: "function_call", call_id: call.call_id, name: "pick_color", arguments: call.arguments },
			{ type: "function_call_output", call_id: call.call_id, output: "mauve" },
		],
		tools,
	});
	expect(foreign.output_text).toContain("mauve");
	expect(foreign.id).not.toContain(sessionId.slice(4));
	// The owner's run still waits, untouched.
	const state = await server.request("GET", `/v1/sessions/${sessionId}`, { key: KEY });
	expect(state.body.status).toBe("running");
	expect(state.body.pendingClientToolCalls.map((p: { toolCallId: string }) => p.toolCallId)).toEqual([call.call_id]);

	for (const attempt of [
		other.responses.retrieve(first.id),
		other.responses.cancel(first.id),
		other.responses.create({ model: "faux/echo", input: "x", previous_response_id: first.id }),
	]) {
		await expect(attempt).rejects.toBeInstanceOf(OpenAI.NotFoundError);
	}

	// The owner's own follow-up reaches its run.
	const second = await owner.responses.create({
		model: "faux/echo",
		input: [
			{ role: "user", content: input },
			{ type: "function_call", call_id: call.call_id, name: "pick_color", arguments: call.arguments },
			{ type: "function_call_output", call_id: call.call_id, output: "teal" },
		],
		tools,
	});
	expect(second.id).toContain(sessionId.slice(4));
	expect(second.output_text).toContain("teal");
});
