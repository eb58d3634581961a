/**
 * Validation of tool-call arguments against a tool's parameter schema.
 *
 * The schema may be a TypeBox schema or any plain JSON Schema object (MCP servers and config
 * files hand us plain ones). Plain schemas are translated once into the equivalent TypeBox
 * schema, so one compiled checker serves both; compiled checkers are cached per schema object.
 *
 * Models often send the right value with the wrong primitive type (`"5"` for a number, `"true"`
 * for a boolean, `3` for a string). Those are coerced on a clone before checking; the caller's
 * arguments are never mutated.
 */
import { Kind, type TSchema, Type } from "@sinclair/typebox";
import { type TypeCheck, TypeCompiler } from "@sinclair/typebox/compiler";
import type { Tool, ToolCall } from "./types.js";

interface CompiledSchema {
	schema: TSchema;
	check: TypeCheck<TSchema>;
}

const compiled = new WeakMap<object, CompiledSchema>();
/** Checkers of union members, compiled on first use while coercing. */
const memberChecks = new WeakMap<TSchema, TypeCheck<TSchema>>();

/** Constraint keywords carried over from a plain JSON Schema node to its TypeBox counterpart. */
const CONSTRAINTS = [
	"title",
	"description",
	"default",
	"examples",
	"minimum",
	"maximum",
	"exclusiveMinimum",
	"exclusiveMaximum",
	"multipleOf",
	"minLength",
	"maxLength",
	"pattern",
	"minItems",
	"maxItems",
	"uniqueItems",
	"minProperties",
	"maxProperties",
] as const;

function isRecord(value: unknown): value is Record<string, any> {
	return typeof value === "object" && value !== null && !Array.isArray(value);
}

function isTypeBox(schema: unknown): schema is TSchema {
	return isRecord(schema) && Kind in schema;
}

function constraintsOf(node: Record<string, any>): Record<string, unknown> {
	const options: Record<string, unknown> = {};
	for (const key of CONSTRAINTS) if (key in node) options[key] = node[key];
	return options;
}

function isLiteralValue(value: unknown): value is string | number | boolean {
	return typeof value === "string" || typeof value === "number" || typeof value === "boolean";
}

/**
 * Translates a plain JSON Schema node into TypeBox. Keywords TypeBox cannot check without a
 * registry (`format`, `$ref`, tuples) become `Unknown` rather than a false rejection.
 */
function fromJsonSchema(node: unknown): TSchema {
	if (node === true || node === undefined) return Type.Unknown();
	if (node === false) return Type.Never();
	if (!isRecord(node)) return Type.Unknown();
	if (isTypeBox(node)) return node;
	const options = constraintsOf(node);
	if ("const" in node) return isLiteralValue(node.const) ? Type.Literal(node.const, options) : Type.Unknown(options);
	if (Array.isArray(node.enum)) {
		const literals = node.enum.filter(isLiteralValue).map((value) => Type.Literal(value));
		if (node.enum.includes(null)) literals.push(Type.Null() as any);
		return literals.length === node.enum.length ? Type.Union(literals, options) : Type.Unknown(options);
	}
	if (Array.isArray(node.anyOf)) return Type.Union(node.anyOf.map(fromJsonSchema), options);
	if (Array.isArray(node.oneOf)) return Type.Union(node.oneOf.map(fromJsonSchema), options);
	if (Array.isArray(node.allOf)) return Type.Intersect(node.allOf.map(fromJsonSchema), options);
	if (Array.isArray(node.type)) {
		return Type.Union(
			node.type.map((type: unknown) => fromJsonSchema({ ...node, type })),
			options,
		);
	}
	const type = node.type ?? (isRecord(node.properties) ? "object" : undefined);
	switch (type) {
		case "object": {
			const required = new Set<string>(Array.isArray(node.required) ? node.required : []);
			const properties: Record<string, TSchema> = {};
			for (const [key, value] of Object.entries(isRecord(node.properties) ? node.properties : {})) {
				const property = fromJsonSchema(value);
				properties[key] = required.has(key) ? property : Type.Optional(property);
			}
			// A required key without a property schema still has to be present.
			for (const key of required) if (!(key in properties)) properties[key] = Type.Unknown();
			const additional = node.additionalProperties;
			const additionalProperties =
				additional === undefined || typeof additional === "boolean" ? additional : fromJsonSchema(additional);
			return Type.Object(properties, {
				...options,
				...(additionalProperties === undefined ? {} : { additionalProperties }),
			});
		}
		case "array":
			return Type.Array(isRecord(node.items) ? fromJsonSchema(node.items) : Type.Unknown(), options);
		case "string":
			return Type.String(options);
		case "number":
			return Type.Number(options);
		case "integer":
			return Type.Integer(options);
		case "boolean":
			return Type.Boolean(options);
		case "null":
			return Type.Null(options);
		default:
			return Type.Unknown(options);
	}
}

function compile(parameters: unknown): CompiledSchema {
	if (!isRecord(parameters)) {
		throw new TypeError(
			`Tool parameters must be a TypeBox schema or a JSON Schema object, got ${parameters === null ? "null" : typeof parameters}`,
		);
	}
	const cached = compiled.get(parameters);
	if (cached) return cached;
	const schema = fromJsonSchema(parameters);
	const entry = { schema, check: TypeCompiler.Compile(schema) };
	compiled.set(parameters, entry);
	return entry;
}

function memberCheck(schema: TSchema): TypeCheck<TSchema> {
	let check = memberChecks.get(schema);
	if (!check) {
		check = TypeCompiler.Compile(schema);
		memberChecks.set(schema, check);
	}
	return check;
}

function schemaTypes(schema: TSchema): string[] {
	if (typeof schema.type === "string") return [schema.type];
	return Array.isArray(schema.type) ? schema.type : [];
}

/**
 * The primitive conversions models need (the same table as pi-ai): numeric strings and booleans
 * to numbers, "true"/"false" and 1/0 to booleans, numbers and booleans to strings, null to the
 * type's zero value. Anything else is returned unchanged for the checker to report.
 */
function coercePrimitive(value: unknown, type: string): unknown {
	switch (type) {
		case "number":
		case "integer": {
			if (value === null) return 0;
			if (typeof value === "boolean") return value ? 1 : 0;
			if (typeof value !== "string" || value.trim() === "") return value;
			const parsed = Number(value);
			if (!Number.isFinite(parsed) || (type === "integer" && !Number.isInteger(parsed))) return value;
			return parsed;
		}
		case "boolean":
			if (value === null) return false;
			if (value === "true" || value === 1) return true;
			if (value === "false" || value === 0) return false;
			return value;
		case "string":
			if (value === null) return "";
			return typeof value === "number" || typeof value === "boolean" ? String(value) : value;
		case "null":
			return value === "" || value === 0 || value === false || value === "null" ? null : value;
		default:
			return value;
	}
}

/**
 * Walks the (TypeBox) schema and coerces mismatched primitives in place. Containers are never
 * invented (no wrapping a scalar into an array), so errors still point at what the model sent.
 */
function coerce(schema: TSchema, value: unknown): unknown {
	let next = value;
	if (Array.isArray(schema.allOf)) for (const part of schema.allOf) next = coerce(part, next);
	if (Array.isArray(schema.anyOf)) {
		const members = schema.anyOf as TSchema[];
		if (!members.some((member) => memberCheck(member).Check(next))) {
			for (const member of members) {
				const candidate = coerce(member, structuredClone(next));
				if (memberCheck(member).Check(candidate)) return candidate;
			}
		}
		return next;
	}
	const types = schemaTypes(schema);
	if (types.length > 0 && !types.some((type) => matchesType(next, type))) {
		for (const type of types) {
			const candidate = coercePrimitive(next, type);
			if (candidate !== next) {
				next = candidate;
				break;
			}
		}
	}
	if (isRecord(next) && isRecord(schema.properties)) {
		for (const [key, property] of Object.entries(schema.properties as Record<string, TSchema>)) {
			if (key in next) next[key] = coerce(property, next[key]);
		}
	}
	if (isRecord(next) && isRecord(schema.additionalProperties)) {
		const known = isRecord(schema.properties) ? schema.properties : {};
		for (const key of Object.keys(next)) {
			if (!(key in known)) next[key] = coerce(schema.additionalProperties as TSchema, next[key]);
		}
	}
	if (Array.isArray(next) && isRecord(schema.items)) {
		for (let i = 0; i < next.length; i++) next[i] = coerce(schema.items as TSchema, next[i]);
	}
	return next;
}

function matchesType(value: unknown, type: string): boolean {
	switch (type) {
		case "number":
			return typeof value === "number";
		case "integer":
			return typeof value === "number" && Number.isInteger(value);
		case "boolean":
			return typeof value === "boolean";
		case "string":
			return typeof value === "string";
		case "null":
			return value === null;
		case "array":
			return Array.isArray(value);
		case "object":
			return isRecord(value);
		default:
			return true;
	}
}

function formatPath(path: string): string {
	return path === "" ? "root" : path.replace(/^\//, "").replace(/\//g, ".").replace(/~1/g, "/").replace(/~0/g, "~");
}

function describe(value: unknown): string {
	if (value === undefined) return "nothing";
	if (value === null) return "null";
	if (Array.isArray(value)) return "an array";
	if (typeof value === "object") return "an object";
	const json = JSON.stringify(value);
	return `${typeof value} ${json.length > 60 ? `${json.slice(0, 57)}...` : json}`;
}

/**
 * Validates (and coerces) a tool call's arguments against `tool.parameters`.
 *
 * Returns the arguments to execute with: a coerced clone when coercion applied, never the
 * caller's object mutated. Throws an Error naming every failing path, what was expected and what
 * was received, followed by the received arguments — written for the model to read and retry.
 */
export function validateToolArguments(tool: Tool<any>, toolCall: ToolCall): any {
	const { schema, check } = compile(tool.parameters);
	const raw = toolCall.arguments ?? {};
	if (check.Check(raw)) return raw;
	const args = coerce(schema, structuredClone(raw));
	if (check.Check(args)) return args;

	const lines: string[] = [];
	const seen = new Set<string>();
	for (const error of check.Errors(args)) {
		if (seen.has(error.path)) continue;
		seen.add(error.path);
		const got = error.value === undefined ? "missing" : `got ${describe(error.value)}`;
		lines.push(`  - ${formatPath(error.path)}: ${error.message} (${got})`);
	}
	throw new Error(
		`Validation failed for tool "${toolCall.name}":\n${lines.join("\n") || "  - root: does not match the schema"}\n\nReceived arguments:\n${JSON.stringify(raw, null, 2)}`,
	);
}
