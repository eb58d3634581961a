/**
 * Serves `GET /metrics` (the Prometheus text format) of one app: on the main port, or, with
 * `WHEELHOUSE_METRICS_PORT`, on a second listener of its own that starts when the app is ready and
 * closes with it (and `/metrics` is then not on the main port). Either way it needs the operator
 * credential `WHEELHOUSE_METRICS_TOKEN`, never an API key (what it shows spans every key), unless
 * `WHEELHOUSE_METRICS_AUTH` is `none` (see auth.ts for when no credential is configured).
 */
import Fastify, { type FastifyBaseLogger, type FastifyInstance, type RouteShorthandOptions } from "fastify";
import { ConfigError, type ServerConfig } from "../config/config.js";
import { hasJwtAuth } from "../config/identity.js";
import { installAuth } from "../http/auth.js";
import { installErrorHandling } from "../http/error-handler.js";
import { FASTIFY_LISTEN_TEXT } from "../http/listen.js";
import { requestIdOf } from "../http/request-id.js";
import type { ServerMetrics } from "./metrics.js";

function routeOptions(config: ServerConfig): RouteShorthandOptions {
	return {
		// Scraped every few seconds: logged from `warn` only, like the health probes.
		logLevel: "warn",
		config: config.metricsAuth === "none" ? { public: true } : { operator: true },
		schema: {
			tags: ["health"],
			summary: "Prometheus metrics",
			description:
				"The server's metrics in the Prometheus text format (see the metrics table in docs/operations.md). Needs the operator credential (`Authorization: Bearer <WHEELHOUSE_METRICS_TOKEN>`; an API key gets 403) unless `WHEELHOUSE_METRICS_AUTH=none`; absent when `WHEELHOUSE_METRICS=off` or when `WHEELHOUSE_METRICS_PORT` serves it on its own port.",
			produces: ["text/plain"],
			response: {
				200: { description: "Prometheus text exposition format (version 0.0.4).", type: "string" },
			},
		},
	};
}

/** Adds `GET /metrics` to `app`, or sets up the separate listener that serves it. */
export function installMetricsEndpoint(app: FastifyInstance, metrics: ServerMetrics, config: ServerConfig): void {
	checkMetricsToken(config);
	if (
		config.metricsAuth === "token" &&
		!config.metricsToken &&
		(config.apiKeys.length > 0 || hasJwtAuth(config.authConfig))
	) {
		app.log.warn(
			"metrics: /metrics refuses every request (API keys or JWT auth are set, WHEELHOUSE_METRICS_TOKEN is not): set it to scrape, with `Authorization: Bearer <token>`",
		);
	}
	const handler = async function scrapeMetrics(
		_request: unknown,
		reply: { type(contentType: string): unknown },
	): Promise<string> {
		reply.type(metrics.registry.contentType);
		return metrics.scrape();
	};
	if (config.metricsPort === 0) {
		app.get("/metrics", routeOptions(config), handler);
		return;
	}
	const listener = buildListener(app.log, config);
	listener.get("/metrics", routeOptions(config), handler);
	app.addHook("onReady", async function listenForMetrics() {
		const address = await listener.listen({
			port: config.metricsPort,
			host: config.host,
			listenTextResolver: () => FASTIFY_LISTEN_TEXT,
		});
		app.log.info(`metrics on ${address}/metrics`);
	});
	app.addHook("onClose", async function closeMetricsListener() {
		await listener.close();
	});
}

/** The second listener: only `/metrics`, with the same auth, request ids and error envelope as the app. */
function buildListener(log: FastifyBaseLogger, config: ServerConfig): FastifyInstance {
	const listener = Fastify({
		loggerInstance: log.child({ listener: "metrics" }),
		genReqId: requestIdOf,
		forceCloseConnections: true,
		http: { requireHostHeader: false },
	}) as unknown as FastifyInstance;
	installErrorHandling(listener);
	listener.addHook("onRequest", async function exposeRequestId(request, reply) {
		reply.header("x-request-id", request.id);
	});
	installAuth(listener, {
		apiKeys: config.apiKeys,
		streamTokenTtlMs: config.streamTokenTtlMs,
		operatorToken: config.metricsToken,
	});
	return listener;
}

/**
 * The operator credential: long enough not to be guessed, one bearer token (no whitespace), and
 * opening nothing but `/metrics` (not also an API key). Messages never print it.
 */
function checkMetricsToken(config: ServerConfig): void {
	const token = config.metricsToken;
	if (token && (token.length < 16 || /\s/.test(token))) {
		throw new ConfigError(
			"WHEELHOUSE_METRICS_TOKEN",
			`must be at least 16 characters without whitespace (got ${token.length} characters); e.g. \`openssl rand -hex 24\``,
		);
	}
	if (token && config.apiKeys.includes(token)) {
		throw new ConfigError(
			"WHEELHOUSE_METRICS_TOKEN",
			"is also one of WHEELHOUSE_API_KEYS: give the operator credential a value of its own (e.g. `openssl rand -hex 24`)",
		);
	}
}
