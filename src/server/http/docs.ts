/**
 * Serves the API reference at `/docs`: Swagger UI (@fastify/swagger-ui) rendering this server's
 * OpenAPI document (openapi.ts), with "Try it out" against the same server.
 *
 * The page and its assets are open without an API key (`config: { public: true }`), like the
 * playground: they hold no data; the API calls made from the page carry the key given to its
 * Authorize button (the document's `bearerAuth` scheme). The routes are left out of the OpenAPI
 * document (not part of the API).
 *
 * What the plugin's routes serve:
 * - `/docs`, `/docs/`: the page; `/docs/static/*`: the files of Swagger UI's own `static` folder
 *   (scripts, styles, icons; the files are fixed by the installed package).
 * - `/docs/json` (what the page loads) and `/docs/yaml`: the same document as `/openapi.json`,
 *   from `app.openApiDocument()`, so a server nobody asks still never renders it.
 * - `/docs/static/index.html`: a redirect to `/docs/` (a fixed target, not built from the request).
 *
 * The routes get a strict Content-Security-Policy: scripts, styles and connections from this
 * origin only, no inline script or style (Swagger UI sets styles through the DOM, which the policy
 * allows), images also as `data:` URLs (its icons and logo), no frames, no plugins, no forms.
 */
import type { FastifyInstance, FastifyPluginAsync, RouteOptions } from "fastify";
import fp from "fastify-plugin";
import { openApiYaml } from "./openapi.js";
import { OPENAPI_PLUGIN } from "./plugins.js";

/** The URL prefix of the page and its assets. */
export const DOCS_PREFIX = "/docs";

/** The policy of every `/docs` response. */
export const DOCS_CSP = [
	"default-src 'self'",
	"script-src 'self'",
	"style-src 'self'",
	"img-src 'self' data:",
	"connect-src 'self'",
	"font-src 'self'",
	"object-src 'none'",
	"base-uri 'none'",
	"form-action 'none'",
	"frame-ancestors 'none'",
].join("; ");

/**
 * The `/docs` routes. Swagger UI's plugin declares a dependency on `@fastify/swagger` and would
 * read the document through its `swagger()` decorator; this app renders the document itself, on
 * demand (openapi.ts), so the routes that serve the document get handlers that ask
 * `openApiDocument()` instead, and the dependency is met by a stand-in that says so if called.
 */
export const docsRoutes: FastifyPluginAsync = fp(serveDocs, {
	name: "wheelhouse-docs",
	fastify: "5.x",
	// Its own context: Swagger UI's routes and the stand-in below stay inside it.
	encapsulate: true,
	dependencies: [OPENAPI_PLUGIN],
	decorators: { fastify: ["openApiDocument"] },
});

async function serveDocs(app: FastifyInstance): Promise<void> {
	const { default: swaggerUi } = await import("@fastify/swagger-ui");

	app.addHook("onRoute", function openDocsRoute(route: RouteOptions) {
		route.config = { ...(route.config as object), public: true };
		route.logLevel = "warn";
		const url = route.url;
		if (url === `${DOCS_PREFIX}/json`) {
			route.handler = async function docsJson(_request, reply) {
				return reply.type("application/json; charset=utf-8").send(JSON.stringify(await app.openApiDocument()));
			};
		} else if (url === `${DOCS_PREFIX}/yaml`) {
			route.handler = async function docsYaml(_request, reply) {
				return reply.type("application/yaml; charset=utf-8").send(await openApiYaml(app));
			};
		} else if (url === `${DOCS_PREFIX}/static/index.html`) {
			route.handler = async function docsIndexRedirect(_request, reply) {
				return reply.redirect(`${DOCS_PREFIX}/`);
			};
		}
	});
	app.addHook("onSend", function docsHeaders(_request, reply, payload, done) {
		reply.header("x-content-type-options", "nosniff").header("referrer-policy", "no-referrer");
		done(null, payload);
	});

	await app.register(documentFromOpenApi);
	await app.register(swaggerUi, {
		routePrefix: DOCS_PREFIX,
		staticCSP: DOCS_CSP,
		theme: { title: "Wheelhouse API" },
		// BaseLayout: without the top bar, whose Swagger logo carries an inline <style> (the CSP
		// refuses it) and whose "Explore" box loads other documents (the CSP refuses those too).
		uiConfig: { layout: "BaseLayout", deepLinking: true, tryItOutEnabled: false, persistAuthorization: false },
		// No badge from validator.swagger.io (the page calls no other origin).
		validatorUrl: false,
	});
}

/** The stand-in for `@fastify/swagger` in the `/docs` context (see `docsRoutes`). */
// Not encapsulated, under the name Swagger UI depends on: the decorator stays in the /docs context.
const documentFromOpenApi = fp(
	async function swaggerStandIn(app: FastifyInstance): Promise<void> {
		app.decorate("swagger", function swagger(): never {
			throw new Error("the /docs routes serve app.openApiDocument(); swagger() is not used");
		});
	},
	{ name: "@fastify/swagger", fastify: "5.x" },
);
