/**
 * Validation of tool-call arguments against a tool's parameter schema, with ajv.
 *
 * The schema may be a TypeBox schema or any plain JSON Schema object (MCP servers and config
 * files hand us plain ones): TypeBox schemas are JSON Schema, so one validator serves both.
 * Unknown keywords and `format` are not checked (a tool's schema must not make a call fail for a
 * format this server has no checker for). A schema ajv cannot compile at all (a draft-04 boolean
 * `exclusiveMinimum`, a `$ref` to another document) checks nothing: the tool's own server
 * validates what it receives, and one malformed keyword must not make the tool unusable.
 *
 * Models often send the right value with the wrong primitive type (`"5"` for a number, `"true"`
 * for a boolean, `3` for a string). ajv's `coerceTypes` converts those — the same table pi-ai
 * uses: numeric strings and booleans to numbers, `"true"`/`"false"` and 1/0 to booleans, numbers
 * and booleans to strings, null to the type's zero value — on a clone; the caller's arguments are
 * never mutated, and containers are never invented (a scalar is not wrapped into an array).
 */
import AjvModule, { type ErrorObject, type ValidateFunction } from "ajv";
import type { Tool, ToolCall } from "./types.js";

const Ajv = AjvModule.default ?? AjvModule;

const OPTIONS = { strict: false, validateFormats: false, allErrors: true, verbose: true } as const;
/** Checks arguments as they are (no coercion, so nothing is changed). */
const exact = new Ajv(OPTIONS);
/** Checks and coerces (in place: only ever given a clone). */
const coercing = new Ajv({ ...OPTIONS, coerceTypes: true });

interface Validators {
	exact: ValidateFunction;
	coercing: ValidateFunction;
}

/** Compiled validators per schema object: a tool's schema is compiled once. */
const compiled = new WeakMap<object, Validators>();

function compileWith(ajv: InstanceType<typeof Ajv>, schema: object): ValidateFunction {
	// `$schema` is left out: a tool's schema may name a draft ajv has not loaded; the keywords read
	// the same.
	const { $schema: _draft, ...rest } = schema as Record<string, unknown>;
	const validate = ajv.compile(rest);
	// ajv also keeps every schema it compiled, by object (and `$id`): tools come and go with MCP
	// servers and sessions, so only this module's WeakMap holds them.
	ajv.removeSchema(rest);
	return validate;
}

function validatorsOf(parameters: unknown): Validators {
	if (typeof parameters !== "object" || parameters === null || Array.isArray(parameters)) {
		throw new TypeError(
			`Tool parameters must be a TypeBox schema or a JSON Schema object, got ${parameters === null ? "null" : typeof parameters}`,
		);
	}
	let validators = compiled.get(parameters);
	if (!validators) {
		try {
			validators = { exact: compileWith(exact, parameters), coercing: compileWith(coercing, parameters) };
		} catch {
			const anything = exact.compile(true);
			validators = { exact: anything, coercing: anything };
		}
		compiled.set(parameters, validators);
	}
	return validators;
}

const COMPARISONS: Record<string, string> = {
	">=": "greater or equal to",
	"<=": "less or equal to",
	">": "greater than",
	"<": "less than",
};

/** An error's path (a JSON pointer), pointing at the property for `required` and `additionalProperties`. */
function pointerOf(error: ErrorObject): string {
	const property = error.params.missingProperty ?? error.params.additionalProperty;
	return property === undefined
		? error.instancePath
		: `${error.instancePath}/${String(property).replace(/~/g, "~0").replace(/\//g, "~1")}`;
}

function formatPath(pointer: string): string {
	return pointer === ""
		? "root"
		: pointer.replace(/^\//, "").replace(/\//g, ".").replace(/~1/g, "/").replace(/~0/g, "~");
}

/** What was expected, in words a model reads. */
function expectation(error: ErrorObject): string {
	switch (error.keyword) {
		case "type":
			return `Expected ${error.params.type}`;
		case "required":
			return "Expected required property";
		case "additionalProperties":
			return "Unexpected property";
		case "minimum":
		case "maximum":
		case "exclusiveMinimum":
		case "exclusiveMaximum": {
			const type = typeof error.parentSchema?.type === "string" ? error.parentSchema.type : "number";
			return `Expected ${type} to be ${COMPARISONS[error.params.comparison] ?? error.params.comparison} ${error.params.limit}`;
		}
		default:
			return `Expected a value that ${error.message ?? "matches the schema"}`;
	}
}

function describe(value: unknown): string {
	if (value === undefined) return "nothing";
	if (value === null) return "null";
	if (Array.isArray(value)) return "an array";
	if (typeof value === "object") return "an object";
	const json = JSON.stringify(value);
	return `${typeof value} ${json.length > 60 ? `${json.slice(0, 57)}...` : json}`;
}

/** The value at `pointer` in `root` (undefined when absent). */
function valueAt(root: unknown, pointer: string): unknown {
	let value = root;
	for (const part of pointer.split("/").slice(1)) {
		if (typeof value !== "object" || value === null) return undefined;
		value = (value as Record<string, unknown>)[part.replace(/~1/g, "/").replace(/~0/g, "~")];
	}
	return value;
}

/**
 * Validates (and coerces) a tool call's arguments against `tool.parameters`.
 *
 * Returns the arguments to execute with: the caller's object when it is valid as it is, else a
 * coerced clone; never the caller's object mutated. Throws an Error naming every failing path,
 * what was expected and what was received, followed by the received arguments — written for the
 * model to read and retry.
 */
export function validateToolArguments(tool: Tool<any>, toolCall: ToolCall): any {
	const validators = validatorsOf(tool.parameters);
	const raw = toolCall.arguments ?? {};
	if (validators.exact(raw)) return raw;
	const args = structuredClone(raw);
	if (validators.coercing(args)) return args;

	const lines: string[] = [];
	const seen = new Set<string>();
	for (const error of validators.coercing.errors ?? []) {
		const pointer = pointerOf(error);
		if (seen.has(pointer)) continue;
		seen.add(pointer);
		const value = valueAt(args, pointer);
		const got = value === undefined ? "missing" : `got ${describe(value)}`;
		lines.push(`  - ${formatPath(pointer)}: ${expectation(error)} (${got})`);
	}
	throw new Error(
		`Validation failed for tool "${toolCall.name}":\n${lines.join("\n") || "  - root: does not match the schema"}\n\nReceived arguments:\n${JSON.stringify(raw, null, 2)}`,
	);
}
