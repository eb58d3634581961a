/**
 * Agent profiles through the OpenAI-compatible API, with the openai SDK: `model` names a profile,
 * whose model, system prompt, server tools and settings the session gets; the request's system
 * text comes after the profile's system prompt; `GET /models` lists the profiles after the models.
 */
import OpenAI from "openai";
import { afterEach, describe, expect, it } from "vitest";
import { scriptedModel } from "../../helpers/scripted-session.js";
import { startServer, type TestServer } from "../../helpers/server.js";

const KEY = "test-key";
const model = scriptedModel("openai-profiles-faux");
let server: TestServer;
afterEach(async () => {
	model.requests.length = 0;
	await server?.close();
});

const profiles = {
	support: {
		model: model.spec,
		systemPrompt: "You are the support agent.",
		tools: ["calculate"],
		thinkingLevel: "low",
		metadata: { team: "support" },
	},
	plain: { model: "faux/echo" },
};

async function start(): Promise<OpenAI> {
	server = await startServer({ config: { apiKeys: [KEY], profiles }, models: [model.faux.getModel()] });
	return new OpenAI({ apiKey: KEY, baseURL: `${server.url}/openai/v1`, maxRetries: 0 });
}

async function sessionOf(headers: Headers): Promise<Record<string, any>> {
	const id = headers.get("x-wheelhouse-session-id");
	return (await server.request("GET", `/v1/sessions/${id}`, { key: KEY })).body;
}

describe("agent profiles in the OpenAI-compatible API", () => {
	it("lists the profiles after the models", async () => {
		const client = await start();
		const listed: OpenAI.Models.Model[] = [];
		for await (const entry of client.models.list()) listed.push(entry);
		const ids = listed.map((entry) => entry.id);
		expect(ids).toContain(model.spec);
		expect(ids.slice(-2)).toEqual(["support", "plain"]);
		expect(listed.at(-1)).toMatchObject({ object: "model", owned_by: "wheelhouse-profile" });
		expect(listed.filter((entry) => entry.owned_by === "wheelhouse-profile")).toHaveLength(2);
	});

	it("a chat completion with a profile runs its model, prompt and tools; system messages come after its prompt", async () => {
		const client = await start();
		model.script({ content: "Bonjour." });
		const { data, response } = await client.chat.completions
			.create({
				model: "support",
				messages: [
					{ role: "system", content: "Answer in French." },
					{ role: "user", content: "hello" },
				],
			})
			.withResponse();
		expect(data.model).toBe("support");
		expect(data.choices[0]?.message.content).toBe("Bonjour.");
		expect(model.requests[0]?.systemPrompt).toBe("You are the support agent.\n\nAnswer in French.");
		expect(model.requests[0]?.tools?.map((tool) => tool.name)).toEqual(["calculate"]);
		const session = await sessionOf(response.headers);
		expect(session).toMatchObject({
			model: model.spec,
			thinkingLevel: "low",
			tools: ["calculate"],
			metadata: { team: "support", profile: "support", facade: "openai.chat.completions" },
		});
	});

	it("streams a chat completion with a profile, its client tools beside the profile's server tools", async () => {
		const client = await start();
		model.script({ content: "Streamed." });
		const tool = { type: "function" as const, function: { name: "pick_color", parameters: { type: "object" } } };
		const stream = await client.chat.completions.create({
			model: "support",
			messages: [{ role: "user", content: "hello" }],
			tools: [tool],
			stream: true,
		});
		let text = "";
		const models = new Set<string>();
		for await (const chunk of stream) {
			models.add(chunk.model);
			text += chunk.choices[0]?.delta.content ?? "";
		}
		expect(text).toBe("Streamed.");
		expect([...models]).toEqual(["support"]);
		expect(model.requests[0]?.systemPrompt).toBe("You are the support agent.");
		expect(model.requests[0]?.tools?.map((t) => t.name)).toEqual(["calculate", "pick_color"]);
	});

	it("a response with a profile: instructions after its prompt, applied anew on each request naming it", async () => {
		const client = await start();
		model.script({ content: "one" }, { content: "two" }, { content: "three" });
		const first = await client.responses.create({ model: "support", input: "first", instructions: "Be brief." });
		expect(first.model).toBe("support");
		expect(first.output_text).toBe("one");
		expect(model.requests[0]?.systemPrompt).toBe("You are the support agent.\n\nBe brief.");

		// As in OpenAI's API, instructions are not carried over: the profile's prompt alone.
		const second = await client.responses.create({ model: "support", input: "second", previous_response_id: first.id });
		expect(second.output_text).toBe("two");
		expect(model.requests[1]?.systemPrompt).toBe("You are the support agent.");
		expect(model.requests[1]?.messages.map((m) => m.role)).toEqual(["user", "assistant", "user"]);

		// A developer message in the input counts as instructions.
		const third = await client.responses.create({
			model: "support",
			previous_response_id: second.id,
			input: [
				{ role: "developer", content: "Use lists." },
				{ role: "user", content: "third" },
			],
		});
		expect(third.output_text).toBe("three");
		expect(model.requests[2]?.systemPrompt).toBe("You are the support agent.\n\nUse lists.");
	});

	it("a continuation naming a plain model switches the session's model and keeps its prompt", async () => {
		const client = await start();
		model.script({ content: "scripted answer" });
		const first = await client.responses.create({ model: "support", input: "first" });
		const { data: second, response } = await client.responses
			.create({ model: "faux/echo", input: "echo this", previous_response_id: first.id })
			.withResponse();
		expect(second.output_text).toBe("echo this");
		const session = await sessionOf(response.headers);
		expect(session).toMatchObject({
			model: "faux/echo",
			systemPrompt: "You are the support agent.",
			metadata: { profile: "support" },
		});
	});

	it("a name that is neither a model nor a profile is a NotFoundError (model_not_found) naming both", async () => {
		const client = await start();
		const err = await client.chat.completions
			.create({ model: "nope", messages: [{ role: "user", content: "hi" }] })
			.catch((e: unknown) => e);
		expect(err).toBeInstanceOf(OpenAI.NotFoundError);
		expect((err as InstanceType<typeof OpenAI.NotFoundError>).code).toBe("model_not_found");
		expect((err as Error).message).toContain(
			'"nope" does not exist: it is neither a model ("provider/id") nor an agent profile',
		);
		const viaResponses = await client.responses.create({ model: "nope", input: "hi" }).catch((e: unknown) => e);
		expect(viaResponses).toBeInstanceOf(OpenAI.NotFoundError);
	});
});
