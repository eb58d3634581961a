/**
 * Server configuration: environment variables over an optional JSON file (`WHEELHOUSE_CONFIG`),
 * validated with TypeBox at start. A bad value is a {@link ConfigError} naming the variable (or
 * file field) and the reason; `main.ts` prints it and exits before listening.
 *
 * Precedence: environment variable > config file field > default. The file uses the camelCase
 * keys of {@link CONFIG_VARS} (config-vars.ts; e.g. `{ "port": 8080, "apiKeys": ["..."] }`),
 * `providerKeys` (`{ "openai": "sk-..." }`), and sections validated by their owners: `tools`
 * (MCP servers, HTTP tools, approvals: `ToolsConfig` of src/tools), `models` (custom models:
 * `CustomModelConfig[]` of src/ai/models.ts), `profiles` (agent profiles: profiles.ts),
 * `keyBudgets` (spending limits per API key: budgets/config.ts) and `webhooks` (webhooks/).
 */
import { readFileSync } from "node:fs";
import { Value } from "@sinclair/typebox/value";
import { parseDatabaseUrl } from "../../store/index.js";
import { closestNames } from "../../tools/index.js";
import { ConfigError } from "./config-error.js";
import {
	CONFIG_VARS,
	type ConfigVar,
	PROVIDER_KEY_VARS,
	ServerConfigSchema,
	type ServerConfigValues,
} from "./config-vars.js";
import { resolveIdentitySettings } from "./identity.js";
import { REDACTED, redactSecrets } from "./redact.js";

export {
	CONFIG_VARS,
	type ConfigVar,
	PROVIDER_KEY_VARS,
	ServerConfigSchema,
	type ServerConfigValues,
} from "./config-vars.js";

/** The validated configuration. */
export type ServerConfig = ServerConfigValues;

export { ConfigError } from "./config-error.js";

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
			if (key === "auth" && typeof value === "object" && value !== null && !Array.isArray(value)) {
				// The object form: its `mode` is the setting `auth`, the rest is identity.ts's.
				values.authConfig = value;
				source.authConfig = `${filePath}: auth`;
				const mode = (value as Record<string, unknown>).mode;
				if (mode !== undefined) values.auth = mode;
				source.auth = `${filePath}: auth.mode`;
				continue;
			}
			if (key === "authConfig")
				throw new ConfigError(`${filePath}: ${key}`, "unknown field; write it as the object form of `auth`");
			values[key] = value;
			source[key] = `${filePath}: ${key}`;
		}
	}
	for (const v of CONFIG_VARS) {
		const raw = env[v.env];
		// A Kubernetes service link that happens to share a port variable's name (a Service named
		// `wheelhouse-metrics` sets WHEELHOUSE_METRICS_PORT=tcp://...) is not a setting: see configWarnings.
		if (v.kind === "int" && raw !== undefined && isServiceLink(v.env, raw)) continue;
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

	checkApiKeys(values.apiKeys, source.apiKeys ?? "apiKeys");
	checkDatabaseUrl(values.store, values.databaseUrl, source.databaseUrl ?? "databaseUrl");
	checkCorsOrigins(values.corsOrigins, source.corsOrigins ?? "corsOrigins");
	const first = Value.Errors(ServerConfigSchema, values).First();
	if (first) {
		const key = first.path.split("/")[1] ?? "";
		const field = source[key] ?? key;
		throw new ConfigError(field, describeError(first.message, first.value, first.path, first.schema));
	}
	const identity = resolveIdentitySettings(
		values.authConfig,
		values.apiKeys as string[],
		source.authConfig ?? "auth",
		env,
	);
	checkExposure(values, source, identity.jwt !== undefined);
	return values as ServerConfig;
}

/** The prefix of the server's own variables: a name with it that the server does not read is likely a typo. */
const PREFIX = "WHEELHOUSE_";

/** Something at startup the operator should know that does not stop it: the variable, and what to do. */
export interface ConfigWarning {
	variable: string;
	message: string;
}

/**
 * The variables Kubernetes injects for every Service of the pod's namespace (and Docker's legacy
 * links): a Service named `wheelhouse` gives `WHEELHOUSE_SERVICE_HOST`, `WHEELHOUSE_SERVICE_PORT`
 * (and `_SERVICE_PORT_<NAME>` per named port), `WHEELHOUSE_PORT=tcp://10.0.0.1:3000` and
 * `WHEELHOUSE_PORT_3000_TCP[_PROTO|_PORT|_ADDR]`. They describe another address, never a setting.
 */
const SERVICE_LINK_NAME = /_(SERVICE_HOST|SERVICE_PORT(_[A-Z0-9_]+)?|PORT_\d+_(TCP|UDP|SCTP)(_(PROTO|PORT|ADDR))?)$/;
/** The value of a `<SERVICE>_PORT` service-link variable. */
const SERVICE_LINK_VALUE = /^(tcp|udp|sctp):\/\/[^\s/]+:\d+$/;

/** True when `name=value` is a service-link variable (see {@link SERVICE_LINK_NAME}). */
function isServiceLink(name: string, value: string | undefined): boolean {
	if (SERVICE_LINK_NAME.test(name)) return true;
	return name.endsWith("_PORT") && SERVICE_LINK_VALUE.test((value ?? "").trim());
}

/** Every `${NAME}` the configuration refers to (in a model's headers, a webhook's secret, ...). */
function referencedVariables(value: unknown, found = new Set<string>()): Set<string> {
	if (typeof value === "string") {
		for (const match of value.matchAll(/\$\{([A-Za-z_][A-Za-z0-9_]*)\}/g)) found.add(match[1]!);
	} else if (Array.isArray(value)) {
		for (const item of value) referencedVariables(item, found);
	} else if (value !== null && typeof value === "object") {
		for (const item of Object.values(value)) referencedVariables(item, found);
	}
	return found;
}

/**
 * What the environment says that does not stop startup, for the log:
 *
 * - a `WHEELHOUSE_*` variable the server does not read and the config does not reference
 *   (`${NAME}`): almost always a misspelt one, whose value is otherwise ignored without a word;
 *   named with the closest variable that exists. A warning, not a stop: a deployment's environment
 *   holds variables meant for others too.
 * - service-link variables (see {@link SERVICE_LINK_NAME}) are not the server's and are passed
 *   over, except `WHEELHOUSE_PORT=tcp://...` (a Service named `wheelhouse`), which reads like a
 *   port setting: it is named in a warning saying the server listens on `PORT`.
 * - `WHEELHOUSE_AUTH=none` on an interface beyond loopback: the API is open on purpose, said once.
 */
export function configWarnings(env: Record<string, string | undefined>, config: ServerConfig): ConfigWarning[] {
	const warnings: ConfigWarning[] = [];
	const known = CONFIG_VARS.map((v) => v.env);
	const referenced = referencedVariables(config);
	for (const name of Object.keys(env).sort()) {
		if (!name.startsWith(PREFIX) || known.includes(name) || referenced.has(name)) continue;
		const value = env[name];
		if (name === `${PREFIX}PORT` && SERVICE_LINK_VALUE.test((value ?? "").trim())) {
			warnings.push({
				variable: name,
				message: `${name}=${value?.trim()} is ignored: Kubernetes sets it for a Service named "wheelhouse"; the server listens on PORT (${config.port})`,
			});
			continue;
		}
		if (isServiceLink(name, value)) continue;
		warnings.push({
			variable: name,
			message: `${name} is not a Wheelhouse variable and is ignored; ${closestHint(name, known)}`,
		});
	}
	for (const v of CONFIG_VARS) {
		const raw = env[v.env];
		if (v.kind === "int" && raw !== undefined && isServiceLink(v.env, raw)) {
			warnings.push({
				variable: v.env,
				message: `${v.env}=${raw.trim()} is ignored: it is a service link a Kubernetes Service sets, not a port number`,
			});
		}
	}
	if (config.auth === "none" && !isLoopback(config.host)) {
		warnings.push({
			variable: "WHEELHOUSE_AUTH",
			message: `WHEELHOUSE_AUTH=none: the API on ${config.host}:${config.port} is open to anyone who can reach it, without a key`,
		});
	}
	return warnings;
}

/** "did you mean X?" when a known variable is close to `name`, else the list of them. */
function closestHint(name: string, known: string[]): string {
	// Compare without the prefix, so `WHEELHOUSE_PORT` finds `PORT`.
	const bare = (n: string) => (n.startsWith(PREFIX) ? n.slice(PREFIX.length) : n);
	const byBare = new Map(known.map((candidate) => [bare(candidate), candidate]));
	const [closest] = closestNames(bare(name), [...byBare.keys()], 1);
	return closest ? `did you mean ${byBare.get(closest)}?` : `the variables are: ${known.join(", ")}`;
}

/** True for a host that only this machine reaches: `localhost`, 127.0.0.0/8, `::1`. */
export function isLoopback(host: string): boolean {
	const h = host
		.trim()
		.toLowerCase()
		.replace(/^\[(.*)\]$/, "$1");
	return h === "localhost" || h === "::1" || /^(::ffff:)?127(\.\d{1,3}){3}$/.test(h);
}

/**
 * Listening beyond loopback without keys serves an open API to the network (the container's
 * `HOST=0.0.0.0` with `-p 3000:3000`): refused, unless `WHEELHOUSE_AUTH=none` says it is meant.
 * `none` with keys set is a contradiction: refused rather than guessed.
 */
function checkExposure(values: Record<string, unknown>, source: Record<string, string>, jwt: boolean): void {
	const host = values.host;
	const keys = values.apiKeys;
	if (typeof host !== "string" || !Array.isArray(keys)) return;
	if (values.auth === "none") {
		if (keys.length > 0)
			throw new ConfigError(
				source.auth ?? "auth",
				"is `none` (no authentication) but WHEELHOUSE_API_KEYS is set: unset one of them",
			);
		if (jwt)
			throw new ConfigError(
				source.auth ?? "auth",
				"is `none` (no authentication) but auth.jwt is set: remove one of them",
			);
		return;
	}
	if (keys.length > 0 || jwt || isLoopback(host)) return;
	throw new ConfigError(
		source.apiKeys ?? "apiKeys",
		`the server would listen on ${host}, beyond this machine, with no API key: set WHEELHOUSE_API_KEYS=<key>[,<key>...] (e.g. \`openssl rand -hex 32\`), or WHEELHOUSE_AUTH=none to serve it open on purpose`,
	);
}

const MIN_API_KEY_LENGTH = 8;

/** Short keys are guessable; the message counts characters and never prints a key. */
function checkApiKeys(keys: unknown, field: string): void {
	if (!Array.isArray(keys)) return;
	keys.forEach((key, index) => {
		if (typeof key === "string" && key.length < MIN_API_KEY_LENGTH) {
			throw new ConfigError(
				field,
				`every key needs at least ${MIN_API_KEY_LENGTH} characters; key ${index + 1} of ${keys.length} has ${key.length}. Use long random keys, e.g. the output of \`openssl rand -hex 32\``,
			);
		}
	});
}

/** The `postgres` store needs a PostgreSQL URL; the message never prints the password. */
function checkDatabaseUrl(store: unknown, url: unknown, field: string): void {
	if (store !== "postgres") return;
	if (typeof url !== "string" || url === "") {
		throw new ConfigError(
			field,
			"WHEELHOUSE_STORE=postgres needs a PostgreSQL URL: postgres://user:password@host:5432/database",
		);
	}
	const parsed = parseDatabaseUrl(url, "the value");
	if (typeof parsed === "string") throw new ConfigError(field, parsed);
}

/**
 * A browser sends `Origin: https://app.example.com`: an entry without its scheme (or with a path)
 * can never match it, so CORS would be silently off for that site.
 */
function checkCorsOrigins(origins: unknown, field: string): void {
	if (!Array.isArray(origins)) return;
	for (const origin of origins) {
		if (typeof origin !== "string" || origin === "*") continue;
		const parsed = httpUrl(origin);
		if (parsed?.origin === origin) continue;
		const fix = (parsed ?? httpUrl(`https://${origin}`))?.origin ?? "https://app.example.com";
		throw new ConfigError(
			field,
			`"${origin}" is not an origin; write the scheme, host and port only, e.g. "${fix}" (or "*" for any origin)`,
		);
	}
}

function httpUrl(text: string): URL | undefined {
	try {
		const url = new URL(text);
		return url.protocol === "http:" || url.protocol === "https:" ? url : undefined;
	} catch {
		return undefined;
	}
}

function describeError(message: string, value: unknown, path: string, schema: unknown): string {
	const sub = path.split("/").slice(2).join("/");
	const got = typeof value === "string" ? `"${value}"` : JSON.stringify(value);
	// A union of literals is a choice: name the choices rather than TypeBox's "expected union value".
	const choices = literalChoices(schema);
	const what = choices ? `must be one of: ${choices.join(", ")}` : message.toLowerCase();
	return `${what}${sub ? ` (at ${sub})` : ""} (got ${got})`;
}

/** The values of a union of literals (`Type.Union([Type.Literal("on"), ...])`), else undefined. */
function literalChoices(schema: unknown): string[] | undefined {
	const branches = (schema as { anyOf?: unknown } | undefined)?.anyOf;
	if (!Array.isArray(branches) || branches.length === 0) return undefined;
	const values = branches.map((branch) => (branch as { const?: unknown } | undefined)?.const);
	return values.every((value) => typeof value === "string" || typeof value === "number")
		? values.map(String)
		: undefined;
}

/**
 * The configuration with every secret replaced (found by structure: see redact.ts), for the startup
 * log. A setting whose value is one of a fixed list of choices (`metricsAuth: "keys"`) holds no
 * secret whatever its name says.
 */
export function redactConfig(config: ServerConfig): Record<string, unknown> {
	const redacted = redactSecrets(config) as Record<string, unknown>;
	for (const v of CONFIG_VARS) if (v.kind === "enum") redacted[v.key] = config[v.key];
	// `keyBudgets` is keyed by the API keys themselves: the names are the secrets there.
	const budgets = redacted.keyBudgets;
	if (typeof budgets === "object" && budgets !== null && !Array.isArray(budgets)) {
		redacted.keyBudgets = Object.fromEntries(
			Object.entries(budgets).map(([key, value], i) => [key === "*" ? key : `${REDACTED} ${i + 1}`, value]),
		);
	}
	// `auth.keyTenants` too.
	const auth = redacted.authConfig as Record<string, unknown> | undefined;
	const tenants = auth?.keyTenants;
	if (auth && typeof tenants === "object" && tenants !== null && !Array.isArray(tenants)) {
		redacted.authConfig = {
			...auth,
			keyTenants: Object.fromEntries(Object.values(tenants).map((tenant, i) => [`${REDACTED} ${i + 1}`, tenant])),
		};
	}
	return redacted;
}
