// Launches a real Chromium (headless) and a real server process: seconds on a busy machine.
/**
 * The playground's sign-in with an identity provider (`auth.jwt.playground`), in a real browser
 * against the real server entry (src/main.ts) and a small OpenID provider written here (node:http
 * and jose: discovery document, key set, `/authorize` that checks the PKCE challenge and sends the
 * browser back with a code, `/token` that checks the verifier and signs tokens for alice of org-a):
 * - signing in shows alice and her tenant, keeps the token in sessionStorage only, and a prompt
 *   runs with it (the server stores the session under alice); signing out forgets it;
 * - an answer with another `state` is refused before any code is exchanged, and an ID token with
 *   another `nonce` is refused after it: neither leaves a token;
 * - a pasted token works beside the sign-in button;
 * - the page is told the public client settings only (endpoints from discovery), its CSP allows
 *   the token endpoint; a discovery document for another issuer is a 503; bad settings stop startup
 *   naming the field.
 * The server runs the config of docs/identity.md ("Signing in with your identity provider") as
 * pasted, with only the provider's addresses (issuer, key set) moved to the local one.
 * Without Chromium the browser tests skip with one line (TEST_REQUIRE_ALL=1 makes that a failure).
 */
import { createHash, randomUUID } from "node:crypto";
import { once } from "node:events";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { createServer, type Server } from "node:http";
import { tmpdir } from "node:os";
import path from "node:path";
import { decodeJwt, exportJWK, generateKeyPair, SignJWT } from "jose";
import type { BrowserContext, Page } from "playwright-core";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { buildPlayground } from "../../../scripts/build-playground.js";
import { ConfigError } from "../../../src/server/config/config-error.js";
import { resolveIdentitySettings } from "../../../src/server/http/identity/settings.js";
import { haveChromium, launchChromium } from "../../helpers/chromium.js";
import { holdDist } from "../../helpers/dist-lock.js";
import { docBlock } from "../../helpers/doc-blocks.js";
import { type MainProcess, refusedStartup, repoRoot, startMain, stopAll } from "../../helpers/main-process.js";

const HAVE_CHROMIUM = haveChromium();
/** The config of docs/identity.md the server runs; the audience and client id are its own. */
const DOCS_CONFIG = JSON.parse(docBlock("docs/identity.md", "json", '"scopes": ["openid", "profile", "agents"]').code);
const AUDIENCE: string = DOCS_CONFIG.auth.jwt.audience;
const CLIENT_ID: string = DOCS_CONFIG.auth.jwt.playground.clientId;
const ALICE = { sub: "auth0|alice", org_id: "org-a" };

/** What the provider saw and what a test makes it do wrong. */
interface Provider {
	issuer: string;
	/** The query of each `/authorize` request. */
	authorizeRequests: URLSearchParams[];
	/** The form of each `/token` request. */
	tokenRequests: URLSearchParams[];
	/** Set: `/authorize` answers with this state instead of the one it was sent. */
	forgeState?: string;
	/** Set: the ID token carries this nonce instead of the one it was sent. */
	forgeNonce?: string;
	/** An access token for alice, as `/token` issues them. */
	accessToken(): Promise<string>;
	close(): Promise<void>;
}

const b64url = (bytes: Buffer) => bytes.toString("base64url");

async function startProvider(): Promise<Provider> {
	const { privateKey, publicKey } = await generateKeyPair("RS256");
	const jwk = { ...(await exportJWK(publicKey)), kid: "k1", alg: "RS256", use: "sig" };
	/** Codes issued and not used yet. */
	const codes = new Map<string, { challenge: string; nonce: string; redirectUri: string }>();
	const sign = (claims: Record<string, unknown>, audience: string) =>
		new SignJWT(claims)
			.setProtectedHeader({ alg: "RS256", kid: "k1" })
			.setIssuer(provider.issuer)
			.setSubject(ALICE.sub)
			.setAudience(audience)
			.setIssuedAt()
			.setExpirationTime("1h")
			.sign(privateKey);
	const server: Server = createServer((req, res) => {
		const url = new URL(req.url ?? "/", provider.issuer);
		const json = (status: number, body: unknown, headers: Record<string, string> = {}) => {
			res.writeHead(status, { "content-type": "application/json", ...headers });
			res.end(JSON.stringify(body));
		};
		if (url.pathname === "/.well-known/openid-configuration") {
			return json(200, {
				issuer: provider.issuer,
				authorization_endpoint: `${provider.issuer}/authorize`,
				token_endpoint: `${provider.issuer}/token`,
				jwks_uri: `${provider.issuer}/jwks.json`,
				response_types_supported: ["code"],
				code_challenge_methods_supported: ["S256"],
			});
		}
		if (url.pathname === "/jwks.json") return json(200, { keys: [jwk] });
		if (url.pathname === "/authorize") {
			const q = url.searchParams;
			provider.authorizeRequests.push(q);
			const redirectUri = q.get("redirect_uri") ?? "";
			const ok =
				q.get("response_type") === "code" &&
				q.get("client_id") === CLIENT_ID &&
				q.get("code_challenge_method") === "S256" &&
				/^[A-Za-z0-9_-]{43}$/.test(q.get("code_challenge") ?? "") &&
				/^http:\/\/127\.0\.0\.1:\d+\/playground$/.test(redirectUri) &&
				(q.get("scope") ?? "").split(" ").includes("openid") &&
				q.get("state") &&
				q.get("nonce");
			if (!ok) {
				res.writeHead(400).end("bad authorization request");
				return;
			}
			// No login page: the browser is alice, who consents.
			const code = randomUUID();
			codes.set(code, { challenge: q.get("code_challenge")!, nonce: q.get("nonce")!, redirectUri });
			const back = new URL(redirectUri);
			back.searchParams.set("code", code);
			back.searchParams.set("state", provider.forgeState ?? q.get("state")!);
			res.writeHead(302, { location: back.href }).end();
			return;
		}
		if (url.pathname === "/token") {
			// A browser reads the answer only when the provider allows the page's origin.
			const cors = { "access-control-allow-origin": req.headers.origin ?? "*" };
			if (req.method === "OPTIONS") {
				res.writeHead(204, { ...cors, "access-control-allow-headers": "content-type, accept" }).end();
				return;
			}
			let body = "";
			req.on("data", (chunk: Buffer) => {
				body += chunk.toString();
			});
			req.on("end", async () => {
				const form = new URLSearchParams(body);
				provider.tokenRequests.push(form);
				const issued = codes.get(form.get("code") ?? "");
				codes.delete(form.get("code") ?? "");
				const verifier = form.get("code_verifier") ?? "";
				if (
					req.method !== "POST" ||
					form.get("grant_type") !== "authorization_code" ||
					form.get("client_id") !== CLIENT_ID ||
					!issued ||
					issued.redirectUri !== form.get("redirect_uri") ||
					b64url(createHash("sha256").update(verifier).digest()) !== issued.challenge
				) {
					return json(400, { error: "invalid_grant" }, cors);
				}
				json(
					200,
					{
						token_type: "Bearer",
						expires_in: 3600,
						access_token: await provider.accessToken(),
						id_token: await sign(
							{ nonce: provider.forgeNonce ?? issued.nonce, name: "Alice", org_id: ALICE.org_id },
							CLIENT_ID,
						),
					},
					{ ...cors, "cache-control": "no-store" },
				);
			});
			return;
		}
		res.writeHead(404).end();
	});
	server.listen(0, "127.0.0.1");
	await once(server, "listening");
	const provider: Provider = {
		issuer: `http://127.0.0.1:${(server.address() as { port: number }).port}`,
		authorizeRequests: [],
		tokenRequests: [],
		accessToken: () => sign({ org_id: ALICE.org_id, scope: "openid agents" }, AUDIENCE),
		async close() {
			server.closeAllConnections();
			server.close();
		},
	};
	return provider;
}

/** The docs' `auth` section with the provider's addresses moved to `provider`, and `playground` fields over it. */
function authConfig(provider: Provider, playground: Record<string, unknown> = {}) {
	const { jwt } = DOCS_CONFIG.auth;
	return {
		...DOCS_CONFIG.auth,
		jwt: {
			...jwt,
			issuer: provider.issuer,
			jwksUrl: `${provider.issuer}/jwks.json`,
			playground: { ...jwt.playground, ...playground },
		},
	};
}

let dir: string;
let provider: Provider;
let main: MainProcess;
let chromiumHandle: Awaited<ReturnType<typeof launchChromium>> | undefined;
let browser: BrowserContext | undefined;
const cleanups: (() => unknown)[] = [];

function writeConfig(name: string, config: unknown): string {
	const file = path.join(dir, name);
	writeFileSync(file, JSON.stringify(config));
	return file;
}

beforeAll(async () => {
	dir = mkdtempSync(path.join(tmpdir(), "wheelhouse-playground-oidc-"));
	provider = await startProvider();
	// The server process serves the repository's dist/playground: built here, held until it has read it.
	const release = await holdDist();
	try {
		await buildPlayground(path.join(repoRoot, "dist/playground"));
		main = await startMain({
			db: path.join(dir, "wheelhouse.db"),
			env: { WHEELHOUSE_CONFIG: writeConfig("server.json", { auth: authConfig(provider) }) },
		});
	} finally {
		release();
	}
	if (HAVE_CHROMIUM) {
		chromiumHandle = await launchChromium();
		browser = chromiumHandle.browser;
	}
}, 120_000);

afterEach(async () => {
	for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
	provider.authorizeRequests.length = 0;
	provider.tokenRequests.length = 0;
	provider.forgeState = undefined;
	provider.forgeNonce = undefined;
});

afterAll(async () => {
	await chromiumHandle?.close();
	stopAll();
	await provider?.close();
	rmSync(dir, { recursive: true, force: true });
});

/** A new tab on the page of `server` (default: the file's); its console errors (CSP violations among them) are collected. */
async function openPage(server: MainProcess = main): Promise<{ page: Page; errors: string[] }> {
	const page = await browser!.newPage();
	cleanups.push(() => page.close());
	const errors: string[] = [];
	page.on("console", (message) => {
		if (message.type() === "error") errors.push(message.text());
	});
	page.on("pageerror", (error) => errors.push(String(error)));
	await page.addInitScript(() => {
		const doc = (globalThis as any).document;
		doc.addEventListener("securitypolicyviolation", (event: any) =>
			console.error(`CSP violation: ${event.violatedDirective} ${event.blockedURI}`),
		);
	});
	await page.goto(`${server.url}/`);
	return { page, errors };
}

const storage = (page: Page, which: "sessionStorage" | "localStorage") =>
	page.evaluate((name) => ({ ...(globalThis as any)[name] }) as Record<string, string>, which);

/** The sign-in button the page shows (named after the provider's host). */
const signInButton = (page: Page) => page.getByRole("button", { name: /^Sign in with 127\.0\.0\.1:\d+$/ });
const signedIn = (page: Page) => page.getByRole("button", { name: "Signed in: auth0|alice (org-a)" });
/** Chromium logs the first load's unauthenticated 401s as console errors; nothing else may be there. */
const unexpected = (errors: string[]) => errors.filter((e) => !/401/.test(e));

describe("the playground's sign-in with an identity provider", () => {
	it("tells the page the public client settings only, from discovery; its CSP allows the token endpoint", async () => {
		const res = await fetch(`${main.url}/playground/auth.json`);
		expect(res.status).toBe(200);
		const text = await res.text();
		expect(JSON.parse(text)).toEqual({
			oidc: {
				issuer: provider.issuer,
				clientId: CLIENT_ID,
				authorizationEndpoint: `${provider.issuer}/authorize`,
				tokenEndpoint: `${provider.issuer}/token`,
				scopes: ["openid", "profile", "agents"],
				token: "access",
				authorizationParams: { audience: AUDIENCE },
			},
		});
		expect(text).not.toMatch(/secret/i);
		const page = await fetch(`${main.url}/playground`);
		const csp = page.headers.get("content-security-policy") ?? "";
		expect(csp).toContain(`connect-src 'self' ${provider.issuer}`);
		expect(csp).toContain("script-src 'self'");
		expect(csp).not.toContain("unsafe-inline");
	});

	it.skipIf(!HAVE_CHROMIUM)(
		"signs in (code + PKCE S256), shows alice and org-a, runs a prompt with the token, and signs out",
		async () => {
			const { page, errors } = await openPage();
			await signInButton(page).click();
			await signedIn(page).waitFor();

			const [authorize] = provider.authorizeRequests;
			expect(authorize?.get("code_challenge_method")).toBe("S256");
			expect(authorize?.get("redirect_uri")).toBe(`${main.url}/playground`);
			expect(authorize?.get("scope")).toBe("openid profile agents");
			expect(authorize?.get("audience")).toBe(AUDIENCE);
			const [exchange] = provider.tokenRequests;
			expect(exchange?.get("code_verifier")).toMatch(/^[A-Za-z0-9_-]{43}$/);
			expect([...(exchange?.keys() ?? [])].sort()).toEqual([
				"client_id",
				"code",
				"code_verifier",
				"grant_type",
				"redirect_uri",
			]);
			// The code leaves the address at once: a reload or a shared link cannot use it again.
			expect(new URL(page.url()).search).toBe("");

			// The access token, in this tab only.
			const kept = Object.values(await storage(page, "sessionStorage"));
			expect(kept).toHaveLength(1);
			expect(decodeJwt(kept[0]!)).toMatchObject({ aud: AUDIENCE, sub: ALICE.sub, org_id: "org-a" });
			expect(await storage(page, "localStorage")).toEqual({});

			await page.locator("#model option").first().waitFor({ state: "attached" });
			await page.getByRole("button", { name: "Create session" }).click();
			await page.locator('#connection[data-state="live"]').waitFor();
			await page.getByLabel("Message", { exact: true }).fill("hello from alice");
			await page.getByRole("button", { name: "Send", exact: true }).click();
			await page.locator(".msg.assistant", { hasText: "hello from alice" }).waitFor();
			const mine = await fetch(`${main.url}/v1/sessions`, {
				headers: { authorization: `Bearer ${await provider.accessToken()}` },
			});
			expect(((await mine.json()) as { sessions: unknown[] }).sessions).toHaveLength(1);

			await page.getByRole("button", { name: "Sign out" }).click();
			await signInButton(page).waitFor();
			expect(await storage(page, "sessionStorage")).toEqual({});
			expect(await page.getByRole("button", { name: "Sign out" }).isHidden()).toBe(true);
			expect(await page.locator("#session-list li").count()).toBe(0);
			expect(unexpected(errors)).toEqual([]);
		},
	);

	it.skipIf(!HAVE_CHROMIUM)("refuses an answer with another state before exchanging its code", async () => {
		provider.forgeState = "a-state-this-tab-never-sent";
		const { page, errors } = await openPage();
		await signInButton(page).click();
		await page.getByRole("alert").filter({ hasText: "state mismatch" }).waitFor();
		expect(provider.authorizeRequests).toHaveLength(1);
		expect(provider.tokenRequests).toHaveLength(0);
		expect(await storage(page, "sessionStorage")).toEqual({});
		expect(await signedIn(page).count()).toBe(0);
		expect(new URL(page.url()).search).toBe("");
		expect(unexpected(errors)).toEqual([]);
	});

	it.skipIf(!HAVE_CHROMIUM)("refuses an ID token with another nonce and keeps no token", async () => {
		provider.forgeNonce = "a-nonce-this-tab-never-sent";
		const { page, errors } = await openPage();
		await signInButton(page).click();
		await page.getByRole("alert").filter({ hasText: "nonce mismatch" }).waitFor();
		expect(provider.tokenRequests).toHaveLength(1);
		expect(await storage(page, "sessionStorage")).toEqual({});
		expect(await signedIn(page).count()).toBe(0);
		expect(unexpected(errors)).toEqual([]);
	});

	it.skipIf(!HAVE_CHROMIUM)('with "token": "id", sends the ID token, whose audience is the client id', async () => {
		const config = authConfig(provider, { token: "id" });
		// ID tokens carry no scopes: a server taking them as bearers requires none.
		const jwt = { ...config.jwt, audience: [AUDIENCE, CLIENT_ID], requiredScopes: [] };
		const file = writeConfig("id-token.json", { auth: { ...config, jwt } });
		const server = await startMain({ db: path.join(dir, "id-token.db"), env: { WHEELHOUSE_CONFIG: file } });
		cleanups.push(() => server.child.kill("SIGKILL"));
		const { page, errors } = await openPage(server);
		await signInButton(page).click();
		await signedIn(page).waitFor();
		const kept = Object.values(await storage(page, "sessionStorage"));
		expect(kept).toHaveLength(1);
		expect(decodeJwt(kept[0]!)).toMatchObject({ aud: CLIENT_ID, sub: ALICE.sub });
		expect(unexpected(errors)).toEqual([]);
	});

	it.skipIf(!HAVE_CHROMIUM)("takes a pasted token beside the sign-in button", async () => {
		const { page, errors } = await openPage();
		await signInButton(page).waitFor();
		await page.getByLabel("API key", { exact: true }).fill(await provider.accessToken());
		await page.getByRole("button", { name: "Use this key" }).click();
		await signedIn(page).waitFor();
		expect(provider.authorizeRequests).toHaveLength(0);
		await page.getByRole("button", { name: "Sign out" }).click();
		await signInButton(page).waitFor();
		expect(await storage(page, "sessionStorage")).toEqual({});
		expect(unexpected(errors)).toEqual([]);
	});
});

describe("auth.jwt.playground settings", () => {
	const jwt = {
		issuer: "https://login.example.com/",
		audience: AUDIENCE,
		jwksUrl: "https://login.example.com/jwks.json",
	};
	const refused = (playground: unknown, issuer = jwt.issuer): string => {
		try {
			resolveIdentitySettings({ jwt: { ...jwt, issuer, playground } }, []);
		} catch (err) {
			if (err instanceof ConfigError) return err.field;
			throw err;
		}
		return "accepted";
	};

	it("names the bad field", () => {
		expect(refused({})).toBe("auth.jwt.playground.clientId");
		expect(refused({ clientId: "c", clientSecret: "s" })).toBe("auth.jwt.playground.clientSecret");
		expect(refused({ clientId: "c", tokenEndpoint: "http://login.example.com/token" })).toBe(
			"auth.jwt.playground.tokenEndpoint",
		);
		expect(refused({ clientId: "c", scopes: ["profile"] })).toBe("auth.jwt.playground.scopes");
		expect(refused({ clientId: "c", token: "id" })).toBe("auth.jwt.playground.token");
		expect(refused({ clientId: "c", authorizationParams: { state: "x" } })).toBe(
			"auth.jwt.playground.authorizationParams.state",
		);
		expect(refused({ clientId: "c" }, "not-a-url")).toBe("auth.jwt.playground.authorizationEndpoint");
		expect(refused({ clientId: "c", colour: "blue" })).toBe("auth.jwt.playground.colour");
		expect(refused({ clientId: "c", authorizationParams: { audience: AUDIENCE } })).toBe("accepted");
	});

	it("the ID token may be the bearer when its audience, the client id, is accepted", () => {
		const settings = resolveIdentitySettings(
			{
				jwt: {
					...jwt,
					audience: [AUDIENCE, "c"],
					requiredScopes: ["agents"],
					playground: { clientId: "c", token: "id" },
				},
			},
			[],
		);
		expect(settings.jwt?.playground).toMatchObject({ clientId: "c", token: "id", scopes: ["openid", "agents"] });
	});

	it("a bad setting stops the server process, naming it", async () => {
		const file = writeConfig("secret.json", { auth: authConfig(provider, { clientSecret: "s3cret" }) });
		const { code, stderr } = await refusedStartup({ WHEELHOUSE_CONFIG: file });
		expect(code).not.toBe(0);
		expect(stderr).toContain("auth.jwt.playground.clientSecret");
		expect(stderr).not.toContain("s3cret");
	});

	it("a discovery document for another issuer is not used: 503 IDENTITY_PROVIDER_UNAVAILABLE", async () => {
		// The provider's document names its own issuer; a server configured with a different spelling refuses it.
		const other = `${provider.issuer}/`;
		const file = writeConfig("mismatch.json", {
			auth: { ...authConfig(provider), jwt: { ...authConfig(provider).jwt, issuer: other } },
		});
		const server = await startMain({ db: path.join(dir, "mismatch.db"), env: { WHEELHOUSE_CONFIG: file } });
		cleanups.push(() => server.child.kill("SIGKILL"));
		const res = await fetch(`${server.url}/playground/auth.json`);
		expect(res.status).toBe(503);
		const body = (await res.json()) as { error: { code: string; message: string } };
		expect(body.error.code).toBe("IDENTITY_PROVIDER_UNAVAILABLE");
		expect(body.error.message).toMatch(/is for the issuer/);
		const page = await fetch(`${server.url}/playground`);
		expect(page.status).toBe(200);
		expect(page.headers.get("content-security-policy")).toContain("connect-src 'self';");
	});
});
