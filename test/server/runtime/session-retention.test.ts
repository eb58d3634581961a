/**
 * Retention: sessions idle longer than `sessionDeleteAfterMs` (WHEELHOUSE_SESSION_DELETE_AFTER_MS)
 * are deleted with everything stored for them; access, runs and queued messages count as
 * activity; a session with a subscriber or a run is never deleted.
 */
import { afterEach, describe, expect, it } from "vitest";
import { startServer, type TestServer } from "../../helpers/server.js";
import { openSse, promptSse } from "../../helpers/sse.js";

let server: TestServer;
afterEach(async () => {
	await server?.close();
});

/** Resolves once the clock has passed `t` (a wait for a condition, not a timed assertion). */
async function clockPast(t: number): Promise<void> {
	while (Date.now() <= t) await new Promise((resolve) => setTimeout(resolve, 5));
}

describe("session retention", () => {
	it("is off by default", async () => {
		server = await startServer();
		expect(server.app.wheelhouse.config.sessionDeleteAfterMs).toBe(0);
		const id = (await server.request("POST", "/v1/sessions", { body: {} })).body.id;
		expect(await server.app.wheelhouse.sessions.deleteExpired()).toBe(0);
		expect((await server.request("GET", `/v1/sessions/${id}`)).status).toBe(200);
	});

	it("deletes idle sessions (in memory or evicted) with their stored data, keeps watched and recently used ones", async () => {
		server = await startServer({ config: { sessionDeleteAfterMs: 60_000 } });
		const sessions = server.app.wheelhouse.sessions;
		const idle = (await server.request("POST", "/v1/sessions", { body: {} })).body.id;
		await (await promptSse(server.url, idle, { message: "hello" })).waitForEnd();
		const evicted = (await server.request("POST", "/v1/sessions", { body: {} })).body.id;
		const watched = (await server.request("POST", "/v1/sessions", { body: {} })).body.id;
		const used = (await server.request("POST", "/v1/sessions", { body: {} })).body.id;
		const events = await openSse(`${server.url}/v1/sessions/${watched}/events`);
		await events.waitForType("session_snapshot");
		sessions.evictIdle(0); // `evicted` (and `idle`, `used`) leave memory; `watched` has a subscriber
		// The cutoff follows the setup, however long a loaded machine took for it.
		const cutoff = Date.now() + 1;
		await clockPast(cutoff);
		expect((await server.request("GET", `/v1/sessions/${used}`)).status).toBe(200); // access is activity

		// Everything last active before the cutoff, but not `used` (accessed after it).
		const deleted = await sessions.deleteExpired(cutoff);
		expect(deleted).toBe(2);
		for (const id of [idle, evicted]) {
			expect((await server.request("GET", `/v1/sessions/${id}`)).status).toBe(404);
			expect(await sessions.store.getSession(id)).toBeUndefined();
		}
		for (const id of [watched, used]) expect((await server.request("GET", `/v1/sessions/${id}`)).status).toBe(200);
	});
});
