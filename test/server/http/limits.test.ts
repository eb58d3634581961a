/**
 * Per-API-key limits: requests per minute and runs running at once. Past either, 429 with the
 * envelope; another key is not affected. Requests without a valid key are limited by address.
 */

import { afterEach, describe, expect, it } from "vitest";
import { loadConfig } from "../../../src/server/config/config.js";
import { startServer, type TestServer } from "../../helpers/server.js";
import { promptSse, type SseReader } from "../../helpers/sse.js";

const KEY_A = "limits-key-aaaa";
const KEY_B = "limits-key-bbbb";
const METRICS_TOKEN = "limits-metrics-operator";
let server: TestServer;
const readers: SseReader[] = [];
afterEach(async () => {
	for (const reader of readers.splice(0)) reader.close();
	await server?.close();
});

async function session(key: string): Promise<string> {
	const res = await server.request("POST", "/v1/sessions", { body: {}, key });
	expect(res.status).toBe(201);
	return res.body.id;
}

describe("requests per minute (WHEELHOUSE_RATE_LIMIT_RPM)", () => {
	it("answers 429 RATE_LIMITED with retry-after past the limit, per key; open routes are not counted", async () => {
		server = await startServer({
			config: { apiKeys: [KEY_A, KEY_B], rateLimitPerMinute: 3, metricsToken: METRICS_TOKEN },
		});
		for (let i = 0; i < 3; i++) expect((await server.request("GET", "/v1/models", { key: KEY_A })).status).toBe(200);
		const refused = await server.request("GET", "/v1/models", { key: KEY_A });
		expect(refused.status).toBe(429);
		expect(refused.body.error.code).toBe("RATE_LIMITED");
		expect(refused.body.error.message).toMatch(/3 per minute/);
		const retryAfter = Number(refused.headers.get("retry-after"));
		expect(retryAfter).toBeGreaterThan(0);
		expect(retryAfter).toBeLessThanOrEqual(60);
		expect(refused.headers.get("x-request-id")).toBeTruthy();

		// Another key has its own budget; probes need none.
		expect((await server.request("GET", "/v1/models", { key: KEY_B })).status).toBe(200);
		for (let i = 0; i < 5; i++) expect((await server.request("GET", "/healthz")).status).toBe(200);

		const scrape = await server.request("GET", "/metrics", { key: METRICS_TOKEN });
		expect(scrape.body).toMatch(/wheelhouse_rate_limited_total\{limit="requests"\} 1/);
	});

	it("limits requests without a valid key by address (429 past the limit), apart from every key's own count", async () => {
		server = await startServer({ config: { apiKeys: [KEY_A], rateLimitPerMinute: 3, unauthRateLimitPerMinute: 3 } });
		const guesses = ["guess-0000-aaaa", "guess-0000-bbbb", undefined];
		for (const key of guesses) {
			const res = await server.request("GET", "/v1/models", key ? { key } : {});
			expect([res.status, res.body.error.code]).toEqual([401, "UNAUTHORIZED"]);
		}
		for (const key of ["guess-0000-cccc", undefined]) {
			const slowed = await server.request("GET", "/v1/sessions", key ? { key } : {});
			expect([slowed.status, slowed.body.error.code]).toEqual([429, "RATE_LIMITED"]);
			expect(slowed.body.error.message).toMatch(/without a valid API key/);
			expect(Number(slowed.headers.get("retry-after"))).toBeGreaterThan(0);
		}
		// The key from the same address keeps its whole limit.
		for (let i = 0; i < 3; i++) expect((await server.request("GET", "/v1/models", { key: KEY_A })).status).toBe(200);
		expect((await server.request("GET", "/v1/models", { key: KEY_A })).status).toBe(429);
	});

	it("limits refused requests by default, with no per-key limit set", async () => {
		server = await startServer({ config: { apiKeys: [KEY_A] } });
		const limit = Number(loadConfig({}).unauthRateLimitPerMinute);
		expect(limit).toBeGreaterThan(0);
		for (let i = 0; i < limit; i++) {
			expect((await server.request("GET", "/v1/models", { key: `guess-${i}-0000-aaaa` })).status).toBe(401);
		}
		const slowed = await server.request("GET", "/v1/models", { key: "guess-last-0000" });
		expect([slowed.status, slowed.body.error.code]).toEqual([429, "RATE_LIMITED"]);
		// Keys are not limited at all (no per-key limit is set), from the same address.
		for (let i = 0; i < limit + 5; i++)
			expect((await server.request("GET", "/v1/models", { key: KEY_A })).status).toBe(200);
	});

	it("keys on the client address when auth is off", async () => {
		server = await startServer({ config: { rateLimitPerMinute: 2 } });
		expect((await server.request("GET", "/v1/models")).status).toBe(200);
		expect((await server.request("GET", "/v1/models")).status).toBe(200);
		const refused = await server.request("GET", "/v1/models");
		expect([refused.status, refused.body.error.code]).toEqual([429, "RATE_LIMITED"]);
	});
});

describe("concurrent runs (WHEELHOUSE_MAX_RUNS_PER_KEY)", () => {
	it("refuses a key's run past the limit with 429 TOO_MANY_RUNS until one ends; other keys unaffected", async () => {
		// An approval holds the first run open until it is answered.
		server = await startServer({
			config: {
				apiKeys: [KEY_A, KEY_B],
				maxRunsPerKey: 1,
				metricsToken: METRICS_TOKEN,
				tools: { approval: { calculate: "always" } },
			},
		});
		const [a1, a2, b1] = [await session(KEY_A), await session(KEY_A), await session(KEY_B)];
		const held = await promptSse(server.url, a1, { message: '/tool calculate {"expression": "1 + 1"}' }, KEY_A);
		readers.push(held);
		const { toolCallId } = (await held.waitForType("approval_requested")).data;

		const refused = await server.request("POST", `/v1/sessions/${a2}/prompt`, { body: { message: "hi" }, key: KEY_A });
		expect(refused.status).toBe(429);
		expect(refused.body.error.code).toBe("TOO_MANY_RUNS");
		expect(refused.body.error.message).toMatch(/limit 1/);
		// The refused session is idle, not left claimed.
		expect((await server.request("GET", `/v1/sessions/${a2}`, { key: KEY_A })).body.status).toBe("idle");

		const other = await promptSse(server.url, b1, { message: "hello" }, KEY_B);
		readers.push(other);
		await other.waitForEnd();
		expect(other.types().at(-1)).toBe("agent_end");

		// A message queued on the running session needs no new slot.
		const queued = await server.request("POST", `/v1/sessions/${a1}/follow-up`, {
			body: { message: "later" },
			key: KEY_A,
		});
		expect(queued.status).toBe(202);

		await server.request("POST", `/v1/sessions/${a1}/approvals/${toolCallId}`, { body: { approve: true }, key: KEY_A });
		await held.waitForEnd();
		const again = await promptSse(server.url, a2, { message: "now" }, KEY_A);
		readers.push(again);
		await again.waitForEnd();
		expect(again.types().at(-1)).toBe("agent_end");

		const scrape = await server.request("GET", "/metrics", { key: METRICS_TOKEN });
		expect(scrape.body).toMatch(/wheelhouse_rate_limited_total\{limit="runs"\} 1/);
	});
});
