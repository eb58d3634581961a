/**
 * `POST /api/stream` spends like any model call: a key whose budget is spent is refused (429 in the
 * shape pi's client shows), each call is added to the key's usage rows (`GET /v1/usage`) and to the
 * `wheelhouse_model_*` metrics; compaction summary calls are in those metrics too.
 */
import { afterEach, describe, expect, it } from "vitest";
import type { AssistantMessage } from "../../../src/ai/types.js";
import { ownerIdOf } from "../../../src/server/runtime/owner-id.js";
import { postProxy, proxyAgent, userMessage } from "../../helpers/pi-proxy.js";
import { scriptedModel, text400, usage } from "../../helpers/scripted-session.js";
import { startServer, type TestServer } from "../../helpers/server.js";

const model = scriptedModel("pi-proxy-usage-faux");
const KEY_A = "proxy-usage-key-a";
const KEY_B = "proxy-usage-key-b";
let server: TestServer | undefined;
afterEach(async () => {
	await server?.close();
	server = undefined;
	model.requests.length = 0;
});

const call = (text: string) => ({ model: model.faux.getModel(), context: { messages: [userMessage(text)] } });

/** The value of the sample `name{labels}` in a scrape. */
function sample(text: string, name: string, labels: Record<string, string>): number | undefined {
	const wanted = Object.entries(labels).map(([k, v]) => `${k}="${v}"`);
	for (const line of text.split("\n")) {
		if (!line.startsWith(`${name}{`)) continue;
		const labelText = line.slice(name.length).split(" ")[0] as string;
		if (wanted.every((pair) => labelText.includes(pair))) return Number(line.slice(line.lastIndexOf(" ") + 1));
	}
	return undefined;
}

/** The operator credential `/metrics` asks for (an API key is refused there). */
const OPERATOR = "operator-token-0123456789";

async function scrape(s: TestServer, key: string): Promise<string> {
	const res = await fetch(`${s.url}/metrics`, { headers: { authorization: `Bearer ${key}` } });
	expect(res.status).toBe(200);
	return res.text();
}

describe("POST /api/stream and the key's budget and usage", () => {
	it("refuses a key whose budget is spent, 429 as pi's client shows it; the spending is the proxy's own", async () => {
		server = await startServer({
			models: [model.faux.getModel()],
			config: { apiKeys: [KEY_A, KEY_B], keyBudgets: { [KEY_A]: { maxTokens: 1000, period: "day" } } } as never,
		});
		model.script(
			{ content: "one", usage: usage(600, 0.25) },
			{ content: "two", usage: usage(600, 0.25) },
			{ content: "for b", usage: usage(600, 0.25) },
		);
		const first = await postProxy(server.url, call("1"), KEY_A);
		expect(first.status).toBe(200);
		expect(first.events.at(-1)).toMatchObject({ type: "done", usage: { totalTokens: 600 } });
		// Below the limit still: the call that crosses it is made.
		const second = await postProxy(server.url, call("2"), KEY_A);
		expect(second.events.at(-1)).toMatchObject({ type: "done" });

		const third = await postProxy(server.url, call("3"), KEY_A);
		expect(third.status).toBe(429);
		expect(JSON.parse(third.text)).toEqual({
			code: "KEY_BUDGET_EXHAUSTED",
			error: expect.stringContaining("maxTokens is 1000 per day and this key has used 1200 tokens"),
		});
		const agent = proxyAgent(server.url, KEY_A, { model: model.faux.getModel() });
		await agent.prompt("again");
		const refused = agent.state.messages.at(-1) as AssistantMessage;
		expect(refused.stopReason).toBe("error");
		expect(refused.errorMessage).toMatch(/^Proxy error: API key budget reached: maxTokens is 1000/);
		expect(model.requests).toHaveLength(2);

		// The same budget as the key's sessions: /v1 refuses it too.
		const session = await server.request("POST", "/v1/sessions", { key: KEY_A, body: { model: model.spec } });
		const prompt = await server.request("POST", `/v1/sessions/${session.body.id}/prompt`, {
			key: KEY_A,
			body: { message: "hi" },
		});
		expect(prompt).toMatchObject({ status: 429, body: { error: { code: "KEY_BUDGET_EXHAUSTED" } } });

		// Another key is not touched.
		const other = await postProxy(server.url, call("b"), KEY_B);
		expect(other.events.at(-1)).toMatchObject({ type: "done" });
	});

	it("adds each call to the key's usage rows: GET /v1/usage moves, one turn per call", async () => {
		server = await startServer({
			models: [model.faux.getModel()],
			config: { apiKeys: [KEY_A, KEY_B], keyBudgets: { [KEY_A]: { maxCostUsd: 10 } } } as never,
		});
		const before = await server.request("GET", "/v1/usage", { key: KEY_A });
		expect(before.body.total.totalTokens).toBe(0);
		model.script({ content: "one", usage: usage(300, 0.5) }, { content: "two", usage: usage(200, 0.25) });
		await postProxy(server.url, call("1"), KEY_A);
		// pi's own client, unmodified.
		const agent = proxyAgent(server.url, KEY_A, { model: model.faux.getModel() });
		await agent.prompt("2");
		expect((agent.state.messages.at(-1) as AssistantMessage).content).toEqual([{ type: "text", text: "two" }]);

		const after = await server.request("GET", "/v1/usage", { key: KEY_A });
		expect(after.status).toBe(200);
		expect(after.body.total).toMatchObject({ input: 480, output: 20, totalTokens: 500, costUsd: 0.75, turns: 2 });
		expect(after.body.byModel).toEqual([
			expect.objectContaining({ provider: "scripted", model: "small", totalTokens: 500, turns: 2 }),
		]);
		expect(after.body.budget).toMatchObject({ usedCostUsd: 0.75, remainingCostUsd: 9.25 });
		const other = await server.request("GET", "/v1/usage", { key: KEY_B });
		expect(other.body.total.totalTokens).toBe(0);
	});
});

describe("model calls outside a run's turns in the wheelhouse_model_* metrics", () => {
	it("counts a proxy call and a compaction's summary call", async () => {
		server = await startServer({
			models: [model.faux.getModel()],
			config: { apiKeys: [KEY_A], metricsToken: OPERATOR },
		});
		const labels = { provider: "scripted", model: "small" };
		model.script({ content: "proxied", usage: usage(100) });
		const proxied = await postProxy(server.url, call("hi"), KEY_A);
		expect(proxied.events.at(-1)).toMatchObject({ type: "done" });
		let text = await scrape(server, OPERATOR);
		expect(sample(text, "wheelhouse_model_calls_total", { ...labels, outcome: "stop" })).toBe(1);
		expect(sample(text, "wheelhouse_model_call_duration_seconds_count", { ...labels, outcome: "stop" })).toBe(1);
		expect(sample(text, "wheelhouse_model_time_to_first_token_seconds_count", labels)).toBe(1);
		expect(sample(text, "wheelhouse_model_tokens_total", { ...labels, type: "input" })).toBe(90);
		expect(sample(text, "wheelhouse_model_tokens_total", { ...labels, type: "output" })).toBe(10);

		// Two turns of a run, then a manual compaction: its summary call is the fourth call.
		const id = (await server.request("POST", "/v1/sessions", { key: KEY_A, body: { model: model.spec } })).body.id;
		model.script(
			{ content: text400("A1"), usage: usage(300) },
			{ content: text400("A2"), usage: usage(500) },
			{ content: "SUMMARY", usage: usage(120, 0.5) },
		);
		for (const message of [text400("U1"), text400("U2")]) {
			const res = await server.request("POST", `/v1/sessions/${id}/prompt`, { key: KEY_A, body: { message } });
			expect(res.status).toBe(202);
			await server.app.wheelhouse.sessions.get(id, ownerIdOf(KEY_A)).waitForIdle();
		}
		const compacted = await server.request("POST", `/v1/sessions/${id}/compact`, {
			key: KEY_A,
			body: { keepRecentTokens: 100 },
		});
		expect(compacted).toMatchObject({ status: 200, body: { compacted: true } });
		text = await scrape(server, OPERATOR);
		expect(sample(text, "wheelhouse_model_calls_total", { ...labels, outcome: "stop" })).toBe(4);
		expect(sample(text, "wheelhouse_model_call_duration_seconds_count", { ...labels, outcome: "stop" })).toBe(4);
		expect(sample(text, "wheelhouse_model_tokens_total", { ...labels, type: "input" })).toBe(90 + 290 + 490 + 110);
		expect(sample(text, "wheelhouse_model_cost_usd_total", labels)).toBe(0.5);
	});
});
