import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { closeHttpPools } from "../../../src/ai/http.js";
import { registerCustomModel } from "../../../src/ai/models.js";
import { type ReplayServer, startReplayServer } from "../../helpers/replay-server.js";
import { startServer, type TestServer } from "../../helpers/server.js";
import { promptSse } from "../../helpers/sse.js";

/**
 * A provider that sends its headers and then nothing must not hold a session for the default five
 * minutes when the operator chose less: the server-wide setting and a model's own `idleTimeoutMs`
 * both end the run with an error in about that time, and the session answers the next prompt.
 */
let provider: ReplayServer;
let server: TestServer | undefined;
beforeAll(async () => {
	provider = await startReplayServer();
});
afterEach(async () => {
	await server?.close();
	server = undefined;
	provider.reset();
});
afterAll(async () => {
	await provider.close();
	await closeHttpPools();
});

const answer = (text: string) =>
	[
		{ id: "chatcmpl-1", model: "m", choices: [{ index: 0, delta: { role: "assistant", content: text } }] },
		{ id: "chatcmpl-1", model: "m", choices: [{ index: 0, delta: {}, finish_reason: "stop" }] },
	]
		.map((chunk) => `data: ${JSON.stringify(chunk)}\n\n`)
		.join("");

async function start(config: Record<string, unknown>, model: Record<string, unknown> = {}): Promise<string> {
	server = await startServer({
		env: { STALLING_API_KEY: "k-test" },
		config: {
			...config,
			models: [
				{
					provider: "stalling",
					id: "m",
					baseUrl: `${provider.url}/v1`,
					apiKeyEnv: "STALLING_API_KEY",
					...model,
				},
			],
		},
	});
	const created = await server.request("POST", "/v1/sessions", { body: { model: "stalling/m" } });
	expect(created.status).toBe(201);
	return created.body.id;
}

/** Prompts a provider that stalls after its headers; returns how long the run took and its last message. */
async function promptStalled(id: string): Promise<{ elapsed: number; last: any }> {
	provider.enqueue({ stallAfterBytes: 0 });
	const started = Date.now();
	const stream = await promptSse(server!.url, id, { message: "hello" });
	await stream.waitForEnd(10_000);
	const elapsed = Date.now() - started;
	const end = stream.events.at(-1)!;
	expect(end.event).toBe("agent_end");
	return { elapsed, last: end.data.messages.at(-1) };
}

async function expectUsable(id: string): Promise<void> {
	const state = (await server!.request("GET", `/v1/sessions/${id}`)).body;
	expect(state.status).toBe("idle");
	provider.enqueue({ body: answer("back again") });
	const stream = await promptSse(server!.url, id, { message: "again" });
	await stream.waitForEnd();
	const last = stream.events.at(-1)!.data.messages.at(-1);
	expect(last.stopReason).toBe("stop");
	expect(last.content).toEqual([{ type: "text", text: "back again" }]);
}

describe("provider idle timeout", () => {
	it("WHEELHOUSE_PROVIDER_IDLE_TIMEOUT_MS ends a run whose provider stalls after its headers, in about that time", async () => {
		const id = await start({ providerIdleTimeoutMs: 300 });
		const { elapsed, last } = await promptStalled(id);
		expect(last.stopReason).toBe("error");
		expect(last.errorMessage).toBe("Request timed out: no data from the provider for 300 ms");
		expect(elapsed).toBeGreaterThanOrEqual(290);
		expect(elapsed).toBeLessThan(3_000);
		expect(provider.requests).toHaveLength(1);
		await expectUsable(id);
	});

	it("a model's idleTimeoutMs beats the server-wide setting", async () => {
		const id = await start({ providerIdleTimeoutMs: 600_000 }, { idleTimeoutMs: 250 });
		const { elapsed, last } = await promptStalled(id);
		expect(last.stopReason).toBe("error");
		expect(last.errorMessage).toBe("Request timed out: no data from the provider for 250 ms");
		expect(elapsed).toBeLessThan(3_000);
		await expectUsable(id);
	});

	it("the variable is read from the environment; a custom model's idleTimeoutMs must be a non-negative integer", async () => {
		server = await startServer({ env: { WHEELHOUSE_PROVIDER_IDLE_TIMEOUT_MS: "1234" } });
		expect(server.app.wheelhouse.config.providerIdleTimeoutMs).toBe(1234);
		expect(() =>
			registerCustomModel({ provider: "stalling", id: "bad", baseUrl: provider.url, idleTimeoutMs: -1 }),
		).toThrow(/idleTimeoutMs must be a non-negative integer/);
	});
});
