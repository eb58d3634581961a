/**
 * What a browser on another origin needs when API keys are set: CORS preflights answered before
 * auth (a preflight never carries credentials), and stream tokens, the one way an `EventSource`
 * can authenticate — minted with the key, good for one session's `/events` only, until they
 * expire, and never written to the request log.
 */
import { Writable } from "node:stream";
import { afterEach, describe, expect, it } from "vitest";
import { StreamTokens } from "../../../../src/server/http/stream-token.js";
import { ownerIdOf } from "../../../../src/server/runtime/owner-id.js";
import { startServer, type TestServer } from "../../../helpers/server.js";
import { openSse } from "../../../helpers/sse.js";

const KEY_A = "key-a-browser-0123456789";
const KEY_B = "key-b-browser-0123456789";
const ORIGIN = "http://app.example:8080";

let server: TestServer;
afterEach(async () => {
	await server?.close();
});

describe("CORS preflight with API keys set", () => {
	it("is answered with the CORS headers, not 401", async () => {
		server = await startServer({ config: { apiKeys: [KEY_A], corsOrigins: [ORIGIN] } });
		for (const path of ["/v1/sessions", "/v1/sessions/some-id/prompt", "/v1/sessions/some-id/stream-token"]) {
			const res = await fetch(`${server.url}${path}`, {
				method: "OPTIONS",
				headers: {
					origin: ORIGIN,
					"access-control-request-method": "POST",
					"access-control-request-headers": "authorization,content-type",
				},
			});
			expect(res.status, path).toBe(204);
			expect(res.headers.get("access-control-allow-origin"), path).toBe(ORIGIN);
			expect(res.headers.get("access-control-allow-headers"), path).toMatch(/authorization/);
			expect(res.headers.get("access-control-allow-methods"), path).toMatch(/POST/);
		}
		// The request that follows the preflight still needs the key, and carries the CORS headers either way.
		const denied = await fetch(`${server.url}/v1/sessions`, { method: "POST", headers: { origin: ORIGIN } });
		expect(denied.status).toBe(401);
		expect(denied.headers.get("access-control-allow-origin")).toBe(ORIGIN);
		// An OPTIONS request that is not a preflight is no way around the key.
		expect((await fetch(`${server.url}/v1/sessions`, { method: "OPTIONS" })).status).toBeGreaterThanOrEqual(400);
	});

	it("allows the headers a client SDK sends (the openai SDK's x-stainless-*), for the configured origin only", async () => {
		server = await startServer({ config: { apiKeys: [KEY_A], corsOrigins: [ORIGIN] } });
		const preflight = (origin: string) =>
			fetch(`${server?.url}/openai/v1/chat/completions`, {
				method: "OPTIONS",
				headers: {
					origin,
					"access-control-request-method": "POST",
					"access-control-request-headers": "authorization,content-type,x-stainless-os,x-stainless-retry-count",
				},
			});
		const allowed = await preflight(ORIGIN);
		expect(allowed.status).toBe(204);
		expect(allowed.headers.get("access-control-allow-headers")).toMatch(/x-stainless-os/);
		expect(allowed.headers.get("access-control-allow-headers")).toMatch(/x-stainless-retry-count/);
		const other = await preflight("https://elsewhere.example");
		expect(other.headers.get("access-control-allow-origin")).toBeNull();
	});
});

describe("stream tokens", () => {
	async function createSession(key: string): Promise<string> {
		const res = await server.request("POST", "/v1/sessions", { key, body: {} });
		expect(res.status).toBe(201);
		return res.body.id;
	}

	async function mint(id: string, key?: string) {
		return server.request("POST", `/v1/sessions/${id}/stream-token`, { key });
	}

	it("open the session's event stream without the header, only that session's, only on /events", async () => {
		server = await startServer({ config: { apiKeys: [KEY_A, KEY_B] } });
		const a = await createSession(KEY_A);
		const b = await createSession(KEY_B);

		expect((await mint(a)).status).toBe(401);
		expect((await mint(a, KEY_B)).body.error.code).toBe("SESSION_NOT_FOUND");
		const minted = await mint(a, KEY_A);
		expect(minted.status).toBe(200);
		const { token, expiresAt, eventsUrl } = minted.body;
		expect(expiresAt).toBeGreaterThan(Date.now());
		expect(eventsUrl).toBe(`/v1/sessions/${a}/events?token=${encodeURIComponent(token)}`);

		const stream = await openSse(`${server.url}${eventsUrl}`);
		const snapshot = await stream.waitForType("session_snapshot");
		expect(snapshot.data.state.id).toBe(a);
		// Prompt with the key; the run's events reach the token-opened stream.
		expect(
			(await server.request("POST", `/v1/sessions/${a}/prompt`, { key: KEY_A, body: { message: "hi" } })).status,
		).toBe(202);
		await stream.waitForType("agent_end");
		stream.close();

		const tokenB = (await mint(b, KEY_B)).body.token;
		const refusals: [string, string][] = [
			["another session's token", `/v1/sessions/${a}/events?token=${encodeURIComponent(tokenB)}`],
			["a token for another session id", `/v1/sessions/${b}/events?token=${encodeURIComponent(token)}`],
			["a tampered token", `/v1/sessions/${a}/events?token=${encodeURIComponent(`${token.slice(0, -2)}xx`)}`],
			["a made-up token", `/v1/sessions/${a}/events?token=abc`],
			["the token on another route", `/v1/sessions/${a}?token=${encodeURIComponent(token)}`],
			["the token on the messages route", `/v1/sessions/${a}/messages?token=${encodeURIComponent(token)}`],
		];
		for (const [what, path] of refusals) {
			const res = await server.request("GET", path);
			expect(res.status, what).toBe(401);
			expect(res.body.error.code, what).toBe("UNAUTHORIZED");
		}
		// With a wrong key in the header, the header decides.
		const wrongHeader = await server.request("GET", eventsUrl, { key: "not-a-valid-key-123" });
		expect(wrongHeader.status).toBe(401);
	});

	it("stop opening streams once expired; minted from the key, so valid across restarts until then", async () => {
		server = await startServer({ config: { apiKeys: [KEY_A] } });
		const a = await createSession(KEY_A);
		// Another instance configured with the same key (a restarted process, another replica).
		const elsewhere = new StreamTokens([{ apiKey: KEY_A, ownerId: ownerIdOf(KEY_A) }], 60_000);
		const fresh = elsewhere.mint(a, ownerIdOf(KEY_A)).token;
		const stream = await openSse(`${server.url}/v1/sessions/${a}/events?token=${encodeURIComponent(fresh)}`);
		await stream.waitForType("session_snapshot");
		stream.close();

		const expired = elsewhere.mint(a, ownerIdOf(KEY_A), Date.now() - 60_001).token;
		const res = await server.request("GET", `/v1/sessions/${a}/events?token=${encodeURIComponent(expired)}`);
		expect(res.status).toBe(401);
		expect(res.body.error.message).toMatch(/stream-token/);

		// A removed key's tokens die with it.
		const otherKey = new StreamTokens([{ apiKey: KEY_B, ownerId: ownerIdOf(KEY_A) }], 60_000);
		const forged = otherKey.mint(a, ownerIdOf(KEY_A)).token;
		expect((await server.request("GET", `/v1/sessions/${a}/events?token=${encodeURIComponent(forged)}`)).status).toBe(
			401,
		);
	});

	it("never appear in the request log", async () => {
		let log = "";
		const logStream = new Writable({
			write(chunk, _encoding, done) {
				log += chunk.toString();
				done();
			},
		});
		server = await startServer({ config: { apiKeys: [KEY_A], logLevel: "info" }, logStream });
		const a = await createSession(KEY_A);
		const { token } = (await mint(a, KEY_A)).body;
		const encodedKey = `/v1/sessions/${a}/events?after=0&%74oken=${encodeURIComponent(token)}`;
		for (const path of [`/v1/sessions/${a}/events?token=${encodeURIComponent(token)}`, encodedKey]) {
			// Opened (openSse throws on anything but an event stream).
			(await openSse(`${server.url}${path}`)).close();
		}
		// Refused tokens are not logged either.
		await server.request("GET", `/v1/sessions/${a}/events?token=${encodeURIComponent(token)}x`);
		await server.close();
		expect(log).toContain(`/v1/sessions/${a}/events?token=[redacted]`);
		expect(log).toContain(`/v1/sessions/${a}/events?after=0&%74oken=[redacted]`);
		expect(log).not.toContain(token.split(".")[2]);
	});
});
