/**
 * Where a JSON Schema holds other schemas: what the app's schema rewrites walk (the OpenAPI
 * document's naming in `openapi-components.ts`, the serializers' copy in `serialization-schema.ts`).
 */

/** A schema, or any JSON object inside one. */
export type Node = Record<string, unknown>;

export function isNode(value: unknown): value is Node {
	return typeof value === "object" && value !== null && !Array.isArray(value);
}

/** Keywords whose value is a schema or an array of schemas. */
export const SCHEMA_KEYWORDS: ReadonlySet<string> = new Set([
	"items",
	"prefixItems",
	"additionalItems",
	"additionalProperties",
	"unevaluatedItems",
	"unevaluatedProperties",
	"contains",
	"propertyNames",
	"not",
	"if",
	"then",
	"else",
	"allOf",
	"anyOf",
	"oneOf",
]);

/** Keywords whose value maps names to schemas (`dependencies` maps names to a schema or a list of names). */
export const SCHEMA_MAP_KEYWORDS: ReadonlySet<string> = new Set([
	"properties",
	"patternProperties",
	"definitions",
	"$defs",
	"dependentSchemas",
	"dependencies",
]);
