/**
 * JWT bearer auth against a real server process and a local identity provider (a JWKS served over
 * HTTP, keys made with `jose`): tokens of the configured issuer and audience authenticate beside
 * the API keys; an expired, foreign or badly signed token is 401 with `WWW-Authenticate` naming the
 * error; a key rotation is honoured both ways; a bad `auth` section stops startup naming the field.
 */
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { type IdentityProvider, jwtAuthConfig, startIdentityProvider } from "../../../helpers/jwks-server.js";
import { type MainProcess, refusedStartup, startMain, stopAll } from "../../../helpers/main-process.js";

const API_KEY = "a-plain-api-key-0001";
const CACHE_MAX_AGE_MS = 1500;

let dir: string;
let idp: IdentityProvider;
let server: MainProcess;

function writeConfig(name: string, config: unknown): string {
	const file = path.join(dir, name);
	writeFileSync(file, JSON.stringify(config));
	return file;
}

async function call(credential: string | undefined, method = "GET", url = "/v1/sessions", body?: unknown) {
	const headers: Record<string, string> = {};
	if (credential) headers.authorization = `Bearer ${credential}`;
	if (body !== undefined) headers["content-type"] = "application/json";
	const res = await fetch(`${server.url}${url}`, {
		method,
		headers,
		body: body === undefined ? undefined : JSON.stringify(body),
	});
	const text = await res.text();
	return {
		status: res.status,
		body: text ? JSON.parse(text) : undefined,
		challenge: res.headers.get("www-authenticate"),
	};
}

beforeAll(async () => {
	dir = mkdtempSync(path.join(tmpdir(), "wh-jwt-"));
	idp = await startIdentityProvider();
	const config = writeConfig("config.json", {
		apiKeys: [API_KEY],
		auth: jwtAuthConfig(idp, { jwksCacheMaxAgeMs: CACHE_MAX_AGE_MS, jwksCooldownMs: 0 }),
	});
	server = await startMain({ db: path.join(dir, "wh.db"), env: { WHEELHOUSE_CONFIG: config } });
});

afterAll(async () => {
	stopAll();
	await idp?.close();
	rmSync(dir, { recursive: true, force: true });
});

describe("JWT bearer auth", () => {
	it("authenticates a token of the configured issuer, beside the API keys", async () => {
		const alice = await idp.token("alice");
		const created = await call(alice, "POST", "/v1/sessions", { model: "faux/echo" });
		expect(created.status).toBe(201);
		expect((await call(alice, "GET", `/v1/sessions/${created.body.id}`)).status).toBe(200);
		expect((await call(API_KEY)).status).toBe(200);
		// The key does not see alice's session: another owner.
		expect((await call(API_KEY, "GET", `/v1/sessions/${created.body.id}`)).status).toBe(404);
		// The log says who called, never with the token.
		await server.waitForOutput(/"subject":"auth0\|alice","tenant":"org-a"/);
		expect(server.output()).not.toContain(alice);
		// Nor the secrets of the auth section (the startup log shows the config redacted).
		expect(server.output()).not.toContain(String(jwtAuthConfig(idp).clientTokenSecret));
		expect(server.output()).not.toContain(API_KEY);
	});

	it("refuses an expired token, another audience or issuer, a bad signature: 401 with WWW-Authenticate", async () => {
		const cases: Array<[string, string, RegExp]> = [
			["expired", await idp.token("alice", { expiresIn: Math.floor(Date.now() / 1000) - 60 }), /expired/],
			["audience", await idp.token("alice", { aud: "https://someone-else.example" }), /audience/],
			["issuer", await idp.token("alice", { iss: "https://evil.example/" }), /issuer/],
		];
		const good = await idp.token("alice");
		const [h, p, s] = good.split(".");
		const tampered = `${h}.${Buffer.from(JSON.stringify({ ...JSON.parse(Buffer.from(p!, "base64url").toString()), sub: "auth0|mallory" })).toString("base64url")}.${s}`;
		cases.push(["signature", tampered, /signature/]);
		// An unsigned token (`alg: none`) with the same claims.
		const unsigned = `${Buffer.from(JSON.stringify({ alg: "none", kid: "key-1" })).toString("base64url")}.${p}.`;
		cases.push(["alg none", `${unsigned}x`, /algorithm|malformed|signature/]);
		for (const [name, token, description] of cases) {
			const res = await call(token);
			expect(res.status, name).toBe(401);
			expect(res.body.error.code, name).toBe("UNAUTHORIZED");
			expect(res.challenge, name).toMatch(/^Bearer realm="wheelhouse", error="invalid_token", error_description="/);
			expect(res.challenge, name).toMatch(description);
			expect(res.challenge, name).not.toContain(token);
		}
		const missing = await call(undefined);
		expect(missing.status).toBe(401);
		expect(missing.challenge).toBe('Bearer realm="wheelhouse"');
	});

	it("refuses a token without a required scope (403) or without the tenant claim (401)", async () => {
		const noScope = await call(await idp.token("alice", { scope: "openid" }));
		expect(noScope.status).toBe(403);
		expect(noScope.body.error.code).toBe("INSUFFICIENT_SCOPE");
		expect(noScope.challenge).toMatch(/error="insufficient_scope"/);
		const noTenant = await call(await idp.token("alice", { org_id: undefined }));
		expect(noTenant.status).toBe(401);
		expect(noTenant.challenge).toMatch(/org_id/);
	});

	it("honours a key rotation: a new key at once, a retired key no more once the cache age passes", async () => {
		const before = await idp.token("alice");
		expect((await call(before)).status).toBe(200);
		// A new key: its first token fetches the key set again (an unknown kid).
		const fetches = idp.fetches();
		const added = await idp.rotate();
		expect((await call(await idp.token("alice", { kid: added }))).status).toBe(200);
		expect(idp.fetches()).toBeGreaterThan(fetches);
		// Retire every old key: tokens they signed stop working once the cached set is too old.
		const current = await idp.rotate({ retire: true });
		const deadline = Date.now() + 20_000;
		let status = 200;
		while (Date.now() < deadline) {
			status = (await call(before)).status;
			if (status === 401) break;
			await new Promise((resolve) => setTimeout(resolve, 200));
		}
		expect(status).toBe(401);
		expect((await call(await idp.token("alice", { kid: current }))).status).toBe(200);
	});
});

describe("a bad auth section stops startup, naming the field", () => {
	afterEach(() => stopAll());

	const bad: Array<[string, unknown, RegExp]> = [
		["no jwksUrl", { jwt: { issuer: "https://i/", audience: "a" } }, /auth\.jwt\.jwksUrl/],
		[
			"a symmetric algorithm",
			{ jwt: { issuer: "https://i/", audience: "a", jwksUrl: "https://i/j", algorithms: ["HS256"] } },
			/auth\.jwt\.algorithms.*HS256/,
		],
		[
			"an unknown field",
			{ jwt: { issuer: "https://i/", audience: "a", jwksUrl: "https://i/j", tenant: "org_id" } },
			/auth\.jwt\.tenant\b/,
		],
		["a short client token secret", { clientTokenSecret: "short" }, /auth\.clientTokenSecret/],
		[
			"a plain-HTTP key set on another host",
			{ jwt: { issuer: "https://i/", audience: "a", jwksUrl: "http://idp.example/jwks" } },
			/auth\.jwt\.jwksUrl: must be an https/,
		],
		["a key tenant for no key", { keyTenants: { "not-a-configured-key": "org-a" } }, /auth\.keyTenants\["not-…"\]/],
	];
	for (const [name, auth, field] of bad) {
		it(name, async () => {
			const file = writeConfig(`bad-${name.replace(/\W+/g, "-")}.json`, { auth });
			const { code, stderr } = await refusedStartup({ WHEELHOUSE_CONFIG: file });
			expect(code).not.toBe(0);
			expect(stderr).toMatch(field);
		});
	}

	it("JWT auth alone lets the server listen beyond loopback without API keys", async () => {
		const file = writeConfig("jwt-only.json", { auth: jwtAuthConfig(idp) });
		const open = await startMain({
			db: path.join(dir, "jwt-only.db"),
			env: { WHEELHOUSE_CONFIG: file, HOST: "0.0.0.0" },
		});
		const res = await fetch(`${open.url}/v1/sessions`);
		expect(res.status).toBe(401);
		// Fail closed: /metrics wants the operator credential (none is set), a login token does not open it.
		const token = await idp.token("alice");
		const metrics = await fetch(`${open.url}/metrics`, { headers: { authorization: `Bearer ${token}` } });
		expect(metrics.status).toBe(403);
		expect((await fetch(`${open.url}/metrics`)).status).toBe(403);
		// pi's streamProxy is served (callers authenticate), to signed-in callers only.
		expect((await fetch(`${open.url}/api/stream`, { method: "POST" })).status).toBe(401);
		const proxy = await fetch(`${open.url}/api/stream`, {
			method: "POST",
			headers: { authorization: `Bearer ${token}`, "content-type": "application/json" },
			body: "{}",
		});
		expect(proxy.status).toBe(400); // served: the body is what is wrong (off would be 404 ENDPOINT_OFF)
		expect((await fetch(`${open.url}/v1/sessions`, { headers: { authorization: `Bearer ${token}` } })).status).toBe(
			200,
		);
	});
});
