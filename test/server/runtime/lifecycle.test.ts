import { Writable } from "node:stream";
import { afterEach, describe, expect, it } from "vitest";
import { startServer, type TestServer } from "../../helpers/server.js";
import { openSse, promptSse } from "../../helpers/sse.js";

let server: TestServer;
afterEach(async () => {
	await server?.close();
});

describe("session lifecycle", () => {
	it("an evicted session reloads from the store on access, transcript and queue intact", async () => {
		server = await startServer();
		const id = (await server.request("POST", "/v1/sessions", { body: {} })).body.id;
		await (await promptSse(server.url, id, { message: "remember me" })).waitForEnd();
		await server.request("POST", `/v1/sessions/${id}/follow-up`, { body: { message: "queued" } });
		const sessions = server.app.wheelhouse.sessions;
		const before = sessions.get(id, null);
		expect(sessions.evictIdle(0)).toBe(1);
		const state = (await server.request("GET", `/v1/sessions/${id}`)).body;
		expect(sessions.get(id, null)).not.toBe(before);
		expect(state.messageCount).toBe(2);
		expect(state.queue.followUp.map((q: any) => q.message.content[0].text)).toEqual(["queued"]);
		// The reloaded agent has the transcript: continue runs the queued follow-up after it.
		const cont = await server.request("POST", `/v1/sessions/${id}/continue`);
		expect(cont.status).toBe(202);
		await sessions.get(id, null).waitForIdle();
		const messages = (await server.request("GET", `/v1/sessions/${id}/messages`)).body.messages;
		expect(messages.map((m: any) => m.content[0].text)).toEqual(["remember me", "remember me", "queued", "queued"]);
	});

	it("DELETE during a run aborts it, ends its streams and removes everything", async () => {
		server = await startServer({ config: { fauxDelayMs: 5 } });
		const id = (await server.request("POST", "/v1/sessions", { body: {} })).body.id;
		const words = Array.from({ length: 300 }, (_, i) => `w${i}`).join(" ");
		const run = await promptSse(server.url, id, { message: words });
		const events = await openSse(`${server.url}/v1/sessions/${id}/events`);
		await run.waitForType("message_update");
		const res = await server.request("DELETE", `/v1/sessions/${id}`);
		expect(res.status).toBe(200);
		await run.waitForEnd();
		await events.waitForEnd();
		expect(run.events.at(-1)!.event).toBe("agent_end");
		expect(run.events.at(-1)!.data.messages.at(-1).stopReason).toBe("aborted");
		expect((await server.request("GET", `/v1/sessions/${id}`)).status).toBe(404);
		expect(await server.app.wheelhouse.sessions.store.getSession(id)).toBeUndefined();
	});

	it("refuses sessions past the limit with 429 TOO_MANY_SESSIONS", async () => {
		server = await startServer({ config: { maxSessions: 2 } });
		for (let i = 0; i < 2; i++) {
			const id = (await server.request("POST", "/v1/sessions", { body: {} })).body.id;
			// Keep them active (a subscriber pins a session in memory).
			await (await openSse(`${server.url}/v1/sessions/${id}/events`)).waitForType("session_snapshot");
		}
		const res = await server.request("POST", "/v1/sessions", { body: {} });
		expect(res.status).toBe(429);
		expect(res.body.error.code).toBe("TOO_MANY_SESSIONS");
	});
});

describe("HTTP concerns", () => {
	it("CORS from config: allowed origins get the headers, others do not", async () => {
		server = await startServer({ config: { corsOrigins: ["https://app.example"] } });
		const ok = await fetch(`${server.url}/v1/models`, { headers: { origin: "https://app.example" } });
		expect(ok.headers.get("access-control-allow-origin")).toBe("https://app.example");
		const other = await fetch(`${server.url}/v1/models`, { headers: { origin: "https://evil.example" } });
		expect(other.headers.get("access-control-allow-origin")).toBeNull();
		const preflight = await fetch(`${server.url}/v1/sessions`, {
			method: "OPTIONS",
			headers: {
				origin: "https://app.example",
				"access-control-request-method": "POST",
				"access-control-request-headers": "authorization,content-type",
			},
		});
		expect(preflight.status).toBeLessThan(300);
		expect(preflight.headers.get("access-control-allow-headers")).toContain("authorization");
		// SSE responses keep the CORS headers set before the reply was hijacked.
		const id = (await server.request("POST", "/v1/sessions", { body: {} })).body.id;
		const sse = await fetch(`${server.url}/v1/sessions/${id}/events`, {
			headers: { origin: "https://app.example", accept: "text/event-stream" },
		});
		expect(sse.headers.get("access-control-allow-origin")).toBe("https://app.example");
		await sse.body?.cancel();
	});

	it("logs carry request ids and never the API key", async () => {
		let logs = "";
		const logStream = new Writable({
			write(chunk, _enc, cb) {
				logs += chunk.toString();
				cb();
			},
		});
		const key = "secret-key-0123456789";
		server = await startServer({
			logStream,
			config: { logLevel: "trace", apiKeys: [key], providerKeys: { openai: "sk-provider-secret" } },
		});
		const res = await server.request("GET", "/v1/sessions", { key });
		expect(res.status).toBe(200);
		const requestId = res.headers.get("x-request-id");
		expect(requestId).toMatch(/^[0-9a-f-]{36}$/);
		await server.request("GET", "/v1/sessions", { key: "wrong-key-0123456789" });
		expect(logs).toContain(requestId);
		expect(logs).not.toContain(key);
		expect(logs).not.toContain("wrong-key-0123456789");
		expect(logs).not.toContain("sk-provider-secret");
	});
});
