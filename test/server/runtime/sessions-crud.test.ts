import { afterEach, describe, expect, it } from "vitest";
import { startServer, type TestServer } from "../../helpers/server.js";

let server: TestServer;
afterEach(async () => {
	await server?.close();
});

describe("health and sessions CRUD", () => {
	it("answers /healthz and /readyz", async () => {
		server = await startServer();
		expect((await server.request("GET", "/healthz")).body).toEqual({ status: "ok" });
		const ready = await server.request("GET", "/readyz");
		expect(ready.status).toBe(200);
		expect(ready.body.status).toBe("ready");
	});

	it("creates, reads, lists, patches and deletes a session", async () => {
		server = await startServer();
		const created = await server.request("POST", "/v1/sessions", {
			body: { systemPrompt: "be brief", metadata: { user: "u1" } },
		});
		expect(created.status).toBe(201);
		const s = created.body;
		expect(s.id).toMatch(/^ses_/);
		expect(s.model).toBe("faux/echo");
		expect(s.tools).toEqual(["*"]);
		expect(s.activeTools).toEqual(expect.arrayContaining(["get_current_time", "calculate"]));
		expect(s.status).toBe("idle");
		expect(s.metadata).toEqual({ user: "u1" });
		expect(s.queue).toEqual({ steering: [], followUp: [], steeringCount: 0, followUpCount: 0 });

		const got = await server.request("GET", `/v1/sessions/${s.id}`);
		expect(got.status).toBe(200);
		expect(got.body.systemPrompt).toBe("be brief");

		const second = (await server.request("POST", "/v1/sessions", { body: {} })).body;
		const page1 = await server.request("GET", "/v1/sessions?limit=1");
		expect(page1.body.sessions.map((x: any) => x.id)).toEqual([s.id]);
		expect(page1.body.nextCursor).toBeTypeOf("string");
		const page2 = await server.request(
			"GET",
			`/v1/sessions?limit=1&cursor=${encodeURIComponent(page1.body.nextCursor)}`,
		);
		expect(page2.body.sessions.map((x: any) => x.id)).toEqual([second.id]);
		expect(page2.body.nextCursor).toBeUndefined();

		const patched = await server.request("PATCH", `/v1/sessions/${s.id}`, {
			body: { systemPrompt: "be verbose", steeringMode: "all", tools: ["calculate"] },
		});
		expect(patched.status).toBe(200);
		expect(patched.body.systemPrompt).toBe("be verbose");
		expect(patched.body.steeringMode).toBe("all");
		expect(patched.body.tools).toEqual(["calculate"]);
		expect(patched.body.activeTools).toEqual(["calculate"]);

		const bad = await server.request("PATCH", `/v1/sessions/${s.id}`, { body: { tools: ["calc*late"] } });
		expect(bad.status).toBe(400);
		expect(bad.body.error.code).toBe("VALIDATION_FAILED");
		expect(bad.body.error.message).toContain('"*" may only end a pattern');
		const pattern = await server.request("PATCH", `/v1/sessions/${s.id}`, {
			body: { tools: ["get_*", "nothing_yet_*"] },
		});
		expect(pattern.status).toBe(200);
		expect(pattern.body.activeTools).toEqual(["get_current_time"]);

		const deleted = await server.request("DELETE", `/v1/sessions/${s.id}`);
		expect(deleted.status).toBe(200);
		const gone = await server.request("GET", `/v1/sessions/${s.id}`);
		expect(gone.status).toBe(404);
		expect(gone.body.error.code).toBe("SESSION_NOT_FOUND");
	});

	it("starts from a given transcript and pages through messages", async () => {
		server = await startServer();
		const messages = Array.from({ length: 5 }, (_, i) => ({
			role: "user",
			content: `m${i}`,
			timestamp: i,
		}));
		const s = (await server.request("POST", "/v1/sessions", { body: { messages } })).body;
		expect(s.messageCount).toBe(5);
		const page = await server.request("GET", `/v1/sessions/${s.id}/messages?offset=1&limit=2`);
		expect(page.status).toBe(200);
		expect(page.body.messages.map((m: any) => m.content)).toEqual(["m1", "m2"]);
		expect(page.body.total).toBe(5);
		expect(page.body.nextOffset).toBe(3);
	});

	it("lists models with faux/echo marked as a stand-in, and tools with their origin", async () => {
		server = await startServer();
		const models = await server.request("GET", "/v1/models");
		expect(models.body.defaultModel).toBe("faux/echo");
		const echo = models.body.models.find((m: any) => m.id === "faux/echo");
		expect(echo.standIn).toBe(true);
		const tools = await server.request("GET", "/v1/tools");
		expect(tools.body.tools.map((t: any) => [t.name, t.origin])).toEqual(
			expect.arrayContaining([
				["get_current_time", "builtin"],
				["calculate", "builtin"],
			]),
		);
	});
});
