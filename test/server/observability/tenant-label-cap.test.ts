/**
 * The tenant label of `wheelhouse_tenant_runs_total` and `wheelhouse_tenant_tokens_total` is
 * bounded (docs/identity.md, Attribution): the first `MAX_LABEL_VALUES` (100) tenants a process sees
 * are their own series, every tenant after them is counted under `other`. Real server, JWT callers
 * of distinct tenants from a local identity provider, read through `GET /metrics`.
 */
import { afterEach, expect, it } from "vitest";
import { MAX_LABEL_VALUES } from "../../../src/server/observability/metrics.js";
import { type IdentityProvider, jwtAuthConfig, startIdentityProvider } from "../../helpers/jwks-server.js";
import { startServer, type TestServer } from "../../helpers/server.js";

const OPERATOR = "tenant-cap-operator-token-01";
let server: TestServer | undefined;
let idp: IdentityProvider | undefined;
afterEach(async () => {
	await server?.close();
	await idp?.close();
});

/** One run to its end in a new session of `token`'s caller. */
async function oneRun(token: string): Promise<void> {
	const made = await server!.request("POST", "/v1/sessions", { key: token, body: { model: "faux/echo" } });
	expect(made.status).toBe(201);
	const id = made.body.id as string;
	const run = await server!.request("POST", `/v1/sessions/${id}/prompt?stream=false`, {
		key: token,
		body: { message: "count me" },
	});
	expect(run.status).toBe(202);
	const deadline = Date.now() + 30_000;
	while ((await server!.request("GET", `/v1/sessions/${id}`, { key: token })).body.status !== "idle") {
		if (Date.now() > deadline) throw new Error(`the run of ${id} did not end`);
		await new Promise((resolve) => setTimeout(resolve, 25));
	}
}

/** The `tenant` label values of `metric`'s series in `scrape`, with their values. */
function tenantSeries(scrape: string, metric: string, extra: string): Map<string, number> {
	const series = new Map<string, number>();
	const pattern = new RegExp(`^${metric}\\{tenant="([^"]*)",${extra}\\} (\\S+)$`, "gm");
	for (const match of scrape.matchAll(pattern)) series.set(match[1]!, Number(match[2]));
	return series;
}

it('past the cap, further tenants\' runs and tokens are counted under tenant="other"', {
	timeout: 180_000,
}, async () => {
	expect(MAX_LABEL_VALUES).toBe(100);
	idp = await startIdentityProvider();
	server = await startServer({ config: { metricsToken: OPERATOR, authConfig: jwtAuthConfig(idp) } });
	const extra = 3;
	const tenants = Array.from({ length: MAX_LABEL_VALUES + extra }, (_, i) => `tenant-${String(i).padStart(3, "0")}`);
	// The first MAX_LABEL_VALUES tenants, in batches (their order among themselves does not matter).
	const first = tenants.slice(0, MAX_LABEL_VALUES);
	for (let i = 0; i < first.length; i += 10)
		await Promise.all(
			first.slice(i, i + 10).map(async (tenant) => oneRun(await idp!.token("alice", { org_id: tenant }))),
		);
	// Then the rest, after every one of the first has been counted; one of them twice.
	const rest = tenants.slice(MAX_LABEL_VALUES);
	for (const tenant of [...rest, rest[0]!]) await oneRun(await idp.token("alice", { org_id: tenant }));
	// A tenant seen before the cap keeps its own series.
	await oneRun(await idp.token("bob", { org_id: first[0]! }));

	const res = await server.request("GET", "/metrics", { key: OPERATOR });
	expect(res.status).toBe(200);
	const scrape = String(res.body);
	const runs = tenantSeries(scrape, "wheelhouse_tenant_runs_total", 'outcome="completed"');
	expect(runs.size).toBe(MAX_LABEL_VALUES + 1);
	for (const tenant of first) expect(runs.get(tenant), tenant).toBe(tenant === first[0] ? 2 : 1);
	for (const tenant of rest) expect(runs.has(tenant), tenant).toBe(false);
	expect(runs.get("other")).toBe(extra + 1);
	const tokens = tenantSeries(scrape, "wheelhouse_tenant_tokens_total", 'type="output"');
	expect(tokens.size).toBe(MAX_LABEL_VALUES + 1);
	expect(tokens.get("other")).toBeGreaterThan(0);
	for (const tenant of rest) expect(tokens.has(tenant), tenant).toBe(false);
});
