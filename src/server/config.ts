/**
 * Server configuration: environment variables over an optional JSON file (`WHEELHOUSE_CONFIG`),
 * validated with TypeBox at start. A bad value is a {@link ConfigError} naming the variable (or
 * file field) and the reason; `main.ts` prints it and exits before listening.
 *
 * Precedence: environment variable > config file field > default. The file uses the camelCase
 * keys of {@link CONFIG_VARS} (e.g. `{ "port": 8080, "apiKeys": ["..."] }`), `providerKeys`
 * (`{ "openai": "sk-..." }`), and two sections validated by their owners: `tools` (MCP servers,
 * HTTP tools, approvals: `ToolsConfig` of src/tools) and `models` (custom models:
 * `CustomModelConfig[]` of src/ai/models.ts).
 */
import { readFileSync } from "node:fs";
import { type Static, Type } from "@sinclair/typebox";
import { Value } from "@sinclair/typebox/value";

/** One configuration variable: its environment name, config-file key, default and meaning. */
export interface ConfigVar {
	env: string;
	key: keyof ServerConfigValues;
	kind: "int" | "string" | "list" | "enum";
	default: string;
	description: string;
}

/** Every variable the server reads, in README order. */
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
		description: "Comma-separated API keys; when set, every `/v1` route needs `Authorization: Bearer <key>`.",
	},
	{
		env: "WHEELHOUSE_CORS_ORIGINS",
		key: "corsOrigins",
		kind: "list",
		default: "",
		description: "Comma-separated allowed CORS origins, or `*`; empty disables CORS.",
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
		description: "Session store: `sqlite` (durable) or `memory`.",
	},
	{
		env: "WHEELHOUSE_DB",
		key: "dbPath",
		kind: "string",
		default: "./data/wheelhouse.db",
		description: "SQLite database file (its folder is created).",
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
		description: "Per-subscriber unsent SSE bytes before a slow subscriber is dropped (it can resume).",
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
		env: "WHEELHOUSE_TOOL_MODULES",
		key: "toolModules",
		kind: "list",
		default: "",
		description: "Comma-separated module paths whose `tools` (or default) export is an `AgentTool[]` to serve.",
	},
];

/** Provider API keys read from the environment (and from `providerKeys` in the config file). */
export const PROVIDER_KEY_VARS = {
	openai: "OPENAI_API_KEY",
	anthropic: "ANTHROPIC_API_KEY",
	google: "GEMINI_API_KEY",
} as const;

const Int = (min: number, max = Number.MAX_SAFE_INTEGER) => Type.Integer({ minimum: min, maximum: max });

export const ServerConfigSchema = Type.Object(
	{
		port: Int(0, 65535),
		host: Type.String({ minLength: 1 }),
		logLevel: Type.Union(["fatal", "error", "warn", "info", "debug", "trace", "silent"].map((l) => Type.Literal(l))),
		configFile: Type.String(),
		apiKeys: Type.Array(Type.String({ minLength: 8 })),
		corsOrigins: Type.Array(Type.String({ minLength: 1 })),
		defaultModel: Type.String({ pattern: "^$|^[^/\\s]+/\\S+$" }),
		fauxDelayMs: Int(0, 60_000),
		heartbeatMs: Int(0, 3_600_000),
		sseRetryMs: Int(0, 3_600_000),
		store: Type.Union([Type.Literal("sqlite"), Type.Literal("memory")]),
		dbPath: Type.String({ minLength: 1 }),
		bodyLimit: Int(1024),
		maxSessions: Int(1),
		maxQueuedMessages: Int(1),
		eventRetention: Int(10),
		sseBufferBytes: Int(1024),
		shutdownGraceMs: Int(0),
		shutdownDelayMs: Int(0),
		sessionTtlMs: Int(1000),
		sessionDeleteAfterMs: Int(0),
		toolModules: Type.Array(Type.String({ minLength: 1 })),
		providerKeys: Type.Record(Type.String(), Type.String()),
		/** Config-file only: the tools section (MCP servers, HTTP tools, approvals), validated by src/tools. */
		tools: Type.Optional(Type.Unknown()),
		/** Config-file only: custom models (`CustomModelConfig[]` of src/ai/models.ts). */
		models: Type.Optional(Type.Unknown()),
	},
	{ additionalProperties: false },
);

export type ServerConfigValues = Static<typeof ServerConfigSchema>;

/** The validated configuration. */
export type ServerConfig = ServerConfigValues;

/** A configuration problem: `field` is the env variable or config-file key; `reason` what is wrong. */
export class ConfigError extends Error {
	constructor(
		readonly field: string,
		readonly reason: string,
	) {
		super(`Invalid configuration: ${field}: ${reason}`);
		this.name = "ConfigError";
	}
}

function parseEnvValue(v: ConfigVar, raw: string): unknown {
	switch (v.kind) {
		case "int": {
			const trimmed = raw.trim();
			if (!/^-?\d+$/.test(trimmed)) throw new ConfigError(v.env, `must be an integer (got "${raw}")`);
			return Number(trimmed);
		}
		case "list":
			return raw
				.split(",")
				.map((s) => s.trim())
				.filter((s) => s.length > 0);
		default:
			return raw.trim();
	}
}

function readConfigFile(path: string): Record<string, unknown> {
	let text: string;
	try {
		text = readFileSync(path, "utf8");
	} catch (err) {
		throw new ConfigError("WHEELHOUSE_CONFIG", `cannot read ${path}: ${(err as Error).message}`);
	}
	let parsed: unknown;
	try {
		parsed = JSON.parse(text);
	} catch (err) {
		throw new ConfigError("WHEELHOUSE_CONFIG", `${path} is not valid JSON: ${(err as Error).message}`);
	}
	if (typeof parsed !== "object" || parsed === null || Array.isArray(parsed)) {
		throw new ConfigError("WHEELHOUSE_CONFIG", `${path} must contain a JSON object`);
	}
	return parsed as Record<string, unknown>;
}

/**
 * Builds the configuration from `env` (default `process.env`) and the file it names.
 * Throws {@link ConfigError} on the first invalid value (startup misuse: the message names the
 * variable and what to fix). `overrides` (tests, library users) win over everything.
 */
export function loadConfig(
	env: Record<string, string | undefined> = process.env,
	overrides: Partial<ServerConfigValues> = {},
): ServerConfig {
	const values: Record<string, unknown> = {};
	const source: Record<string, string> = {};
	for (const v of CONFIG_VARS) {
		values[v.key] = parseEnvValue(v, v.default);
		source[v.key] = v.env;
	}
	values.providerKeys = {};
	source.providerKeys = "providerKeys";

	const filePath = overrides.configFile ?? env.WHEELHOUSE_CONFIG;
	if (filePath) {
		const file = readConfigFile(filePath);
		for (const [key, value] of Object.entries(file)) {
			if (!(key in ServerConfigSchema.properties)) {
				throw new ConfigError(
					`${filePath}: ${key}`,
					`unknown field; known fields: ${Object.keys(ServerConfigSchema.properties).join(", ")}`,
				);
			}
			values[key] = value;
			source[key] = `${filePath}: ${key}`;
		}
	}
	for (const v of CONFIG_VARS) {
		const raw = env[v.env];
		if (raw !== undefined && raw !== "") {
			values[v.key] = parseEnvValue(v, raw);
			source[v.key] = v.env;
		}
	}
	const providerKeys = { ...(values.providerKeys as Record<string, string>) };
	for (const [provider, name] of Object.entries(PROVIDER_KEY_VARS)) {
		const key = env[name];
		if (key) providerKeys[provider] = key;
	}
	values.providerKeys = providerKeys;
	for (const [key, value] of Object.entries(overrides)) {
		values[key] = value;
		source[key] = key;
	}

	const first = Value.Errors(ServerConfigSchema, values).First();
	if (first) {
		const key = first.path.split("/")[1] ?? "";
		const field = source[key] ?? key;
		throw new ConfigError(field, describeError(first.message, first.value, first.path));
	}
	return values as ServerConfig;
}

function describeError(message: string, value: unknown, path: string): string {
	const sub = path.split("/").slice(2).join("/");
	const got = typeof value === "string" ? `"${value}"` : JSON.stringify(value);
	return `${message.toLowerCase()}${sub ? ` (at ${sub})` : ""} (got ${got})`;
}

/** The configuration with secrets replaced, for the startup log. */
export function redactConfig(config: ServerConfig): Record<string, unknown> {
	return {
		...config,
		apiKeys: config.apiKeys.map(() => "[redacted]"),
		providerKeys: Object.fromEntries(Object.keys(config.providerKeys).map((k) => [k, "[redacted]"])),
	};
}
