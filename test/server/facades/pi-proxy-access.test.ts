/**
 * Who may use `POST /api/stream`, and with what: served by default only when the server has API
 * keys (`WHEELHOUSE_PI_PROXY=auto`), with the bearer key; errors as the `{ error, code }` JSON pi's
 * client shows (`Proxy error: <error>`); bodies checked field by field; a call counts against the
 * per-key run limit.
 */
import { afterEach, describe, expect, it } from "vitest";
import { registerFauxProvider } from "../../../src/ai/providers/faux.js";
import type { AssistantMessage } from "../../../src/ai/types.js";
import { ConfigError, loadConfig } from "../../../src/server/config/config.js";
import { postProxy, proxyAgent, userMessage } from "../../helpers/pi-proxy.js";
import { startServer, type TestServer } from "../../helpers/server.js";

const KEY = "pi-proxy-key-5";
const faux = registerFauxProvider({ api: "pi-proxy-access-faux", provider: "scripted" });
let server: TestServer | undefined;
afterEach(async () => {
	await server?.close();
	server = undefined;
});

const body = () => ({ model: faux.getModel(), context: { messages: [userMessage("hi")] } });

describe("POST /api/stream: access", () => {
	it("needs the bearer key: 401 as { error, code } that pi's client shows", async () => {
		server = await startServer({ config: { apiKeys: [KEY] }, models: [faux.getModel()] });
		const missing = await postProxy(server.url, body());
		expect(missing.status).toBe(401);
		expect(JSON.parse(missing.text)).toEqual({
			error: "Missing credentials: send the header `Authorization: Bearer <api key>`.",
			code: "UNAUTHORIZED",
		});
		const wrong = await postProxy(server.url, body(), "not-the-key-1");
		expect(wrong.status).toBe(401);
		expect(JSON.parse(wrong.text)).toMatchObject({ code: "UNAUTHORIZED", error: expect.stringContaining("not valid") });

		const agent = proxyAgent(server.url, "not-the-key-1", { model: faux.getModel() });
		await agent.prompt("hi");
		expect(agent.state.messages.at(-1)).toMatchObject({
			stopReason: "error",
			errorMessage: "Proxy error: The API key is not valid for this server.",
		});

		faux.setResponses([{ content: "welcome" }]);
		const allowed = proxyAgent(server.url, KEY, { model: faux.getModel() });
		await allowed.prompt("hi");
		expect((allowed.state.messages.at(-1) as AssistantMessage).content).toEqual([{ type: "text", text: "welcome" }]);
	});

	it("is off without API keys unless WHEELHOUSE_PI_PROXY=on, and off with keys when WHEELHOUSE_PI_PROXY=off", async () => {
		server = await startServer({ models: [faux.getModel()] });
		const keyless = await postProxy(server.url, body());
		expect(keyless.status).toBe(404);
		const off = JSON.parse(keyless.text);
		expect(off.code).toBe("ENDPOINT_OFF");
		expect(off.error).toContain("WHEELHOUSE_API_KEYS");
		expect(off.error).toContain("WHEELHOUSE_PI_PROXY=on");
		await server.close();

		server = await startServer({ config: { apiKeys: [KEY], piProxy: "off" }, models: [faux.getModel()] });
		const turnedOff = await postProxy(server.url, body(), KEY);
		expect(turnedOff.status).toBe(404);
		expect(JSON.parse(turnedOff.text)).toMatchObject({
			code: "ENDPOINT_OFF",
			error: expect.stringContaining("WHEELHOUSE_PI_PROXY=off"),
		});
		await server.close();

		server = await startServer({ config: { piProxy: "on" }, models: [faux.getModel()] });
		faux.setResponses([{ content: "open" }]);
		const on = await postProxy(server.url, body());
		expect(on.status).toBe(200);
		expect(on.events.at(-1)).toMatchObject({ type: "done", reason: "stop" });
	});

	it("WHEELHOUSE_PI_PROXY takes auto, on or off, and says so", () => {
		expect(loadConfig({}).piProxy).toBe("auto");
		expect(loadConfig({ WHEELHOUSE_PI_PROXY: "on" }).piProxy).toBe("on");
		expect(() => loadConfig({ WHEELHOUSE_PI_PROXY: "yes" })).toThrow(ConfigError);
		expect(() => loadConfig({ WHEELHOUSE_PI_PROXY: "yes" })).toThrow(
			'WHEELHOUSE_PI_PROXY: must be one of: auto, on, off (got "yes")',
		);
	});

	it("checks the body and names the field at fault", async () => {
		server = await startServer({ config: { apiKeys: [KEY] }, models: [faux.getModel()] });
		const cases: [unknown, string][] = [
			[{ context: { messages: [] } }, "body.model is required"],
			[{ model: { provider: "scripted" }, context: { messages: [] } }, "body.model.id is required"],
			[{ ...body(), context: { messages: "hi" } }, "body.context.messages"],
			[
				{ ...body(), context: { messages: [{ role: "user", content: [{ type: "txt", text: "x" }] }] } },
				'body.context.messages[0].content[0].type must be "text" or "image"',
			],
			[
				{
					...body(),
					context: { messages: [{ role: "assistant", content: [{ type: "toolCall", id: "c", name: "n" }] }] },
				},
				"body.context.messages[0].content[0].arguments must be an object",
			],
			[
				{ ...body(), context: { messages: [{ role: "toolResult", toolCallId: "c", toolName: "n", content: [] }] } },
				"body.context.messages[0].isError must be a boolean",
			],
			[
				{ ...body(), context: { messages: [], tools: [{ name: "t", description: "d" }] } },
				"body.context.tools.0.parameters is required",
			],
			[{ ...body(), options: { reasoning: "extreme" } }, "body.options.reasoning must be one of"],
		];
		for (const [sent, message] of cases) {
			const wire = await postProxy(server.url, sent, KEY);
			expect(wire.status, message).toBe(400);
			const error = JSON.parse(wire.text);
			expect(error.code, message).toBe("VALIDATION_FAILED");
			expect(error.error, message).toContain(message);
		}
		let deep: unknown = {};
		for (let i = 0; i < 100; i++) deep = { nested: deep };
		const tooDeep = await postProxy(server.url, { ...body(), options: { metadata: deep } }, KEY);
		expect(tooDeep.status).toBe(400);
		expect(JSON.parse(tooDeep.text).code).toBe("JSON_TOO_DEEP");
	});

	it("a call counts against WHEELHOUSE_MAX_RUNS_PER_KEY while it streams", async () => {
		server = await startServer({ config: { apiKeys: [KEY], maxRunsPerKey: 1 }, models: [faux.getModel()] });
		let release!: () => void;
		const held = new Promise<void>((resolve) => {
			release = resolve;
		});
		let started!: () => void;
		const running = new Promise<void>((resolve) => {
			started = resolve;
		});
		faux.setResponses([
			async () => {
				started();
				await held;
				return { content: "first" };
			},
			{ content: "second" },
		]);
		const first = postProxy(server.url, body(), KEY);
		await running;
		const refused = await postProxy(server.url, body(), KEY);
		expect(refused.status).toBe(429);
		expect(JSON.parse(refused.text).code).toBe("TOO_MANY_RUNS");
		release();
		expect((await first).events.at(-1)).toMatchObject({ type: "done" });
		const after = await postProxy(server.url, body(), KEY);
		expect(after.events.at(-1)).toMatchObject({ type: "done" });
	});
});
