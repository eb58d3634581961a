/**
 * Limits per tenant, beside each caller's own:
 * - `auth.maxRunsPerTenant`: the runs of all the callers of one tenant together are bounded (429
 *   `TOO_MANY_RUNS` past it, until one ends), whichever of the tenant's keys starts them; another
 *   tenant's runs are not affected. An approval holds the first run open.
 * - `auth.tenantRateLimitPerMinute`: their requests per minute together (429 `RATE_LIMITED`).
 */
import { afterEach, expect, it } from "vitest";
import { startServer, type TestServer } from "../../../helpers/server.js";
import { promptSse, type SseReader } from "../../../helpers/sse.js";

const A1 = "tenant-a-key-000001";
const A2 = "tenant-a-key-000002";
const B1 = "tenant-b-key-000001";
let server: TestServer;
const readers: SseReader[] = [];
afterEach(async () => {
	for (const reader of readers.splice(0)) reader.close();
	await server?.close();
});

async function session(key: string): Promise<string> {
	return (await server.request("POST", "/v1/sessions", { body: { model: "faux/echo" }, key })).body.id;
}

it("refuses a tenant's run past maxRunsPerTenant, whichever key starts it; another tenant runs", async () => {
	server = await startServer({
		config: {
			apiKeys: [A1, A2, B1],
			authConfig: { keyTenants: { [A1]: "org-a", [A2]: "org-a", [B1]: "org-b" }, maxRunsPerTenant: 1 },
			tools: { approval: { calculate: "always" } },
		},
	});
	const [a1, a2, b1] = [await session(A1), await session(A2), await session(B1)];
	const held = await promptSse(server.url, a1, { message: '/tool calculate {"expression": "1 + 1"}' }, A1);
	readers.push(held);
	const { toolCallId } = (await held.waitForType("approval_requested")).data;

	// Another key of the same tenant: refused.
	const refused = await server.request("POST", `/v1/sessions/${a2}/prompt`, { body: { message: "hi" }, key: A2 });
	expect(refused.status).toBe(429);
	expect(refused.body.error.code).toBe("TOO_MANY_RUNS");
	expect(refused.body.error.message).toMatch(/tenant .*limit 1/);
	expect((await server.request("GET", `/v1/sessions/${a2}`, { key: A2 })).body.status).toBe("idle");

	// Another tenant: runs.
	const other = await promptSse(server.url, b1, { message: "hello" }, B1);
	readers.push(other);
	await other.waitForEnd();
	expect(other.types().at(-1)).toBe("agent_end");

	// Once the tenant's run ends, its other key runs.
	await server.request("POST", `/v1/sessions/${a1}/approvals/${toolCallId}`, { body: { approve: true }, key: A1 });
	await held.waitForEnd();
	const again = await promptSse(server.url, a2, { message: "now" }, A2);
	readers.push(again);
	await again.waitForEnd();
	expect(again.types().at(-1)).toBe("agent_end");
});

it("refuses a tenant's requests past tenantRateLimitPerMinute, counted over its keys together; another tenant is not", async () => {
	server = await startServer({
		config: {
			apiKeys: [A1, A2, B1],
			authConfig: { keyTenants: { [A1]: "org-a", [A2]: "org-a", [B1]: "org-b" }, tenantRateLimitPerMinute: 3 },
		},
	});
	const statuses = [];
	for (const key of [A1, A2, A1]) statuses.push((await server.request("GET", "/v1/sessions", { key })).status);
	expect(statuses).toEqual([200, 200, 200]);
	const refused = await server.request("GET", "/v1/sessions", { key: A2 });
	expect(refused.status).toBe(429);
	expect(refused.body.error.code).toBe("RATE_LIMITED");
	expect(refused.body.error.message).toMatch(/tenant/);
	expect(Number(refused.headers.get("retry-after"))).toBeGreaterThan(0);
	expect((await server.request("GET", "/v1/sessions", { key: B1 })).status).toBe(200);
	// Open routes are not counted.
	expect((await server.request("GET", "/healthz")).status).toBe(200);
});
