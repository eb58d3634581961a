// Launches a real Chromium (headless) in one test: seconds on a busy machine.
/**
 * Client tokens (`POST /v1/tokens`): a short-lived token for one session and a few scopes. It opens
 * its scopes' routes on its session (with `Authorization`, or `?token=` on the event stream) and
 * nothing else (403 `INSUFFICIENT_SCOPE`); it expires; it works on any server configured alike and
 * dies with the key that minted it; a JWT caller's never outlives its JWT. In Chromium, a page on
 * another origin holding only such a token prompts with `fetch` and follows with `EventSource`.
 */
import { once } from "node:events";
import { createServer, type Server } from "node:http";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { WheelhouseClient, WheelhouseError } from "../../../../src/client/index.js";
import { chromiumTitle, haveChromium, launchChromium } from "../../../helpers/chromium.js";
import { type IdentityProvider, jwtAuthConfig, startIdentityProvider } from "../../../helpers/jwks-server.js";
import { startServer, type TestServer } from "../../../helpers/server.js";

const KEY = "client-token-minting-key-01";
const OTHER_KEY = "client-token-other-key-02";
const cleanups: (() => unknown)[] = [];
let idp: IdentityProvider;

beforeAll(async () => {
	idp = await startIdentityProvider();
});
afterAll(async () => {
	await idp?.close();
});
afterEach(async () => {
	for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

async function serve(apiKeys: string[], corsOrigins: string[] = []): Promise<TestServer> {
	const server = await startServer({
		config: { apiKeys, corsOrigins, authConfig: jwtAuthConfig(idp) },
	});
	cleanups.push(() => server.close());
	return server;
}

async function newSession(server: TestServer, key = KEY): Promise<string> {
	const created = await server.request("POST", "/v1/sessions", { key, body: { model: "faux/echo" } });
	expect(created.status).toBe(201);
	return created.body.id;
}

async function mint(server: TestServer, sessionId: string, scopes: string[], key = KEY, ttlSeconds?: number) {
	const res = await server.request("POST", "/v1/tokens", {
		key,
		body: { sessionId, scopes, ...(ttlSeconds ? { ttlSeconds } : {}) },
	});
	expect(res.status, JSON.stringify(res.body)).toBe(201);
	return res.body as { token: string; expiresAt: number; eventsUrl: string; scopes: string[] };
}

async function waitIdle(server: TestServer, id: string): Promise<void> {
	const deadline = Date.now() + 15_000;
	while ((await server.request("GET", `/v1/sessions/${id}`, { key: KEY })).body.status !== "idle") {
		if (Date.now() > deadline) throw new Error("the run did not end");
		await new Promise((resolve) => setTimeout(resolve, 25));
	}
}

describe("a client token", () => {
	it("opens its scopes' routes on its one session and nothing else", async () => {
		const server = await serve([KEY]);
		const mine = await newSession(server);
		const other = await newSession(server);
		const rw = await mint(server, mine, ["read", "write"]);
		expect(rw.token).toMatch(/^whct_/);
		expect(rw.scopes).toEqual(["read", "write"]);

		// read + write on its session.
		expect((await server.request("GET", `/v1/sessions/${mine}`, { key: rw.token })).status).toBe(200);
		const prompt = await server.request("POST", `/v1/sessions/${mine}/prompt?stream=false`, {
			key: rw.token,
			body: { message: "from a browser" },
		});
		expect(prompt.status).toBe(202);
		await waitIdle(server, mine);
		const messages = await server.request("GET", `/v1/sessions/${mine}/messages`, { key: rw.token });
		expect(messages.body.messages).toHaveLength(2);
		// ?token= on the event stream, without a header.
		const events = await fetch(`${server.url}${rw.eventsUrl}&after=0`, { signal: AbortSignal.timeout(5000) });
		expect(events.status).toBe(200);
		const reader = events.body!.getReader();
		let text = "";
		while (!/event: agent_end/.test(text)) {
			const { value, done } = await reader.read();
			if (done) break;
			text += new TextDecoder().decode(value);
		}
		expect(text).toMatch(/event: agent_start/);
		await reader.cancel();

		// Everything else: 403.
		const refused: Array<[string, string, unknown?]> = [
			["GET", `/v1/sessions/${other}`],
			["POST", `/v1/sessions/${other}/prompt`, { message: "x" }],
			["POST", `/v1/sessions/${mine}/approvals/call_1`, { approve: true }],
			["PATCH", `/v1/sessions/${mine}`, { systemPrompt: "x" }],
			["DELETE", `/v1/sessions/${mine}`],
			["GET", "/v1/sessions"],
			["POST", "/v1/sessions", { model: "faux/echo" }],
			["POST", "/v1/tokens", { sessionId: mine, scopes: ["read"] }],
			["POST", `/v1/sessions/${mine}/stream-token`],
			["GET", "/v1/usage"],
			["GET", "/v1/models"],
			["POST", "/openai/v1/responses", { model: "faux/echo", input: "x" }],
		];
		for (const [method, url, body] of refused) {
			const res = await server.request(method, url, { key: rw.token, body });
			expect(res.status, `${method} ${url}`).toBe(403);
			expect(res.body.error.code, `${method} ${url}`).toBe("INSUFFICIENT_SCOPE");
		}
		const otherEvents = await fetch(`${server.url}/v1/sessions/${other}/events?token=${encodeURIComponent(rw.token)}`);
		expect(otherEvents.status).toBe(403);

		// A read-only token cannot prompt; an approve-only one cannot read.
		const ro = await mint(server, mine, ["read"]);
		const roPrompt = await server.request("POST", `/v1/sessions/${mine}/prompt`, {
			key: ro.token,
			body: { message: "x" },
		});
		expect(roPrompt.status).toBe(403);
		expect(roPrompt.body.error.message).toMatch(/"write"/);
		const approver = await mint(server, mine, ["approve"]);
		expect((await server.request("GET", `/v1/sessions/${mine}`, { key: approver.token })).status).toBe(403);
		// The approval route itself opens to it: the answer is about the tool call, not the token.
		const approval = await server.request("POST", `/v1/sessions/${mine}/approvals/call_1`, {
			key: approver.token,
			body: { approve: true },
		});
		expect(approval.status).toBe(404);
		expect(approval.body.error.code).toBe("TOOL_CALL_NOT_FOUND");
	});

	it("expires, works on any server configured alike, and dies with its key", async () => {
		const first = await serve([KEY, OTHER_KEY]);
		const id = await newSession(first);
		const short = await mint(first, id, ["read"], KEY, 1);
		expect(short.expiresAt).toBeLessThanOrEqual(Date.now() + 1000);
		const long = await mint(first, id, ["read"]);
		const deadline = Date.now() + 10_000;
		let status = 200;
		while (Date.now() < deadline) {
			status = (await first.request("GET", `/v1/sessions/${id}`, { key: short.token })).status;
			if (status === 401) break;
			await new Promise((resolve) => setTimeout(resolve, 100));
		}
		expect(status).toBe(401);
		expect((await first.request("GET", `/v1/sessions/${id}`, { key: long.token })).status).toBe(200);

		// The same keys on another server (same store would be a replica; here: the token verifies).
		const replica = await serve([KEY, OTHER_KEY]);
		const onReplica = await replica.request("GET", `/v1/sessions/${id}`, { key: long.token });
		expect(onReplica.status).toBe(404); // verified, then the session is not in this server's store
		expect(onReplica.body.error.code).toBe("SESSION_NOT_FOUND");
		// Without the minting key: refused.
		const revoked = await serve([OTHER_KEY]);
		const refused = await revoked.request("GET", `/v1/sessions/${id}`, { key: long.token });
		expect(refused.status).toBe(401);
		expect(refused.headers.get("www-authenticate")).toMatch(/invalid_token/);
		// A forged one (another session id in the payload, the old mac): refused.
		const [body, mac] = long.token.slice(5).split(".");
		const payload = JSON.parse(Buffer.from(body!, "base64url").toString());
		const forged = `whct_${Buffer.from(JSON.stringify({ ...payload, c: ["read", "write", "approve"] })).toString("base64url")}.${mac}`;
		expect((await first.request("GET", `/v1/sessions/${id}`, { key: forged })).status).toBe(401);
	});

	it("minted by a JWT caller, never outlives the JWT", async () => {
		const server = await serve([KEY]);
		const jwtExp = Math.floor(Date.now() / 1000) + 120;
		const alice = await idp.token("alice", { expiresIn: jwtExp });
		const created = await server.request("POST", "/v1/sessions", { key: alice, body: { model: "faux/echo" } });
		expect(created.status).toBe(201);
		const minted = await mint(server, created.body.id, ["read"], alice, 3600);
		expect(minted.expiresAt).toBeLessThanOrEqual(jwtExp * 1000);
		expect((await server.request("GET", `/v1/sessions/${created.body.id}`, { key: minted.token })).status).toBe(200);
		// The key's own sessions are not the JWT caller's.
		const keys = await newSession(server);
		const foreign = await server.request("POST", "/v1/tokens", {
			key: alice,
			body: { sessionId: keys, scopes: ["read"] },
		});
		expect(foreign.status).toBe(404);
	});
});

describe("the typed client", () => {
	it("mints a client token and uses it as the apiKey of a narrower client", async () => {
		const server = await serve([KEY]);
		const full = new WheelhouseClient({ baseUrl: server.url, apiKey: KEY });
		const session = await full.createSession({ model: "faux/echo" });
		const minted = await full.clientToken(session.id, ["read"], { ttlSeconds: 60 });
		expect(minted.scopes).toEqual(["read"]);
		const narrow = new WheelhouseClient({ baseUrl: server.url, apiKey: minted.token });
		expect((await narrow.getSession(session.id)).id).toBe(session.id);
		const refused = await narrow.listSessions().catch((error: unknown) => error);
		expect(refused).toBeInstanceOf(WheelhouseError);
		expect((refused as WheelhouseError).code).toBe("INSUFFICIENT_SCOPE");
		expect(await full.me()).toMatchObject({ kind: "key", tenant: null });
	});
});

/** The page: holds only a client token (no key, no login), prompts and follows the events. */
function pageHtml(api: string, sessionId: string, token: string, otherSession: string): string {
	return `<!doctype html><meta charset="utf-8"><title>client token</title><script type="module">
const api = ${JSON.stringify(api)};
const sessionId = ${JSON.stringify(sessionId)};
const token = ${JSON.stringify(token)};
const json = { authorization: "Bearer " + token, "content-type": "application/json" };
window.result = (async () => {
	const events = [];
	const source = new EventSource(api + "/v1/sessions/" + sessionId + "/events?token=" + encodeURIComponent(token));
	await new Promise((resolve, reject) => {
		source.onerror = () => reject(new Error("EventSource error, readyState " + source.readyState));
		for (const type of ["session_snapshot", "agent_start", "agent_end"]) {
			source.addEventListener(type, async (event) => {
				events.push(type);
				if (type === "session_snapshot") {
					const prompt = await fetch(api + "/v1/sessions/" + sessionId + "/prompt", { method: "POST", headers: json, body: JSON.stringify({ message: "hello from the page" }) });
					if (prompt.status !== 202) reject(new Error("prompt: " + prompt.status + " " + await prompt.text()));
				}
				if (type === "agent_end") resolve();
			});
		}
	});
	source.close();
	const other = await fetch(api + "/v1/sessions/" + ${JSON.stringify(otherSession)}, { headers: json });
	const approve = await fetch(api + "/v1/sessions/" + sessionId + "/approvals/call_1", { method: "POST", headers: json, body: JSON.stringify({ approve: true }) });
	return { events, other: other.status, approve: approve.status };
})().catch((error) => ({ error: String(error) }));
</script>`;
}

describe("a browser page holding only a client token", () => {
	it.skipIf(!haveChromium())(
		chromiumTitle("prompts with fetch, follows with EventSource, and gets 403 elsewhere"),
		async () => {
			let html = "";
			const pages: Server = createServer((_req, res) => {
				res.writeHead(200, { "content-type": "text/html; charset=utf-8" });
				res.end(html);
			});
			pages.listen(0, "127.0.0.1");
			await once(pages, "listening");
			cleanups.push(() => pages.close());
			const pageOrigin = `http://127.0.0.1:${(pages.address() as { port: number }).port}`;
			const server = await serve([KEY], [pageOrigin]);
			const id = await newSession(server);
			const other = await newSession(server);
			const { token } = await mint(server, id, ["read", "write"]);
			html = pageHtml(server.url, id, token, other);

			const { browser, close } = await launchChromium();
			cleanups.push(close);
			const page = await browser.newPage();
			await page.goto(`${pageOrigin}/`);
			const result = await page.evaluate(() => (globalThis as unknown as { result: Promise<unknown> }).result);
			expect(result).toEqual({ events: ["session_snapshot", "agent_start", "agent_end"], other: 403, approve: 403 });
			const messages = await server.request("GET", `/v1/sessions/${id}/messages`, { key: KEY });
			expect(JSON.stringify(messages.body.messages)).toContain("hello from the page");
		},
		60_000,
	);
});
