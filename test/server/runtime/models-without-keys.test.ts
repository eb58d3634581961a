/**
 * With no provider key anywhere (an empty environment, no `providerKeys`), every model of the
 * server's catalogue is either listed unavailable and refused up front — 400 `MODEL_UNAVAILABLE`
 * naming the variable to set, on `/v1` and on the OpenAI-compatible API, and absent from
 * `/openai/v1/models` — or it genuinely needs no key: a run on it ends without an error. No model
 * is offered that would only fail at its first call, inside the stream (a 502 that SDKs retry).
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { findEnvKeys } from "../../../src/ai/env-keys.js";
import { getModels, getProviders } from "../../../src/ai/models.js";
import { startServer, type TestServer } from "../../helpers/server.js";
import { promptSse } from "../../helpers/sse.js";

interface ListedModel {
	id: string;
	provider: string;
	available: boolean;
}

let server: TestServer;
let models: ListedModel[];
beforeAll(async () => {
	server = await startServer({ env: {} });
	const listed = await server.request("GET", "/v1/models");
	expect(listed.status).toBe(200);
	models = listed.body.models;
});
afterAll(async () => {
	await server?.close();
});

describe("every catalogue model, with no provider key set", () => {
	it("the catalogue is the whole registry, and every built-in provider's models are unavailable", () => {
		const registered = getProviders().flatMap((provider) => getModels(provider).map((m) => `${provider}/${m.id}`));
		expect(models.map((m) => m.id)).toEqual(expect.arrayContaining(registered));
		for (const provider of ["openai", "anthropic", "google"]) {
			const own = models.filter((m) => m.provider === provider);
			expect(own.length, provider).toBeGreaterThan(0);
			for (const model of own) expect(model.available, model.id).toBe(false);
		}
	});

	it("/openai/v1/models lists exactly the available ones", async () => {
		const listed = await server.request("GET", "/openai/v1/models");
		expect(listed.status).toBe(200);
		const ids = (listed.body.data as { id: string }[]).map((m) => m.id).sort();
		expect(ids).toEqual(
			models
				.filter((m) => m.available)
				.map((m) => m.id)
				.sort(),
		);
	});

	it("each unavailable model is refused with 400 MODEL_UNAVAILABLE naming the key, on /v1 and /openai/v1", async () => {
		const unavailable = models.filter((m) => !m.available);
		expect(unavailable.length).toBeGreaterThan(0);
		for (const model of unavailable) {
			const variables = findEnvKeys(model.provider);
			expect(variables, `${model.id}: a key variable to name`).toBeDefined();

			const created = await server.request("POST", "/v1/sessions", { body: { model: model.id } });
			expect(created.status, model.id).toBe(400);
			expect(created.body.error.code, model.id).toBe("MODEL_UNAVAILABLE");
			expect(created.body.error.message, model.id).toContain(variables![0]);

			const completion = await server.request("POST", "/openai/v1/chat/completions", {
				body: { model: model.id, messages: [{ role: "user", content: "hi" }] },
			});
			expect(completion.status, model.id).toBe(400);
			expect(completion.body.error.code, model.id).toBe("MODEL_UNAVAILABLE");
		}
		expect((await server.request("GET", "/v1/sessions")).body.sessions).toEqual([]);
	});

	it("each available model runs without a key: the run ends with no error", async () => {
		const available = models.filter((m) => m.available);
		expect(available.map((m) => m.id)).toContain("faux/echo");
		for (const model of available) {
			const created = await server.request("POST", "/v1/sessions", { body: { model: model.id } });
			expect(created.status, model.id).toBe(201);
			const stream = await promptSse(server.url, created.body.id, { message: "hello there" });
			const end = await stream.waitForType("agent_end");
			const assistant = end.data.messages.filter((m: { role: string }) => m.role === "assistant");
			expect(assistant.length, model.id).toBeGreaterThan(0);
			for (const message of assistant) {
				expect(message.stopReason, `${model.id}: ${message.errorMessage}`).not.toBe("error");
			}
			stream.close();
		}
	});
});
