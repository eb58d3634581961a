/**
 * Response serializers compiled on a route's first response instead of at startup. Fastify compiles
 * a fast-json-stringify function for every response schema of every route (each status code, each
 * content type) when the app gets ready: generated code for ~100 routes × their error statuses,
 * most of which a given deployment never answers. Compiling on first use keeps that code out of
 * an idle server; each route pays once, on its first answer with that status. The serializers
 * are Fastify's own (the same compiler and options), only later, and compiled from the schema as
 * serialization-schema.ts rewrites it: unions of primitive types or literals become `type` lists,
 * so that writing them does not validate each value against each branch. The JSON is the same.
 * Schemas with a `$ref` into a union are compiled as declared.
 *
 * Trade-off: a response schema fast-json-stringify cannot compile fails on the first response
 * that uses it (a 500) instead of at startup; the route tests answer every status they declare.
 */
import SerializerSelector from "@fastify/fast-json-stringify-compiler";
import { forSerialization, refersIntoUnion, sharedForSerialization } from "./serialization-schema.js";

type SerializerFactory = ReturnType<typeof SerializerSelector>;

/** For Fastify's `schemaController.compilersFactory.buildSerializer`: Fastify's factory, compiling lazily. */
export const lazySerializerFactory: SerializerFactory = (externalSchemas, options) => {
	const asDeclared = SerializerSelector()(externalSchemas, options);
	// A `$ref` into a union (in a shared schema or in the route's) needs the schemas as declared.
	const rewritten = refersIntoUnion(externalSchemas)
		? undefined
		: SerializerSelector()(sharedForSerialization(externalSchemas), options);
	function compile(route: Parameters<typeof asDeclared>[0]) {
		if (!rewritten || refersIntoUnion(route.schema)) return asDeclared(route);
		return rewritten({ ...route, schema: forSerialization(route.schema) });
	}
	return (route) => {
		let serialize: ((doc: unknown) => string) | undefined;
		return function serializeOnFirstUse(doc: unknown): string {
			serialize ??= compile(route);
			return serialize(doc);
		};
	};
};
