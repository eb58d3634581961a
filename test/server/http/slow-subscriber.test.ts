import { once } from "node:events";
import { get, type IncomingMessage } from "node:http";
import { afterEach, describe, expect, it, vi } from "vitest";
import { startServer, type TestServer } from "../../helpers/server.js";
import { openSse } from "../../helpers/sse.js";

let server: TestServer;
const controllers: AbortController[] = [];
const responses: IncomingMessage[] = [];
afterEach(async () => {
	for (const c of controllers.splice(0)) c.abort();
	for (const r of responses.splice(0)) r.destroy();
	await server?.close();
});

describe("a slow subscriber", () => {
	it("is dropped with a stream_dropped notice once its backlog passes the limit; runs go on; it can resume", async () => {
		const limit = 64 * 1024;
		server = await startServer({ config: { sseBufferBytes: limit } });
		const id = (await server.request("POST", "/v1/sessions", { body: {} })).body.id;
		const session = server.app.wheelhouse.sessions.get(id, null);

		// A client that subscribes, reads the first bytes, then stops reading.
		const controller = new AbortController();
		controllers.push(controller);
		const res = await fetch(`${server.url}/v1/sessions/${id}/events`, {
			headers: { accept: "text/event-stream" },
			signal: controller.signal,
		});
		const reader = res.body!.getReader();
		const decoder = new TextDecoder();
		let text = decoder.decode((await reader.read()).value, { stream: true });
		expect(text).toContain("session_snapshot");
		expect(session.subscriberCount).toBe(1);

		// Each run puts several copies of a 1 MB prompt on the stream; nobody reads them.
		const big = "x".repeat(1024 * 1024);
		let runs = 0;
		while (session.subscriberCount > 0 && runs < 20) {
			expect((await server.request("POST", `/v1/sessions/${id}/prompt`, { body: { message: big } })).status).toBe(202);
			await session.waitForIdle();
			runs++;
		}
		expect(session.subscriberCount).toBe(0);
		// The runs were not disturbed.
		const state = (await server.request("GET", `/v1/sessions/${id}`)).body;
		expect(state.status).toBe("idle");
		expect(state.messageCount).toBe(runs * 2);

		// Reading again: the frames it was sent, then the notice, then the end of the stream.
		for (;;) {
			const { done, value } = await reader.read();
			if (done) break;
			text += decoder.decode(value, { stream: true });
		}
		const notice = /event: stream_dropped\ndata: (.*)\n/.exec(text);
		expect(notice).not.toBeNull();
		const data = JSON.parse(notice![1]);
		expect(data.reason).toBe("slow_consumer");
		const ids = [...text.matchAll(/^id: (\d+)$/gm)].map((m) => Number(m[1]));
		expect(ids.at(-1)).toBe(data.lastEventId);
		// Far less than what the runs produced was held for it.
		expect(text.length).toBeLessThan(runs * 5 * big.length);
		// Counted in the metrics.
		expect((await server.request("GET", "/metrics")).body).toMatch(/^wheelhouse_sse_subscribers_dropped_total 1$/m);

		// Resuming from the notice's id replays the rest, through the last event.
		const resumed = await openSse(`${server.url}/v1/sessions/${id}/events`, {
			headers: { "last-event-id": String(data.lastEventId) },
		});
		await resumed.waitFor((e) => e.id === state.lastEventId, 15_000);
		expect(resumed.events[0].id).toBe(data.lastEventId + 1);
		resumed.close();
	}, 60_000);

	it("is dropped when its socket takes nothing for the stall time, though its backlog is within the limit", async () => {
		server = await startServer({ config: { sseBufferBytes: 64 * 1024 * 1024, sseStallMs: 300 } });
		const id = (await server.request("POST", "/v1/sessions", { body: {} })).body.id;
		const session = server.app.wheelhouse.sessions.get(id, null);
		// A subscriber that never reads; one run fills its socket, then the session is quiet.
		const res = await new Promise<IncomingMessage>((resolve, reject) => {
			const req = get(`${server.url}/v1/sessions/${id}/events`, {
				agent: false,
				headers: { accept: "text/event-stream" },
			});
			req.on("response", resolve).on("error", reject);
		});
		responses.push(res);
		expect(
			(await server.request("POST", `/v1/sessions/${id}/prompt`, { body: { message: "x".repeat(1024 * 1024) } }))
				.status,
		).toBe(202);
		await session.waitForIdle();
		const { lastEventId } = (await server.request("GET", `/v1/sessions/${id}`)).body;
		await vi.waitFor(() => expect(session.subscriberCount).toBe(0), { timeout: 5000, interval: 20 });

		// What it was sent, then the notice with the last id, then the end; it resumes from there.
		res.setEncoding("utf8");
		let text = "";
		res.on("data", (chunk: string) => {
			text += chunk;
		});
		await once(res, "end");
		const notice = /event: stream_dropped\ndata: (.*)\n/.exec(text);
		expect(notice).not.toBeNull();
		const data = JSON.parse(notice![1]);
		const ids = [...text.matchAll(/^id: (\d+)$/gm)].map((m) => Number(m[1]));
		expect(data.lastEventId).toBe(ids.at(-1));
		expect(data.lastEventId).toBeLessThanOrEqual(lastEventId);
		const resumed = await openSse(`${server.url}/v1/sessions/${id}/events`, {
			headers: { "last-event-id": String(data.lastEventId) },
		});
		expect((await server.request("POST", `/v1/sessions/${id}/prompt`, { body: { message: "again" } })).status).toBe(
			202,
		);
		await resumed.waitForType("agent_end");
		expect(resumed.ids()[0]).toBe(data.lastEventId + 1);
		resumed.close();
	}, 20_000);
});
