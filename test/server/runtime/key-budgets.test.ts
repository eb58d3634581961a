/**
 * Budgets per API key: the sessions of one key share its budget; a run that reaches it ends with
 * its `agent_end` and a message naming the limit; a prompt on a spent key is refused with
 * `KEY_BUDGET_EXHAUSTED`; another key is unaffected; the state and `GET /v1/usage` show what is
 * spent and left, and the usage equals the per-message usage of the transcripts.
 */
import { afterEach, describe, expect, it } from "vitest";
import { fauxToolCall } from "../../../src/ai/providers/faux.js";
import { ConfigError, redactConfig } from "../../../src/server/config/config.js";
import { buildApp } from "../../../src/server/http/app.js";
import { ownerIdOf } from "../../../src/server/runtime/owner-id.js";
import { scriptedModel, usage } from "../../helpers/scripted-session.js";
import { startServer, type TestServer } from "../../helpers/server.js";
import { openSse } from "../../helpers/sse.js";

const model = scriptedModel("key-budgets-faux");
const KEY_A = "key-a-0123456789";
const KEY_B = "key-b-0123456789";
let server: TestServer | undefined;
afterEach(async () => {
	await server?.close();
	server = undefined;
	model.requests.length = 0;
});

const toolTurn = (total: number, cost = 0) => ({
	content: fauxToolCall("calculate", { expression: "1+1" }),
	usage: usage(total, cost),
});

async function start(keyBudgets: Record<string, unknown>): Promise<TestServer> {
	server = await startServer({
		models: [model.faux.getModel()],
		config: { apiKeys: [KEY_A, KEY_B], keyBudgets } as never,
	});
	return server;
}

async function newSession(s: TestServer, key: string): Promise<string> {
	const created = await s.request("POST", "/v1/sessions", { key, body: { model: model.spec } });
	expect(created.status).toBe(201);
	return created.body.id;
}

async function promptAndWait(s: TestServer, key: string, id: string, message: string): Promise<void> {
	const res = await s.request("POST", `/v1/sessions/${id}/prompt`, { key, body: { message } });
	expect(res.status).toBe(202);
	await s.app.wheelhouse.sessions.get(id, ownerIdOf(key)).waitForIdle();
}

async function messages(s: TestServer, key: string, id: string): Promise<any[]> {
	return (await s.request("GET", `/v1/sessions/${id}/messages?limit=1000`, { key })).body.messages;
}

/** Sums the usage of a transcript's assistant messages. */
function summed(all: any[][]) {
	// A call refused before it was made reports no tokens and is no turn.
	const assistants = all.flat().filter((m) => m.role === "assistant" && m.usage.totalTokens > 0);
	return {
		totalTokens: assistants.reduce((n, m) => n + m.usage.totalTokens, 0),
		input: assistants.reduce((n, m) => n + m.usage.input, 0),
		output: assistants.reduce((n, m) => n + m.usage.output, 0),
		costUsd: assistants.reduce((n, m) => n + m.usage.cost.total, 0),
		turns: assistants.length,
	};
}

describe("a key's token budget", () => {
	it("is shared by the key's sessions: reached mid-run it ends the run, then refuses prompts; another key goes on", async () => {
		const s = await start({ [KEY_A]: { maxTokens: 1000, period: "day" } });
		const a1 = await newSession(s, KEY_A);
		const a2 = await newSession(s, KEY_A);
		const b1 = await newSession(s, KEY_B);

		model.script({ content: "first", usage: usage(600, 0.5) });
		await promptAndWait(s, KEY_A, a1, "one");
		let state = (await s.request("GET", `/v1/sessions/${a2}`, { key: KEY_A })).body;
		expect(state.keyBudget).toMatchObject({
			period: "day",
			maxTokens: 1000,
			usedTokens: 600,
			remainingTokens: 400,
			exhausted: null,
		});

		// The other session of the key crosses the limit with a tool turn: its next call is not made.
		const stream = await openSse(`${s.url}/v1/sessions/${a2}/events`, {
			headers: { authorization: `Bearer ${KEY_A}` },
		});
		model.script(toolTurn(500, 0.25), { content: "never sent", usage: usage(1) });
		await promptAndWait(s, KEY_A, a2, "two");
		expect(model.requests).toHaveLength(2);
		const end = await stream.waitForType("agent_end");
		const message = end.data.messages.at(-1);
		expect(message).toMatchObject({ role: "assistant", stopReason: "error" });
		expect(message.errorMessage).toMatch(
			/^API key budget reached: maxTokens is 1000 per day and this key has used 1100 tokens since \d{4}-\d{2}-\d{2}; it resets at the start of the next UTC day/,
		);
		stream.close();

		state = (await s.request("GET", `/v1/sessions/${a1}`, { key: KEY_A })).body;
		expect(state.keyBudget).toMatchObject({ usedTokens: 1100, remainingTokens: 0, exhausted: "maxTokens" });
		expect(state.budget).toMatchObject({ exhausted: null });
		const refused = await s.request("POST", `/v1/sessions/${a1}/prompt`, { key: KEY_A, body: { message: "three" } });
		expect(refused.status).toBe(429);
		expect(refused.body.error).toMatchObject({
			code: "KEY_BUDGET_EXHAUSTED",
			details: { limit: "maxTokens", max: 1000, used: 1100 },
		});
		expect(refused.body.error.message).toMatch(/^API key budget reached: maxTokens is 1000 per day/);
		const fresh = await newSession(s, KEY_A);
		expect(
			(await s.request("POST", `/v1/sessions/${fresh}/prompt`, { key: KEY_A, body: { message: "x" } })).body.error.code,
		).toBe("KEY_BUDGET_EXHAUSTED");
		expect(model.requests).toHaveLength(2);

		// Key B has no budget (no "*" entry): unaffected.
		model.script({ content: "b", usage: usage(5000, 3) });
		await promptAndWait(s, KEY_B, b1, "hi");
		expect((await messages(s, KEY_B, b1)).at(-1)).toMatchObject({ role: "assistant", stopReason: "stop" });
		expect((await s.request("GET", `/v1/sessions/${b1}`, { key: KEY_B })).body.keyBudget).toBeNull();

		// Usage: each key sees its own, equal to its transcripts' per-message usage.
		const usageA = (await s.request("GET", "/v1/usage", { key: KEY_A })).body;
		const expectedA = summed([await messages(s, KEY_A, a1), await messages(s, KEY_A, a2)]);
		expect(usageA.ownerId).toBe(ownerIdOf(KEY_A));
		expect(usageA.total).toMatchObject(expectedA);
		expect(usageA.total).toMatchObject({ totalTokens: 1100, costUsd: 0.75, turns: 2 });
		expect(usageA.byModel).toEqual([
			{ provider: "scripted", model: "small", cacheRead: 0, cacheWrite: 0, ...expectedA },
		]);
		expect(usageA.byDay).toHaveLength(1);
		expect(usageA.budget).toMatchObject({ usedTokens: 1100, exhausted: "maxTokens" });
		const usageB = (await s.request("GET", "/v1/usage", { key: KEY_B })).body;
		expect(usageB.total).toMatchObject({ totalTokens: 5000, costUsd: 3, turns: 1 });
		expect(usageB.budget).toBeNull();
	});
});

describe("a key's cost budget and turns per run", () => {
	it('maxCostUsd from "*" applies to every key on its own; maxTurnsPerRun ends a run after that many calls', async () => {
		const s = await start({ "*": { maxCostUsd: 1, maxTurnsPerRun: 2 } });
		const a = await newSession(s, KEY_A);
		const b = await newSession(s, KEY_B);
		model.script(toolTurn(10, 0.1), toolTurn(10, 0.1), { content: "never", usage: usage(1) });
		await promptAndWait(s, KEY_A, a, "loop");
		expect(model.requests).toHaveLength(2);
		expect((await messages(s, KEY_A, a)).at(-1).errorMessage).toBe(
			"API key budget reached: maxTurnsPerRun is 2 for this key and this run made 2 model calls. The run ends here; a prompt or continue starts a new run.",
		);

		model.script({ content: "pricey", usage: usage(10, 1.5) });
		await promptAndWait(s, KEY_A, a, "spend");
		const refused = await s.request("POST", `/v1/sessions/${a}/prompt`, { key: KEY_A, body: { message: "more" } });
		expect(refused.status).toBe(429);
		expect(refused.body.error).toMatchObject({
			code: "KEY_BUDGET_EXHAUSTED",
			details: { limit: "maxCostUsd", max: 1 },
		});
		expect(refused.body.error.message).toMatch(/maxCostUsd is \$1 per month and this key has spent \$1\.7 since/);

		model.script({ content: "b is fine", usage: usage(10, 0.5) });
		await promptAndWait(s, KEY_B, b, "hi");
		expect((await s.request("GET", "/v1/usage", { key: KEY_B })).body.budget).toMatchObject({
			period: "month",
			usedCostUsd: 0.5,
			remainingCostUsd: 0.5,
			exhausted: null,
		});
	});
});

describe("GET /v1/usage", () => {
	it("validates from and to, and answers the anonymous owner with auth off", async () => {
		server = await startServer({ models: [model.faux.getModel()] });
		const created = await server.request("POST", "/v1/sessions", { body: { model: model.spec } });
		model.script({ content: "ok", usage: usage(42, 0.125) });
		await server.request("POST", `/v1/sessions/${created.body.id}/prompt`, { body: { message: "hi" } });
		await server.app.wheelhouse.sessions.get(created.body.id, null).waitForIdle();
		const today = new Date().toISOString().slice(0, 10);
		const report = (await server.request("GET", `/v1/usage?from=${today}&to=${today}`)).body;
		expect(report).toMatchObject({ ownerId: null, from: today, to: today, budget: null });
		expect(report.rows).toEqual([
			{
				day: today,
				provider: "scripted",
				model: "small",
				input: 32,
				output: 10,
				cacheRead: 0,
				cacheWrite: 0,
				totalTokens: 42,
				costUsd: 0.125,
				turns: 1,
			},
		]);
		expect((await server.request("GET", "/v1/usage?from=2020-01-01&to=2020-01-31")).body.total.totalTokens).toBe(0);
		for (const [query, pattern] of [
			["from=2026-02-30", /query\.from: "2026-02-30" is not a calendar day/],
			["to=yesterday", /query\.to: "yesterday" is not a calendar day/],
			["from=2026-03-02&to=2026-03-01", /is after query\.to/],
			["from=2024-01-01&to=2026-01-01", /spans 732 days; ask for at most 366/],
		] as const) {
			const res = await server.request("GET", `/v1/usage?${query}`);
			expect(res.status).toBe(400);
			expect(res.body.error.code).toBe("INVALID_USAGE_RANGE");
			expect(res.body.error.message).toMatch(pattern);
		}
	});
});

describe("the keyBudgets config", () => {
	const build = (keyBudgets: unknown) =>
		buildApp({ env: {}, config: { logLevel: "silent", apiKeys: [KEY_A], keyBudgets } as never });

	it("keeps the keys that name the entries out of the logged configuration", () => {
		const logged = JSON.stringify(
			redactConfig({ apiKeys: [KEY_A], keyBudgets: { [KEY_A]: { maxTokens: 5 }, "*": { maxCostUsd: 1 } } } as never),
		);
		expect(logged).not.toContain(KEY_A);
		expect(JSON.parse(logged).keyBudgets).toEqual({ "[redacted] 1": { maxTokens: 5 }, "*": { maxCostUsd: 1 } });
	});

	it("names the field of a bad entry at startup", async () => {
		await expect(build({ [KEY_A]: { maxCostUsd: -1 } })).rejects.toThrow(
			new ConfigError('keyBudgets["key-…"].maxCostUsd', "must be a positive number of USD; got -1"),
		);
		await expect(build({ [KEY_A]: { maxTokens: 1.5 } })).rejects.toThrow(
			/keyBudgets\["key-…"\]\.maxTokens: must be a whole number/,
		);
		await expect(build({ "*": { period: "week" } })).rejects.toThrow(
			/keyBudgets\["\*"\]\.period: must be "day" or "month"/,
		);
		await expect(build({ "*": { maxCost: 1 } })).rejects.toThrow(/keyBudgets\["\*"\]\.maxCost: is not a budget field/);
		await expect(build({ "not-a-configured-key": { maxTokens: 5 } })).rejects.toThrow(
			/keyBudgets\["not-…"\]: names a key that is not in apiKeys/,
		);
		await expect(build([1])).rejects.toThrow(/keyBudgets: must be an object of budgets by API key/);
	});
});
