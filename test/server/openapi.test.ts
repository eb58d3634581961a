import { readFileSync } from "node:fs";
import { Validator } from "@seriousme/openapi-schema-validator";
import { describe, expect, it } from "vitest";
import { parse } from "yaml";
import { OPENAPI_FILE, renderOpenApi } from "../../scripts/gen-openapi.js";
import { buildApp } from "../../src/server/app.js";

describe("openapi.yaml", () => {
	it("is what the routes generate (run `npm run openapi` after changing a route)", async () => {
		const committed = readFileSync(OPENAPI_FILE, "utf8");
		const generated = await renderOpenApi();
		if (committed !== generated) {
			expect.fail("openapi.yaml is stale: run `npm run openapi` and commit openapi.yaml");
		}
	});

	it("is a valid OpenAPI 3.1 document", async () => {
		const validator = new Validator();
		const result = await validator.validate(parse(readFileSync(OPENAPI_FILE, "utf8")));
		expect(result.errors, JSON.stringify(result.errors, null, 2)).toBeUndefined();
		expect(result.valid).toBe(true);
		expect(validator.version).toBe("3.1");
	});

	it("documents every route with a tag, an operationId, response descriptions and (for /v1) bearer security", () => {
		const text = readFileSync(OPENAPI_FILE, "utf8");
		// No YAML anchors or aliases: not every OpenAPI tool resolves them.
		expect(text).not.toMatch(/(^|\s)[&*]a\d+\b/m);
		const doc = parse(text);
		expect(doc.components.securitySchemes.bearerAuth).toMatchObject({ type: "http", scheme: "bearer" });
		const operationIds = new Set<string>();
		for (const [url, methods] of Object.entries<Record<string, any>>(doc.paths)) {
			for (const operation of Object.values(methods)) {
				expect(operation.tags?.length, url).toBeGreaterThan(0);
				expect(operationIds.has(operation.operationId), `duplicate operationId ${operation.operationId}`).toBe(false);
				operationIds.add(operation.operationId);
				if (url.startsWith("/v1/")) expect(operation.security, url).toEqual([{ bearerAuth: [] }]);
				for (const [code, response] of Object.entries<any>(operation.responses)) {
					expect(response.description, `${url} ${code}`).not.toBe("Default Response");
				}
			}
		}
		for (const route of [
			"/v1/sessions",
			"/v1/sessions/{id}/prompt",
			"/v1/sessions/{id}/events",
			"/healthz",
			"/readyz",
		]) {
			expect(Object.keys(doc.paths)).toContain(route);
		}
	});
});

describe("GET /openapi.json", () => {
	it("serves the same document as JSON", async () => {
		const app = await buildApp({ env: {}, config: { logLevel: "silent" } });
		try {
			await app.listen({ port: 0, host: "127.0.0.1" });
			const { port } = app.server.address() as { port: number };
			const res = await fetch(`http://127.0.0.1:${port}/openapi.json`);
			expect(res.status).toBe(200);
			expect(res.headers.get("content-type")).toMatch(/application\/json/);
			const served = await res.json();
			expect(served).toEqual(parse(readFileSync(OPENAPI_FILE, "utf8")));
		} finally {
			await app.close();
		}
	});
});
