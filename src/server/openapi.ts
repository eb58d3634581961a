/**
 * OpenAPI for the HTTP API, generated from the route schemas by @fastify/swagger, and served at
 * `GET /openapi.json`. `openapi.yaml` at the repository root is this document as YAML
 * (`npm run openapi` rewrites it; a test fails when it is stale).
 *
 * Register {@link openApiPlugin} before the routes (it collects them through an `onRoute` hook).
 * Routes need no OpenAPI-specific fields: the `transform` here derives each operation's tag from
 * its URL and marks every operation not declared open (`config: { public: true }`) as needing
 * the bearer key.
 */
import { readFileSync } from "node:fs";
import { STATUS_CODES } from "node:http";
import fastifySwagger from "@fastify/swagger";
import type { FastifyInstance } from "fastify";

/** Operation tags, in the order the document lists them. */
export const OPENAPI_TAGS = [
	{ name: "sessions", description: "Create, inspect, configure and delete sessions." },
	{ name: "runs", description: "Prompt, continue, steer, follow up, abort: the session's agent runs and queues." },
	{ name: "events", description: "The session's resumable Server-Sent Events stream." },
	{ name: "messages", description: "The session transcript." },
	{ name: "catalog", description: "Models and tools the server offers." },
	{ name: "usage", description: "Tokens and cost the caller's API key spent, and its budget." },
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

/** Gives each response without a description its HTTP status text (instead of swagger's "Default Response"). */
function describeResponses(responses: object): Record<string, unknown> {
	const out: Record<string, unknown> = {};
	for (const [code, schema] of Object.entries(responses)) {
		const described = schema && typeof schema === "object" && "description" in schema;
		out[code] = described ? schema : { ...schema, description: STATUS_CODES[code] ?? `HTTP ${code}` };
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

function packageVersion(): string {
	try {
		// src/server/openapi.ts and dist/server/openapi.js both sit two folders below the package root.
		const pkg = JSON.parse(readFileSync(new URL("../../package.json", import.meta.url), "utf8"));
		return String(pkg.version);
	} catch {
		return "0.0.0";
	}
}

/**
 * Registers @fastify/swagger (OpenAPI 3.1, bearer security scheme, tags) on the instance it is
 * registered on, and `GET /openapi.json`. It skips encapsulation (like `fastify-plugin`) so the
 * `swagger()` decorator and the route collection cover the whole app.
 */
export async function openApiPlugin(app: FastifyInstance): Promise<void> {
	await app.register(fastifySwagger, {
		openapi: {
			openapi: "3.1.0",
			info: {
				title: "Wheelhouse",
				version: packageVersion(),
				description:
					"HTTP/SSE agent server: sessions each owning an agent; runs stream AgentEvents as resumable " +
					"Server-Sent Events (per-session integer ids, `Last-Event-ID` resume); steering and follow-up queues. " +
					"When the server has API keys configured, every operation marked with `bearerAuth` needs `Authorization: Bearer <key>` " +
					"(the event stream also opens with a stream token in `?token=`).",
				license: { name: "MIT", identifier: "MIT" },
			},
			components: {
				securitySchemes: {
					bearerAuth: {
						type: "http",
						scheme: "bearer",
						description: "One of the keys in WHEELHOUSE_API_KEYS (only enforced when keys are configured).",
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
			if (route.config?.public !== true && !out.security) out.security = [{ bearerAuth: [] }];
			if (out.response && typeof out.response === "object") out.response = describeResponses(out.response);
			return { schema: out as typeof schema, url };
		},
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
		function serveOpenApi(_request, reply) {
			// Sent pre-serialised: the response schema above is for the document, not for the serializer.
			reply.type("application/json; charset=utf-8").send(JSON.stringify(app.swagger()));
		},
	);
}
(openApiPlugin as unknown as Record<symbol, boolean>)[Symbol.for("skip-override")] = true;
(openApiPlugin as unknown as Record<symbol, string>)[Symbol.for("fastify.display-name")] = "wheelhouse-openapi";

/**
 * The document as YAML, exactly as `openapi.yaml` holds it (the app must be `ready()`). The YAML
 * library is loaded here, by the generator, never by a running server.
 */
export async function openApiYaml(app: FastifyInstance): Promise<string> {
	const { stringify } = await import("yaml");
	// Without YAML anchors/aliases for shared schema objects: some OpenAPI tools do not resolve them.
	return stringify(app.swagger(), { aliasDuplicateObjects: false, lineWidth: 0 });
}
