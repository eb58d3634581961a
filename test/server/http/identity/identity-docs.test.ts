/**
 * The examples of docs/identity.md, as pasted, against a real server on a free port and a local
 * identity provider (test/helpers/jwks-server.ts) standing in for the one the page names:
 * - the JWT config starts the server with its key-set URL pointed at the local provider (only that
 *   address changes; the issuer and audience are the block's own): a token as configured opens
 *   `/v1`; one without the required scope, from another issuer, without the tenant claim, or expired
 *   is refused, the expired one with the `WWW-Authenticate` header the page shows;
 * - `POST /v1/tokens` as the `http` block writes it (with a JWT and a session id for what it leaves
 *   to the reader) answers the `json` block's shape, and the client token opens the session;
 * - the `keyTenants` config: its key with a tenant shares a session with the tenant, the other may not;
 * - the tenant limits fragment, put in a config file's top-level object, is accepted with its values
 *   (what they do is test/server/http/identity/tenant-limits.test.ts).
 * The provider-specific configs (Keycloak, Auth0, Entra ID) need the provider and are marked not run.
 */
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { loadConfig } from "../../../../src/server/config/config.js";
import { docBlock } from "../../../helpers/doc-blocks.js";
import { type IdentityProvider, startIdentityProvider } from "../../../helpers/jwks-server.js";
import { startServer, type TestServer } from "../../../helpers/server.js";

const PAGE = "docs/identity.md";
const SECRET = "a-client-token-secret-of-32-chars-or-more";
let server: TestServer | undefined;
let idp: IdentityProvider;
let dir: string;

beforeAll(async () => {
	idp = await startIdentityProvider();
	dir = mkdtempSync(path.join(tmpdir(), "wheelhouse-identity-docs-"));
});
afterEach(async () => {
	await server?.close();
	server = undefined;
});
afterAll(async () => {
	await idp.close();
	rmSync(dir, { recursive: true, force: true });
});

function writeConfig(name: string, text: string): string {
	const file = path.join(dir, name);
	writeFileSync(file, text);
	return file;
}

/** Whether `actual` has every key of `shown`, with a value of the same JSON type, at every depth. */
function sameShape(shown: unknown, actual: unknown, at = "body"): string[] {
	const kind = (v: unknown) => (v === null ? "null" : Array.isArray(v) ? "array" : typeof v);
	if (kind(shown) !== kind(actual)) return [`${at}: ${kind(actual)}, shown as ${kind(shown)}`];
	if (kind(shown) !== "object") return [];
	return Object.entries(shown as object).flatMap(([key, value]) =>
		sameShape(value, (actual as Record<string, unknown>)[key], `${at}.${key}`),
	);
}

/** The JWT config block, its key-set address moved to the local provider; the server it starts. */
async function jwtServer(): Promise<{ issuer: string; audience: string }> {
	const block = docBlock(PAGE, "json", '"clientTokenSecret"').code;
	const { issuer, audience, jwksUrl } = JSON.parse(block).auth.jwt;
	const file = writeConfig("jwt.json", block.replace(jwksUrl, idp.jwksUrl));
	server = await startServer({ env: { WHEELHOUSE_CONFIG: file, WHEELHOUSE_CLIENT_TOKEN_SECRET: SECRET } });
	return { issuer, audience };
}

describe("docs/identity.md as pasted", { timeout: 60_000 }, () => {
	it("the JWT config: a token as configured opens /v1, the others are refused as the page says", async () => {
		const { issuer, audience } = await jwtServer();
		const as = { iss: issuer, aud: audience };
		const good = await idp.token("alice", as);
		expect((await server!.request("POST", "/v1/sessions", { body: {}, key: good })).status).toBe(201);

		const noScope = await server!.request("GET", "/v1/sessions", {
			key: await idp.token("alice", { ...as, scope: "openid" }),
		});
		expect(noScope.status).toBe(403);
		expect(noScope.body.error.code).toBe("INSUFFICIENT_SCOPE");

		const otherIssuer = await server!.request("GET", "/v1/sessions", {
			key: await idp.token("alice", { aud: audience }),
		});
		expect(otherIssuer.status).toBe(401);
		expect(otherIssuer.headers.get("www-authenticate")).toContain('error="invalid_token"');

		const noTenant = await server!.request("GET", "/v1/sessions", {
			key: await idp.token("alice", { ...as, org_id: undefined }),
		});
		expect(noTenant.status).toBe(401);

		// Past the 30 s of clockToleranceSec: the header the page shows, as it shows it.
		const shown = docBlock(PAGE, "text", "WWW-Authenticate:")
			.code.trim()
			.replace(/^WWW-Authenticate: /, "");
		const expired = await server!.request("GET", "/v1/sessions", {
			key: await idp.token("alice", { ...as, expiresIn: Math.floor(Date.now() / 1000) - 120 }),
		});
		expect(expired.status).toBe(401);
		expect(expired.headers.get("www-authenticate")).toBe(shown);
	});

	it("POST /v1/tokens as the http block writes it answers the json block's shape, and the token opens the session", async () => {
		const { issuer, audience } = await jwtServer();
		const jwt = await idp.token("alice", { iss: issuer, aud: audience });
		const sessionId = (await server!.request("POST", "/v1/sessions", { body: {}, key: jwt })).body.id as string;
		const request = docBlock(PAGE, "http", "POST /v1/tokens")
			.code.replace("<api key or JWT>", jwt)
			.replaceAll("ses_...", sessionId);
		const [head, body] = request.split("\n\n", 2) as [string, string];
		const [requestLine, ...headerLines] = head.split("\n");
		const [method, route] = requestLine!.split(" ") as [string, string];
		const headers = Object.fromEntries(headerLines.map((line) => line.split(/:\s*/, 2) as [string, string]));
		const res = await fetch(`${server!.url}${route}`, { method, headers, body: body.trim() });
		const answer = (await res.json()) as { token: string; sessionId: string; scopes: string[]; eventsUrl: string };
		expect(res.status, JSON.stringify(answer)).toBe(201);

		const shown = JSON.parse(docBlock(PAGE, "json", '"whct_..."').code);
		expect(sameShape(shown, answer)).toEqual([]);
		expect(answer).toMatchObject({ sessionId, scopes: shown.scopes });
		expect(answer.token).toMatch(/^whct_/);
		expect(answer.eventsUrl).toBe(shown.eventsUrl.replace("ses_...", sessionId).replace("whct_...", answer.token));
		const read = await server!.request("GET", `/v1/sessions/${sessionId}`, { key: answer.token });
		expect(read.status).toBe(200);
		expect((await server!.request("GET", "/v1/sessions", { key: answer.token })).status).toBe(403);
	});

	it("the keyTenants config: the key with a tenant shares a session with it, the key without may not", async () => {
		const block = docBlock(PAGE, "json", '"keyTenants"').code;
		const { apiKeys, auth } = JSON.parse(block) as { apiKeys: string[]; auth: { keyTenants: Record<string, string> } };
		const withTenant = Object.keys(auth.keyTenants)[0]!;
		const without = apiKeys.find((key) => !(key in auth.keyTenants))!;
		server = await startServer({ env: { WHEELHOUSE_CONFIG: writeConfig("key-tenants.json", block) } });
		const shared = await server.request("POST", "/v1/sessions", { body: { visibility: "tenant" }, key: withTenant });
		expect(shared.status, JSON.stringify(shared.body)).toBe(201);
		const refused = await server.request("POST", "/v1/sessions", { body: { visibility: "tenant" }, key: without });
		expect(refused.status).toBe(400);
		expect(refused.body.error.message).toContain("body.visibility");
		// Its sessions stay its own: the other key does not see it.
		expect((await server.request("GET", `/v1/sessions/${shared.body.id}`, { key: without })).status).toBe(404);
	});

	it("the tenant limits, in the config file's top-level object, are accepted with their values", () => {
		const block = docBlock(PAGE, "json", '"maxRunsPerTenant"').code;
		const file = writeConfig("tenant-limits.json", `{ ${block} }`);
		const config = loadConfig({ WHEELHOUSE_CONFIG: file });
		expect(config.authConfig).toMatchObject({ maxRunsPerTenant: 4, tenantRateLimitPerMinute: 6000 });
	});
});
