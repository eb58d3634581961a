/**
 * A model the server cannot call (its provider needs a key and none is configured) is refused
 * when a session would take it — create and PATCH answer 400 `MODEL_UNAVAILABLE` naming the
 * variable to set — instead of failing later inside the run's stream. `GET /v1/models` says which
 * models are available. Models whose server needs no key (a local OpenAI-compatible server, an
 * application's own wire API) stay available without one.
 */
import { afterEach, describe, expect, it } from "vitest";
import { ConfigError } from "../../../src/server/config/config.js";
import { buildApp } from "../../../src/server/http/app.js";
import { startServer, type TestServer } from "../../helpers/server.js";

let server: TestServer | undefined;
afterEach(async () => {
	await server?.close();
	server = undefined;
});

const localModel = { provider: "local-test", id: "tiny", baseUrl: "http://127.0.0.1:9/v1" };

async function modelsById(s: TestServer): Promise<Map<string, { available: boolean }>> {
	const body = (await s.request("GET", "/v1/models")).body as { models: { id: string; available: boolean }[] };
	return new Map(body.models.map((m) => [m.id, m]));
}

describe("models without a key", () => {
	it("are marked unavailable and refused at create and PATCH with a message naming the variable", async () => {
		server = await startServer({ env: {}, config: { models: [localModel] } });
		const models = await modelsById(server);
		expect(models.get("faux/echo")?.available).toBe(true);
		expect(models.get("openai/gpt-5.5")?.available).toBe(false);
		expect(models.get("anthropic/claude-opus-4-7")?.available).toBe(false);
		expect(models.get("local-test/tiny")?.available).toBe(true);

		const created = await server.request("POST", "/v1/sessions", { body: { model: "openai/gpt-5.5" } });
		expect(created.status).toBe(400);
		expect(created.body.error.code).toBe("MODEL_UNAVAILABLE");
		expect(created.body.error.message).toContain("OPENAI_API_KEY");
		expect((await server.request("GET", "/v1/sessions")).body.sessions).toEqual([]);

		const id = (await server.request("POST", "/v1/sessions", { body: {} })).body.id;
		const patched = await server.request("PATCH", `/v1/sessions/${id}`, {
			body: { model: "anthropic/claude-opus-4-7" },
		});
		expect(patched.status).toBe(400);
		expect(patched.body.error.code).toBe("MODEL_UNAVAILABLE");
		expect(patched.body.error.message).toContain("ANTHROPIC_API_KEY");
		expect((await server.request("GET", `/v1/sessions/${id}`)).body.model).toBe("faux/echo");

		// A local server needs no key.
		const local = await server.request("POST", "/v1/sessions", { body: { model: "local-test/tiny" } });
		expect(local.status).toBe(201);
	});

	it("cannot be the default model: startup stops naming the variable and the key to set", async () => {
		const startup = buildApp({ env: { WHEELHOUSE_DEFAULT_MODEL: "openai/gpt-5.5" }, config: { logLevel: "silent" } });
		await expect(startup).rejects.toThrow(ConfigError);
		await expect(startup).rejects.toThrow(/^Invalid configuration: WHEELHOUSE_DEFAULT_MODEL: .*set OPENAI_API_KEY/);
	});

	it("are available once the provider's key is set", async () => {
		server = await startServer({ env: { OPENAI_API_KEY: "sk-test-not-used" }, config: { defaultModel: "faux/echo" } });
		expect((await modelsById(server)).get("openai/gpt-5.5")?.available).toBe(true);
		const created = await server.request("POST", "/v1/sessions", { body: { model: "openai/gpt-5.5" } });
		expect(created.status).toBe(201);
	});
});
