import { readFileSync } from "node:fs";
import { resolve } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { ERROR_CODES, ERRORS, type ErrorCode, renderErrorTable } from "../../../src/server/http/errors.js";
import { ErrorEnvelope } from "../../../src/server/http/schemas.js";
import { startServer, type TestServer } from "../../helpers/server.js";

let server: TestServer;
afterEach(async () => {
	await server?.close();
});

const repoRoot = resolve(import.meta.dirname, "../../..");

describe("error table", () => {
	it("docs/errors.md is generated from the table (regenerate with renderErrorTable())", () => {
		expect(readFileSync(resolve(repoRoot, "docs/errors.md"), "utf8")).toBe(renderErrorTable());
	});

	it("the envelope schema lists exactly the table's codes", () => {
		const codeSchema = ErrorEnvelope.properties.error.properties.code as { anyOf: { const: string }[] };
		expect(codeSchema.anyOf.map((s) => s.const)).toEqual(ERROR_CODES);
	});

	it("every code has a 4xx/5xx status and a description", () => {
		for (const code of ERROR_CODES) {
			const { status, description } = ERRORS[code as ErrorCode];
			expect(status >= 400 && status < 600, code).toBe(true);
			expect(description.length, code).toBeGreaterThan(10);
		}
	});
});

describe("error responses", () => {
	it("bad bodies name the field and the fix (400 VALIDATION_FAILED)", async () => {
		server = await startServer();
		const s = (await server.request("POST", "/v1/sessions", { body: {} })).body;
		const wrongType = await server.request("POST", `/v1/sessions/${s.id}/prompt`, { body: { message: 42 } });
		expect(wrongType.status).toBe(400);
		expect(wrongType.body.error.code).toBe("VALIDATION_FAILED");
		expect(wrongType.body.error.message).toContain("body.message");

		const missing = await server.request("POST", `/v1/sessions/${s.id}/prompt`, { body: {} });
		expect(missing.status).toBe(400);
		expect(missing.body.error.message).toContain("body.message is required");

		const badEnum = await server.request("POST", `/v1/sessions/${s.id}/prompt`, {
			body: { message: "hi", ifBusy: "later" },
		});
		expect(badEnum.status).toBe(400);
		expect(badEnum.body.error.message).toContain("body.ifBusy");

		const unknownField = await server.request("POST", "/v1/sessions", { body: { modle: "x/y" } });
		expect(unknownField.status).toBe(400);
		expect(unknownField.body.error.message).toContain('unknown field "modle"');

		const badQuery = await server.request("GET", "/v1/sessions?limit=0");
		expect(badQuery.status).toBe(400);
		expect(badQuery.body.error.message).toContain("query.limit");
	});

	it("malformed JSON → 400 INVALID_JSON; wrong content type → 415", async () => {
		server = await startServer();
		const bad = await server.request("POST", "/v1/sessions", { body: "{not json" });
		expect(bad.status).toBe(400);
		expect(bad.body.error.code).toBe("INVALID_JSON");
		const text = await server.request("POST", "/v1/sessions", {
			body: "hello",
			headers: { "content-type": "application/xml" },
		});
		expect(text.status).toBe(415);
		expect(text.body.error.code).toBe("UNSUPPORTED_MEDIA_TYPE");
	});

	it("oversized payloads → 413 PAYLOAD_TOO_LARGE", async () => {
		server = await startServer({ config: { bodyLimit: 2048 } });
		const s = (await server.request("POST", "/v1/sessions", { body: {} })).body;
		const res = await server.request("POST", `/v1/sessions/${s.id}/prompt`, { body: { message: "x".repeat(5000) } });
		expect(res.status).toBe(413);
		expect(res.body.error.code).toBe("PAYLOAD_TOO_LARGE");
	});

	it("unknown ids, routes, models and tools → 404 / 400 with their codes", async () => {
		server = await startServer();
		for (const [method, path] of [
			["GET", "/v1/sessions/nope"],
			["PATCH", "/v1/sessions/nope"],
			["DELETE", "/v1/sessions/nope"],
			["GET", "/v1/sessions/nope/messages"],
			["POST", "/v1/sessions/nope/abort"],
			["GET", "/v1/sessions/nope/events"],
		] as const) {
			const res = await server.request(method, path, method === "PATCH" ? { body: {} } : {});
			expect(res.status, `${method} ${path}`).toBe(404);
			expect(res.body.error.code).toBe("SESSION_NOT_FOUND");
		}
		const route = await server.request("GET", "/v1/nothing");
		expect(route.status).toBe(404);
		expect(route.body.error.code).toBe("NOT_FOUND");
		const model = await server.request("POST", "/v1/sessions", { body: { model: "acme/none" } });
		expect(model.status).toBe(400);
		expect(model.body.error.code).toBe("UNKNOWN_MODEL");
		const tool = await server.request("POST", "/v1/sessions", { body: { tools: ["rm_rf"] } });
		expect(tool.status).toBe(400);
		expect(tool.body.error.code).toBe("UNKNOWN_TOOL");
		expect(tool.body.error.details.unknown).toEqual(["rm_rf"]);
	});

	it("unexpected failures are 500 INTERNAL_ERROR with a masked message", async () => {
		server = await startServer({
			setup(app) {
				app.get("/v1/boom", async () => {
					throw new Error("database password is hunter2");
				});
			},
		});
		const res = await server.request("GET", "/v1/boom");
		expect(res.status).toBe(500);
		expect(res.body.error.code).toBe("INTERNAL_ERROR");
		expect(JSON.stringify(res.body)).not.toContain("hunter2");
	});
});
