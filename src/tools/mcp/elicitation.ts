/**
 * Elicitation from upstream MCP servers: what a server asks during one of its tool calls
 * (`elicitation/create`, form mode), and the check of an accepted answer against the schema it
 * requested.
 *
 * The MCP client declares the `elicitation` capability (form mode). A request is handed to the
 * {@link McpElicitationHandler} the server installed (the sessions' pending interactions), tied to
 * the tool call in flight on that server's connection: MCP sends no call id with the request, so
 * while two or more calls to the same server are in flight the request cannot be tied to one,
 * and is answered `cancel` (as is every request when no handler is installed).
 */

/** A field of a requested schema: MCP allows only flat primitives (and multi-select enums). */
export interface ElicitationField {
	type?: string;
	title?: string;
	description?: string;
	enum?: unknown[];
	oneOf?: { const?: unknown; title?: string }[];
	enumNames?: string[];
	minLength?: number;
	maxLength?: number;
	format?: string;
	minimum?: number;
	maximum?: number;
	default?: unknown;
	items?: { type?: string; enum?: unknown[]; anyOf?: { const?: unknown; title?: string }[] };
	minItems?: number;
	maxItems?: number;
}

/** The `requestedSchema` of an elicitation: an object of primitive fields. */
export interface ElicitationSchema {
	type: "object";
	properties: Record<string, ElicitationField>;
	required?: string[];
}

/** One elicitation a server sent while a tool call of this process was in flight. */
export interface McpElicitation {
	/** The configured name of the MCP server that asks. */
	server: string;
	/** The tool call during which it asks (the model's tool call id) and its qualified tool name. */
	toolCallId: string;
	toolName: string;
	message: string;
	requestedSchema: ElicitationSchema;
	/** Aborted when the tool call ends (aborted, timed out) or the server withdraws the request. */
	signal: AbortSignal;
}

/** What goes back to the MCP server (MCP `ElicitResult`). */
export interface McpElicitationResult {
	action: "accept" | "decline" | "cancel";
	content?: Record<string, string | number | boolean | string[]>;
}

/** Answers an elicitation. Contract: never rejects (a failure is answered `cancel`). */
export type McpElicitationHandler = (elicitation: McpElicitation) => Promise<McpElicitationResult>;

/** The values a field's enum allows (`enum`, or the `const`s of titled `oneOf`/`anyOf`), or undefined. */
function allowedValues(field: { enum?: unknown[]; oneOf?: { const?: unknown }[]; anyOf?: { const?: unknown }[] }) {
	if (Array.isArray(field.enum)) return field.enum;
	const options = field.oneOf ?? field.anyOf;
	return Array.isArray(options) ? options.map((option) => option.const) : undefined;
}

const FORMATS: Record<string, (value: string) => boolean> = {
	email: (v) => /^[^\s@]+@[^\s@]+$/.test(v),
	uri: (v) => URL.canParse(v),
	date: (v) => /^\d{4}-\d{2}-\d{2}$/.test(v) && !Number.isNaN(Date.parse(v)),
	"date-time": (v) => /^\d{4}-\d{2}-\d{2}T/.test(v) && !Number.isNaN(Date.parse(v)),
};

/** Why `value` does not fit `field` (undefined when it does). */
function fieldProblem(field: ElicitationField, value: unknown): string | undefined {
	const allowed = allowedValues(field);
	switch (field.type) {
		case "string": {
			if (typeof value !== "string") return "must be a string";
			if (allowed && !allowed.includes(value))
				return `must be one of ${allowed.map((v) => JSON.stringify(v)).join(", ")}`;
			if (field.minLength !== undefined && value.length < field.minLength)
				return `must be at least ${field.minLength} characters`;
			if (field.maxLength !== undefined && value.length > field.maxLength)
				return `must be at most ${field.maxLength} characters`;
			const format = field.format ? FORMATS[field.format] : undefined;
			if (format && !format(value)) return `must be a valid ${field.format}`;
			return undefined;
		}
		case "number":
		case "integer": {
			if (typeof value !== "number" || !Number.isFinite(value))
				return `must be ${field.type === "integer" ? "an integer" : "a number"}`;
			if (field.type === "integer" && !Number.isInteger(value)) return "must be an integer";
			if (field.minimum !== undefined && value < field.minimum) return `must be at least ${field.minimum}`;
			if (field.maximum !== undefined && value > field.maximum) return `must be at most ${field.maximum}`;
			return undefined;
		}
		case "boolean":
			return typeof value === "boolean" ? undefined : "must be a boolean";
		case "array": {
			if (!Array.isArray(value) || value.some((v) => typeof v !== "string")) return "must be an array of strings";
			const options = field.items ? allowedValues(field.items) : undefined;
			const wrong = options ? value.find((v) => !options.includes(v)) : undefined;
			if (wrong !== undefined)
				return `has ${JSON.stringify(wrong)}, not one of ${options!.map((v) => JSON.stringify(v)).join(", ")}`;
			if (field.minItems !== undefined && value.length < field.minItems)
				return `must have at least ${field.minItems} items`;
			if (field.maxItems !== undefined && value.length > field.maxItems)
				return `must have at most ${field.maxItems} items`;
			return undefined;
		}
		default:
			return `has a type this server cannot check (${String(field.type)})`;
	}
}

/**
 * The problems of an accepted answer's `content` against the requested schema, each naming the
 * field (`content.<name>: ...`); empty when it fits. Fields the schema does not name are refused,
 * and every `required` field must be there.
 */
export function elicitationContentProblems(schema: ElicitationSchema, content: unknown): string[] {
	if (content === undefined) content = {};
	if (content === null || typeof content !== "object" || Array.isArray(content)) return ["content: must be an object"];
	const values = content as Record<string, unknown>;
	const properties = schema.properties ?? {};
	const problems: string[] = [];
	for (const name of schema.required ?? []) {
		if (!Object.hasOwn(values, name)) problems.push(`content.${name}: is required`);
	}
	for (const [name, value] of Object.entries(values)) {
		const field = Object.hasOwn(properties, name) ? properties[name] : undefined;
		if (!field) {
			problems.push(`content.${name}: is not a field of the requested schema`);
			continue;
		}
		const problem = fieldProblem(field, value);
		if (problem) problems.push(`content.${name}: ${problem}`);
	}
	return problems;
}
