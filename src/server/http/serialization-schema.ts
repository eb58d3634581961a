/**
 * A response schema rewritten for fast-json-stringify so that it writes the same JSON without
 * running a validator per value. fast-json-stringify serializes an `anyOf` by validating the
 * value against each branch with ajv, in order, and writing it with the first that matches; a
 * TypeBox union of primitives (`Type.Union([Type.String(), Type.Null()])`) or of literals
 * (`Type.Union([Type.Literal("idle"), Type.Literal("running")])`) is such an `anyOf`. For those
 * two shapes the branch only decides how a string, number, boolean or null is written, which
 * fast-json-stringify's `type: [...]` does by a `typeof` test, so the union becomes:
 *
 * - branches that are each a bare primitive type (`{ type: "string" }`, annotations allowed):
 *   `{ type: ["string", "null"] }`, the types in branch order;
 * - branches that are each a primitive literal (`{ const, type }`), or the null type:
 *   `{ type: <the literals' types>, enum: [<the literals>] }`, which fast-json-stringify writes
 *   by type (it does not read `enum`): a literal's value comes out as the literal would have.
 *
 * The parent's annotations (`title`, `description`, ...), `default` and `$id` are kept. Any other
 * union (objects, arrays, `$ref`, formats, a parent with other keywords) is left as it is:
 * there the branch decides how the value is written.
 *
 * What changes is what a value that matches no branch gets: where the union threw (a 500), the
 * rewritten schema writes the value by its type (`"paused"` for a status union of other
 * literals) or throws where fast-json-stringify's `type` check does (a number where only strings
 * and null are allowed). Values that match the schema are written byte for byte as before.
 *
 * The route's schema is not changed: the rewrite is a deep copy (fast-json-stringify itself
 * writes inferred `type`s into the schema it compiles, which the copy also keeps away from the
 * schema the OpenAPI document is generated from).
 */

import { isNode, type Node, SCHEMA_KEYWORDS, SCHEMA_MAP_KEYWORDS } from "./schema-keywords.js";

/** Keywords fast-json-stringify ignores when it writes a value: they describe the schema only. */
const ANNOTATIONS = new Set(["title", "description", "$comment", "examples", "deprecated", "readOnly", "writeOnly"]);

/**
 * What a rewritten union keeps besides its annotations: the `default` written for an absent
 * property, and the `$id` a `$ref` finds it by (its branches hold no `$ref` it could rebase).
 */
const PARENT_KEEPS = new Set(["default", "$id"]);

/** Types fast-json-stringify writes without looking into the value. */
const PRIMITIVE_TYPES = new Set(["string", "number", "integer", "boolean", "null"]);

/** A deep copy of a value that is data, not a schema (`const`, `enum`, `default`, `examples`...). */
function copyData(value: unknown): unknown {
	if (Array.isArray(value)) return value.map(copyData);
	if (!isNode(value)) return value;
	const out: Node = {};
	for (const [key, child] of Object.entries(value)) out[key] = copyData(child);
	return out;
}

/** One branch of a union, when it is a primitive type or a primitive literal; else undefined. */
type Branch = { type: string; literal?: { value: unknown } };

function literalType(value: unknown): string | undefined {
	if (value === null) return "null";
	if (typeof value === "string" || typeof value === "boolean") return typeof value;
	if (typeof value === "number" && Number.isFinite(value)) return "number";
	return undefined;
}

function branchOf(schema: unknown): Branch | undefined {
	if (!isNode(schema)) return undefined;
	for (const key of Object.keys(schema)) {
		if (key !== "type" && key !== "const" && !ANNOTATIONS.has(key)) return undefined;
	}
	const { type } = schema;
	if ("const" in schema) {
		const constType = literalType(schema.const);
		if (constType === undefined) return undefined;
		// A literal's declared type must admit its value (`integer` admits whole numbers).
		const admits =
			type === undefined ||
			type === constType ||
			(type === "integer" && constType === "number" && Number.isInteger(schema.const));
		return admits ? { type: constType, literal: { value: schema.const } } : undefined;
	}
	return typeof type === "string" && PRIMITIVE_TYPES.has(type) ? { type } : undefined;
}

/**
 * The `type`/`enum` form of a union of primitive types or literals (see the file comment), or
 * undefined when `schema` is another kind of union or no union.
 */
function primitiveUnion(schema: Node): Node | undefined {
	const { anyOf } = schema;
	if (!Array.isArray(anyOf) || anyOf.length === 0) return undefined;
	for (const key of Object.keys(schema)) {
		if (key !== "anyOf" && !PARENT_KEEPS.has(key) && !ANNOTATIONS.has(key)) return undefined;
	}
	const branches: Branch[] = [];
	for (const option of anyOf) {
		const branch = branchOf(option);
		if (!branch) return undefined;
		branches.push(branch);
	}
	const types = [...new Set(branches.map((branch) => branch.type))];
	const out: Node = {};
	for (const [key, value] of Object.entries(schema)) if (key !== "anyOf") out[key] = copyData(value);
	out.type = types.length === 1 ? types[0] : types;
	// The literals' enum, when every branch is a literal or null: it says what the union means
	// (fast-json-stringify does not read it). A union with a bare `string` or `number` has none.
	if (branches.some((branch) => branch.literal) && branches.every((b) => b.literal || b.type === "null")) {
		out.enum = [...new Set(branches.map((branch) => (branch.literal ? branch.literal.value : null)))];
	}
	return out;
}

function copySchemaMap(map: unknown, seen: WeakMap<object, unknown>): unknown {
	if (!isNode(map)) return copyData(map);
	const out: Node = {};
	// `dependencies` also maps a name to a list of names: data, not a schema.
	for (const [key, child] of Object.entries(map))
		out[key] = Array.isArray(child) ? copyData(child) : copySchema(child, seen);
	return out;
}

function copySchema(schema: unknown, seen: WeakMap<object, unknown>): unknown {
	if (!isNode(schema)) return copyData(schema);
	const done = seen.get(schema);
	if (done !== undefined) return done;
	const out: Node = {};
	// Registered first: a schema that contains itself gets its copy, not an endless walk.
	seen.set(schema, out);
	for (const [key, child] of Object.entries(schema)) {
		if (SCHEMA_KEYWORDS.has(key)) {
			out[key] = Array.isArray(child) ? child.map((item) => copySchema(item, seen)) : copySchema(child, seen);
		} else if (SCHEMA_MAP_KEYWORDS.has(key)) {
			out[key] = copySchemaMap(child, seen);
		} else {
			out[key] = copyData(child);
		}
	}
	const union = primitiveUnion(out);
	if (union) {
		for (const key of Object.keys(out)) delete out[key];
		Object.assign(out, union);
	}
	return out;
}

/** A `$ref` through an `anyOf` (`#/properties/a/anyOf/0`): the rewrite would leave it pointing at nothing. */
const INTO_UNION = /\/anyOf(\/|$)/;

/**
 * Whether `schemas` (a schema, or a map of them) hold a `$ref` into an `anyOf`. Such a schema must
 * be compiled as it is: {@link forSerialization} removes the `anyOf`s it rewrites.
 */
export function refersIntoUnion(schemas: unknown): boolean {
	if (Array.isArray(schemas)) return schemas.some(refersIntoUnion);
	if (!isNode(schemas)) return false;
	if (typeof schemas.$ref === "string" && INTO_UNION.test(schemas.$ref)) return true;
	return Object.values(schemas).some(refersIntoUnion);
}

/**
 * `schema` (a response schema, or a shared schema the serializer compiler is given) as
 * fast-json-stringify should compile it: a copy with each union of primitive types or literals
 * in its `type`/`enum` form. `schema` itself is not changed.
 */
export function forSerialization(schema: unknown): unknown {
	return copySchema(schema, new WeakMap());
}

/** {@link forSerialization} of each schema of a map of shared schemas (by `$id`), as Fastify passes them. */
export function sharedForSerialization(schemas: unknown): unknown {
	if (!isNode(schemas)) return schemas;
	const seen = new WeakMap<object, unknown>();
	const out: Node = {};
	for (const [id, schema] of Object.entries(schemas)) out[id] = copySchema(schema, seen);
	return out;
}
