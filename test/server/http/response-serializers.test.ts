/**
 * The app's response serializers (lazy-serializers.ts, compiling the schemas as
 * serialization-schema.ts rewrites them) write the same bytes as Fastify's own fast-json-stringify
 * serializer: for every response schema of every route the app registers, on documents drawn
 * from the schema (every branch of every union, nulls, each literal, absent optional fields),
 * and on a real server, where the session routes answer with their null fields present.
 */
import diagnostics from "node:diagnostics_channel";
import SerializerSelector from "@fastify/fast-json-stringify-compiler";
import type { RouteOptions } from "fastify";
import { afterEach, describe, expect, it } from "vitest";
import { buildApp } from "../../../src/server/http/app.js";
import { lazySerializerFactory } from "../../../src/server/http/lazy-serializers.js";
import { forSerialization } from "../../../src/server/http/serialization-schema.js";
import { startServer, type TestServer } from "../../helpers/server.js";

type Schema = Record<string, any>;

/** Every route the app registers (HEAD twins included), caught by an `onRoute` hook on the app's instance. */
async function registeredRoutes(): Promise<RouteOptions[]> {
	const routes: RouteOptions[] = [];
	let instances = 0;
	// Fastify announces each new instance on this channel, before any plugin registers a route.
	const onInstance = (message: unknown) => {
		if (instances++ > 0) return; // the app's own instance only
		const { fastify } = message as { fastify: { addHook(name: "onRoute", hook: (route: RouteOptions) => void): void } };
		fastify.addHook("onRoute", (route) => {
			routes.push(route);
		});
	};
	diagnostics.subscribe("fastify.initialization", onInstance);
	try {
		const app = await buildApp({ env: {}, config: { logLevel: "silent" } });
		await app.close();
	} finally {
		diagnostics.unsubscribe("fastify.initialization", onInstance);
	}
	return routes;
}

/** Each serializer Fastify would compile for a route: one per status code, one per content type. */
function responseSchemas(route: RouteOptions): { status: string; schema: Schema }[] {
	const response = (route.schema as { response?: Record<string, Schema> } | undefined)?.response ?? {};
	return Object.entries(response).flatMap(([status, schema]) =>
		schema.content
			? Object.entries<Schema>(schema.content).map(([type, media]) => ({
					status: `${status} ${type}`,
					schema: media.schema,
				}))
			: [{ status, schema }],
	);
}

function responseSchemaOf(routes: RouteOptions[], method: string, url: string, status: string): Schema {
	const route = routes.find((candidate) => candidate.method === method && candidate.url === url);
	const schema = responseSchemas(route ?? ({} as RouteOptions)).find((response) => response.status === status)?.schema;
	if (!schema) throw new Error(`no ${status} response schema on ${method} ${url}`);
	return schema;
}

const STRINGS = ["plain", 'quote " backslash \\ newline \n tab \t \u2028 é 日本 🦀', ""];
const NUMBERS = [1.5, -2, 0, 1e21, 12345.678];
const INTEGERS = [0, 7, -3, Number.MAX_SAFE_INTEGER];

/** The most branches (or enum values) any union of `schema` has: how many documents cover them all. */
function widestUnion(schema: unknown): number {
	if (Array.isArray(schema)) return Math.max(0, ...schema.map(widestUnion));
	if (!schema || typeof schema !== "object") return 0;
	const own = Math.max(
		(schema as Schema).anyOf?.length ?? 0,
		(schema as Schema).oneOf?.length ?? 0,
		(schema as Schema).enum?.length ?? 0,
		Array.isArray((schema as Schema).type) ? (schema as Schema).type.length : 0,
	);
	return Math.max(own, ...Object.values(schema).map(widestUnion));
}

/**
 * Document number `k` of `schema`: each union takes its branch `k` (modulo its size), so that
 * documents 0..n-1 go through every branch; optional properties are left out of every third.
 */
function sample(schema: Schema | boolean, k: number): unknown {
	if (schema === true || schema === undefined) return { any: [1, "x", null] };
	if (schema === false) throw new Error("no document matches `false`");
	if (schema.$ref) throw new Error(`a $ref (${schema.$ref}): teach sample() to resolve it`);
	const union = schema.anyOf ?? schema.oneOf;
	if (union) return sample(union[k % union.length], k);
	if (schema.allOf) return Object.assign({}, ...schema.allOf.map((part: Schema) => sample(part, k)));
	if (schema.const !== undefined) return schema.const;
	if (schema.enum) return schema.enum[k % schema.enum.length];
	const type = Array.isArray(schema.type) ? schema.type[k % schema.type.length] : schema.type;
	switch (type) {
		case "null":
			return null;
		case "boolean":
			return k % 2 === 0;
		case "integer":
			return INTEGERS[k % INTEGERS.length];
		case "number":
			return NUMBERS[k % NUMBERS.length];
		case "string":
			if (schema.format === "date-time") return new Date(1_700_000_000_000 + k).toISOString();
			if (schema.format === "uri") return `https://example.test/${k}`;
			return STRINGS[k % STRINGS.length];
		case "array":
			return schema.items ? [sample(schema.items, k), sample(schema.items, k + 1)] : [k, "x"];
		case "object":
		case undefined: {
			const out: Record<string, unknown> = {};
			const required = new Set<string>(schema.required ?? []);
			for (const [key, property] of Object.entries<Schema>(schema.properties ?? {})) {
				if (required.has(key) || k % 3 !== 2) out[key] = sample(property, k);
			}
			if (schema.additionalProperties && typeof schema.additionalProperties === "object") {
				out[`extra-${k}`] = sample(schema.additionalProperties, k + 1);
			} else if (schema.additionalProperties === true) {
				out.extra = { nested: [k, null, "x"] };
			}
			if (type === undefined && !schema.properties) return { any: k };
			return out;
		}
		default:
			throw new Error(`no sample for type ${type}`);
	}
}

/** How many `anyOf`s `schema` has, at any depth. */
function unionCount(schema: unknown): number {
	if (Array.isArray(schema)) return schema.reduce((sum: number, item) => sum + unionCount(item), 0);
	if (!schema || typeof schema !== "object") return 0;
	const own = (schema as Schema).anyOf ? 1 : 0;
	return Object.values(schema).reduce((sum: number, child) => sum + unionCount(child), own);
}

/** The schema's string-keyed content, as JSON: what changes if anything writes into it. */
function snapshot(schema: unknown): string {
	return JSON.stringify(schema);
}

describe("response serializers", () => {
	it("write what Fastify's fast-json-stringify serializer writes, for every response schema of every route", async () => {
		const routes = (await registeredRoutes()).filter((route) => route.schema?.response);
		expect(routes.length).toBeGreaterThan(50);
		let documents = 0;
		let rewrittenUnions = 0;
		const checked = new Set<Schema>(); // the error responses are one schema object on every route
		for (const route of routes) {
			for (const { status, schema } of responseSchemas(route)) {
				if (checked.has(schema)) continue;
				checked.add(schema);
				const where = `${route.method} ${route.url} ${status}`;
				if (unionCount(forSerialization(schema)) < unionCount(schema)) rewrittenUnions++;
				const definition = { method: String(route.method), url: route.url, httpStatus: status, schema };
				const before = snapshot(schema);
				const ours = lazySerializerFactory({}, {})(definition);
				const docs = Array.from({ length: Math.max(6, widestUnion(schema) + 3) }, (_, k) => sample(schema, k));
				const written = docs.map((doc) => ours(doc));
				// Compiling ours leaves the route's schema (which the OpenAPI document is made from) as it was.
				expect(snapshot(schema), where).toBe(before);
				const fastify = SerializerSelector()({}, {})(definition);
				docs.forEach((doc, k) => {
					expect(written[k], `${where}, document ${k}`).toBe(fastify(doc));
				});
				documents += docs.length;
			}
		}
		// The documents did go through the rewritten unions (a sanity check of the test itself).
		expect(checked.size).toBeGreaterThan(30);
		expect(rewrittenUnions).toBeGreaterThanOrEqual(10);
		expect(documents).toBeGreaterThan(300);
	});

	it("write a session view's unions by type: the same bytes for each literal and null, no 500 for an unknown status", async () => {
		const schema = responseSchemaOf(await registeredRoutes(), "POST", "/v1/sessions", "201");
		expect(schema.$id).toBe("Session");
		const definition = { method: "POST", url: "/v1/sessions", httpStatus: "201", schema };
		const ours = lazySerializerFactory({}, {})(definition);
		const fastify = SerializerSelector()({}, {})(definition);
		const view = sample(schema, 0) as Record<string, unknown>;
		for (const status of ["idle", "running", "interrupted"]) {
			for (const runId of ["run_1", null]) {
				const doc = { ...view, status, runId, errorMessage: null, interruptedAt: null, tenant: null };
				const json = ours(doc);
				expect(json).toBe(fastify(doc));
				expect(JSON.parse(json)).toMatchObject({
					status,
					runId,
					errorMessage: null,
					interruptedAt: null,
					tenant: null,
				});
			}
		}
		// A status outside the union: fast-json-stringify's union threw (the response became a 500);
		// written by type, the value goes out as it is.
		const unknown = { ...view, status: "paused" };
		expect(() => fastify(unknown)).toThrow(/does not match schema definition/);
		expect(JSON.parse(ours(unknown)).status).toBe("paused");
		// A value of a type no branch allows still throws, as before.
		const wrongType = { ...view, runId: 42 };
		expect(() => fastify(wrongType)).toThrow(/does not match schema definition/);
		expect(() => ours(wrongType)).toThrow(/does not match schema definition/);
	});

	it("compile a schema with a $ref into a union as declared (the rewrite would leave the $ref pointing at nothing)", () => {
		const schema = {
			type: "object",
			properties: {
				a: { anyOf: [{ type: "string" }, { type: "null" }] },
				b: { $ref: "#/properties/a/anyOf/0" },
			},
		};
		const definition = { method: "GET", url: "/", httpStatus: "200", schema };
		const doc = { a: null, b: "x" };
		expect(lazySerializerFactory({}, {})(definition)(doc)).toBe('{"a":null,"b":"x"}');
		const shared = { Shared: { $id: "Shared", anyOf: [{ type: "integer" }, { type: "null" }] } };
		const viaShared = { type: "object", properties: { n: { $ref: "Shared#/anyOf/0" }, m: { $ref: "Shared" } } };
		const sharedDefinition = { method: "GET", url: "/", httpStatus: "200", schema: viaShared };
		expect(lazySerializerFactory(shared, {})(sharedDefinition)({ n: 3, m: null })).toBe('{"n":3,"m":null}');
	});

	it("rewrite the unions of shared schemas too (Fastify's `addSchema`), which a route finds by $ref", () => {
		const shared = {
			Status: {
				$id: "Status",
				anyOf: [
					{ const: "idle", type: "string" },
					{ const: "running", type: "string" },
				],
			},
			Reason: {
				$id: "Reason",
				type: "object",
				properties: { text: { anyOf: [{ type: "string" }, { type: "null" }] } },
			},
		};
		const schema = { type: "object", properties: { status: { $ref: "Status" }, reason: { $ref: "Reason" } } };
		const definition = { method: "GET", url: "/", httpStatus: "200", schema };
		const ours = lazySerializerFactory(shared, {})(definition);
		const fastify = SerializerSelector()(shared, {})(definition);
		for (const doc of [
			{ status: "idle", reason: { text: null } },
			{ status: "running", reason: { text: 'a "b"' } },
		]) {
			expect(ours(doc)).toBe(fastify(doc));
		}
		// Written by type: the shared union was rewritten (Fastify's serializer refuses the value).
		expect(ours({ status: "paused", reason: { text: null } })).toBe('{"status":"paused","reason":{"text":null}}');
		expect(() => fastify({ status: "paused", reason: { text: null } })).toThrow(/does not match/);
	});
});

describe("session routes on a real server", () => {
	let server: TestServer;
	afterEach(async () => {
		await server?.close();
	});

	it("POST /v1/sessions and GET /v1/sessions/:id answer the same view, with null fields present, in Fastify's bytes", async () => {
		server = await startServer();
		const created = await fetch(`${server.url}/v1/sessions`, {
			method: "POST",
			headers: { "content-type": "application/json" },
			body: JSON.stringify({ metadata: { team: "a" } }),
		});
		expect(created.status).toBe(201);
		const createdText = await created.text();
		const session = JSON.parse(createdText);
		const fetched = await fetch(`${server.url}/v1/sessions/${session.id}`);
		expect(fetched.status).toBe(200);
		const fetchedText = await fetched.text();
		const again = JSON.parse(fetchedText);

		expect(Object.keys(again)).toEqual(Object.keys(session));
		expect(again).toEqual(session);
		for (const body of [session, again]) {
			expect(body).toMatchObject({ status: "idle", runId: null, errorMessage: null, interruptedAt: null });
			expect(Object.hasOwn(body, "tenant")).toBe(true);
			expect(body.tenant).toBeNull();
			expect(body.metadata).toEqual({ team: "a" });
		}

		// The bytes on the wire are what Fastify's own serializer writes for that view.
		const schema = responseSchemaOf(await registeredRoutes(), "GET", "/v1/sessions/:id", "200");
		const fastify = SerializerSelector()({}, {})({ method: "GET", url: "/v1/sessions/:id", httpStatus: "200", schema });
		expect(fetchedText).toBe(fastify(again));
		expect(createdText).toBe(fastify(session));
	});
});
