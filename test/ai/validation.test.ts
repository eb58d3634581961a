import { Type } from "@sinclair/typebox";
import { describe, expect, it } from "vitest";
import type { Tool, ToolCall } from "../../src/ai/types.js";
import { validateToolArguments } from "../../src/ai/validation.js";

function check(parameters: unknown, args: Record<string, any>, name = "t") {
	const tool = { name, description: "", parameters } as Tool<any>;
	const toolCall: ToolCall = { type: "toolCall", id: "1", name, arguments: args };
	return validateToolArguments(tool, toolCall);
}

function failure(parameters: unknown, args: Record<string, any>): string {
	try {
		check(parameters, args);
	} catch (error) {
		return (error as Error).message;
	}
	throw new Error("expected validation to fail");
}

const typebox = Type.Object({
	count: Type.Number(),
	limit: Type.Optional(Type.Integer({ minimum: 1 })),
	flag: Type.Boolean(),
	label: Type.String(),
	tags: Type.Optional(Type.Array(Type.String())),
});

const plain = {
	type: "object",
	properties: {
		count: { type: "number" },
		limit: { type: "integer", minimum: 1 },
		flag: { type: "boolean" },
		label: { type: "string", format: "some-unregistered-format" },
		mode: { enum: ["fast", "slow"] },
		nested: {
			type: "object",
			properties: {
				items: { type: "array", items: { type: "object", properties: { id: { type: "integer" } }, required: ["id"] } },
			},
		},
		maybe: { type: ["string", "null"] },
	},
	required: ["count", "flag", "label"],
	additionalProperties: false,
};

describe("validateToolArguments", () => {
	it("returns valid TypeBox arguments as they are", () => {
		const args = { count: 1, flag: true, label: "x" };
		expect(check(typebox, args)).toBe(args);
	});

	it("coerces the primitive mismatches models send, on a clone", () => {
		const args = { count: "5", limit: "3", flag: "true", label: 7, tags: [1, true] };
		expect(check(typebox, args)).toEqual({ count: 5, limit: 3, flag: true, label: "7", tags: ["1", "true"] });
		expect(args).toEqual({ count: "5", limit: "3", flag: "true", label: 7, tags: [1, true] });
		expect(check(typebox, { count: 1, flag: "false", label: false })).toEqual({
			count: 1,
			flag: false,
			label: "false",
		});
	});

	it("validates and coerces plain JSON Schema, nested paths included", () => {
		const args = {
			count: "2.5",
			flag: "false",
			label: 10,
			mode: "fast",
			nested: { items: [{ id: "4" }] },
			maybe: null,
		};
		expect(check(plain, args)).toEqual({
			count: 2.5,
			flag: false,
			label: "10",
			mode: "fast",
			nested: { items: [{ id: 4 }] },
			maybe: null,
		});
	});

	it("names each failing path, what was expected and what arrived", () => {
		const message = failure(typebox, { count: "many", flag: "maybe", limit: 0 });
		expect(message).toContain('Validation failed for tool "t":');
		expect(message).toMatch(/count: Expected number \(got string "many"\)/);
		expect(message).toMatch(/flag: Expected boolean/);
		expect(message).toMatch(/label: Expected required property \(missing\)/);
		expect(message).toMatch(/limit: Expected integer to be greater or equal to 1/);
		expect(message).toContain("Received arguments:");
		expect(message).toContain('"count": "many"');
	});

	it("reports nested and enum failures of plain schemas with dotted paths", () => {
		const message = failure(plain, {
			count: 1,
			flag: true,
			label: "x",
			mode: "medium",
			nested: { items: [{ id: 1 }, {}] },
			extra: 1,
		});
		expect(message).toMatch(/nested\.items\.1\.id: Expected required property/);
		expect(message).toMatch(/mode: /);
		expect(message).toMatch(/extra: /);
	});

	it("reports a wrong root type at root", () => {
		expect(failure({ type: "object", properties: {}, required: ["a"] }, [] as any)).toMatch(
			/root: Expected object \(got an array\)/,
		);
		expect(failure(Type.Object({ a: Type.Array(Type.Number()) }), { a: { x: 1 } })).toMatch(
			/a: Expected array \(got an object\)/,
		);
	});

	it("accepts anyOf/oneOf/allOf/const plain schemas", () => {
		const schema = {
			type: "object",
			properties: {
				id: { anyOf: [{ type: "integer" }, { type: "string", minLength: 2 }] },
				kind: { const: "k" },
				both: {
					allOf: [
						{ type: "object", properties: { a: { type: "number" } } },
						{ type: "object", properties: { b: { type: "number" } } },
					],
				},
			},
		};
		expect(check(schema, { id: "ab", kind: "k", both: { a: 1, b: 2 } })).toEqual({
			id: "ab",
			kind: "k",
			both: { a: 1, b: 2 },
		});
		expect(failure(schema, { id: "a", kind: "k" })).toMatch(/id: /);
		expect(failure(schema, { kind: "other" })).toMatch(/kind: /);
	});

	it("coerces into the union member that then validates, and into literal enums", () => {
		const schema = Type.Object({
			v: Type.Union([Type.Integer(), Type.Boolean()]),
			e: Type.Union([Type.Literal(1), Type.Literal(2)]),
		});
		expect(check(schema, { v: "true", e: "2" })).toEqual({ v: true, e: 2 });
		expect(check(schema, { v: "7", e: 1 })).toEqual({ v: 7, e: 1 });
		expect(check({ type: "object", properties: { n: { type: ["integer", "null"] } } }, { n: "3" })).toEqual({ n: 3 });
	});

	it("reuses the compiled validator for the same schema object and treats empty schemas as permissive", () => {
		for (let i = 0; i < 3; i++)
			expect(check(typebox, { count: i, flag: true, label: "x" })).toEqual({ count: i, flag: true, label: "x" });
		expect(check({}, { anything: [1, 2] })).toEqual({ anything: [1, 2] });
		expect(check({ type: "object" }, { anything: 1 })).toEqual({ anything: 1 });
	});

	it("a schema that cannot be compiled checks nothing: the arguments pass as sent", () => {
		const draft4 = { type: "object", properties: { n: { type: "number", minimum: 0, exclusiveMinimum: true } } };
		const args = { n: "anything" };
		expect(check(draft4, args)).toBe(args);
		expect(check({ type: "object", properties: { x: { $ref: "other.json#/x" } } }, { x: 1 })).toEqual({ x: 1 });
	});

	it("throws a TypeError naming the fix when the schema is not an object", () => {
		expect(() => check(null, {})).toThrow(/must be a TypeBox schema or a JSON Schema object, got null/);
	});
});
