/**
 * What clients see while a closing server drains, in order: /readyz answers 503
 * `shutting_down` while new connections are still accepted (the readiness delay), new work gets the
 * `SHUTTING_DOWN` envelope with `Connection: close`, then the listener stops (new connections are
 * refused) while the running run goes on streaming until the grace period ends it.
 */
import { afterEach, describe, expect, it } from "vitest";
import { startServer, type TestServer } from "../../helpers/server.js";
import { promptSse } from "../../helpers/sse.js";

let server: TestServer | undefined;
afterEach(async () => {
	await server?.close();
	server = undefined;
});

/** True once a new connection to `url` is refused. */
async function refused(url: string): Promise<boolean> {
	try {
		await fetch(`${url}/healthz`);
		return false;
	} catch (err) {
		return (err as { cause?: { code?: string } }).cause?.code === "ECONNREFUSED";
	}
}

describe("draining on close", () => {
	it("/readyz turns shutting_down first, new work gets the SHUTTING_DOWN envelope, then the listener stops", async () => {
		server = await startServer({ config: { fauxDelayMs: 20, shutdownDelayMs: 3_000, shutdownGraceMs: 1_500 } });
		const id = (await server.request("POST", "/v1/sessions", { body: {} })).body.id;
		expect(await server.request("GET", "/readyz")).toMatchObject({ status: 200, body: { status: "ready" } });
		const words = Array.from({ length: 500 }, (_, i) => `w${i}`).join(" ");
		const run = await promptSse(server.url, id, { message: words });
		await run.waitForType("message_update");

		const closed = server.close();
		let ready = await server.request("GET", "/readyz");
		while (ready.status === 200) ready = await server.request("GET", "/readyz");
		expect([ready.status, ready.body]).toEqual([503, { status: "shutting_down" }]);

		for (const [method, path, body] of [
			["POST", "/v1/sessions", {}],
			["POST", `/v1/sessions/${id}/prompt`, { message: "hi", ifBusy: "interrupt" }],
		] as const) {
			const res = await server.request(method, path, { body });
			expect([res.status, res.body.error?.code], `${method} ${path}`).toEqual([503, "SHUTTING_DOWN"]);
			expect(res.headers.get("connection")).toBe("close");
		}
		// Reading state is still served.
		expect((await server.request("GET", `/v1/sessions/${id}`)).body.status).toBe("running");

		// After the delay the listener stops, while the run still streams.
		while (!(await refused(server.url))) {}
		expect(run.ended).toBe(false);
		const end = await run.waitForType("agent_end", 10_000);
		expect(end.data.messages.at(-1).stopReason).toBe("aborted");
		await closed;
	}, 30_000);
});
