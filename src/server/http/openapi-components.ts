/**
 * Names the shared shapes of the generated OpenAPI document: every schema with a `title` is
 * written once under `components/schemas/<title>` and `$ref`-ed wherever it is used, and the
 * responses every operation shares (the error envelope of 4XX and 5XX) once under
 * `components/responses`. The route schemas themselves stay inline, as the validators and
 * serialisers compile them: naming happens in the document only.
 *
 * A schema is named by giving it a `title` (TypeBox: `Type.Object({...}, { title: "Session" })`)
 * or an `$id` (read as its title). Two different schemas under one name are a mistake this
 * refuses, naming the title; the same schema with another `description` at one use is a `$ref`
 * with that description beside it. A union of literals is written as the `enum` it is.
 */

import { isNode, type Node, SCHEMA_KEYWORDS, SCHEMA_MAP_KEYWORDS } from "./schema-keywords.js";

/** What OpenAPI allows as a component name. */
const COMPONENT_NAME = /^[A-Za-z0-9._-]+$/;

const SCHEMAS_PREFIX = "#/components/schemas/";

function withoutDescription(schema: Node): string {
	const { description: _description, ...rest } = schema;
	return JSON.stringify(rest);
}

/**
 * A copy of a route schema (the whole `schema` of a route: body, params, response map...) with
 * each non-anchor `$id` turned into a `title`, so that @fastify/swagger leaves the schema where it
 * is and {@link nameSharedSchemas} names it. The route's own schema is not changed.
 */
export function idsToTitles(value: unknown): unknown {
	if (Array.isArray(value)) return value.map(idsToTitles);
	if (!isNode(value)) return value;
	const out: Node = {};
	for (const [key, child] of Object.entries(value)) {
		if (key === "$id" && typeof child === "string" && !child.startsWith("#")) continue;
		out[key] = idsToTitles(child);
	}
	if (typeof value.$id === "string" && !value.$id.startsWith("#") && out.title === undefined) out.title = value.$id;
	return out;
}

/**
 * `anyOf: [{type: "string", enum: ["a"]}, {type: "string", enum: ["b"]}]` (a TypeBox union of
 * literals, as swagger renders it) as the `enum: ["a", "b"]` it means: one line per value.
 */
function enumOfLiterals(schema: Node): Node {
	const branches = schema.anyOf;
	if (!Array.isArray(branches) || branches.length < 2 || schema.type !== undefined || schema.enum !== undefined) {
		return schema;
	}
	const type = isNode(branches[0]) ? branches[0].type : undefined;
	const literal = (branch: unknown): branch is Node =>
		isNode(branch) &&
		branch.type === type &&
		Array.isArray(branch.enum) &&
		branch.enum.length === 1 &&
		Object.keys(branch).length === 2;
	if (typeof type !== "string" || !branches.every(literal)) return schema;
	const { anyOf: _anyOf, ...rest } = schema;
	return { ...rest, type, enum: branches.map((branch) => (branch.enum as unknown[])[0]) };
}

/** Collects the titled schemas of one document and replaces each use by a `$ref`. */
class SchemaNamer {
	readonly components: Record<string, Node> = {};
	/** The component's JSON without its description, to compare other uses of its name. */
	private readonly shapes = new Map<string, string>();
	/** Components taken from a parameter's schema, whose description swagger moved to the parameter. */
	private readonly withoutOwnDescription = new Set<string>();

	/**
	 * `schema` with its titled subschemas (and itself, when titled) replaced by references.
	 * `isParameter`: the schema of a parameter, whose description swagger moved to the parameter:
	 * its lack of one says nothing about the named schema's.
	 */
	name(schema: unknown, isParameter = false): unknown {
		if (Array.isArray(schema)) return schema.map((item) => this.name(item));
		if (!isNode(schema) || typeof schema.$ref === "string") return schema;
		const out: Node = {};
		for (const [key, value] of Object.entries(schema)) {
			if (SCHEMA_KEYWORDS.has(key)) out[key] = this.name(value);
			else if (SCHEMA_MAP_KEYWORDS.has(key) && isNode(value)) {
				out[key] = Object.fromEntries(Object.entries(value).map(([prop, sub]) => [prop, this.name(sub)]));
			} else out[key] = value;
		}
		const compact = enumOfLiterals(out);
		return typeof compact.title === "string" ? this.reference(compact.title, compact, isParameter) : compact;
	}

	private reference(title: string, schema: Node, isParameter: boolean): Node {
		if (!COMPONENT_NAME.test(title)) {
			throw new Error(`schema title "${title}" is not a valid OpenAPI component name (letters, digits, . _ -)`);
		}
		const ref: Node = { $ref: SCHEMAS_PREFIX + title };
		const shape = withoutDescription(schema);
		const known = this.shapes.get(title);
		if (known === undefined) {
			this.shapes.set(title, shape);
			this.components[title] = schema;
			if (isParameter) this.withoutOwnDescription.add(title);
			return ref;
		}
		if (known !== shape) {
			throw new Error(
				`two different schemas are titled "${title}": give one of them another title (OpenAPI names a component by it)`,
			);
		}
		if (isParameter) return ref;
		if (this.withoutOwnDescription.delete(title)) this.components[title] = schema;
		const { description } = this.components[title];
		return schema.description === description || schema.description === undefined
			? ref
			: { ...ref, description: schema.description };
	}
}

/** The operations of a path item (its other fields are `parameters`, `summary`...). */
const METHODS = new Set(["get", "put", "post", "delete", "options", "head", "patch", "trace"]);

/** Names the schemas of every media type in `content` (of a request body, a response or a parameter). */
function nameContent(namer: SchemaNamer, content: unknown): void {
	if (!isNode(content)) return;
	for (const media of Object.values(content)) {
		if (isNode(media) && media.schema !== undefined) media.schema = namer.name(media.schema);
	}
}

function nameOperation(namer: SchemaNamer, operation: Node): void {
	if (Array.isArray(operation.parameters)) {
		for (const parameter of operation.parameters) {
			if (!isNode(parameter)) continue;
			if (parameter.schema !== undefined) parameter.schema = namer.name(parameter.schema, true);
			nameContent(namer, parameter.content);
		}
	}
	if (isNode(operation.requestBody)) nameContent(namer, operation.requestBody.content);
	if (!isNode(operation.responses)) return;
	for (const response of Object.values(operation.responses)) {
		if (!isNode(response)) continue;
		nameContent(namer, response.content);
		if (isNode(response.headers)) {
			for (const header of Object.values(response.headers)) {
				if (isNode(header) && header.schema !== undefined) header.schema = namer.name(header.schema);
			}
		}
	}
}

/**
 * A response several operations give (after their schemas are named): an error response of
 * only a named schema, used by more than one operation, becomes `components/responses/<name>`.
 */
function shareResponses(document: Node): Record<string, Node> {
	const shared: Record<string, Node> = {};
	const uses = new Map<string, { name: string; response: Node; count: number }>();
	const operations = Object.values(isNode(document.paths) ? document.paths : {}).flatMap((item) =>
		isNode(item) ? Object.entries(item).filter(([method, op]) => METHODS.has(method) && isNode(op)) : [],
	);
	const sharable = (response: unknown): string | undefined => {
		if (
			!isNode(response) ||
			!isNode(response.content) ||
			Object.keys(response).some((k) => k !== "description" && k !== "content")
		) {
			return undefined;
		}
		const media = Object.values(response.content);
		if (media.length !== 1 || !isNode(media[0]) || Object.keys(media[0]).length !== 1) return undefined;
		const schema = media[0].schema;
		if (!isNode(schema) || Object.keys(schema).length !== 1 || typeof schema.$ref !== "string") return undefined;
		return schema.$ref.startsWith(SCHEMAS_PREFIX) ? schema.$ref.slice(SCHEMAS_PREFIX.length) : undefined;
	};
	for (const [, operation] of operations) {
		for (const [code, response] of Object.entries((operation as Node).responses as Node)) {
			if (!/^[45]XX$/.test(code)) continue;
			const name = sharable(response);
			if (!name) continue;
			const key = JSON.stringify(response);
			const use = uses.get(key) ?? { name, response: response as Node, count: 0 };
			use.count++;
			uses.set(key, use);
		}
	}
	const refs = new Map<string, string>();
	for (const [key, use] of uses) {
		if (use.count < 2 || shared[use.name]) continue;
		shared[use.name] = use.response;
		refs.set(key, `#/components/responses/${use.name}`);
	}
	for (const [, operation] of operations) {
		const responses = (operation as Node).responses as Node;
		for (const [code, response] of Object.entries(responses)) {
			const ref = /^[45]XX$/.test(code) ? refs.get(JSON.stringify(response)) : undefined;
			if (ref) responses[code] = { $ref: ref };
		}
	}
	return shared;
}

/** Sorted by name, so that the document lists its components as a reader looks them up. */
function sortedByName<T>(entries: Record<string, T>): Record<string, T> {
	return Object.fromEntries(Object.entries(entries).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)));
}

/**
 * Moves every titled schema of `document` (an OpenAPI 3.1 document as @fastify/swagger renders
 * it) into `components/schemas` and the shared error responses into `components/responses`,
 * referencing them; changes `document` in place.
 */
export function nameSharedSchemas(document: Node): void {
	const namer = new SchemaNamer();
	for (const item of Object.values(isNode(document.paths) ? document.paths : {})) {
		if (!isNode(item)) continue;
		for (const [method, operation] of Object.entries(item)) {
			if (METHODS.has(method) && isNode(operation)) nameOperation(namer, operation);
		}
	}
	const components: Node = isNode(document.components) ? document.components : {};
	const existing = isNode(components.schemas) ? components.schemas : {};
	for (const name of Object.keys(namer.components)) {
		if (name in existing) throw new Error(`components/schemas/${name} is defined twice`);
	}
	const responses = shareResponses(document);
	components.schemas = sortedByName({ ...existing, ...namer.components });
	if (Object.keys(responses).length > 0) components.responses = sortedByName(responses);
	document.components = components;
}
