/**
 * `GET /metrics`: what a run with a tool call moves, who may read it (on the main port and on a
 * separate one), and that two apps in one process keep separate registries.
 */
import { createServer } from "node:net";
import { afterEach, describe, expect, it } from "vitest";
import { closeHttpPools } from "../../../src/ai/http.js";
import { startReplayServer } from "../../helpers/replay-server.js";
import { startServer, type TestServer } from "../../helpers/server.js";
import { openSse, promptSse } from "../../helpers/sse.js";

const KEY = "metrics-key-0001";
const OPERATOR = "metrics-operator-token-0001";
const servers: TestServer[] = [];
afterEach(async () => {
	for (const server of servers.splice(0)) await server.close();
});

async function start(options: Parameters<typeof startServer>[0] = {}): Promise<TestServer> {
	const server = await startServer(options);
	servers.push(server);
	return server;
}

/** A server with the model `{provider}/m`, served over Chat Completions by `replayUrl` (a replay server). */
function startWithReplayModel(replayUrl: string, provider: string): Promise<TestServer> {
	const apiKeyEnv = `${provider.toUpperCase()}_API_KEY`;
	return start({
		env: { [apiKeyEnv]: "k-test" },
		config: { models: [{ provider, id: "m", baseUrl: `${replayUrl}/v1`, apiKeyEnv }] },
	});
}

/** The value of the sample `name{labels}` in a scrape (labels in the order prom-client writes them). */
function sample(text: string, name: string, labels: Record<string, string> = {}): number | undefined {
	const wanted = Object.entries(labels).map(([k, v]) => `${k}="${v}"`);
	for (const line of text.split("\n")) {
		if (!line.startsWith(`${name}{`) && !line.startsWith(`${name} `)) continue;
		const labelText = line.slice(name.length).split(" ")[0];
		if (wanted.every((pair) => labelText.includes(pair))) return Number(line.slice(line.lastIndexOf(" ") + 1));
	}
	return undefined;
}

async function scrape(url: string, key?: string): Promise<{ status: number; text: string; type: string | null }> {
	const res = await fetch(`${url}/metrics`, { headers: key ? { authorization: `Bearer ${key}` } : {} });
	return { status: res.status, text: await res.text(), type: res.headers.get("content-type") };
}

/** A Chat Completions stream answering `text`. */
const answer = (text: string) =>
	[
		{ id: "chatcmpl-1", model: "m", choices: [{ index: 0, delta: { role: "assistant", content: text } }] },
		{ id: "chatcmpl-1", model: "m", choices: [{ index: 0, delta: {}, finish_reason: "stop" }] },
	]
		.map((chunk) => `data: ${JSON.stringify(chunk)}\n\n`)
		.join("");

/** A Chat Completions stream answering `text` and reporting `usage`. */
const answerWithUsage = (text: string, usage: Record<string, unknown>) =>
	[
		{ id: "chatcmpl-2", model: "m", choices: [{ index: 0, delta: { role: "assistant", content: text } }] },
		{ id: "chatcmpl-2", model: "m", choices: [{ index: 0, delta: {}, finish_reason: "stop" }] },
		{ id: "chatcmpl-2", model: "m", choices: [], usage },
	]
		.map((chunk) => `data: ${JSON.stringify(chunk)}\n\n`)
		.join("");

/** A port nothing listens on now (the OS hands out a fresh one). */
async function freePort(): Promise<number> {
	const probe = createServer();
	await new Promise<void>((resolve) => probe.listen(0, "127.0.0.1", resolve));
	const { port } = probe.address() as { port: number };
	await new Promise((resolve) => probe.close(resolve));
	return port;
}

describe("GET /metrics", () => {
	it("counts a run with a tool call: HTTP by route, model calls, tokens, tools, SSE", async () => {
		const server = await start();
		const created = await server.request("POST", "/v1/sessions", { body: {} });
		const id = created.body.id;
		const events = await openSse(`${server.url}/v1/sessions/${id}/events`);
		const run = await promptSse(server.url, id, { message: '/tool calculate {"expression": "6 * 7"}' });
		await run.waitForEnd();
		await events.waitForType("agent_end");

		const { status, text, type } = await scrape(server.url);
		expect(status).toBe(200);
		expect(type).toMatch(/^text\/plain; version=0\.0\.4/);
		// The route pattern, never the URL with its session id.
		expect(sample(text, "wheelhouse_http_requests_total", { route: "/v1/sessions", status_code: "201" })).toBe(1);
		expect(text).not.toContain(id);
		expect(
			sample(text, "wheelhouse_http_request_duration_seconds_count", {
				method: "POST",
				route: "/v1/sessions",
				status_code: "201",
			}),
		).toBe(1);
		// Two model calls: the tool call, then the answer after its result.
		expect(sample(text, "wheelhouse_model_calls_total", { provider: "faux", model: "echo", outcome: "toolUse" })).toBe(
			1,
		);
		expect(sample(text, "wheelhouse_model_calls_total", { provider: "faux", model: "echo", outcome: "stop" })).toBe(1);
		expect(
			sample(text, "wheelhouse_model_call_duration_seconds_count", {
				provider: "faux",
				model: "echo",
				outcome: "stop",
			}),
		).toBe(1);
		expect(
			sample(text, "wheelhouse_model_time_to_first_token_seconds_count", { provider: "faux", model: "echo" }),
		).toBe(2);
		expect(
			sample(text, "wheelhouse_model_tokens_total", { provider: "faux", model: "echo", type: "input" }),
		).toBeGreaterThan(0);
		expect(sample(text, "wheelhouse_model_cost_usd_total", { provider: "faux", model: "echo" })).toBe(0);
		expect(sample(text, "wheelhouse_tool_calls_total", { tool: "calculate", outcome: "ok" })).toBe(1);
		expect(sample(text, "wheelhouse_tool_call_duration_seconds_count", { tool: "calculate", outcome: "ok" })).toBe(1);
		// Both streams got every event of the run; the live one is still open.
		expect(sample(text, "wheelhouse_sse_events_sent_total")).toBeGreaterThanOrEqual(2 * run.events.length);
		expect(sample(text, "wheelhouse_sse_bytes_sent_total")).toBeGreaterThan(0);
		expect(sample(text, "wheelhouse_sse_connections")).toBe(1);
		expect(sample(text, "wheelhouse_sessions_held")).toBe(1);
		expect(sample(text, "wheelhouse_runs_running")).toBe(0);
		expect(sample(text, "wheelhouse_queued_messages", { kind: "steer" })).toBe(0);
		// Process metrics and event-loop lag from the app's own registry.
		expect(sample(text, "process_cpu_user_seconds_total")).toBeGreaterThan(0);
		expect(text).toContain("nodejs_eventloop_lag_seconds");
		events.close();
	});

	it("counts a provider's retries, with the model's provider and id", async () => {
		const provider = await startReplayServer();
		try {
			const server = await startWithReplayModel(provider.url, "flaky");
			provider.enqueue(
				{ status: 429, headers: { "retry-after-ms": "1" }, body: JSON.stringify({ error: { message: "slow down" } }) },
				{ body: answer("hi") },
			);
			const id = (await server.request("POST", "/v1/sessions", { body: { model: "flaky/m" } })).body.id;
			await (await promptSse(server.url, id, { message: "hello" })).waitForEnd();
			const { text } = await scrape(server.url);
			expect(sample(text, "wheelhouse_model_retries_total", { provider: "flaky", model: "m" })).toBe(1);
			expect(sample(text, "wheelhouse_model_calls_total", { provider: "flaky", model: "m", outcome: "stop" })).toBe(1);
			expect(
				sample(text, "wheelhouse_model_time_to_first_token_seconds_count", { provider: "flaky", model: "m" }),
			).toBe(1);
		} finally {
			await provider.close();
			await closeHttpPools();
		}
	});

	it("a provider's negative token count is not counted, and every other update of the call and the request still is", async () => {
		const provider = await startReplayServer();
		try {
			const server = await startWithReplayModel(provider.url, "odd");
			provider.enqueue({ body: answerWithUsage("hi", { prompt_tokens: 7, completion_tokens: -5, total_tokens: 2 }) });
			const id = (await server.request("POST", "/v1/sessions", { body: { model: "odd/m" } })).body.id;
			await (await promptSse(server.url, id, { message: "hello" })).waitForEnd();
			const first = await scrape(server.url);
			expect(first.status).toBe(200);
			expect(sample(first.text, "wheelhouse_model_calls_total", { provider: "odd", model: "m", outcome: "stop" })).toBe(
				1,
			);
			expect(sample(first.text, "wheelhouse_model_tokens_total", { provider: "odd", model: "m", type: "input" })).toBe(
				7,
			);
			expect(sample(first.text, "wheelhouse_model_tokens_total", { provider: "odd", model: "m", type: "output" })).toBe(
				undefined,
			);
			expect(sample(first.text, "wheelhouse_http_requests_total", { route: "/v1/sessions", status_code: "201" })).toBe(
				1,
			);
			// The first scrape's own request is counted by the next one.
			const second = await scrape(server.url);
			expect(sample(second.text, "wheelhouse_http_requests_total", { route: "/metrics", status_code: "200" })).toBe(1);
		} finally {
			await provider.close();
			await closeHttpPools();
		}
	});

	it("adds up what happened between two scrapes and after, without counting anything twice", async () => {
		const provider = await startReplayServer();
		try {
			const server = await startWithReplayModel(provider.url, "sum");
			const id = (await server.request("POST", "/v1/sessions", { body: { model: "sum/m" } })).body.id;
			const prompt = async (input: number) => {
				provider.enqueue({
					body: answerWithUsage("hi", { prompt_tokens: input, completion_tokens: 3, total_tokens: 0 }),
				});
				await (await promptSse(server.url, id, { message: "hello" })).waitForEnd();
			};
			await prompt(10);
			await prompt(20);
			for (let i = 0; i < 3; i++) expect((await server.request("GET", `/v1/sessions/${id}`)).status).toBe(200);
			const model = { provider: "sum", model: "m" };
			const first = (await scrape(server.url)).text;
			expect(sample(first, "wheelhouse_model_calls_total", { ...model, outcome: "stop" })).toBe(2);
			expect(sample(first, "wheelhouse_model_call_duration_seconds_count", { ...model, outcome: "stop" })).toBe(2);
			expect(sample(first, "wheelhouse_model_time_to_first_token_seconds_count", model)).toBe(2);
			expect(sample(first, "wheelhouse_model_tokens_total", { ...model, type: "input" })).toBe(30);
			expect(sample(first, "wheelhouse_model_tokens_total", { ...model, type: "output" })).toBe(6);
			const get = { method: "GET", route: "/v1/sessions/:id", status_code: "200" };
			expect(sample(first, "wheelhouse_http_requests_total", get)).toBe(3);
			expect(sample(first, "wheelhouse_http_request_duration_seconds_count", get)).toBe(3);

			await prompt(5);
			expect((await server.request("GET", `/v1/sessions/${id}`)).status).toBe(200);
			const second = (await scrape(server.url)).text;
			expect(sample(second, "wheelhouse_model_calls_total", { ...model, outcome: "stop" })).toBe(3);
			expect(sample(second, "wheelhouse_model_time_to_first_token_seconds_count", model)).toBe(3);
			expect(sample(second, "wheelhouse_model_tokens_total", { ...model, type: "input" })).toBe(35);
			expect(sample(second, "wheelhouse_http_requests_total", get)).toBe(4);
			expect(sample(second, "wheelhouse_http_request_duration_seconds_count", get)).toBe(4);
		} finally {
			await provider.close();
			await closeHttpPools();
		}
	});

	it("times the SQLite store's commits", async () => {
		const { mkdtempSync } = await import("node:fs");
		const { tmpdir } = await import("node:os");
		const { join } = await import("node:path");
		const { openSqliteStore } = await import("../../../src/store/sqlite/index.js");
		const store = openSqliteStore({ path: join(mkdtempSync(join(tmpdir(), "wh-metrics-")), "db.sqlite") });
		const server = await start({ store });
		const id = (await server.request("POST", "/v1/sessions", { body: {} })).body.id;
		await (await promptSse(server.url, id, { message: "hello" })).waitForEnd();
		const { text } = await scrape(server.url);
		expect(sample(text, "wheelhouse_store_commit_duration_seconds_count")).toBeGreaterThan(0);
		await server.close();
		store.close();
	});

	it("needs the operator credential: an API key is refused, and without a metrics token nobody reads it", async () => {
		const guarded = await start({ config: { apiKeys: [KEY], metricsToken: OPERATOR } });
		const missing = await scrape(guarded.url);
		expect([missing.status, JSON.parse(missing.text).error.code]).toEqual([401, "UNAUTHORIZED"]);
		const byKey = await scrape(guarded.url, KEY);
		expect([byKey.status, JSON.parse(byKey.text).error.code]).toEqual([403, "FORBIDDEN"]);
		expect(JSON.parse(byKey.text).error.message).toContain("WHEELHOUSE_METRICS_TOKEN");
		expect((await scrape(guarded.url, "not-the-token-at-all")).status).toBe(401);
		expect((await scrape(guarded.url, OPERATOR)).status).toBe(200);
		// The operator credential opens nothing else.
		expect((await guarded.request("GET", "/v1/sessions", { key: OPERATOR })).status).toBe(401);

		// API keys and no operator credential: closed to everyone.
		const closed = await start({ config: { apiKeys: [KEY] } });
		const refused = await scrape(closed.url, KEY);
		expect([refused.status, JSON.parse(refused.text).error.code]).toEqual([403, "FORBIDDEN"]);
		expect((await scrape(closed.url)).status).toBe(403);

		const open = await start({ config: { apiKeys: [KEY], metricsAuth: "none" } });
		expect((await scrape(open.url)).status).toBe(200);
		expect((await open.request("GET", "/v1/sessions")).status).toBe(401);
	});

	it("refuses a metrics token that is also an API key, or shorter than 16 characters", async () => {
		await expect(start({ config: { apiKeys: [KEY], metricsToken: KEY } })).rejects.toThrow(
			/WHEELHOUSE_METRICS_TOKEN: is also one of WHEELHOUSE_API_KEYS/,
		);
		await expect(start({ config: { metricsToken: "short" } })).rejects.toThrow(
			/WHEELHOUSE_METRICS_TOKEN: must be at least 16 characters without whitespace \(got 5 characters\)/,
		);
	});

	it("labels a client's tools as `client`: one key's declared tool names never reach another's scrape", async () => {
		const server = await start({ config: { apiKeys: [KEY], metricsToken: OPERATOR } });
		const secret = { name: "acme_secret_tool", description: "Secret", parameters: { type: "object" } };
		const id = (await server.request("POST", "/v1/sessions", { body: { clientTools: [secret] }, key: KEY })).body.id;
		const run = await promptSse(server.url, id, { message: "/tool acme_secret_tool {}" }, KEY);
		const started = await run.waitFor((e) => e.event === "tool_execution_start");
		const posted = await server.request("POST", `/v1/sessions/${id}/tool-results/${started.data.toolCallId}`, {
			body: { content: "done" },
			key: KEY,
		});
		expect(posted.status).toBe(200);
		await run.waitForEnd();
		// A server tool keeps its name.
		await (await promptSse(server.url, id, { message: '/tool calculate {"expression": "1 + 1"}' }, KEY)).waitForEnd();

		const { status, text } = await scrape(server.url, OPERATOR);
		expect(status).toBe(200);
		expect(text).not.toContain("acme_secret_tool");
		expect(sample(text, "wheelhouse_tool_calls_total", { tool: "client", outcome: "ok" })).toBe(1);
		expect(sample(text, "wheelhouse_tool_calls_total", { tool: "calculate", outcome: "ok" })).toBe(1);
	});

	it("is absent with WHEELHOUSE_METRICS=off", async () => {
		const server = await start({ config: { metrics: "off" } });
		const res = await scrape(server.url);
		expect([res.status, JSON.parse(res.text).error.code]).toEqual([404, "NOT_FOUND"]);
	});

	it("on a separate port: served there (with auth), not on the main port, closed with the app", async () => {
		const port = await freePort();
		const server = await start({ config: { apiKeys: [KEY], metricsPort: port, metricsToken: OPERATOR } });
		const separate = `http://127.0.0.1:${port}`;
		expect((await scrape(server.url, KEY)).status).toBe(404);
		expect((await scrape(separate)).status).toBe(401);
		expect((await scrape(separate, KEY)).status).toBe(403);
		const scraped = await scrape(separate, OPERATOR);
		expect(scraped.status).toBe(200);
		expect(scraped.text).toContain("wheelhouse_http_requests_total");
		// Only /metrics there.
		const other = await fetch(`${separate}/v1/sessions`, { headers: { authorization: `Bearer ${KEY}` } });
		expect(other.status).toBe(404);

		await server.close();
		await expect(fetch(`${separate}/metrics`)).rejects.toThrow();
	});

	it("two apps in one process keep separate registries", async () => {
		const a = await start();
		const b = await start();
		await a.request("POST", "/v1/sessions", { body: {} });
		await a.request("POST", "/v1/sessions", { body: {} });
		const textA = (await scrape(a.url)).text;
		const textB = (await scrape(b.url)).text;
		expect(sample(textA, "wheelhouse_http_requests_total", { route: "/v1/sessions", status_code: "201" })).toBe(2);
		expect(sample(textB, "wheelhouse_http_requests_total", { route: "/v1/sessions", status_code: "201" })).toBe(
			undefined,
		);
		expect(sample(textA, "wheelhouse_sessions_held")).toBe(2);
		expect(sample(textB, "wheelhouse_sessions_held")).toBe(0);
		// Closing one leaves the other's metrics working.
		await a.close();
		expect((await scrape(b.url)).status).toBe(200);
	});
});
