import { afterEach, describe, expect, it } from "vitest";
import { startServer, type TestServer } from "../../helpers/server.js";

let server: TestServer;
afterEach(async () => {
	await server?.close();
});

/** Text that JavaScript reads as a number but no integer parameter can take. */
const OUT_OF_RANGE = ["Infinity", "-Infinity", "1e20", "9007199254740993", "NaN", "1.5", "-1e400", "1e400"];

describe("integer query parameters", () => {
	it("a value beyond a safe integer (or not finite) is 400 VALIDATION_FAILED naming the parameter, on every route", async () => {
		server = await startServer();
		const id = (await server.request("POST", "/v1/sessions", { body: {} })).body.id;
		const params: [string, string][] = [
			[`/v1/sessions/${id}/messages`, "offset"],
			[`/v1/sessions/${id}/messages`, "limit"],
			["/v1/sessions", "limit"],
		];
		for (const [path, name] of params) {
			for (const value of OUT_OF_RANGE) {
				const res = await server.request("GET", `${path}?${name}=${encodeURIComponent(value)}`);
				expect(res.status, `${path}?${name}=${value}`).toBe(400);
				expect(res.body.error.code).toBe("VALIDATION_FAILED");
				expect(res.body.error.message).toContain(`query.${name}`);
			}
		}
	});

	it("the largest safe integer offset is a valid (empty) page", async () => {
		server = await startServer();
		const id = (await server.request("POST", "/v1/sessions", { body: {} })).body.id;
		const res = await server.request("GET", `/v1/sessions/${id}/messages?offset=${Number.MAX_SAFE_INTEGER}`);
		expect(res.status).toBe(200);
		expect(res.body.messages).toEqual([]);
	});
});
