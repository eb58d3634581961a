import { readFileSync } from "node:fs";
import { Validator } from "@seriousme/openapi-schema-validator";
import Fastify from "fastify";
import { describe, expect, it } from "vitest";
import { parse } from "yaml";
import { OPENAPI_FILE, renderOpenApi } from "../../../scripts/gen-openapi.js";
import { buildApp } from "../../../src/server/http/app.js";
import { openApiPlugin } from "../../../src/server/http/openapi.js";

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
		expect(doc.components.securitySchemes.jwtAuth).toMatchObject({
			type: "http",
			scheme: "bearer",
			bearerFormat: "JWT",
		});
		const operationIds = new Set<string>();
		for (const [url, methods] of Object.entries<Record<string, any>>(doc.paths)) {
			for (const operation of Object.values(methods)) {
				expect(operation.tags?.length, url).toBeGreaterThan(0);
				expect(operationIds.has(operation.operationId), `duplicate operationId ${operation.operationId}`).toBe(false);
				operationIds.add(operation.operationId);
				if (url.startsWith("/v1/")) expect(operation.security, url).toEqual([{ bearerAuth: [] }, { jwtAuth: [] }]);
				for (const [code, response] of Object.entries<any>(operation.responses)) {
					const described = response.$ref ? resolveRef(doc, response.$ref) : response;
					expect(described.description, `${url} ${code}`).toBeTruthy();
					expect(described.description, `${url} ${code}`).not.toBe("Default Response");
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

/** The object a local `$ref` (`#/components/...`) points to; fails the test when it points nowhere. */
function resolveRef(doc: any, ref: string): any {
	expect(ref, "only local references").toMatch(/^#\//);
	const target = ref
		.slice(2)
		.split("/")
		.reduce((node, key) => node?.[key.replaceAll("~1", "/").replaceAll("~0", "~")], doc);
	expect(target, `${ref} resolves`).toBeDefined();
	return target;
}

/** Every `$ref` in `node`. */
function refsIn(node: unknown): string[] {
	if (Array.isArray(node)) return node.flatMap(refsIn);
	if (!node || typeof node !== "object") return [];
	return Object.entries(node).flatMap(([key, value]) =>
		key === "$ref" && typeof value === "string" ? [value] : refsIn(value),
	);
}

describe("openapi.yaml names its shared shapes", () => {
	it("writes each shared schema once under components and references it; every reference resolves, every component is used", () => {
		const text = readFileSync(OPENAPI_FILE, "utf8");
		const doc = parse(text);
		const refs = refsIn(doc);
		for (const ref of new Set(refs)) resolveRef(doc, ref);
		const used = new Set(refs);
		for (const kind of ["schemas", "responses"]) {
			for (const name of Object.keys(doc.components[kind])) {
				expect(used.has(`#/components/${kind}/${name}`), `components/${kind}/${name} is never used`).toBe(true);
			}
		}
		for (const name of ["ErrorEnvelope", "ErrorCode", "Session", "AgentMessage", "UserMessageInput", "ImageContent"]) {
			expect(doc.components.schemas[name], name).toBeDefined();
		}
		// The error-code enum is in the document once, and each operation's 4XX and 5XX refer to it.
		expect(text.split("SESSION_NOT_FOUND").length - 1).toBe(1);
		expect(doc.components.schemas.ErrorCode.enum).toContain("SESSION_NOT_FOUND");
		for (const [url, methods] of Object.entries<Record<string, any>>(doc.paths)) {
			if (!url.startsWith("/v1/")) continue;
			for (const [method, operation] of Object.entries<any>(methods)) {
				for (const code of ["4XX", "5XX"]) {
					expect(operation.responses[code], `${method} ${url} ${code}`).toEqual({
						$ref: "#/components/responses/ErrorEnvelope",
					});
				}
			}
		}
		expect(doc.components.responses.ErrorEnvelope.content["application/json"].schema).toEqual({
			$ref: "#/components/schemas/ErrorEnvelope",
		});
	});

	it("refuses two different schemas under one title, naming it", async () => {
		const app = Fastify({ logger: false });
		try {
			await app.register(openApiPlugin);
			const named = (extra: object) => ({
				title: "Thing",
				type: "object",
				properties: { a: { type: "string" }, ...extra },
			});
			app.post("/one", { schema: { body: named({}) } }, async () => ({}));
			app.post("/two", { schema: { body: named({ b: { type: "number" } }) } }, async () => ({}));
			await app.ready();
			await expect(app.openApiDocument()).rejects.toThrow(/two different schemas are titled "Thing"/);
		} finally {
			await app.close();
		}
	});

	it("names a schema once when one use only differs by its description, keeping that description beside the reference", async () => {
		const app = Fastify({ logger: false });
		try {
			await app.register(openApiPlugin);
			const thing = { title: "Thing", type: "object", properties: { a: { type: "string" } } };
			const mode = { title: "Mode", type: "string", enum: ["fast", "slow"], description: "How to go." };
			app.post(
				"/things",
				{
					schema: {
						// swagger moves a parameter schema's description to the parameter: the named schema keeps it.
						querystring: { type: "object", properties: { mode } },
						body: {
							type: "object",
							properties: { first: thing, second: { ...thing, description: "The other one." }, mode },
						},
						response: { 200: { $id: "Answer", type: "object", properties: { ok: { type: "boolean" } } } },
					},
				},
				async () => ({ ok: true }),
			);
			await app.ready();
			const doc: any = await app.openApiDocument();
			expect(doc.components.schemas.Thing).toEqual({
				title: "Thing",
				type: "object",
				properties: { a: { type: "string" } },
			});
			expect(doc.paths["/things"].post.requestBody.content["application/json"].schema.properties).toEqual({
				first: { $ref: "#/components/schemas/Thing" },
				second: { $ref: "#/components/schemas/Thing", description: "The other one." },
				mode: { $ref: "#/components/schemas/Mode" },
			});
			expect(doc.paths["/things"].post.parameters).toEqual([
				{
					in: "query",
					name: "mode",
					required: false,
					description: "How to go.",
					schema: { $ref: "#/components/schemas/Mode" },
				},
			]);
			expect(doc.components.schemas.Mode).toEqual(mode);
			// An `$id` names a schema as a title does.
			expect(doc.paths["/things"].post.responses["200"].content["application/json"].schema).toEqual({
				$ref: "#/components/schemas/Answer",
			});
			expect(doc.components.schemas.Answer).toMatchObject({ title: "Answer", type: "object" });
		} finally {
			await app.close();
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
