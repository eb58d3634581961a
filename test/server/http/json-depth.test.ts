import { afterEach, describe, expect, it } from "vitest";
import { MAX_JSON_DEPTH } from "../../../src/server/http/body-parser.js";
import { startServer, type TestServer } from "../../helpers/server.js";

let server: TestServer;
afterEach(async () => {
	await server?.close();
});

/** `depth` nested arrays around a value, as raw JSON text (the shape that overflowed the stack). */
function nested(depth: number, open = "[", close = "]"): string {
	return `${open.repeat(depth)}1${close.repeat(depth)}`;
}

function deepObject(depth: number): string {
	return `${'{"a":'.repeat(depth)}1${"}".repeat(depth)}`;
}

describe("JSON nesting depth", () => {
	it("a body nested deeper than the limit is refused at parse time (400 JSON_TOO_DEEP) on every route", async () => {
		server = await startServer();
		const id = (await server.request("POST", "/v1/sessions", { body: {} })).body.id;
		const deep = nested(4100);
		const bodies: [string, string, string][] = [
			["POST", "/v1/sessions", `{"messages":[{"role":"user","content":${deep}}]}`],
			[
				"PATCH",
				`/v1/sessions/${id}`,
				`{"clientTools":[{"name":"t","description":"d","parameters":{"type":"object","properties":{"a":${deepObject(4100)}}}}]}`,
			],
			["POST", `/v1/sessions/${id}/prompt`, `{"message":{"role":"user","content":${deep}}}`],
			["POST", `/v1/sessions/${id}/steer`, `{"message":${deep}}`],
		];
		for (const [method, path, body] of bodies) {
			const res = await server.request(method, path, { body });
			expect(res.status, `${method} ${path}`).toBe(400);
			expect(res.body.error.code).toBe("JSON_TOO_DEEP");
			expect(res.body.error.message).toContain(String(MAX_JSON_DEPTH));
		}
		// Nothing changed: the session is idle, with no messages, and takes the next prompt.
		const view = (await server.request("GET", `/v1/sessions/${id}`)).body;
		expect(view).toMatchObject({ status: "idle", messageCount: 0, runId: null });
		const ok = await server.request("POST", `/v1/sessions/${id}/prompt`, { body: { message: "hi" } });
		expect(ok.status).toBe(202);
	});

	it("depth is counted outside strings only, and exactly at the limit is accepted", async () => {
		server = await startServer();
		const id = (await server.request("POST", "/v1/sessions", { body: {} })).body.id;
		// Brackets inside strings (with escaped quotes) are text, not nesting.
		const text = `${"[{".repeat(5000)}\\"${"[".repeat(100)}`;
		const res = await server.request("POST", `/v1/sessions/${id}/prompt`, { body: `{"message":"${text}"}` });
		expect(res.status).toBe(202);
		// The body (1), `messages` (2), the message (3), then a chain of objects under a field of it.
		const withDepth = (depth: number) =>
			`{"messages":[{"role":"user","content":"x","extra":${deepObject(depth - 3)}}]}`;
		const stored = await server.request("POST", "/v1/sessions", { body: withDepth(MAX_JSON_DEPTH) });
		expect(stored.status).toBe(201);
		expect(stored.body.messageCount).toBe(1);
		const refused = await server.request("POST", "/v1/sessions", { body: withDepth(MAX_JSON_DEPTH + 1) });
		expect(refused.status).toBe(400);
		expect(refused.body.error.code).toBe("JSON_TOO_DEEP");
	});

	it("keeps the prototype-poisoning protection and the INVALID_JSON answer", async () => {
		server = await startServer();
		const poisoned = await server.request("POST", "/v1/sessions", { body: '{"__proto__":{"x":1}}' });
		expect(poisoned.status).toBe(400);
		expect(poisoned.body.error.code).toBe("INVALID_JSON");
		const ctor = await server.request("POST", "/v1/sessions", {
			body: '{"constructor":{"prototype":{"x":1}}}',
		});
		expect(ctor.status).toBe(400);
		expect(ctor.body.error.code).toBe("INVALID_JSON");
		const broken = await server.request("POST", "/v1/sessions", { body: '{"model":' });
		expect(broken.status).toBe(400);
		expect(broken.body.error.code).toBe("INVALID_JSON");
	});
});
