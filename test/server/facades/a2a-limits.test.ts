/**
 * The per-key limits of `/v1` hold on the A2A door, with the `@a2a-js/sdk` client: a key whose
 * budget (`keyBudgets`) is spent is refused a new task as a JSON-RPC `InternalError` whose `data`
 * is `{ code: "KEY_BUDGET_EXHAUSTED", status: 429 }` (blocking and streaming, new context or not),
 * while another key goes on; and the JSON-RPC endpoint counts against the key's requests per
 * minute (`rateLimitPerMinute`): past it the usual 429 `RATE_LIMITED` envelope, before any
 * JSON-RPC, the card staying open.
 */
import { afterEach, describe, expect, it } from "vitest";
import { a2aClient, answerOf, collect, TaskState, userMessage } from "../../helpers/a2a.js";
import { scriptedModel, usage } from "../../helpers/scripted-session.js";
import { startServer, type TestServer } from "../../helpers/server.js";

const model = scriptedModel("a2a-limits-faux");
const KEY_A = "key-a-limits-0123456789";
const KEY_B = "key-b-limits-0123456789";
let server: TestServer | undefined;
afterEach(async () => {
	await server?.close();
	server = undefined;
	model.requests.length = 0;
});

type TaskLike = { id: string; contextId: string; status?: { state: number }; metadata?: Record<string, any> };

describe("A2A and a key's budget", () => {
	it("a spent key is refused new tasks with KEY_BUDGET_EXHAUSTED; another key goes on", async () => {
		server = await startServer({
			models: [model.faux.getModel()],
			config: {
				apiKeys: [KEY_A, KEY_B],
				defaultModel: model.spec,
				keyBudgets: { [KEY_A]: { maxTokens: 1000, period: "day" } },
			} as never,
		});
		const a = await a2aClient(server.url, KEY_A);
		model.script({ content: "spent it", usage: usage(1200) });
		const first = (await a.sendMessage({ message: userMessage(["spend"]) } as never)) as TaskLike;
		expect(first.status?.state).toBe(TaskState.TASK_STATE_COMPLETED);
		expect(answerOf(first as never)).toBe("spent it");
		const calls = model.requests.length;

		const budget = { data: { code: "KEY_BUDGET_EXHAUSTED", status: 429 }, envelopeCode: -32603 };
		// In the same context, in a new one, and streamed: refused, and no model call is made.
		await expect(
			a.sendMessage({ message: userMessage(["more"], { contextId: first.contextId }) } as never),
		).rejects.toMatchObject(budget);
		await expect(a.sendMessage({ message: userMessage(["elsewhere"]) } as never)).rejects.toMatchObject(budget);
		await expect(collect(a.sendMessageStream({ message: userMessage(["streamed"]) } as never))).rejects.toMatchObject(
			budget,
		);
		expect(model.requests.length).toBe(calls);
		const refused = await a.sendMessage({ message: userMessage(["why"]) } as never).catch((err) => err);
		expect(String(refused.message)).toMatch(/budget/i);
		// The context's session has the first task only.
		const listed = await a.listTasks({ contextId: first.contextId, status: TaskState.TASK_STATE_UNSPECIFIED } as never);
		expect(listed.tasks.map((t) => t.id)).toEqual([first.id]);
		const usageA = await server.request("GET", "/v1/usage", { key: KEY_A });
		expect(usageA.status).toBe(200);
		expect(JSON.stringify(usageA.body)).toContain("1200");

		// Another key is not held by A's budget.
		const b = await a2aClient(server.url, KEY_B);
		model.script({ content: "still going" });
		const other = (await b.sendMessage({ message: userMessage(["go"]) } as never)) as TaskLike;
		expect(other.status?.state).toBe(TaskState.TASK_STATE_COMPLETED);
		expect(answerOf(other as never)).toBe("still going");
	});
});

describe("A2A and a key's requests per minute", () => {
	it("counts JSON-RPC requests against the key: past the limit a 429 RATE_LIMITED, per key, the card open", async () => {
		const limit = 4;
		server = await startServer({ config: { apiKeys: [KEY_A, KEY_B], rateLimitPerMinute: limit } });
		const a = await a2aClient(server.url, KEY_A);
		// Each answered request counts, whatever its JSON-RPC outcome.
		const task = (await a.sendMessage({ message: userMessage(["one"]) } as never)) as TaskLike;
		expect(task.status?.state).toBe(TaskState.TASK_STATE_COMPLETED);
		for (let i = 1; i < limit; i++) expect((await a.getTask({ id: task.id } as never)).id).toBe(task.id);

		const refused = await a.getTask({ id: task.id } as never).catch((err) => err);
		expect(refused).toBeInstanceOf(Error);
		expect(String(refused.message)).toContain("429");
		const raw = await server.request("POST", "/a2a/v1", {
			key: KEY_A,
			body: { jsonrpc: "2.0", id: 1, method: "GetTask", params: { id: task.id } },
		});
		expect(raw.status).toBe(429);
		expect(raw.body.error.code).toBe("RATE_LIMITED");
		expect(Number(raw.headers.get("retry-after"))).toBeGreaterThan(0);

		// The card is open (not counted); another key has its own count.
		for (let i = 0; i < limit + 1; i++) {
			expect((await server.request("GET", "/.well-known/agent-card.json")).status).toBe(200);
		}
		const b = await a2aClient(server.url, KEY_B);
		const other = (await b.sendMessage({ message: userMessage(["two"]) } as never)) as TaskLike;
		expect(other.status?.state).toBe(TaskState.TASK_STATE_COMPLETED);
		expect(answerOf(other as never)).toBe("two");
	});
});
