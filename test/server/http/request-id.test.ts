/**
 * `x-request-id`: a usable one from the caller is kept, anything else is replaced by a new id;
 * the response returns it, and every log line of the request carries it.
 */
import { Writable } from "node:stream";
import { afterEach, describe, expect, it } from "vitest";
import { startServer, type TestServer } from "../../helpers/server.js";

let server: TestServer;
afterEach(async () => {
	await server?.close();
});

/** JSON log lines written by the server. */
function logSink(): { stream: Writable; lines: () => Record<string, unknown>[] } {
	let text = "";
	const stream = new Writable({
		write(chunk, _encoding, done) {
			text += chunk.toString();
			done();
		},
	});
	return {
		stream,
		lines: () =>
			text
				.split("\n")
				.filter(Boolean)
				.map((line) => JSON.parse(line)),
	};
}

async function startLogging(): Promise<ReturnType<typeof logSink>> {
	const log = logSink();
	server = await startServer({
		logStream: log.stream,
		config: { logLevel: "info", logFormat: "json" },
		setup(app) {
			app.get("/log-probe", async function logProbe(request) {
				request.log.info("inside the route");
				return { ok: true };
			});
		},
	});
	return log;
}

describe("x-request-id", () => {
	it("keeps the caller's id: in the response and in every log line of the request, the route's own included", async () => {
		const log = await startLogging();
		const id = "trace-7f3a:client/42";
		const res = await server.request("GET", "/log-probe", { headers: { "x-request-id": id } });
		expect(res.headers.get("x-request-id")).toBe(id);
		const lines = log.lines().filter((line) => line.reqId === id);
		expect(lines.map((line) => line.msg)).toEqual(["incoming request", "inside the route", "request completed"]);
		// No line of that request without it.
		expect(log.lines().filter((line) => line.msg === "inside the route")).toHaveLength(1);
	});

	it("generates one when absent, and on error responses too", async () => {
		await startLogging();
		const res = await server.request("GET", "/v1/sessions/missing");
		expect(res.status).toBe(404);
		expect(res.headers.get("x-request-id")).toMatch(/^[0-9a-f-]{36}$/);
	});

	it.each([
		["too long", "a".repeat(129)],
		["with a space", "two words"],
		["with a control character", "id\u0001x"],
	])("replaces an unusable id (%s)", async (_what, given) => {
		const log = await startLogging();
		const res = await fetch(`${server.url}/log-probe`, { headers: { "x-request-id": given } }).catch(() => undefined);
		if (!res) return; // the client itself refused to send it
		const returned = res.headers.get("x-request-id");
		expect(returned).not.toBe(given);
		expect(returned).toMatch(/^[0-9a-f-]{36}$/);
		expect(log.lines().find((line) => line.msg === "inside the route")?.reqId).toBe(returned);
	});

	it("keeps a 128-character id", async () => {
		await startLogging();
		const id = "x".repeat(128);
		const res = await server.request("GET", "/log-probe", { headers: { "x-request-id": id } });
		expect(res.headers.get("x-request-id")).toBe(id);
	});
});
