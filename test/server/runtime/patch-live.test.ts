import { afterEach, describe, expect, it } from "vitest";
import { streamScriptedTurn } from "../../../src/ai/providers/faux.js";
import { registerApiProvider, unregisterApiProvider } from "../../../src/ai/registry.js";
import type { Model } from "../../../src/ai/types.js";
import { echoTurn } from "../../../src/server/runtime/echo-model.js";
import { createGateTool, type GateTool } from "../../helpers/gate-tool.js";
import { startServer, type TestServer } from "../../helpers/server.js";
import { promptSse } from "../../helpers/sse.js";

let server: TestServer;
let gate: GateTool;
afterEach(async () => {
	gate?.release();
	unregisterApiProvider("test-recorder");
	await server?.close();
});

const seen: { model: string; systemPrompt?: string; reasoning?: string }[] = [];

function recorderModel(id: string): Model<any> {
	return {
		id,
		name: id,
		api: "test-recorder",
		provider: "test",
		baseUrl: "http://localhost:0",
		reasoning: true,
		input: ["text"],
		cost: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0 },
		contextWindow: 1000,
		maxTokens: 1000,
	};
}

describe("PATCH /v1/sessions/:id during a run", () => {
	it("applies model, system prompt and thinking level from the next model call", async () => {
		registerApiProvider("test-recorder", (model, context, options) => {
			seen.push({ model: model.id, systemPrompt: context.systemPrompt, reasoning: options?.reasoning });
			return streamScriptedTurn(model, echoTurn(context), { signal: options?.signal });
		});
		gate = createGateTool();
		server = await startServer({ tools: [gate.tool], models: [recorderModel("one"), recorderModel("two")] });
		const id = (await server.request("POST", "/v1/sessions", { body: { model: "test/one", systemPrompt: "A" } })).body
			.id;
		const stream = await promptSse(server.url, id, { message: "/tool wait_for_gate {}" });
		await gate.started();
		const patched = await server.request("PATCH", `/v1/sessions/${id}`, {
			body: { model: "test/two", systemPrompt: "B", thinkingLevel: "high" },
		});
		expect(patched.status).toBe(200);
		gate.release();
		await stream.waitForEnd();
		expect(seen).toEqual([
			{ model: "one", systemPrompt: "A", reasoning: undefined },
			{ model: "two", systemPrompt: "B", reasoning: "high" },
		]);
	});
});
