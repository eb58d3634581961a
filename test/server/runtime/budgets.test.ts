/**
 * A session's budget: a run that reaches a limit ends cleanly (its `agent_end`, its last message
 * names the limit); a prompt, a continue or a compaction on a spent budget is refused with
 * `BUDGET_EXHAUSTED`; the state shows what is left; raising the limit lets the session go on.
 */
import { afterEach, describe, expect, it } from "vitest";
import { fauxToolCall } from "../../../src/ai/providers/faux.js";
import { promptAndWait, scriptedModel, transcript, usage } from "../../helpers/scripted-session.js";
import { startServer, type TestServer } from "../../helpers/server.js";
import { openSse } from "../../helpers/sse.js";

const model = scriptedModel("budgets-faux");
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

async function session(budget: Record<string, unknown>) {
	server = await startServer({ models: [model.faux.getModel()] });
	const created = await server.request("POST", "/v1/sessions", { body: { model: model.spec, budget } });
	expect(created.status).toBe(201);
	return { s: server, id: created.body.id as string, created: created.body };
}

describe("a run that reaches a limit", () => {
	it("maxTurnsPerRun: ends after that many model calls with agent_end and a message naming the limit; the next run starts afresh", async () => {
		const { s, id, created } = await session({ maxTurnsPerRun: 2 });
		expect(created.budget).toEqual({
			maxTokens: null,
			maxCostUsd: null,
			maxTurnsPerRun: 2,
			usedTokens: 0,
			usedCostUsd: 0,
			remainingTokens: null,
			remainingCostUsd: null,
			turnsThisRun: null,
			exhausted: null,
		});
		const events = await openSse(`${s.url}/v1/sessions/${id}/events`);
		model.script(toolTurn(100), toolTurn(200), toolTurn(300), { content: "done", usage: usage(50) });
		await promptAndWait(s, id, "loop forever");
		expect(model.requests).toHaveLength(2);
		const end = await events.waitForType("agent_end");
		const last = end.data.messages.at(-1);
		expect(last).toMatchObject({
			role: "assistant",
			stopReason: "error",
			errorMessage:
				"Budget reached: maxTurnsPerRun is 2 and this run made 2 model calls. The run ends here; a prompt or continue starts a new run.",
		});
		const stored = await transcript(s, id);
		expect(stored.map((m) => m.role)).toEqual([
			"user",
			"assistant",
			"toolResult",
			"assistant",
			"toolResult",
			"assistant",
		]);
		expect(stored.at(-1)).toEqual(last);
		const state = (await s.request("GET", `/v1/sessions/${id}`)).body;
		expect(state.status).toBe("idle");
		expect(state.errorMessage).toBe(last.errorMessage);
		expect(state.budget).toMatchObject({ turnsThisRun: null, exhausted: null, usedTokens: 300 });

		// A limit per run: the next run may make two calls again.
		await promptAndWait(s, id, "and now?");
		expect(model.requests).toHaveLength(4);
		expect((await transcript(s, id)).at(-1)).toMatchObject({ role: "assistant", stopReason: "stop" });
		events.close();
	});

	it("maxTokens: ends before the call after the one that crossed it, then refuses prompts, continues and compactions until raised", async () => {
		const { s, id } = await session({ maxTokens: 1000 });
		model.script({ content: "first", usage: usage(600) }, toolTurn(500), { content: "never sent", usage: usage(1) });
		await promptAndWait(s, id, "one");
		await promptAndWait(s, id, "two");
		expect(model.requests).toHaveLength(2);
		const stored = await transcript(s, id);
		expect(stored.at(-1)).toMatchObject({
			stopReason: "error",
			errorMessage:
				"Budget reached: maxTokens is 1000 and this session has used 1100 tokens. Raise budget.maxTokens (PATCH /v1/sessions/:id) to go on.",
		});
		const state = (await s.request("GET", `/v1/sessions/${id}`)).body;
		expect(state.budget).toMatchObject({
			maxTokens: 1000,
			usedTokens: 1100,
			remainingTokens: 0,
			exhausted: "maxTokens",
		});

		const refused = await s.request("POST", `/v1/sessions/${id}/prompt`, { body: { message: "three" } });
		expect(refused.status).toBe(409);
		expect(refused.body.error).toEqual({
			code: "BUDGET_EXHAUSTED",
			message: stored.at(-1).errorMessage,
			details: { limit: "maxTokens", max: 1000, used: 1100 },
		});
		const sse = await fetch(`${s.url}/v1/sessions/${id}/prompt`, {
			method: "POST",
			headers: { "content-type": "application/json", accept: "text/event-stream" },
			body: JSON.stringify({ message: "three", ifBusy: "interrupt" }),
		});
		expect(sse.status).toBe(409);
		// A queued message would make a continue valid; the budget still refuses it.
		expect((await s.request("POST", `/v1/sessions/${id}/steer`, { body: { message: "queued" } })).status).toBe(202);
		expect((await s.request("POST", `/v1/sessions/${id}/continue`)).body.error.code).toBe("BUDGET_EXHAUSTED");
		const compact = await s.request("POST", `/v1/sessions/${id}/compact`, { body: { keepRecentTokens: 0 } });
		expect(compact.body.error.code).toBe("BUDGET_EXHAUSTED");
		expect(model.requests).toHaveLength(2);

		const patched = await s.request("PATCH", `/v1/sessions/${id}`, { body: { budget: { maxTokens: 5000 } } });
		expect(patched.body.budget).toMatchObject({ maxTokens: 5000, remainingTokens: 3900, exhausted: null });
		model.script({ content: "again", usage: usage(200) });
		await promptAndWait(s, id, "three");
		expect(model.requests).toHaveLength(3);
		// The queued steering message went out before the model call.
		expect(model.requests[2]!.messages.slice(-2).map((m) => (m.content as { text: string }[])[0]!.text)).toEqual([
			"three",
			"queued",
		]);
	});

	it("maxCostUsd: counts the cost at the model's prices; a prompt at the start of a spent budget is refused", async () => {
		const { s, id } = await session({ maxCostUsd: 0.05 });
		model.script({ content: "pricey", usage: usage(100, 0.06) });
		await promptAndWait(s, id, "one");
		const state = (await s.request("GET", `/v1/sessions/${id}`)).body;
		expect(state.budget).toMatchObject({
			maxCostUsd: 0.05,
			usedCostUsd: 0.06,
			remainingCostUsd: 0,
			exhausted: "maxCostUsd",
		});
		const refused = await s.request("POST", `/v1/sessions/${id}/prompt`, { body: { message: "two" } });
		expect(refused.status).toBe(409);
		expect(refused.body.error).toMatchObject({
			code: "BUDGET_EXHAUSTED",
			message:
				"Budget reached: maxCostUsd is $0.05 and this session has spent $0.06. Raise budget.maxCostUsd (PATCH /v1/sessions/:id) to go on.",
			details: { limit: "maxCostUsd", max: 0.05, used: 0.06 },
		});
		expect(model.requests).toHaveLength(1);
	});

	it("rejects a budget that is not one (400 naming the field)", async () => {
		server = await startServer({ models: [model.faux.getModel()] });
		for (const budget of [{ maxTokens: 0 }, { maxCostUsd: -1 }, { maxTurnsPerRun: 1.5 }, { maxTokenz: 5 }]) {
			const res = await server.request("POST", "/v1/sessions", { body: { model: model.spec, budget } });
			expect(res.status, JSON.stringify(budget)).toBe(400);
			expect(res.body.error.message).toContain("body.budget");
		}
	});
});
