/**
 * A key's usage survives a restart, with the real server process (src/main.ts on a SQLite file)
 * and a real model API (Chat Completions from a local server that plays the model): the usage
 * written with the messages is there after a SIGKILL, `GET /v1/usage` and the key's budget count
 * it, and the next process refuses the key once the old and new usage together reach its limit.
 */
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { type MainProcess, startMain, stopAll } from "../../helpers/main-process.js";
import { chatAnswer, type ReplayServer, startReplayServer } from "../../helpers/replay-server.js";
import { openSse } from "../../helpers/sse.js";

const KEY = "restart-key-0123456789";
let replay: ReplayServer;
const dirs: string[] = [];
beforeAll(async () => {
	replay = await startReplayServer();
});
afterEach(() => {
	stopAll();
	replay.reset();
	for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});
afterAll(async () => {
	await replay.close();
});

async function call(main: MainProcess, method: string, url: string, body?: unknown) {
	const res = await fetch(`${main.url}${url}`, {
		method,
		headers: {
			authorization: `Bearer ${KEY}`,
			...(body === undefined ? {} : { "content-type": "application/json" }),
		},
		body: body === undefined ? undefined : JSON.stringify(body),
	});
	return { status: res.status, body: (await res.json()) as any };
}

/** Prompts and waits for the run's agent_end on the stream. */
async function promptAndWait(main: MainProcess, id: string, message: string): Promise<void> {
	const stream = await openSse(`${main.url}/v1/sessions/${id}/events`, {
		headers: { authorization: `Bearer ${KEY}` },
	});
	try {
		expect((await call(main, "POST", `/v1/sessions/${id}/prompt`, { message })).status).toBe(202);
		await stream.waitForType("agent_end", 15_000);
	} finally {
		stream.close();
	}
}

describe("a key's usage across a restart", () => {
	it("is kept in the SQLite file and counts against the key's budget in the next process", {
		timeout: 120_000,
	}, async () => {
		const dir = mkdtempSync(path.join(tmpdir(), "wh-key-budgets-restart-"));
		dirs.push(dir);
		const config = path.join(dir, "config.json");
		writeFileSync(
			config,
			JSON.stringify({
				apiKeys: [KEY],
				keyBudgets: { [KEY]: { maxTokens: 1000 } },
				models: [
					{ provider: "local", id: "tiny", baseUrl: `${replay.url}/v1`, contextWindow: 100_000, maxTokens: 1000 },
				],
			}),
		);
		const options = { db: path.join(dir, "wh.db"), env: { WHEELHOUSE_CONFIG: config } };

		const first = await startMain(options);
		const created = await call(first, "POST", "/v1/sessions", { model: "local/tiny" });
		expect(created.status).toBe(201);
		const id = created.body.id as string;
		replay.enqueue(chatAnswer("one", 600));
		await promptAndWait(first, id, "first");
		expect((await call(first, "GET", "/v1/usage")).body.total).toMatchObject({ totalTokens: 600, turns: 1 });
		first.child.kill("SIGKILL");
		await first.exited;

		const second = await startMain(options);
		const report = (await call(second, "GET", "/v1/usage")).body;
		expect(report.total).toMatchObject({ input: 590, output: 10, totalTokens: 600, turns: 1 });
		expect(report.byModel).toMatchObject([{ provider: "local", model: "tiny", totalTokens: 600 }]);
		expect(report.budget).toMatchObject({ maxTokens: 1000, usedTokens: 600, remainingTokens: 400 });
		// A new session of the key starts from what the key spent before the restart.
		const other = (await call(second, "POST", "/v1/sessions", { model: "local/tiny" })).body.id as string;
		expect((await call(second, "GET", `/v1/sessions/${other}`)).body.keyBudget).toMatchObject({ usedTokens: 600 });
		replay.enqueue(chatAnswer("two", 500));
		await promptAndWait(second, other, "second");
		const refused = await call(second, "POST", `/v1/sessions/${id}/prompt`, { message: "third" });
		expect(refused.status).toBe(429);
		expect(refused.body.error).toMatchObject({
			code: "KEY_BUDGET_EXHAUSTED",
			details: { limit: "maxTokens", max: 1000, used: 1100 },
		});
		expect(replay.requests).toHaveLength(2);
	});
});
