/**
 * OpenAPI for the HTTP API, generated from the route schemas by @fastify/swagger, and served at
 * `GET /openapi.json`. `openapi.yaml` at the repository root is this document as YAML
 * (`npm run openapi` rewrites it; a test fails when it is stale).
 *
 * Register {@link openApiPlugin} before the routes (it collects them through an `onRoute` hook).
 * The document is generated on its first request, by @fastify/swagger on a scratch Fastify
 * instance given the same routes, and kept: a server nobody asks for it never renders it, nor
 * loads @fastify/swagger and the JSON-schema libraries it brings.
 * Routes need no OpenAPI-specific fields: the `transform` here derives each operation's tag from
 * its URL and marks every operation not declared open (`config: { public: true }`) as needing
 * the bearer key. A schema with a `title` (or an `$id`) is written once under
 * `components/schemas` and referenced where it is used (openapi-components.ts).
 */
import { STATUS_CODES } from "node:http";
import type { SwaggerOptions } from "@fastify/swagger";
import type { FastifyInstance, RouteOptions } from "fastify";
import fp from "fastify-plugin";
import { packageVersion } from "../config/package-version.js";
import { idsToTitles, nameSharedSchemas } from "./openapi-components.js";
import { OPENAPI_PLUGIN } from "./plugins.js";

declare module "fastify" {
	interface FastifyInstance {
		/** The OpenAPI document of this app's routes (after `ready()`), generated on the first call and kept. */
		openApiDocument(): Promise<Record<string, unknown>>;
	}
}

/** Operation tags, in the order the document lists them. */
export const OPENAPI_TAGS = [
	{ name: "sessions", description: "Create, inspect, configure and delete sessions." },
	{ name: "runs", description: "Prompt, continue, steer, follow up, abort: the session's agent runs and queues." },
	{ name: "events", description: "The session's resumable Server-Sent Events stream." },
	{ name: "messages", description: "The session transcript." },
	{ name: "catalog", description: "Models and tools the server offers." },
	{ name: "usage", description: "Tokens and cost the caller's API key spent, and its budget." },
	{
		name: "auth",
		description: "Client tokens: short-lived credentials for one session and a few scopes, for browsers.",
	},
	{
		name: "openai",
		description:
			"OpenAI-compatible Chat Completions and Responses over sessions (`baseURL` …/openai/v1); errors in OpenAI's shape.",
	},
	{
		name: "agui",
		description:
			"AG-UI (`HttpAgent` `url` …/agui/v1/run): a thread is a session; runs as AG-UI events, and a catch-up stream per thread.",
	},
	{
		name: "pi",
		description:
			"The endpoint of pi's `streamProxy` (`@mariozechner/pi-agent-core`): one model call on the server's model and keys; errors as `{ error, code }`.",
	},
	{ name: "health", description: "Liveness, readiness and this document." },
] as const;

function tagFor(url: string): string {
	if (!url.startsWith("/v1/")) return "health";
	if (url.startsWith("/v1/models") || url.startsWith("/v1/tools")) return "catalog";
	if (url.endsWith("/events")) return "events";
	if (url.endsWith("/messages")) return "messages";
	if (/\/(prompt|continue|steer|follow-up|abort|queue)$/.test(url)) return "runs";
	return "sessions";
}

/**
 * Gives each response without a description its HTTP status text (instead of swagger's "Default
 * Response"), as the response's description only: the schema stays as it is, so a named schema
 * keeps one shape at every use.
 */
function describeResponses(responses: object): Record<string, unknown> {
	const out: Record<string, unknown> = {};
	for (const [code, schema] of Object.entries(responses)) {
		const described = schema && typeof schema === "object" && "description" in schema;
		out[code] = described ? schema : { ...schema, "x-response-description": STATUS_CODES[code] ?? `HTTP ${code}` };
	}
	return out;
}

/** `POST /v1/sessions/:id/steer` → `postSessionByIdSteer`: stable and unique per method and path. */
function operationIdFor(method: string, url: string): string {
	const words = url
		.split("/")
		.filter((part) => part !== "" && part !== "v1")
		.map((part) => (part.startsWith(":") || part.startsWith("{") ? "ById" : part))
		.flatMap((part) => part.split(/[^A-Za-z0-9]+/))
		.filter(Boolean)
		.map((part) => part[0].toUpperCase() + part.slice(1));
	return method.toLowerCase() + words.join("");
}

/** @fastify/swagger's options: OpenAPI 3.1, the bearer security scheme, tags, and each operation's tag, id and security. */
const SWAGGER_OPTIONS: SwaggerOptions = {
	openapi: {
		openapi: "3.1.0",
		info: {
			title: "Wheelhouse",
			version: packageVersion(),
			description:
				"HTTP/SSE agent server: sessions each owning an agent; runs stream AgentEvents as resumable " +
				"Server-Sent Events (per-session integer ids, `Last-Event-ID` resume); steering and follow-up queues. " +
				"When the server has API keys or JWT auth configured, every operation marked with `bearerAuth` or `jwtAuth` needs " +
				"`Authorization: Bearer <key or token>` (one of them); the event stream also opens with a stream token or a client " +
				"token in `?token=`. A caller sees only its own sessions and those shared with its tenant (404 for the rest).",
			license: { name: "MIT", identifier: "MIT" },
		},
		components: {
			securitySchemes: {
				bearerAuth: {
					type: "http",
					scheme: "bearer",
					description:
						"One of the keys in WHEELHOUSE_API_KEYS (only enforced when keys or JWT auth are configured), or a client token (`whct_...`) from POST /v1/tokens, which opens only its session's routes of its scopes.",
				},
				jwtAuth: {
					type: "http",
					scheme: "bearer",
					bearerFormat: "JWT",
					description:
						"A JWT of the identity provider configured in `auth.jwt` (issuer, audience, signed with a key of its JWKS, unexpired, with the required scopes). Its subject and tenant claims say who owns the sessions it creates.",
				},
			},
		},
		tags: OPENAPI_TAGS.map((tag) => ({ ...tag })),
	},
	transform: function tagAndSecure({ schema, url, route }) {
		const out: Record<string, unknown> = { ...(schema as Record<string, unknown> | undefined) };
		if (!out.tags) out.tags = [tagFor(url)];
		const method = Array.isArray(route.method) ? route.method[0] : route.method;
		if (!out.operationId) out.operationId = operationIdFor(method, url);
		// The same declaration the auth hook reads: every route that is not declared open needs a key.
		if (route.config?.public !== true && !out.security) out.security = [{ bearerAuth: [] }, { jwtAuth: [] }];
		if (out.response && typeof out.response === "object") out.response = describeResponses(out.response);
		return { schema: out as typeof schema, url };
	},
};

/** Accepts anything: the scratch instance only describes the routes, it never serves them. */
const acceptAll = () => () => true;
const serializeAsJson = () => (data: unknown) => JSON.stringify(data);
const noHandler = () => undefined;

/** The document of `routes`, by @fastify/swagger on a scratch instance (no validators or serializers compiled). */
async function renderDocument(routes: RouteOptions[]): Promise<Record<string, unknown>> {
	const [{ default: Fastify }, { default: fastifySwagger }] = await Promise.all([
		import("fastify"),
		import("@fastify/swagger"),
	]);
	const scratch = Fastify({ logger: false, exposeHeadRoutes: false });
	try {
		scratch.setValidatorCompiler(acceptAll);
		scratch.setSerializerCompiler(serializeAsJson);
		await scratch.register(fastifySwagger, SWAGGER_OPTIONS);
		for (const route of routes) {
			scratch.route({
				method: route.method,
				url: route.url,
				schema: idsToTitles(route.schema) as RouteOptions["schema"],
				config: route.config,
				handler: noHandler,
			});
		}
		await scratch.ready();
		const document = scratch.swagger() as unknown as Record<string, unknown>;
		nameSharedSchemas(document);
		return document;
	} finally {
		await scratch.close();
	}
}

/**
 * Collects the routes of the instance it is registered on (every route, as it skips encapsulation
 * as a `fastify-plugin`), decorates `openApiDocument()`, and registers `GET /openapi.json`.
 */
export const openApiPlugin = fp(collectOpenApi, { name: OPENAPI_PLUGIN, fastify: "5.x" });

async function collectOpenApi(app: FastifyInstance): Promise<void> {
	const routes: RouteOptions[] = [];
	app.addHook("onRoute", function collectForOpenApi(route) {
		// The HEAD twins Fastify adds to GET routes are not documented (swagger's default).
		if (route.method !== "HEAD") routes.push(route);
	});
	let document: Promise<Record<string, unknown>> | undefined;
	app.decorate("openApiDocument", function openApiDocument() {
		if (!document) {
			document = renderDocument(routes);
			document.catch(() => {
				document = undefined; // a failure is not kept: the next request tries again
			});
		}
		return document;
	});
	app.get(
		"/openapi.json",
		{
			config: { public: true },
			schema: {
				summary: "This OpenAPI document (JSON).",
				response: {
					200: { description: "The OpenAPI 3.1 document.", type: "object", additionalProperties: true },
				},
			},
		},
		async function serveOpenApi(_request, reply) {
			// Sent pre-serialised: the response schema above is for the document, not for the serializer.
			return reply.type("application/json; charset=utf-8").send(JSON.stringify(await app.openApiDocument()));
		},
	);
}

/**
 * The document as YAML, exactly as `openapi.yaml` holds it (the app must be `ready()`). The YAML
 * library is loaded here, by the generator, never by a running server.
 */
export async function openApiYaml(app: FastifyInstance): Promise<string> {
	const { stringify } = await import("yaml");
	// Without YAML anchors/aliases for shared schema objects: some OpenAPI tools do not resolve them.
	return stringify(await app.openApiDocument(), { aliasDuplicateObjects: false, lineWidth: 0 });
}
