/**
 * Request validation: bodies are validated strictly (no type coercion: `{"message": 42}` is an
 * error, not the string "42"); query strings, params and headers arrive as text and are coerced
 * to the schema's types. Unknown body fields are errors (never silently removed), so a typo in a
 * field name is reported instead of ignored.
 *
 * Before compiling, each route schema is adjusted for the validator only (the OpenAPI document
 * and the serialisers keep the originals):
 * - every `integer` is bounded to the safe integers: text such as `1e20` or `9007199254740993`
 *   coerces to a number that is an integer to JavaScript but cannot be stored or compared
 *   exactly; and every number must be finite (`strictNumbers` refuses `Infinity` in a body, but
 *   ajv's coercion turns the text `Infinity` into a number it no longer checks, so the
 *   `finite` keyword checks again after coercion);
 * - a union of literals becomes an `enum`, so its error lists the allowed values instead of
 *   "must match a schema in anyOf".
 *
 * A request without a body, on a route whose body fields are all optional, is validated as `{}`.
 *
 * Each validator is compiled on its route's first request rather than at startup (generated code
 * for every route is most of what an idle server would otherwise hold); a schema ajv cannot
 * compile then fails that first request instead of startup.
 */
import AjvModule, { type ValidateFunction } from "ajv";
import type { FastifyInstance, FastifyRequest, FastifyServerOptions } from "fastify";

type ValidatorFactory = NonNullable<
	NonNullable<NonNullable<FastifyServerOptions["schemaController"]>["compilersFactory"]>["buildValidator"]
>;

const Ajv = AjvModule.default ?? AjvModule;

const shared = {
	removeAdditional: false,
	useDefaults: true,
	allErrors: false,
	strict: false,
	strictNumbers: true,
} as const;

type SchemaNode = Record<string | symbol, unknown>;

function isSchemaNode(value: unknown): value is SchemaNode {
	return typeof value === "object" && value !== null && !Array.isArray(value);
}

/** `{anyOf: [{const: "a"}, {const: "b"}]}` → the values `["a", "b"]`; otherwise undefined. */
function literalUnion(node: SchemaNode): unknown[] | undefined {
	const branches = node.anyOf;
	if (!Array.isArray(branches) || branches.length === 0) return undefined;
	if (!branches.every((b) => isSchemaNode(b) && "const" in b)) return undefined;
	return branches.map((b) => (b as SchemaNode).const);
}

/** A copy of `schema` adjusted for validation (see the file comment); the original is not changed. */
export function prepareSchema(schema: unknown): unknown {
	if (Array.isArray(schema)) return schema.map(prepareSchema);
	if (!isSchemaNode(schema)) return schema;
	const out: SchemaNode = {};
	for (const [key, value] of Object.entries(schema)) {
		// `const`, `default`, `enum` and `examples` hold data, not schemas.
		out[key] =
			key === "const" || key === "default" || key === "enum" || key === "examples" ? value : prepareSchema(value);
	}
	const values = literalUnion(schema);
	if (values) {
		delete out.anyOf;
		out.enum = values;
	}
	if (out.type === "integer" || out.type === "number") out.finite = true;
	if (out.type === "integer") {
		const max = typeof out.maximum === "number" ? out.maximum : Number.MAX_SAFE_INTEGER;
		const min = typeof out.minimum === "number" ? out.minimum : Number.MIN_SAFE_INTEGER;
		out.maximum = Math.min(max, Number.MAX_SAFE_INTEGER);
		out.minimum = Math.max(min, Number.MIN_SAFE_INTEGER);
	}
	return out;
}

/** Whether a body schema accepts `{}`: an object schema with no required field. */
function acceptsEmptyObject(schema: unknown): boolean {
	if (!isSchemaNode(schema) || schema.type !== "object") return false;
	return !Array.isArray(schema.required) || schema.required.length === 0;
}

/** The `finite` keyword: a number that is not `Infinity`, `-Infinity` or `NaN`. */
const finiteKeyword = {
	keyword: "finite",
	schemaType: "boolean",
	errors: false,
	validate: (enabled: boolean, data: unknown) => !enabled || typeof data !== "number" || Number.isFinite(data),
	error: { message: "must be a finite number" },
} as const;

/**
 * For Fastify's `schemaController.compilersFactory.buildValidator`, one per app (given when the app
 * is created, so Fastify never loads its default compiler and a third ajv): bodies on the strict
 * ajv, the other parts on the coercing one, each route's validator compiled on its first request.
 * Fastify asks each plugin context for a compiler; they all get the same one.
 */
export function validatorFactory(): ValidatorFactory {
	let compiler: ReturnType<ValidatorFactory> | undefined;
	return () => {
		compiler ??= createCompiler();
		return compiler;
	};
}

function createCompiler(): ReturnType<ValidatorFactory> {
	const strict = new Ajv({ ...shared, coerceTypes: false });
	const coercing = new Ajv({ ...shared, coerceTypes: "array" });
	strict.addKeyword(finiteKeyword);
	coercing.addKeyword(finiteKeyword);
	return function compileValidator({ schema, httpPart }) {
		const ajv = httpPart === "body" ? strict : coercing;
		// Compiled on the route's first request: an idle server holds no generated validator code
		// for the routes nobody calls. Fastify reads `errors` off the function it was given.
		let validate: ValidateFunction | undefined;
		const validateOnFirstUse = (data: unknown): boolean => {
			validate ??= ajv.compile(prepareSchema(schema) as object);
			const valid = validate(data);
			validateOnFirstUse.errors = validate.errors;
			return valid;
		};
		validateOnFirstUse.errors = null as ValidateFunction["errors"];
		// Fastify only calls it and reads `errors`: the compiled function's other fields are ajv's own.
		return validateOnFirstUse as unknown as ValidateFunction;
	};
}

/** A request without a body, on a route whose body fields are all optional, is validated as `{}`. */
export function installEmptyBodyDefault(app: FastifyInstance): void {
	app.addHook("preValidation", async function defaultEmptyBody(request: FastifyRequest) {
		if (request.body === undefined && acceptsEmptyObject(request.routeOptions.schema?.body)) request.body = {};
	});
}
