/**
 * `buildApp(options)`: the Fastify instance of a Wheelhouse server, with every plugin registered
 * and nothing listening (`main.ts` listens; tests listen on port 0). One plugin per concern:
 * error handling, auth, CORS, OpenAPI, then the route plugins.
 *
 * Library use:
 *
 * ```ts
 * const app = await buildApp({ tools: [myTool], config: { apiKeys: ["..."] } });
 * await app.listen({ port: 3000 });
 * ```
 */
import { setTimeout as sleep } from "node:timers/promises";
import cors from "@fastify/cors";
import type { TypeBoxTypeProvider } from "@fastify/type-provider-typebox";
import type { TracerProvider } from "@opentelemetry/api";
import Fastify, { type FastifyInstance } from "fastify";
import type { LogFn } from "pino";
import type { AgentTool } from "../../agent/types.js";
import { getEnvApiKey } from "../../ai/env-keys.js";
import { getModels, getProviders } from "../../ai/models.js";
import type { Model } from "../../ai/types.js";
import { createMemoryStore } from "../../store/memory.js";
import type { SessionStore } from "../../store/types.js";
import { builtinTools } from "../../tools/builtin/index.js";
import { ClusterNode } from "../cluster/node.js";
import { followSessionEvents } from "../cluster/remote-stream.js";
import { resolveClusterSettings } from "../cluster/settings.js";
import { ConfigError, configWarnings, loadConfig, type ServerConfig } from "../config/config.js";
import { registerConfiguredModels } from "../config/custom-models.js";
import { redactSecrets } from "../config/redact.js";
import { A2aPushReporter, A2aPushRouter } from "../facades/a2a/push.js";
import { a2aFacade } from "../facades/a2a/routes.js";
import { aguiFacade } from "../facades/agui/routes.js";
import { mcpFacade } from "../facades/mcp/routes.js";
import { openaiFacade } from "../facades/openai/routes.js";
import { piProxyRoutes } from "../facades/pi-proxy/routes.js";
import { ProxyStreams } from "../facades/pi-proxy/streams.js";
import type { ServerMetrics } from "../observability/metrics.js";
import { installMetricsEndpoint } from "../observability/metrics-endpoint.js";
import { modelCallWatcher } from "../observability/model-call-metrics.js";
import type { ServerTracing } from "../observability/tracing/server-tracing.js";
import { type ExportSettings, tracingSettingsFrom } from "../observability/tracing/settings.js";
import { WebhookDispatcher } from "../observability/webhooks/dispatcher.js";
import { WebhookEvents } from "../observability/webhooks/events.js";
import { resolveOutboxSettings } from "../observability/webhooks/settings.js";
import { withWebhookDeliveries } from "../observability/webhooks/store.js";
import { keyBudgetsFrom } from "../runtime/budgets/config.js";
import { KeyBudgets } from "../runtime/budgets/key-budgets.js";
import { spentBudgetCheck } from "../runtime/budgets/spent.js";
import { TenantBudgets } from "../runtime/budgets/tenant-budgets.js";
import { compactionExtension } from "../runtime/compaction/extension.js";
import { registerEchoModel } from "../runtime/echo-model.js";
import { ModelCatalog } from "../runtime/model-catalog.js";
import { ownerIdOf } from "../runtime/owner-id.js";
import { checkProfileTools, profilesFrom } from "../runtime/profiles.js";
import { Admission } from "../runtime/session/admission.js";
import { contextLimitExtension } from "../runtime/session/context-limit.js";
import { resumeInterruptedSession } from "../runtime/session/interruption.js";
import type { SessionExtension } from "../runtime/session/live-session.js";
import { SessionManager, SHUTDOWN_ABORT_WAIT_MS } from "../runtime/session/manager.js";
import { RunSlots } from "../runtime/session/run-slots.js";
import { authPlugin, tenantsOf } from "./auth.js";
import { installBodyParser } from "./body-parser.js";
import { trackConnections } from "./connections.js";
import type { ServerContext } from "./context.js";
import { clientErrorHandler, frameworkErrors, installErrorHandling } from "./error-handler.js";
import { IdempotencyKeys } from "./idempotency.js";
import { clientTokenRoutes } from "./identity/routes.js";
import { resolveIdentitySettings } from "./identity/settings.js";
import { installSchedules } from "./install-schedules.js";
import { lazySerializerFactory } from "./lazy-serializers.js";
import { installRequestLimit, StreamSlots } from "./limits.js";
import { FASTIFY_LISTEN_TEXT } from "./listen.js";
import { openApiPlugin } from "./openapi.js";
import { contextPlugin } from "./plugins.js";
import { requestIdOf } from "./request-id.js";
import { serializeRequest } from "./request-log.js";
import { branchRoutes } from "./routes/branches.js";
import { catalogRoutes } from "./routes/catalog.js";
import { compactionRoutes } from "./routes/compaction.js";
import { eventRoutes } from "./routes/events.js";
import { healthRoutes } from "./routes/health.js";
import { messageRoutes } from "./routes/messages.js";
import { sessionRoutes } from "./routes/sessions.js";
import { streamTokenRoutes } from "./routes/stream-token.js";
import { usageRoutes } from "./routes/usage.js";
import { MAX_ID_LENGTH } from "./schemas.js";
import { WritePasses } from "./sse/write-passes.js";
import { registerTools } from "./tools-plugin.js";
import { installEmptyBodyDefault, validatorFactory } from "./validation.js";

export interface BuildAppOptions {
	/** Configuration values; missing ones come from the environment and defaults (`loadConfig`). */
	config?: Partial<ServerConfig>;
	/** Default: an in-memory store (main.ts passes the configured one). */
	store?: SessionStore;
	/** Extra server tools (library users); served next to the built-ins. */
	tools?: AgentTool<any>[];
	/** Serve the built-in `get_current_time` and `calculate` tools (default true). */
	builtinTools?: boolean;
	/** Models besides `faux/echo`. Default: every model of the provider registry (src/ai/models.ts). */
	models?: Model<any>[];
	/** Session extensions (tool hooks, per-session tools, state fields). */
	extensions?: SessionExtension[];
	/** Where each tool came from, by name (for `GET /v1/tools`); library tools default to `library`. */
	toolOrigins?: Record<string, string>;
	/** Where logs go (default stdout); tests pass a stream to inspect them. */
	logStream?: NodeJS.WritableStream;
	/** Environment to read config and provider keys from (default `process.env`). */
	env?: Record<string, string | undefined>;
	/**
	 * Folder of the built playground page. Default: dist/playground (see `defaultPlaygroundDir`);
	 * when there is none, the page is not served and a warning says how to build it.
	 */
	playgroundDir?: string;
	/**
	 * Where spans go: this tracer provider instead of the one the `OTEL_*` variables of `env`
	 * configure (tests pass one with an in-memory exporter). The caller owns it: the app does not
	 * shut it down.
	 */
	tracerProvider?: TracerProvider;
}

/** How long, after the streams ended at shutdown, connections may take to finish before they are cut. */
export const SHUTDOWN_FLUSH_MS = 1_000;

/**
 * The longest a close may take: the readiness delay, the grace period, the wait for aborted runs,
 * the flush, and a margin (at least Fastify's default of 10 s).
 */
function closeTimeoutMs(config: ServerConfig): number {
	return Math.max(
		10_000,
		config.shutdownDelayMs + config.shutdownGraceMs + SHUTDOWN_ABORT_WAIT_MS + SHUTDOWN_FLUSH_MS + 5_000,
	);
}

/** Log paths never written: credentials in headers and config. */
const REDACT = [
	"req.headers.authorization",
	'req.headers["x-api-key"]',
	"headers.authorization",
	"config.apiKeys",
	"config.providerKeys",
	"*.apiKey",
	"*.apiKeys",
];

/**
 * Where the logger writes: JSON lines (for collectors, the container, tests), or readable lines
 * for a person at a terminal. `auto` is readable only when the logs go to a terminal; pino-pretty
 * is loaded only then.
 */
async function logDestination(
	format: ServerConfig["logFormat"],
	stream: NodeJS.WritableStream | undefined,
): Promise<NodeJS.WritableStream | undefined> {
	const toTerminal = !stream && process.stdout.isTTY === true;
	if (format === "json" || (format === "auto" && !toTerminal)) return stream;
	const { default: pretty } = await import("pino-pretty");
	// Synchronous: main.ts exits right after its last line on shutdown and on startup errors.
	return pretty({
		destination: stream ?? 1,
		sync: true,
		colorize: toTerminal,
		translateTime: "SYS:HH:MM:ss.l",
		ignore: "pid,hostname",
		singleLine: true,
	});
}

/** pino's `logMethod` hook: every line but Fastify's listening text (see listen.ts). */
function dropFastifyListenText(this: unknown, args: Parameters<LogFn>, method: LogFn): void {
	if (args[0] === FASTIFY_LISTEN_TEXT) return;
	method.apply(this, args);
}

/** The startup line that says tracing is on: what is exported, where, and as which service. */
function describeTracing(settings: ExportSettings): string {
	const where = settings.exporters.map((kind) =>
		kind === "console"
			? "the console (stdout)"
			: `${redactSecrets(settings.endpoint) as string} (OTLP ${settings.protocol})`,
	);
	return `tracing on: spans of service "${settings.serviceName}" exported to ${where.join(" and ")}`;
}

/** A default model that cannot serve a session stops startup, naming the variable and the fix. */
function checkDefaultModel(catalog: ModelCatalog, spec: string): void {
	const problem = catalog.problem(spec);
	if (problem) throw new ConfigError("WHEELHOUSE_DEFAULT_MODEL", problem.message);
}

/** Metrics: every answered request counted, the store's commits timed, `/metrics` served. */
function installMetrics(app: FastifyInstance, metrics: ServerMetrics, config: ServerConfig, store: SessionStore): void {
	// A callback hook: no promise per request.
	app.addHook("onResponse", function countRequest(request, reply, done) {
		metrics.observeRequest(request, reply);
		done();
	});
	store.observeCommits?.((ms) => metrics.observeCommit(ms));
	app.addHook("onClose", async function stopObservingCommits() {
		store.observeCommits?.(undefined);
	});
	installMetricsEndpoint(app, metrics, config);
}

export async function buildApp(options: BuildAppOptions = {}): Promise<FastifyInstance> {
	const env = options.env ?? process.env;
	const config = loadConfig(env, options.config);
	const tracingSettings = tracingSettingsFrom(env);
	const logStream = await logDestination(config.logFormat, options.logStream);
	const app = Fastify({
		logger: {
			level: config.logLevel,
			redact: { paths: REDACT, censor: "[redacted]" },
			serializers: { req: serializeRequest },
			// Fastify's own "Server listening at" lines (one per interface): listen.ts writes one instead.
			hooks: { logMethod: dropFastifyListenText },
			...(logStream ? { stream: logStream } : {}),
		},
		bodyLimit: config.bodyLimit,
		// Request validators (validation.ts) and response serializers are compiled on each route's
		// first use, not all at startup.
		schemaController: {
			compilersFactory: { buildValidator: validatorFactory(), buildSerializer: lazySerializerFactory },
		},
		// The caller's `x-request-id` when usable (request-id.ts), else a new one.
		genReqId: requestIdOf,
		requestIdHeader: false,
		forceCloseConnections: false,
		// Errors the router and node's HTTP parser raise before any route runs: the envelope too.
		frameworkErrors,
		clientErrorHandler,
		routerOptions: { maxParamLength: MAX_ID_LENGTH },
		// Checked by a hook instead, so that the answer is the envelope (node's is an empty 400).
		http: { requireHostHeader: false },
		// While the server drains, requests reach the routes (with `Connection: close`, which Fastify
		// sets): /readyz says `shutting_down`, what would start work gets the `SHUTTING_DOWN`
		// envelope, and what helps a running run finish (an approval, a tool result, an abort) works.
		return503OnClosing: false,
		// Fastify's close, the drain included, runs in an onClose handler that avvio fails after
		// `pluginTimeout`: it must outlast the longest drain.
		pluginTimeout: closeTimeoutMs(config),
	}).withTypeProvider<TypeBoxTypeProvider>() as unknown as FastifyInstance;
	for (const warning of configWarnings(env, config)) app.log.warn({ variable: warning.variable }, warning.message);

	const store = options.store ?? createMemoryStore({ maxEventsPerSession: config.eventRetention });
	const echo = registerEchoModel({ delayMs: () => config.fauxDelayMs });
	const hasKey = (provider: string) => Boolean(config.providerKeys[provider] ?? getEnvApiKey(provider, env));
	registerConfiguredModels(config.models, env);
	const models = options.models ?? getProviders().flatMap((provider) => getModels(provider));
	const catalog = new ModelCatalog([echo, ...models], hasKey, config.defaultModel || undefined);
	if (config.defaultModel) checkDefaultModel(catalog, config.defaultModel);
	const profiles = profilesFrom(config.profiles, catalog);
	const keyBudgets = new KeyBudgets(keyBudgetsFrom(config.keyBudgets, config.apiKeys), store);

	const toolOrigins = new Map<string, string>();
	const tools: AgentTool<any>[] = [];
	if (options.builtinTools !== false) {
		for (const tool of builtinTools()) {
			tools.push(tool);
			toolOrigins.set(tool.name, "builtin");
		}
	}
	for (const tool of options.tools ?? []) {
		tools.push(tool);
		toolOrigins.set(tool.name, options.toolOrigins?.[tool.name] ?? "library");
	}

	// prom-client is loaded only when metrics are on.
	const metrics: ServerMetrics | undefined =
		config.metrics === "on"
			? new (await import("../observability/metrics.js")).ServerMetrics({
					liveSessions: () => sessions.liveSessions(),
					isServerTool: (name) => sessions.tools.has(name),
				})
			: undefined;
	// The tracing modules, and the SDK with them, are loaded only when tracing is on.
	const tracing: ServerTracing | undefined =
		options.tracerProvider || tracingSettings.export
			? await (await import("../observability/tracing/server-tracing.js")).ServerTracing.start(
					tracingSettings,
					options.tracerProvider,
					(failure, message) => app.log.warn({ tracing: failure }, message),
				)
			: undefined;
	if (tracing && tracingSettings.export && !options.tracerProvider) {
		const { exporters, protocol, serviceName } = tracingSettings.export;
		const endpoint = redactSecrets(tracingSettings.export.endpoint) as string;
		app.log.info(
			{ tracing: { exporters, serviceName, ...(exporters.includes("otlp") ? { endpoint, protocol } : {}) } },
			describeTracing(tracingSettings.export),
		);
	}
	if (tracing) {
		// Registered first, so it runs last: after the drain has ended every run and its spans.
		app.addHook("onClose", async function flushSpans() {
			const err = await tracing.shutdown();
			if (err) app.log.warn({ err }, "tracing: the last spans could not be exported");
		});
	}
	const getApiKey = (provider: string) => config.providerKeys[provider] ?? getEnvApiKey(provider, env);
	// Who may call, and the tenant of each caller (loadConfig checked the section already).
	const identity = resolveIdentitySettings(config.authConfig, config.apiKeys, "auth", env);
	const tenants = tenantsOf(identity);
	const tenantBudgets = new TenantBudgets(identity.tenantBudgets, store);
	const perTenant = identity.maxRunsPerTenant
		? { max: identity.maxRunsPerTenant, tenantOf: (ownerId: string) => tenants.of(ownerId) }
		: undefined;
	const runSlots =
		config.maxRunsPerKey > 0 || perTenant
			? new RunSlots(config.maxRunsPerKey, () => metrics?.countLimited("runs"), perTenant)
			: undefined;
	// Webhooks: run ends and pending interactions put their deliveries in the outbox with them.
	// The outbox is always delivered: A2A push notifications go through it with no endpoint configured.
	const outboxSettings = resolveOutboxSettings(config, env);
	const webhookSettings = outboxSettings.endpoints.length > 0 ? outboxSettings : undefined;
	// Whether a run may be an A2A task: from the stored metadata of the session running it.
	const a2aPush = new A2aPushReporter((id) => sessions.inMemory(id)?.config.metadata);
	const dispatcher = new WebhookDispatcher({
		store,
		settings: outboxSettings,
		logger: app.log,
		metrics,
		routers: [new A2aPushRouter(store)],
	});
	// Cluster mode: live events and control messages between replicas over Redis.
	const clusterSettings = resolveClusterSettings(config);
	const cluster =
		clusterSettings &&
		new ClusterNode(clusterSettings, store, app.log, config.heartbeatMs > 0 ? config.heartbeatMs : 15_000);
	const sessions: SessionManager = new SessionManager({
		store: withWebhookDeliveries(
			store,
			// Who ran what: the owner of the session in memory (the one a run ends or waits in).
			new WebhookEvents(outboxSettings, (id) => sessions.inMemory(id)?.sharing),
			() => dispatcher.wake(),
			a2aPush,
		),
		logger: app.log,
		resolveModel: (spec) => catalog.resolve(spec),
		modelProblem: (spec) => catalog.problem(spec),
		defaultModel: catalog.defaultModel,
		tools,
		getApiKey,
		providerIdleTimeoutMs: config.providerIdleTimeoutMs,
		maxSessions: config.maxSessions,
		maxQueuedMessages: config.maxQueuedMessages,
		// 0: a quarter of the server's, so that one key leaves room for others.
		maxSessionsPerKey: config.maxSessionsPerKey || Math.max(1, Math.floor(config.maxSessions / 4)),
		maxQueuedBytes: config.maxQueuedBytes,
		maxQueuedBytesPerKey: config.maxQueuedBytesPerKey,
		idleSessionBytes: config.idleSessionBytes,
		sessionTtlMs: config.sessionTtlMs,
		sessionDeleteAfterMs: config.sessionDeleteAfterMs,
		runSlots,
		tenantOf: (ownerId) => tenants.of(ownerId),
		fanOut: cluster?.publisher.observer,
		sharedStore: cluster !== undefined,
		...(cluster ? { releaseLease: (id: string) => cluster.releaseLease(id) } : {}),
	});
	if (metrics) sessions.addExtension(metrics.extension);
	// Fair admission: prompts past a run limit wait in the store's queue instead of a 429.
	const admission =
		identity.admission === "queue" && runSlots && store.admission
			? new Admission({
					store: store.admission,
					sessions: {
						open: (id, ownerId) => sessions.open(id, ownerId),
						publishQueued: async (id, payload) => {
							(await sessions.load(id, null)).publish("run_queued", payload);
						},
						get isShuttingDown() {
							return sessions.isShuttingDown;
						},
					},
					limits: { perTenant: identity.maxRunsPerTenant ?? 0, perKey: config.maxRunsPerKey },
					tenantOf: (ownerId) => tenants.of(ownerId),
					checkBudgets: spentBudgetCheck(keyBudgets, tenantBudgets),
					logger: app.log,
					shared: cluster !== undefined,
					waitMs: identity.admissionTimeoutMs,
				})
			: undefined;
	if (admission) {
		app.addHook("onReady", async function startAdmission() {
			await admission.start();
		});
		// Before the drain: no waiting run starts once shutdown began; waiting ones stay stored.
		app.addHook("preClose", async function stopAdmission() {
			admission.stop();
		});
	}
	// Model calls that are no turn of a run (summaries, pi's proxy) go to the same metrics.
	const watchModelCall = modelCallWatcher(metrics?.extension);
	// Its layer of each session's model calls sits inside the budget/compaction layer whatever the
	// order here (`session/model-calls.ts`): every call that reaches a provider is a span (an overflow retry too).
	if (tracing) sessions.addExtension(tracing.runs.extension);
	const compaction = compactionExtension({
		defaults: {
			enabled: config.compaction === "on",
			reserveTokens: config.compactionReserveTokens,
			keepRecentTokens: config.compactionKeepRecentTokens,
		},
		providerIdleTimeoutMs: config.providerIdleTimeoutMs,
		logger: app.log,
		keyBudgets,
		...(tenantBudgets.enabled ? { tenantBudgets } : {}),
		watchModelCall,
	});
	sessions.addExtension(compaction);
	if (config.maxSessionContextBytes > 0) sessions.addExtension(contextLimitExtension(config.maxSessionContextBytes));
	for (const extension of options.extensions ?? []) sessions.addExtension(extension);

	// This app's SSE write scheduler: its timers and its barrier (this store's sync) are its own.
	const passes = new WritePasses();
	const context: ServerContext = {
		config,
		sessions,
		catalog,
		profiles,
		stream: {
			passes,
			heartbeatMs: config.heartbeatMs,
			retryMs: config.sseRetryMs,
			maxBufferBytes: config.sseBufferBytes,
			stallMs: config.sseStallMs,
			stats: metrics?.sse,
		},
		toolOrigins,
		idempotencyKeys: new IdempotencyKeys(app.log, sessions.store),
		streamSlots: new StreamSlots({ perKey: config.maxStreamsPerKey, perSession: config.maxStreamsPerSession }),
		...(cluster ? { cluster } : {}),
		...(admission ? { admission } : {}),
		isShuttingDown: () => sessions.isShuttingDown,
		...(tracing ? { tracing } : {}),
	};
	await app.register(contextPlugin, { context });

	installErrorHandling(app);
	// First of the request hooks: the request's span covers everything the server does for it.
	tracing?.installRequestSpans(app);
	installEmptyBodyDefault(app);
	installBodyParser(app);
	app.addHook("onRequest", async function exposeRequestId(request, reply) {
		reply.header("x-request-id", request.id);
	});
	if (config.corsOrigins.length > 0) {
		await app.register(cors, {
			origin: config.corsOrigins.includes("*") ? true : config.corsOrigins,
			exposedHeaders: ["x-request-id", "idempotent-replayed", "x-wheelhouse-session-id", "retry-after"],
			// No `allowedHeaders`: the headers a preflight asks for are allowed. Client SDKs send their
			// own (the openai SDK's `x-stainless-*`); credentials travel in `Authorization`, never in
			// cookies, and only the configured origins are answered at all.
			methods: ["GET", "POST", "PATCH", "DELETE", "OPTIONS"],
		});
	}
	// Before the routes (it hooks each as it is added; those hooks run after auth's, keyed on the
	// owner auth found), and before auth, which asks it about the requests it refuses.
	// Refused requests are only counted where auth can refuse one: with keys set.
	const refusedPerMinute = config.apiKeys.length > 0 || identity.jwt ? config.unauthRateLimitPerMinute : 0;
	const perTenantPerMinute = identity.tenantRateLimitPerMinute ?? 0;
	const requestLimit =
		config.rateLimitPerMinute > 0 || refusedPerMinute > 0 || perTenantPerMinute > 0
			? await installRequestLimit(app, {
					perMinute: config.rateLimitPerMinute,
					refusedPerMinute,
					perTenantPerMinute,
					onRefused: () => metrics?.countLimited("requests"),
				})
			: undefined;
	// After CORS: its hook answers preflights, which carry no credentials.
	await app.register(authPlugin, {
		apiKeys: config.apiKeys,
		streamTokenTtlMs: config.streamTokenTtlMs,
		identity,
		tenants,
		...(config.metricsToken ? { operatorToken: config.metricsToken } : {}),
		...(requestLimit?.limitRefused ? { limitRefused: requestLimit.limitRefused } : {}),
	});
	const { credentials } = app;
	// After auth, which names the caller's tenant.
	if (requestLimit?.limitTenant) app.addHook("onRequest", requestLimit.limitTenant);
	await app.register(openApiPlugin);
	if (metrics) installMetrics(app, metrics, config, store);

	await app.register(healthRoutes);
	await app.register(catalogRoutes);
	await app.register(sessionRoutes);
	await app.register(messageRoutes);
	await app.register(branchRoutes);
	await app.register(eventRoutes);
	await app.register(streamTokenRoutes, { tokens: credentials.streamTokens });
	await app.register(clientTokenRoutes, { tokens: credentials.clientTokens });
	await app.register(compactionRoutes, { compaction });
	await app.register(usageRoutes, {
		keyBudgets,
		tenantBudgets,
		usageAdminScope: identity.usageAdminScope,
		usageAdminKeyOwners: new Set(identity.usageAdminKeys.map(ownerIdOf)),
		store,
	});
	await installSchedules(app, {
		store,
		sessions,
		profiles,
		config,
		...(admission ? { admission } : {}),
		...(cluster && clusterSettings ? { cluster, replicaId: clusterSettings.replicaId } : {}),
		...(webhookSettings
			? {
					webhooks: {
						events: new WebhookEvents(webhookSettings, (id) => sessions.inMemory(id)?.sharing),
						wake: () => dispatcher.wake(),
					},
				}
			: {}),
	});
	const interactions = await registerTools(app, { env: env as NodeJS.ProcessEnv });
	cluster?.useInteractions(interactions);
	// A single node's followers re-read the log at least every second (a run restarted after a crash).
	const follow = { store: sessions.store, recheckMs: Math.max(config.heartbeatMs, 1000) };
	sessions.connectPorts({
		interactions: () => interactions,
		follow: (session, sink, cursor, follower) =>
			followSessionEvents(cluster?.streams, follow, session, sink, cursor, follower),
		...(cluster ? { cluster } : {}),
	});
	try {
		checkProfileTools(profiles, sessions.tools);
	} catch (err) {
		// The tools plugin started MCP servers: stop them before startup fails.
		await app.close();
		throw err;
	}
	await app.register(openaiFacade, { prefix: "/openai/v1", interactions });
	await app.register(aguiFacade, { prefix: "/agui/v1", interactions });
	await app.register(a2aFacade, { interactions, push: a2aPush, wakeOutbox: () => dispatcher.wake() });
	await app.register(mcpFacade);
	const proxyStreams = new ProxyStreams();
	await app.register(piProxyRoutes, {
		streams: proxyStreams,
		getApiKey,
		runSlots,
		keyBudgets,
		tenantBudgets,
		store,
		watchModelCall,
	});
	if (config.playground === "on") {
		const { defaultPlaygroundDir, playgroundRoutes } = await import("./playground.js");
		const dir = options.playgroundDir ?? defaultPlaygroundDir();
		const jwt = identity.jwt;
		const oidc = jwt?.playground
			? new (await import("./identity/playground-oidc.js")).PlaygroundOidcClient(
					jwt.playground,
					jwt.issuer,
					jwt.jwksTimeoutMs,
				)
			: undefined;
		if (dir) await app.register(playgroundRoutes, { dir, ...(oidc ? { oidc } : {}) });
		else app.log.warn("the playground page is not built (no dist/playground): run `npm run build` to serve it");
	}
	if (config.docs === "on") {
		const { docsRoutes } = await import("./docs.js");
		await app.register(docsRoutes);
	}

	// On close (SIGTERM in main.ts, or tests): let runs finish within the grace period, abort the
	// rest (each still emits agent_end), end every stream, flush the store.
	const connections = trackConnections(app.server);
	// Run starts, messages, run ends and buffered events are durable at the store's next sync: sync
	// before anything leaves.
	const sync = () => store.sync();
	const removeSseHook = passes.addBarrier({
		run: sync,
		get pending() {
			return store.syncPending;
		},
	});
	// A barrier with nothing to commit lets the response go at once (no promise to wait for).
	app.addHook("onSend", function syncStore(_request, _reply, payload, done) {
		if (!store.syncPending) return done(null, payload);
		store.sync().then(
			() => done(null, payload),
			(error: Error) => done(error),
		);
	});
	app.addHook("onClose", async function removeStoreSync() {
		removeSseHook();
	});
	let forceClose: NodeJS.Timeout | undefined;
	app.addHook("preClose", async function drainSessions() {
		// 1. Not ready: /readyz answers 503 and no new session or run starts.
		sessions.stopAccepting();
		// 2. Time for a load balancer probing /readyz to take this process out of rotation.
		if (config.shutdownDelayMs > 0) await sleep(config.shutdownDelayMs);
		// 3. Stop listening before any stream ends: a reconnecting EventSource is then refused at the
		// TCP level and retries until the next process listens, where an HTTP status would stop it
		// for good. Every connection is closed once idle (the idle ones now), so a client's next
		// request does not reach this process on a kept-alive connection either.
		if (app.server.listening) app.server.close();
		connections.drain();
		// 4. Runs and pi proxy calls finish within the grace period or are aborted; every stream ends.
		await Promise.all([sessions.shutdown(config.shutdownGraceMs), proxyStreams.drain(config.shutdownGraceMs)]);
		cluster?.closeStreams("server shutting down");
		// 5. A reader that does not take its last bytes, or a request still on its way in, holds the
		// close this long at most.
		forceClose = setTimeout(() => app.server.closeAllConnections(), SHUTDOWN_FLUSH_MS);
		forceClose.unref();
	});
	app.addHook("onClose", async function stopForceClose() {
		clearTimeout(forceClose);
	});
	if (!options.store)
		app.addHook("onClose", async function closeOwnStore() {
			await store.close();
		});
	if (cluster) {
		try {
			// A dead replica's run: settled on its stream, continued per its onInterrupt, here.
			await cluster.start(
				sessions,
				(sessionId, at, stopBecause) =>
					resumeInterruptedSession(app.wheelhouse, sessionId, "replica_lost", at, stopBecause),
				passes,
			);
		} catch (err) {
			await app.close();
			throw err;
		}
		// Registered after the store's own close: onClose hooks run last-registered first.
		app.addHook("onClose", async function closeCluster() {
			await cluster.close();
		});
	}
	if (dispatcher) {
		app.addHook("onReady", async function startWebhooks() {
			dispatcher.start();
		});
		// onClose hooks run last-registered first: this one runs before the store closes, so the
		// attempts it cuts are recorded as due again.
		app.addHook("onClose", async function stopWebhooks() {
			await dispatcher.close();
		});
	}

	app.log.info(
		{ model: catalog.defaultModel, store: store.kind, auth: config.apiKeys.length > 0 || identity.jwt !== undefined },
		catalog.defaultModel === "faux/echo"
			? "default model is faux/echo, a STAND-IN that echoes your messages (no LLM): set OPENAI_API_KEY, ANTHROPIC_API_KEY or GEMINI_API_KEY for a real model"
			: `default model ${catalog.defaultModel}`,
	);
	return app;
}
