/**
 * How the app's plugins say what they need: the foundation plugins (the server context, auth, the
 * OpenAPI collector) are named `fastify-plugin`s, and every route plugin and facade declares the
 * ones it depends on and the decorators it reads. Fastify checks both when the plugin is
 * registered and refuses to start, naming what is missing, instead of a route failing on its first
 * request because `app.ts` registered things in another order.
 */
import type { FastifyInstance, FastifyPluginAsync } from "fastify";
import fp from "fastify-plugin";
import type { ServerContext } from "./context.js";

/** Decorates `app.wheelhouse`, the runtime pieces every route reads. */
export const CONTEXT_PLUGIN = "wheelhouse-context";
/** Installs the auth hook and decorates `request.ownerId` / `request.principal` (auth.ts). */
export const AUTH_PLUGIN = "wheelhouse-auth";
/** Collects every route for the OpenAPI document and decorates `openApiDocument()` (openapi.ts). */
export const OPENAPI_PLUGIN = "wheelhouse-openapi";

/** The server context as a plugin: `app.wheelhouse` for everything registered after it. */
export const contextPlugin = fp(
	async function wheelhouseContext(app: FastifyInstance, options: { context: ServerContext }) {
		app.decorate("wheelhouse", options.context);
	},
	{ name: CONTEXT_PLUGIN, fastify: "5.x" },
);

/**
 * A route plugin that needs the server context and auth (every `/v1` route and facade): it stays
 * encapsulated (its hooks and decorators do not leak out, `prefix` applies), and Fastify refuses to
 * register it before the context and auth plugins. The plugin's type comes from the declaration it
 * is assigned to (its options, its type provider).
 */
export function routePlugin<P>(name: string, plugin: P): P {
	return fp(plugin as FastifyPluginAsync, {
		name,
		fastify: "5.x",
		encapsulate: true,
		dependencies: [CONTEXT_PLUGIN, AUTH_PLUGIN],
		decorators: { fastify: ["wheelhouse"], request: ["ownerId", "principal"] },
	}) as P;
}
