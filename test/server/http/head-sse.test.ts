import { request } from "undici";
import { afterEach, describe, expect, it } from "vitest";
import { startServer, type TestServer } from "../../helpers/server.js";

let server: TestServer;
afterEach(async () => {
	await server?.close();
});

describe("HEAD on SSE routes", () => {
	it("HEAD /v1/sessions/:id/events answers with the stream's headers and no body, at once", async () => {
		server = await startServer();
		const id = (await server.request("POST", "/v1/sessions", { body: {} })).body.id;
		for (const headers of [{}, { "last-event-id": "0" }, { accept: "text/event-stream" }]) {
			const res = await request(`${server.url}/v1/sessions/${id}/events`, {
				method: "HEAD",
				headers,
				headersTimeout: 2000,
				bodyTimeout: 2000,
			});
			expect(res.statusCode).toBe(200);
			expect(res.headers["content-type"]).toMatch(/^text\/event-stream/);
			expect(await res.body.text()).toBe("");
		}
		// The same checks as GET: an unknown session is 404, a bad cursor 400 (headers only).
		const missing = await request(`${server.url}/v1/sessions/ses_nope/events`, {
			method: "HEAD",
			headersTimeout: 2000,
		});
		expect(missing.statusCode).toBe(404);
		await missing.body.dump();
		const badCursor = await request(`${server.url}/v1/sessions/${id}/events`, {
			method: "HEAD",
			headers: { "last-event-id": "x" },
			headersTimeout: 2000,
		});
		expect(badCursor.statusCode).toBe(400);
		await badCursor.body.dump();
		// HEAD left no subscriber behind: the session can be deleted and the server closes.
		expect((await server.request("DELETE", `/v1/sessions/${id}`)).status).toBe(200);
	});

	it("every GET route that streams answers HEAD (routes declared text/event-stream in the OpenAPI document)", async () => {
		server = await startServer();
		const id = (await server.request("POST", "/v1/sessions", { body: {} })).body.id;
		const doc = (await server.request("GET", "/openapi.json")).body;
		const sseGets = Object.entries(doc.paths as Record<string, Record<string, any>>)
			.filter(([, ops]) => ops.get?.responses?.["200"]?.content?.["text/event-stream"])
			.map(([path]) => path.replace("{id}", id).replace("{threadId}", id));
		expect(sseGets.length).toBeGreaterThan(0);
		for (const path of sseGets) {
			const res = await request(`${server.url}${path}`, { method: "HEAD", headersTimeout: 2000, bodyTimeout: 2000 });
			expect(res.statusCode, path).toBe(200);
			expect(await res.body.text()).toBe("");
		}
	});
});
