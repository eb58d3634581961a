/**
 * Request validation: bodies are validated strictly (no type coercion: `{"message": 42}` is an
 * error, not the string "42"); query strings, params and headers arrive as text and are coerced
 * to the schema's types. Unknown body fields are errors (never silently removed), so a typo in a
 * field name is reported instead of ignored.
 */
import AjvModule from "ajv";
import type { FastifyInstance, FastifySchema } from "fastify";

const Ajv = AjvModule.default ?? AjvModule;

const shared = { removeAdditional: false, useDefaults: true, allErrors: false, strict: false } as const;

export function installValidation(app: FastifyInstance): void {
	const strict = new Ajv({ ...shared, coerceTypes: false });
	const coercing = new Ajv({ ...shared, coerceTypes: "array" });
	app.setValidatorCompiler<FastifySchema>(function compileValidator({ schema, httpPart }) {
		return (httpPart === "body" ? strict : coercing).compile(schema as object);
	});
}
