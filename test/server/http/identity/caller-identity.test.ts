/**
 * Who the server takes a caller for: request spans say it (`enduser.id` is the caller's subject —
 * a JWT's `sub`, or `key:<owner id>` for an API key — and `wheelhouse.tenant` its tenant; never a
 * credential), metrics count runs and tokens per tenant, and `GET /v1/me` answers it.
 */
import { afterEach, expect, it } from "vitest";
import { type IdentityProvider, jwtAuthConfig, startIdentityProvider } from "../../../helpers/jwks-server.js";
import { startServer, type TestServer } from "../../../helpers/server.js";
import { recordSpans } from "../../../helpers/spans.js";

let server: TestServer | undefined;
let idp: IdentityProvider | undefined;
afterEach(async () => {
	await server?.close();
	await idp?.close();
});

it("a request span carries the caller's subject and tenant", async () => {
	idp = await startIdentityProvider();
	const recorder = recordSpans();
	server = await startServer({ tracerProvider: recorder.provider, config: { authConfig: jwtAuthConfig(idp) } });
	const token = await idp.token("carol");
	expect((await server.request("GET", "/v1/sessions", { key: token })).status).toBe(200);
	const span = await recorder.waitFor((s) => s.name === "GET /v1/sessions");
	expect(span.attributes["enduser.id"]).toBe("auth0|carol");
	expect(span.attributes["wheelhouse.tenant"]).toBe("org-b");
	expect(JSON.stringify(span.attributes)).not.toContain(token);
});

it("GET /v1/me answers the caller's subject, tenant and kind", async () => {
	idp = await startIdentityProvider();
	const KEY = "whoami-key-0000001";
	server = await startServer({
		config: { apiKeys: [KEY], authConfig: { ...jwtAuthConfig(idp), keyTenants: { [KEY]: "org-k" } } },
	});
	const me = await server.request("GET", "/v1/me", { key: await idp.token("bob") });
	expect(me.status).toBe(200);
	expect(me.body).toMatchObject({ kind: "jwt", subject: "auth0|bob", tenant: "org-a", scopes: ["openid", "agents"] });
	expect(me.body.ownerId).toMatch(/^jwt-[0-9a-f]{16}~/);
	const key = await server.request("GET", "/v1/me", { key: KEY });
	expect(key.body).toMatchObject({ kind: "key", tenant: "org-k", scopes: [] });
	expect(key.body.subject).toBe(`key:${key.body.ownerId}`);
	expect((await server.request("GET", "/v1/me")).status).toBe(401);
});

it("metrics count runs and tokens per tenant; sessions without a tenant are not in those series", async () => {
	const A = "metrics-tenant-key-a1";
	const N = "metrics-no-tenant-key";
	const OPERATOR = "metrics-operator-token-01";
	server = await startServer({
		config: { apiKeys: [A, N], metricsToken: OPERATOR, authConfig: { keyTenants: { [A]: "org-a" } } },
	});
	for (const key of [A, A, N]) {
		const id = (await server.request("POST", "/v1/sessions", { key, body: { model: "faux/echo" } })).body.id;
		expect(
			(await server.request("POST", `/v1/sessions/${id}/prompt?stream=false`, { key, body: { message: "count me" } }))
				.status,
		).toBe(202);
		const deadline = Date.now() + 15_000;
		while ((await server.request("GET", `/v1/sessions/${id}`, { key })).body.status !== "idle") {
			if (Date.now() > deadline) throw new Error("the run did not end");
			await new Promise((resolve) => setTimeout(resolve, 25));
		}
	}
	const scrape = String((await server.request("GET", "/metrics", { key: OPERATOR })).body);
	expect(scrape).toMatch(/wheelhouse_tenant_runs_total\{tenant="org-a",outcome="completed"\} 2/);
	expect(scrape).toMatch(/wheelhouse_tenant_tokens_total\{tenant="org-a",type="output"\} [1-9]/);
	expect(scrape).not.toMatch(/wheelhouse_tenant_runs_total\{tenant="(?!org-a)/);
});
