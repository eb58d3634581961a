import { afterEach, describe, expect, it } from "vitest";
import { startServer, type TestServer } from "../../helpers/server.js";
import { openSse, promptSse } from "../../helpers/sse.js";

let server: TestServer;
afterEach(async () => {
	await server?.close();
});

describe("POST /continue (the reference's continue rules)", () => {
	it("422 NOTHING_TO_CONTINUE on an empty transcript", async () => {
		server = await startServer();
		const id = (await server.request("POST", "/v1/sessions", { body: {} })).body.id;
		const res = await server.request("POST", `/v1/sessions/${id}/continue`);
		expect(res.status).toBe(422);
		expect(res.body.error.code).toBe("NOTHING_TO_CONTINUE");
	});

	it("continues from a transcript ending in a user message", async () => {
		server = await startServer();
		const id = (
			await server.request("POST", "/v1/sessions", {
				body: { messages: [{ role: "user", content: "resume me", timestamp: 1 }] },
			})
		).body.id;
		const stream = await openSse(`${server.url}/v1/sessions/${id}/continue`, {
			method: "POST",
		});
		await stream.waitForEnd();
		expect(stream.events.at(-1)!.data.messages.at(-1).content[0].text).toBe("resume me");
	});

	it("after an assistant message: 422 unless something is queued, then it runs the queued message", async () => {
		server = await startServer();
		const id = (await server.request("POST", "/v1/sessions", { body: {} })).body.id;
		await (await promptSse(server.url, id, { message: "hi" })).waitForEnd();
		const refused = await server.request("POST", `/v1/sessions/${id}/continue`);
		expect(refused.status).toBe(422);
		expect(refused.body.error.code).toBe("CANNOT_CONTINUE_FROM_ASSISTANT");
		await server.request("POST", `/v1/sessions/${id}/follow-up`, { body: { message: "queued one" } });
		const res = await server.request("POST", `/v1/sessions/${id}/continue`);
		expect(res.status).toBe(202);
		const events = await openSse(`${server.url}/v1/sessions/${id}/events?after=${res.body.firstEventId - 1}`);
		const end = await events.waitForType("agent_end");
		expect(end.data.messages.at(-1).content[0].text).toBe("queued one");
		events.close();
	});
});
