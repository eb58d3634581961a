import { afterEach, describe, expect, it } from "vitest";
import { startServer, type TestServer } from "../../../helpers/server.js";

let server: TestServer;
afterEach(async () => {
	await server?.close();
});

const KEY_A = "key-a-0123456789";
const KEY_B = "key-b-0123456789";

describe("auth", () => {
	it("off by default: /v1 routes need no key", async () => {
		server = await startServer();
		expect((await server.request("POST", "/v1/sessions", { body: {} })).status).toBe(201);
	});

	it("with keys configured, /v1 needs a valid bearer key; health and openapi stay open", async () => {
		server = await startServer({ config: { apiKeys: [KEY_A, KEY_B] } });
		const none = await server.request("GET", "/v1/sessions");
		expect(none.status).toBe(401);
		expect(none.body.error.code).toBe("UNAUTHORIZED");
		const wrong = await server.request("GET", "/v1/sessions", { key: "not-a-valid-key" });
		expect(wrong.status).toBe(401);
		const basic = await server.request("GET", "/v1/models", { headers: { authorization: `Basic ${KEY_A}` } });
		expect(basic.status).toBe(401);
		expect((await server.request("GET", "/v1/models", { key: KEY_A })).status).toBe(200);
		expect((await server.request("GET", "/healthz")).status).toBe(200);
		expect((await server.request("GET", "/readyz")).status).toBe(200);
		expect((await server.request("GET", "/openapi.json")).status).toBe(200);
		// The SSE route is protected too.
		const created = await server.request("POST", "/v1/sessions", { key: KEY_A, body: {} });
		const events = await server.request("GET", `/v1/sessions/${created.body.id}/events`);
		expect(events.status).toBe(401);
	});

	it("a session belongs to the key that created it: another key gets 404 and does not list it", async () => {
		server = await startServer({ config: { apiKeys: [KEY_A, KEY_B] } });
		const a = (await server.request("POST", "/v1/sessions", { key: KEY_A, body: {} })).body.id;
		const b = (await server.request("POST", "/v1/sessions", { key: KEY_B, body: {} })).body.id;
		expect((await server.request("GET", `/v1/sessions/${a}`, { key: KEY_A })).status).toBe(200);
		for (const [method, path, body] of [
			["GET", `/v1/sessions/${a}`, undefined],
			["GET", `/v1/sessions/${a}/events`, undefined],
			["POST", `/v1/sessions/${a}/prompt`, { message: "hi" }],
			["POST", `/v1/sessions/${a}/steer`, { message: "hi" }],
			["DELETE", `/v1/sessions/${a}`, undefined],
		] as const) {
			const res = await server.request(method, path, { key: KEY_B, body });
			expect(res.status, `${method} ${path}`).toBe(404);
			expect(res.body.error.code).toBe("SESSION_NOT_FOUND");
		}
		const listA = (await server.request("GET", "/v1/sessions", { key: KEY_A })).body.sessions.map((s: any) => s.id);
		const listB = (await server.request("GET", "/v1/sessions", { key: KEY_B })).body.sessions.map((s: any) => s.id);
		expect(listA).toEqual([a]);
		expect(listB).toEqual([b]);
	});
});
