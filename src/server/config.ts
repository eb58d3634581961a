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
import { parseDatabaseUrl } from "../store/index.js";
import {
	CONFIG_VARS,
	type ConfigVar,
	PROVIDER_KEY_VARS,
	ServerConfigSchema,
	type ServerConfigValues,
} from "./config-vars.js";
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
	checkVariableNames(env);
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

	checkApiKeys(values.apiKeys, source.apiKeys ?? "apiKeys");
	checkDatabaseUrl(values.store, values.databaseUrl, source.databaseUrl ?? "databaseUrl");
	checkCorsOrigins(values.corsOrigins, source.corsOrigins ?? "corsOrigins");
	const first = Value.Errors(ServerConfigSchema, values).First();
	if (first) {
		const key = first.path.split("/")[1] ?? "";
		const field = source[key] ?? key;
		throw new ConfigError(field, describeError(first.message, first.value, first.path, first.schema));
	}
	return values as ServerConfig;
}

/** The prefix of the server's own variables: a name with it that the server does not read is a typo. */
const PREFIX = "WHEELHOUSE_";

/**
 * A `WHEELHOUSE_*` variable the server does not read is almost always a misspelt one, whose value
 * would otherwise be ignored without a word: name it and the closest variable that exists.
 */
function checkVariableNames(env: Record<string, string | undefined>): void {
	const known = CONFIG_VARS.map((v) => v.env);
	for (const name of Object.keys(env).sort()) {
		if (!name.startsWith(PREFIX) || known.includes(name)) continue;
		// Compare without the prefix, so `WHEELHOUSE_PORT` finds `PORT`.
		const bare = (n: string) => (n.startsWith(PREFIX) ? n.slice(PREFIX.length) : n);
		const [closest] = known
			.map((candidate) => ({ candidate, distance: editDistance(bare(name), bare(candidate)) }))
			.sort((a, b) => a.distance - b.distance);
		const hint =
			closest && closest.distance <= Math.max(2, Math.floor(bare(name).length / 3))
				? `did you mean ${closest.candidate}?`
				: `the variables are: ${known.join(", ")}`;
		throw new ConfigError(name, `not a Wheelhouse variable; ${hint}`);
	}
}

/** Levenshtein distance (insertions, deletions, substitutions). */
function editDistance(a: string, b: string): number {
	let previous = Array.from({ length: b.length + 1 }, (_, j) => j);
	for (let i = 1; i <= a.length; i++) {
		const current = [i];
		for (let j = 1; j <= b.length; j++) {
			current[j] = Math.min(previous[j]! + 1, current[j - 1]! + 1, previous[j - 1]! + (a[i - 1] === b[j - 1] ? 0 : 1));
		}
		previous = current;
	}
	return previous[b.length]!;
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

/** The configuration with every secret replaced (found by structure: see redact.ts), for the startup log. */
export function redactConfig(config: ServerConfig): Record<string, unknown> {
	const redacted = redactSecrets(config) as Record<string, unknown>;
	// `keyBudgets` is keyed by the API keys themselves: the names are the secrets there.
	const budgets = redacted.keyBudgets;
	if (typeof budgets === "object" && budgets !== null && !Array.isArray(budgets)) {
		redacted.keyBudgets = Object.fromEntries(
			Object.entries(budgets).map(([key, value], i) => [key === "*" ? key : `${REDACTED} ${i + 1}`, value]),
		);
	}
	return redacted;
}
