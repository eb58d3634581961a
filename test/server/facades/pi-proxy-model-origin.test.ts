/**
 * `POST /api/stream` calls the server's own model, found by provider and id: the `baseUrl` and
 * headers a client sends never steer where the server's provider key goes, and a provider's
 * failure reaches pi's client as an `error` with the provider's message. Unknown models are
 * refused before any call.
 */
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { closeHttpPools } from "../../../src/ai/http.js";
import type { AssistantMessage, Model } from "../../../src/ai/types.js";
import { postProxy, proxyAgent, userMessage } from "../../helpers/pi-proxy.js";
import { type ReplayServer, startReplayServer } from "../../helpers/replay-server.js";
import { startServer, type TestServer } from "../../helpers/server.js";

const KEY = "pi-proxy-key-2";
const PROVIDER_KEY = "server-provider-secret-1";
let upstream: ReplayServer;
let trap: ReplayServer;
let server: TestServer | undefined;
beforeAll(async () => {
	upstream = await startReplayServer();
	trap = await startReplayServer();
});
afterEach(async () => {
	await server?.close();
	server = undefined;
	upstream.reset();
	trap.reset();
});
afterAll(async () => {
	await upstream.close();
	await trap.close();
	await closeHttpPools();
});

const chunk = (delta: unknown, finish: string | null = null) =>
	`data: ${JSON.stringify({ id: "chatcmpl-1", object: "chat.completion.chunk", created: 1, model: "m1", choices: [{ index: 0, delta, finish_reason: finish }] })}\n\n`;
const PONG = `${chunk({ role: "assistant", content: "pong" })}${chunk({}, "stop")}data: [DONE]\n\n`;

/** The server's model: a Chat Completions server at `upstream`, whose key only the server has. */
function serverModel(): Model<"openai-completions"> {
	return {
		id: "m1",
		name: "Upstream m1",
		api: "openai-completions",
		provider: "upstreamco",
		baseUrl: `${upstream.url}/v1`,
		reasoning: false,
		input: ["text"],
		cost: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0 },
		contextWindow: 8192,
		maxTokens: 1024,
	};
}

async function start(): Promise<TestServer> {
	return startServer({
		config: { apiKeys: [KEY], providerKeys: { upstreamco: PROVIDER_KEY } },
		models: [serverModel()],
	});
}

describe("POST /api/stream: the server's model, wherever the client says it is", () => {
	it("never calls a baseUrl or sends headers the client chose; the server's key goes to the server's model", async () => {
		server = await start();
		upstream.enqueue({ body: PONG });
		const clientModel = {
			...serverModel(),
			baseUrl: `${trap.url}/v1`,
			headers: { "x-client-model-header": "from-the-model" },
		};
		const agent = proxyAgent(server.url, KEY, { model: clientModel }, { headers: { "x-client-option-header": "opt" } });
		await agent.prompt("ping");

		const answer = agent.state.messages.at(-1) as AssistantMessage;
		expect(answer).toMatchObject({ stopReason: "stop", content: [{ type: "text", text: "pong" }] });
		expect(trap.requests).toHaveLength(0);
		expect(upstream.requests).toHaveLength(1);
		const sent = upstream.requests[0]!;
		expect(sent.url).toBe("/v1/chat/completions");
		expect(sent.headers.authorization).toBe(`Bearer ${PROVIDER_KEY}`);
		expect(sent.headers["x-client-model-header"]).toBeUndefined();
		expect(sent.headers["x-client-option-header"]).toBeUndefined();
		// The server's API key (the bearer the client sent to the proxy) goes nowhere else either.
		expect(JSON.stringify(sent.headers)).not.toContain(KEY);
	});

	it("a provider failure arrives as `error` with the provider's message", async () => {
		server = await start();
		const providerMessage = "This model's maximum context length is 8192 tokens.";
		upstream.enqueue({
			status: 400,
			body: JSON.stringify({ error: { message: providerMessage, type: "invalid_request_error" } }),
		});
		const wire = await postProxy(
			server.url,
			{ model: serverModel(), context: { messages: [userMessage("too long")] } },
			KEY,
		);
		expect(wire.status).toBe(200);
		expect(wire.events.map((e) => e.type)).toEqual(["start", "error"]);
		expect(wire.events[1]).toMatchObject({ reason: "error" });
		expect(String(wire.events[1]!.errorMessage)).toContain(providerMessage);

		upstream.enqueue({
			status: 400,
			body: JSON.stringify({ error: { message: providerMessage, type: "invalid_request_error" } }),
		});
		const agent = proxyAgent(server.url, KEY, { model: serverModel() });
		await agent.prompt("too long");
		const answer = agent.state.messages.at(-1) as AssistantMessage;
		expect(answer.stopReason).toBe("error");
		expect(answer.errorMessage).toContain(providerMessage);
	});

	it("an unknown model is refused with its provider and id named, before any call", async () => {
		server = await start();
		const unknown = { ...serverModel(), id: "m2", baseUrl: `${trap.url}/v1` };
		const wire = await postProxy(server.url, { model: unknown, context: { messages: [userMessage("hi")] } }, KEY);
		expect(wire.status).toBe(400);
		const body = JSON.parse(wire.text);
		expect(body.code).toBe("UNKNOWN_MODEL");
		expect(body.error).toContain('"upstreamco/m2"');

		const agent = proxyAgent(server.url, KEY, { model: unknown });
		await agent.prompt("hi");
		const answer = agent.state.messages.at(-1) as AssistantMessage;
		expect(answer.stopReason).toBe("error");
		expect(answer.errorMessage).toMatch(/^Proxy error: .*Unknown model "upstreamco\/m2"/);
		expect(trap.requests).toHaveLength(0);
		expect(upstream.requests).toHaveLength(0);
	});
});
