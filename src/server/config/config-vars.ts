/**
 * What the server can be configured with: every environment variable (its config-file key, kind,
 * default and description, the source of the configuration table in docs/configuration.md) and the TypeBox schema
 * the loaded values must satisfy. Reading and checking them is config.ts's job.
 */
import { type Static, Type } from "@sinclair/typebox";

/** One configuration variable: its environment name, config-file key, default and meaning. */
export interface ConfigVar {
	env: string;
	key: keyof ServerConfigValues;
	kind: "int" | "string" | "list" | "enum";
	default: string;
	description: string;
}

/** Every variable the server reads, in the order of that table. */
export const CONFIG_VARS: readonly ConfigVar[] = [
	{ env: "PORT", key: "port", kind: "int", default: "3000", description: "TCP port to listen on (0 = any free port)." },
	{
		env: "HOST",
		key: "host",
		kind: "string",
		default: "127.0.0.1",
		description: "Interface to bind; `0.0.0.0` in containers.",
	},
	{
		env: "LOG_LEVEL",
		key: "logLevel",
		kind: "enum",
		default: "info",
		description: "pino level: fatal, error, warn, info, debug, trace, silent.",
	},
	{
		env: "LOG_FORMAT",
		key: "logFormat",
		kind: "enum",
		default: "auto",
		description:
			"`json` (one JSON object a line), `pretty` (readable lines), or `auto`: `pretty` when stdout is a terminal, else `json`.",
	},
	{
		env: "WHEELHOUSE_CONFIG",
		key: "configFile",
		kind: "string",
		default: "",
		description: "Path of an optional JSON config file (camelCase keys of this table).",
	},
	{
		env: "WHEELHOUSE_API_KEYS",
		key: "apiKeys",
		kind: "list",
		default: "",
		description:
			"Comma-separated API keys of at least 8 characters each; when set, every route but `/healthz`, `/readyz`, `/openapi.json`, the playground page and the API reference at `/docs` needs `Authorization: Bearer <key>`.",
	},
	{
		env: "WHEELHOUSE_AUTH",
		key: "auth",
		kind: "enum",
		default: "keys",
		description:
			"`keys`: a server listening beyond loopback (`HOST` other than `127.0.0.1`, `::1`, `localhost`) refuses to start without `WHEELHOUSE_API_KEYS`; `none`: serve without keys on any interface, on purpose (a warning says so at startup).",
	},
	{
		env: "WHEELHOUSE_CORS_ORIGINS",
		key: "corsOrigins",
		kind: "list",
		default: "",
		description:
			"Comma-separated allowed CORS origins with their scheme (`https://app.example.com`), or `*`; empty disables CORS.",
	},
	{
		env: "WHEELHOUSE_PLAYGROUND",
		key: "playground",
		kind: "enum",
		default: "on",
		description:
			"`on` serves the playground page (a browser client of the `/v1` API) at `/` and `/playground`, open without a key (it holds no data and asks for one); `off` serves nothing there.",
	},
	{
		env: "WHEELHOUSE_DOCS",
		key: "docs",
		kind: "enum",
		default: "on",
		description:
			"`on` serves the API reference (Swagger UI over `/openapi.json`) at `/docs`, open without a key like the playground (the calls made from it need one, given to its Authorize button); `off` serves nothing there.",
	},
	{
		env: "WHEELHOUSE_PI_PROXY",
		key: "piProxy",
		kind: "enum",
		default: "auto",
		description:
			"`POST /api/stream`, the endpoint of pi's `streamProxy`, which runs any context on the server's provider keys: `auto` serves it only when `WHEELHOUSE_API_KEYS` is set, `on` also without keys (local use), `off` never.",
	},
	{
		env: "WHEELHOUSE_STREAM_TOKEN_TTL_MS",
		key: "streamTokenTtlMs",
		kind: "int",
		default: "300000",
		description:
			"How long a stream token (`POST /v1/sessions/:id/stream-token`, for `EventSource`) can open the session's event stream.",
	},
	{
		env: "WHEELHOUSE_DEFAULT_MODEL",
		key: "defaultModel",
		kind: "string",
		default: "",
		description:
			"`provider/id` for new sessions; default: `faux/echo` without provider keys, else a model of the first provider with a key.",
	},
	{
		env: "WHEELHOUSE_PROVIDER_IDLE_TIMEOUT_MS",
		key: "providerIdleTimeoutMs",
		kind: "int",
		default: "300000",
		description:
			"A model call with no byte from the provider for this long (waiting for headers or between chunks) ends the run with an error; 0 = never. Per model: `idleTimeoutMs` in `models`.",
	},
	{
		env: "WHEELHOUSE_FAUX_DELAY_MS",
		key: "fauxDelayMs",
		kind: "int",
		default: "30",
		description: "Delay between the words the `faux/echo` stand-in model streams.",
	},
	{
		env: "WHEELHOUSE_HEARTBEAT_MS",
		key: "heartbeatMs",
		kind: "int",
		default: "15000",
		description: "Interval of SSE heartbeat comments (0 disables).",
	},
	{
		env: "WHEELHOUSE_SSE_RETRY_MS",
		key: "sseRetryMs",
		kind: "int",
		default: "2000",
		description: "`retry:` reconnection delay sent to SSE clients.",
	},
	{
		env: "WHEELHOUSE_STORE",
		key: "store",
		kind: "enum",
		default: "sqlite",
		description:
			"Session store: `sqlite` (durable, one process), `postgres` (durable, `WHEELHOUSE_DATABASE_URL`; one process per schema, or several replicas with `WHEELHOUSE_REDIS_URL`) or `memory`.",
	},
	{
		env: "WHEELHOUSE_DB",
		key: "dbPath",
		kind: "string",
		default: "./data/wheelhouse.db",
		description: "SQLite database file (its folder is created).",
	},
	{
		env: "WHEELHOUSE_DATABASE_URL",
		key: "databaseUrl",
		kind: "string",
		default: "",
		description:
			"PostgreSQL URL of the `postgres` store: `postgres://user:password@host:5432/database` (the password is never logged).",
	},
	{
		env: "WHEELHOUSE_DATABASE_SCHEMA",
		key: "databaseSchema",
		kind: "string",
		default: "public",
		description:
			"Schema of the `postgres` store's tables (created if missing; a schema holding other tables is refused).",
	},
	{
		env: "WHEELHOUSE_DATABASE_POOL_SIZE",
		key: "databasePoolSize",
		kind: "int",
		default: "10",
		description: "Connections of the `postgres` store's pool.",
	},
	{
		env: "WHEELHOUSE_BODY_LIMIT",
		key: "bodyLimit",
		kind: "int",
		default: "4194304",
		description: "Maximum request body in bytes (413 above).",
	},
	{
		env: "WHEELHOUSE_MAX_SESSIONS",
		key: "maxSessions",
		kind: "int",
		default: "10000",
		description: "Maximum sessions held (429 `TOO_MANY_SESSIONS` above).",
	},
	{
		env: "WHEELHOUSE_MAX_QUEUED",
		key: "maxQueuedMessages",
		kind: "int",
		default: "100",
		description: "Maximum queued steering + follow-up messages per session (429 `QUEUE_FULL`).",
	},
	{
		env: "WHEELHOUSE_MAX_SESSIONS_PER_KEY",
		key: "maxSessionsPerKey",
		kind: "int",
		default: "0",
		description:
			"Sessions one API key may hold in memory (loaded with a run or a stream; idle ones are evicted to make room) in this process; one more is 429 `TOO_MANY_KEY_SESSIONS`. 0 = a quarter of `WHEELHOUSE_MAX_SESSIONS` when API keys are set (at least 1); with auth off only `WHEELHOUSE_MAX_SESSIONS` applies.",
	},
	{
		env: "WHEELHOUSE_MAX_STREAMS_PER_KEY",
		key: "maxStreamsPerKey",
		kind: "int",
		default: "1000",
		description:
			"SSE streams one API key may have open at once in this process (all streams together when auth is off); one more is 429 `TOO_MANY_STREAMS`. 0 = no limit.",
	},
	{
		env: "WHEELHOUSE_MAX_STREAMS_PER_SESSION",
		key: "maxStreamsPerSession",
		kind: "int",
		default: "100",
		description:
			"SSE streams open at once on one session in this process; one more is 429 `TOO_MANY_STREAMS`. 0 = no limit.",
	},
	{
		env: "WHEELHOUSE_MAX_QUEUED_BYTES",
		key: "maxQueuedBytes",
		kind: "int",
		default: "16777216",
		description:
			"Bytes (as JSON) of the steering + follow-up messages queued on one session; one more message past it is 429 `QUEUE_TOO_LARGE`.",
	},
	{
		env: "WHEELHOUSE_MAX_QUEUED_BYTES_PER_KEY",
		key: "maxQueuedBytesPerKey",
		kind: "int",
		default: "67108864",
		description:
			"Bytes (as JSON) of the messages queued on all the sessions of one API key in this process (all sessions when auth is off); past it 429 `QUEUE_TOO_LARGE`.",
	},
	{
		env: "WHEELHOUSE_MAX_SESSION_CONTEXT_BYTES",
		key: "maxSessionContextBytes",
		kind: "int",
		default: "33554432",
		description:
			"Bytes (as JSON) of transcript one session may hold in memory: the messages from its latest compaction on, what its next model call reads (older ones stay in the store). A prompt or continue on a session past it is 409 `CONTEXT_TOO_LARGE` until it is compacted; with compaction on it stays near the model's context window. 0 = no limit.",
	},
	{
		env: "WHEELHOUSE_IDLE_SESSION_BYTES",
		key: "idleSessionBytes",
		kind: "int",
		default: "268435456",
		description:
			"Budget, in bytes of JSON, for the transcripts and queues of the sessions this process keeps loaded without a run or a stream: past it the least recently used are evicted from memory (they stay in the store and reload on access). 0 = no budget (only `WHEELHOUSE_SESSION_TTL_MS` evicts).",
	},
	{
		env: "WHEELHOUSE_EVENT_RETENTION",
		key: "eventRetention",
		kind: "int",
		default: "10000",
		description: "SSE events kept per session for resume; older ids get a `reset` snapshot.",
	},
	{
		env: "WHEELHOUSE_SSE_BUFFER_BYTES",
		key: "sseBufferBytes",
		kind: "int",
		default: "1048576",
		description:
			"Per-subscriber SSE bytes not yet flushed to the socket (queued or in its buffer) before a subscriber that is behind is dropped (it can resume); a resume replays the log in pages of half this.",
	},
	{
		env: "WHEELHOUSE_SSE_STALL_MS",
		key: "sseStallMs",
		kind: "int",
		default: "30000",
		description:
			"A subscriber whose socket takes nothing for this long while it is behind (live or replaying) is dropped (it can resume); 0 disables.",
	},
	{
		env: "WHEELHOUSE_SHUTDOWN_GRACE_MS",
		key: "shutdownGraceMs",
		kind: "int",
		default: "5000",
		description:
			"On SIGTERM/SIGINT, how long running runs may finish before they are aborted. The whole stop takes at most this plus `WHEELHOUSE_SHUTDOWN_DELAY_MS` plus about 3 s: keep it under the runtime's kill timeout (10 s for `docker stop`).",
	},
	{
		env: "WHEELHOUSE_SHUTDOWN_DELAY_MS",
		key: "shutdownDelayMs",
		kind: "int",
		default: "0",
		description:
			"On SIGTERM/SIGINT, how long `/readyz` answers 503 while new connections are still accepted, before the server stops listening (time for a load balancer to take it out of rotation).",
	},
	{
		env: "WHEELHOUSE_SESSION_TTL_MS",
		key: "sessionTtlMs",
		kind: "int",
		default: "3600000",
		description: "Idle sessions are evicted from memory after this long (reloaded from the store on access).",
	},
	{
		env: "WHEELHOUSE_SESSION_DELETE_AFTER_MS",
		key: "sessionDeleteAfterMs",
		kind: "int",
		default: "0",
		description:
			"Sessions idle this long (no request, run or queued message; no subscriber) are deleted with everything stored; 0 = never.",
	},
	{
		env: "WHEELHOUSE_RATE_LIMIT_RPM",
		key: "rateLimitPerMinute",
		kind: "int",
		default: "0",
		description:
			"Requests per minute per API key (per client IP when auth is off) on every route but the open ones (`/healthz`, `/readyz`, `/openapi.json`); above it 429 `RATE_LIMITED` with `retry-after`. 0 = no limit.",
	},
	{
		env: "WHEELHOUSE_UNAUTH_RATE_LIMIT_RPM",
		key: "unauthRateLimitPerMinute",
		kind: "int",
		default: "60",
		description:
			"With API keys set: requests per minute per client IP that auth refuses (no key, a wrong one, a bad stream token), counted apart from every key's own; above it 429 `RATE_LIMITED` with `retry-after` instead of 401, so a loop guessing keys is slowed. 0 = no limit.",
	},
	{
		env: "WHEELHOUSE_MAX_RUNS_PER_KEY",
		key: "maxRunsPerKey",
		kind: "int",
		default: "0",
		description:
			"Runs one API key may have running at once (all runs together when auth is off; a pi `streamProxy` call counts as one); one more is 429 `TOO_MANY_RUNS`. 0 = no limit.",
	},
	{
		env: "WHEELHOUSE_METRICS",
		key: "metrics",
		kind: "enum",
		default: "on",
		description: "`on`: Prometheus metrics at `GET /metrics`; `off`: no metrics are collected.",
	},
	{
		env: "WHEELHOUSE_METRICS_PORT",
		key: "metricsPort",
		kind: "int",
		default: "0",
		description:
			"0: `/metrics` is served on the main port. Another port: on a separate listener on that port (same `HOST`), and not on the main port.",
	},
	{
		env: "WHEELHOUSE_METRICS_AUTH",
		key: "metricsAuth",
		kind: "enum",
		default: "token",
		description:
			"`token`: `/metrics` needs `Authorization: Bearer <WHEELHOUSE_METRICS_TOKEN>` (an API key is refused: metrics show every key's traffic); with API keys set and no metrics token, nobody can read it. `none`: open (e.g. on a separate port only the scraper reaches).",
	},
	{
		env: "WHEELHOUSE_METRICS_TOKEN",
		key: "metricsToken",
		kind: "string",
		default: "",
		description:
			"The operator credential that reads `/metrics` (at least 16 characters, none of the API keys). Unset: `/metrics` is open only while no API keys are set.",
	},
	{
		env: "WHEELHOUSE_COMPACTION",
		key: "compaction",
		kind: "enum",
		default: "on",
		description:
			"`on`: sessions compact their context automatically (before a model call past the threshold, and on a context-overflow error); `off`: only when asked. A session's `compaction.enabled` wins.",
	},
	{
		env: "WHEELHOUSE_COMPACTION_RESERVE_TOKENS",
		key: "compactionReserveTokens",
		kind: "int",
		default: "16384",
		description:
			"Compact when the context passes the model's context window minus this many tokens (at most half the window counts). Per session: `compaction.reserveTokens`.",
	},
	{
		env: "WHEELHOUSE_COMPACTION_KEEP_RECENT_TOKENS",
		key: "compactionKeepRecentTokens",
		kind: "int",
		default: "20000",
		description:
			"About how many tokens of the most recent messages a compaction keeps verbatim (at most half the threshold counts). Per session: `compaction.keepRecentTokens`.",
	},
	{
		env: "WHEELHOUSE_WEBHOOK_URL",
		key: "webhookUrl",
		kind: "string",
		default: "",
		description:
			"A webhook endpoint (http or https) told of run ends and pending interactions; more endpoints: `webhooks` in the config file (see Webhooks).",
	},
	{
		env: "WHEELHOUSE_WEBHOOK_SECRET",
		key: "webhookSecret",
		kind: "string",
		default: "",
		description: "The signing secret of `WHEELHOUSE_WEBHOOK_URL`, in the Standard Webhooks form `whsec_<base64>`.",
	},
	{
		env: "WHEELHOUSE_WEBHOOK_EVENTS",
		key: "webhookEvents",
		kind: "list",
		default: "",
		description:
			"Comma-separated event types `WHEELHOUSE_WEBHOOK_URL` gets (empty = all): `run.completed`, `run.failed`, `run.interrupted`, `approval.requested`, `client_tool.requested`, `schedule.fired`, `schedule.skipped`, `schedule.missed`, `schedule.failed`.",
	},
	{
		env: "WHEELHOUSE_TOOL_MODULES",
		key: "toolModules",
		kind: "list",
		default: "",
		description: "Comma-separated module paths whose `tools` (or default) export is an `AgentTool[]` to serve.",
	},
	{
		env: "WHEELHOUSE_REDIS_URL",
		key: "redisUrl",
		kind: "string",
		default: "",
		description:
			"`redis://` (or `rediss://`) URL of the Redis that carries live events and control messages between replicas: set, it turns on cluster mode (needs `WHEELHOUSE_STORE=postgres`); empty, one replica.",
	},
	{
		env: "WHEELHOUSE_LEASE_TTL_MS",
		key: "leaseTtlMs",
		kind: "int",
		default: "15000",
		description:
			"Cluster mode: how long a replica's hold on a running session lasts without renewal (renewed every third of it). A replica that stops renewing (killed, stalled) loses its runs to another replica this long after its last renewal.",
	},
	{
		env: "WHEELHOUSE_REDIS_PREFIX",
		key: "redisPrefix",
		kind: "string",
		default: "wheelhouse:",
		description:
			"Prefix of every Redis channel this cluster uses, so several clusters (or test runs) can share one Redis.",
	},
];

/** Provider API keys read from the environment (and from `providerKeys` in the config file). */
export const PROVIDER_KEY_VARS = {
	openai: "OPENAI_API_KEY",
	anthropic: "ANTHROPIC_API_KEY",
	google: "GEMINI_API_KEY",
} as const;

const Int = (min: number, max = Number.MAX_SAFE_INTEGER) => Type.Integer({ minimum: min, maximum: max });

/** The type and limits of every setting; `loadConfig` validates the merged values against it. */
export const ServerConfigSchema = Type.Object(
	{
		port: Int(0, 65535),
		host: Type.String({ minLength: 1 }),
		logLevel: Type.Union(["fatal", "error", "warn", "info", "debug", "trace", "silent"].map((l) => Type.Literal(l))),
		logFormat: Type.Union([Type.Literal("auto"), Type.Literal("json"), Type.Literal("pretty")]),
		configFile: Type.String(),
		apiKeys: Type.Array(Type.String({ minLength: 8 })),
		auth: Type.Union([Type.Literal("keys"), Type.Literal("none")]),
		corsOrigins: Type.Array(Type.String({ minLength: 1 })),
		playground: Type.Union([Type.Literal("on"), Type.Literal("off")]),
		docs: Type.Union([Type.Literal("on"), Type.Literal("off")]),
		piProxy: Type.Union([Type.Literal("auto"), Type.Literal("on"), Type.Literal("off")]),
		streamTokenTtlMs: Int(1000, 86_400_000),
		defaultModel: Type.String({ pattern: "^$|^[^/\\s]+/\\S+$" }),
		providerIdleTimeoutMs: Int(0),
		fauxDelayMs: Int(0, 60_000),
		heartbeatMs: Int(0, 3_600_000),
		sseRetryMs: Int(0, 3_600_000),
		store: Type.Union([Type.Literal("sqlite"), Type.Literal("memory"), Type.Literal("postgres")]),
		dbPath: Type.String({ minLength: 1 }),
		databaseUrl: Type.String(),
		databaseSchema: Type.String({ pattern: "^[a-z_][a-z0-9_]{0,62}$" }),
		databasePoolSize: Int(1, 1000),
		bodyLimit: Int(1024),
		maxSessions: Int(1),
		maxQueuedMessages: Int(1),
		maxSessionsPerKey: Int(0),
		maxStreamsPerKey: Int(0),
		maxStreamsPerSession: Int(0),
		maxQueuedBytes: Int(1024),
		maxQueuedBytesPerKey: Int(1024),
		maxSessionContextBytes: Int(0),
		idleSessionBytes: Int(0),
		eventRetention: Int(10),
		sseBufferBytes: Int(1024),
		sseStallMs: Int(0, 3_600_000),
		shutdownGraceMs: Int(0),
		shutdownDelayMs: Int(0),
		sessionTtlMs: Int(1000),
		sessionDeleteAfterMs: Int(0),
		rateLimitPerMinute: Int(0),
		unauthRateLimitPerMinute: Int(0),
		maxRunsPerKey: Int(0),
		metrics: Type.Union([Type.Literal("on"), Type.Literal("off")]),
		metricsPort: Int(0, 65535),
		metricsAuth: Type.Union([Type.Literal("token"), Type.Literal("none")]),
		/** Checked where it is used (metrics-endpoint.ts), with a message that does not echo it. */
		metricsToken: Type.String(),
		compaction: Type.Union([Type.Literal("on"), Type.Literal("off")]),
		compactionReserveTokens: Int(0, 100_000_000),
		compactionKeepRecentTokens: Int(0, 100_000_000),
		webhookUrl: Type.String(),
		webhookSecret: Type.String(),
		webhookEvents: Type.Array(Type.String({ minLength: 1 })),
		toolModules: Type.Array(Type.String({ minLength: 1 })),
		redisUrl: Type.String(),
		leaseTtlMs: Int(300, 3_600_000),
		redisPrefix: Type.String({ minLength: 1, maxLength: 100 }),
		providerKeys: Type.Record(Type.String(), Type.String()),
		/** Config-file only: the tools section (MCP servers, HTTP tools, approvals), validated by src/tools. */
		tools: Type.Optional(Type.Unknown()),
		/** Config-file only: custom models (`CustomModelConfig[]` of src/ai/models.ts). */
		models: Type.Optional(Type.Unknown()),
		/** Config-file only: agent profiles by name (`AgentProfile` of profiles.ts), checked against the models and tools. */
		profiles: Type.Optional(Type.Unknown()),
		/** Config-file only: spending limits per API key (`keyBudgets` of budgets/config.ts), checked against `apiKeys`. */
		keyBudgets: Type.Optional(Type.Unknown()),
		/** Config-file only: webhook endpoints and delivery settings, validated by src/server/observability/webhooks/settings.ts. */
		webhooks: Type.Optional(Type.Unknown()),
		/**
		 * Config-file only, written as the object form of `auth` (`{ "auth": { "jwt": ..., "keyTenants": ... } }`):
		 * JWT auth, key tenants and client tokens, validated by identity.ts.
		 */
		authConfig: Type.Optional(Type.Unknown()),
	},
	{ additionalProperties: false },
);

export type ServerConfigValues = Static<typeof ServerConfigSchema>;
