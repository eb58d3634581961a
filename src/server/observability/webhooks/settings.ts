/**
 * The webhook configuration: the config file's `webhooks` section (endpoints and delivery
 * settings) plus the one endpoint the `WHEELHOUSE_WEBHOOK_*` variables may add, validated and
 * resolved at startup — `${NAME}` references in secrets come from the environment, as in model
 * headers — so a bad entry is a {@link ConfigError} naming the field before the server listens.
 *
 * Credentials in an endpoint URL's userinfo (`https://user:pass@host/hook`) are sent as HTTP Basic
 * auth (`Authorization: Basic base64(user:pass)`) on every attempt, to the URL without them (fetch
 * and undici would otherwise drop them silently). Logs show an endpoint bare: no userinfo, no
 * query (`redactUrl(url, { bare: true })`).
 */
import { redactUrl } from "../../../ai/redact-url.js";
import { MissingEnvError, substituteEnv } from "../../../tools/env.js";
import { ConfigError, type ServerConfig } from "../../config/config.js";

/** The event types an endpoint may ask for. */
export const WEBHOOK_EVENT_TYPES = [
	"run.completed",
	"run.failed",
	"run.interrupted",
	"approval.requested",
	"client_tool.requested",
	"schedule.fired",
	"schedule.skipped",
	"schedule.missed",
	"schedule.failed",
] as const;

export type WebhookEventType = (typeof WEBHOOK_EVENT_TYPES)[number];

/** One configured endpoint, its secret resolved and decoded. */
export interface WebhookEndpoint {
	/** The URL as configured: the endpoint's identity in the outbox (deliveries name it). */
	url: string;
	/** Where attempts are sent: {@link url} without its userinfo. */
	target: string;
	/** `Basic ...` from the URL's userinfo; absent when it has none. */
	authorization?: string;
	/** The URL as logs show it: no userinfo, no query. */
	logged: string;
	/** The HMAC key: the base64-decoded part of the `whsec_...` secret. */
	key: Buffer;
	events: ReadonlySet<WebhookEventType>;
}

/** The resolved webhook settings of one app. */
export interface WebhookSettings {
	endpoints: WebhookEndpoint[];
	/** Attempts per delivery before it is given up (recorded as `failed`). */
	maxAttempts: number;
	/** The first retry waits about this long; each next one twice as long (with jitter), up to `retryMaxMs`. */
	retryBaseMs: number;
	retryMaxMs: number;
	/** One attempt (connect, headers and body) gets this long. */
	timeoutMs: number;
	/** Attempts in flight at once. */
	concurrency: number;
	/** How often the outbox is polled for due deliveries (new ones are sent at once regardless). */
	pollMs: number;
	/** Delivered and given-up deliveries are deleted this long after they finished. */
	retentionMs: number;
}

const DEFAULTS = {
	maxAttempts: 8,
	retryBaseMs: 5000,
	retryMaxMs: 3_600_000,
	timeoutMs: 10_000,
	concurrency: 4,
	pollMs: 1000,
	retentionMs: 7 * 86_400_000,
};

/** Standard Webhooks keys are 24 to 64 random bytes. */
const MIN_KEY_BYTES = 24;
const MAX_KEY_BYTES = 64;

/**
 * The webhook settings of `config` (undefined when no endpoint is configured). Throws
 * {@link ConfigError} naming the field of the first bad value.
 */
export function resolveWebhookSettings(
	config: ServerConfig,
	env: Record<string, string | undefined>,
): WebhookSettings | undefined {
	const settings = resolveOutboxSettings(config, env);
	return settings.endpoints.length > 0 ? settings : undefined;
}

/**
 * The outbox's settings, also with no endpoint configured: deliveries that name their own target
 * (A2A push notifications) use its delivery settings. Throws {@link ConfigError} as above.
 */
export function resolveOutboxSettings(config: ServerConfig, env: Record<string, string | undefined>): WebhookSettings {
	const section = config.webhooks;
	if (section !== undefined && (typeof section !== "object" || section === null || Array.isArray(section))) {
		throw new ConfigError("webhooks", "must be an object: { endpoints: [{ url, secret, events }], maxAttempts, ... }");
	}
	const fields = (section ?? {}) as Record<string, unknown>;
	const known = ["endpoints", ...Object.keys(DEFAULTS)];
	for (const key of Object.keys(fields)) {
		if (!known.includes(key))
			throw new ConfigError(`webhooks.${key}`, `unknown field; known fields: ${known.join(", ")}`);
	}
	const endpoints: WebhookEndpoint[] = [];
	const listed = fields.endpoints ?? [];
	if (!Array.isArray(listed))
		throw new ConfigError("webhooks.endpoints", "must be an array of { url, secret, events }");
	listed.forEach((entry: unknown, index) => {
		const where = `webhooks.endpoints[${index}]`;
		if (typeof entry !== "object" || entry === null || Array.isArray(entry))
			throw new ConfigError(where, "must be an object { url, secret, events }");
		const e = entry as Record<string, unknown>;
		for (const key of Object.keys(e)) {
			if (!["url", "secret", "events"].includes(key))
				throw new ConfigError(`${where}.${key}`, "unknown field; known fields: url, secret, events");
		}
		endpoints.push({
			...endpointUrl(e.url, `${where}.url`),
			key: decodeSecret(resolveSecret(e.secret, `${where}.secret`, env), `${where}.secret`),
			events: checkEvents(e.events, `${where}.events`),
		});
	});
	if (config.webhookUrl) {
		if (!config.webhookSecret)
			throw new ConfigError(
				"WHEELHOUSE_WEBHOOK_SECRET",
				"must be set with WHEELHOUSE_WEBHOOK_URL (a whsec_... secret)",
			);
		endpoints.push({
			...endpointUrl(config.webhookUrl, "WHEELHOUSE_WEBHOOK_URL"),
			key: decodeSecret(config.webhookSecret, "WHEELHOUSE_WEBHOOK_SECRET"),
			events: checkEvents(
				config.webhookEvents.length > 0 ? config.webhookEvents : undefined,
				"WHEELHOUSE_WEBHOOK_EVENTS",
			),
		});
	} else if (config.webhookSecret || config.webhookEvents.length > 0) {
		throw new ConfigError("WHEELHOUSE_WEBHOOK_URL", "must be set when WHEELHOUSE_WEBHOOK_SECRET or _EVENTS is");
	}
	const seen = new Set<string>();
	for (const [index, endpoint] of endpoints.entries()) {
		if (seen.has(endpoint.url))
			throw new ConfigError(`webhooks.endpoints[${index}].url`, `${endpoint.logged} is configured twice`);
		seen.add(endpoint.url);
	}
	const int = (key: keyof typeof DEFAULTS, min: number, max: number): number => {
		const value = fields[key] ?? DEFAULTS[key];
		if (typeof value !== "number" || !Number.isInteger(value) || value < min || value > max)
			throw new ConfigError(
				`webhooks.${key}`,
				`must be an integer between ${min} and ${max} (got ${JSON.stringify(value)})`,
			);
		return value;
	};
	const settings: WebhookSettings = {
		endpoints,
		maxAttempts: int("maxAttempts", 1, 100),
		retryBaseMs: int("retryBaseMs", 1, 86_400_000),
		retryMaxMs: int("retryMaxMs", 1, 7 * 86_400_000),
		timeoutMs: int("timeoutMs", 100, 300_000),
		concurrency: int("concurrency", 1, 100),
		pollMs: int("pollMs", 10, 3_600_000),
		retentionMs: int("retentionMs", 0, 365 * 86_400_000),
	};
	return settings;
}

/** The URL fields of an endpoint (see {@link WebhookEndpoint}); messages never print its secrets. */
function endpointUrl(
	value: unknown,
	field: string,
): Pick<WebhookEndpoint, "url" | "target" | "authorization" | "logged"> {
	if (typeof value !== "string" || value.length === 0) throw new ConfigError(field, "must be an http(s) URL");
	let url: URL;
	try {
		url = new URL(value);
	} catch {
		throw new ConfigError(field, `is not a URL; write e.g. "https://hooks.example.com/wheelhouse"`);
	}
	if (url.protocol !== "http:" && url.protocol !== "https:")
		throw new ConfigError(field, `must be an http(s) URL (got ${url.protocol})`);
	const logged = redactUrl(value, { bare: true });
	if (url.username === "" && url.password === "") return { url: value, target: value, logged };
	let credentials: string;
	try {
		credentials = `${decodeURIComponent(url.username)}:${decodeURIComponent(url.password)}`;
	} catch {
		throw new ConfigError(field, `the user or password of ${logged} is not valid percent-encoding`);
	}
	url.username = "";
	url.password = "";
	return {
		url: value,
		target: url.toString(),
		authorization: `Basic ${Buffer.from(credentials, "utf8").toString("base64")}`,
		logged,
	};
}

function resolveSecret(value: unknown, field: string, env: Record<string, string | undefined>): string {
	if (typeof value !== "string" || value.length === 0)
		throw new ConfigError(field, `must be a "whsec_..." secret or a \${NAME} reference to one`);
	try {
		return substituteEnv(value, field, env as NodeJS.ProcessEnv);
	} catch (error) {
		if (error instanceof MissingEnvError)
			throw new ConfigError(field, `environment variable ${error.variable} is not set`);
		throw error;
	}
}

/** `whsec_` + base64 of the key bytes (the Standard Webhooks form); the message never prints the secret. */
function decodeSecret(secret: string, field: string): Buffer {
	const fix =
		"use the Standard Webhooks form: whsec_ + base64 of 24 to 64 random bytes, e.g. `echo whsec_$(openssl rand -base64 32)`";
	if (!secret.startsWith("whsec_")) throw new ConfigError(field, `must start with "whsec_"; ${fix}`);
	const body = secret.slice("whsec_".length);
	if (!/^[A-Za-z0-9+/]+={0,2}$/.test(body)) throw new ConfigError(field, `is not base64 after "whsec_"; ${fix}`);
	const key = Buffer.from(body, "base64");
	if (key.length < MIN_KEY_BYTES || key.length > MAX_KEY_BYTES)
		throw new ConfigError(field, `decodes to ${key.length} bytes; ${fix}`);
	return key;
}

function checkEvents(value: unknown, field: string): ReadonlySet<WebhookEventType> {
	if (value === undefined) return new Set(WEBHOOK_EVENT_TYPES);
	if (!Array.isArray(value) || value.length === 0)
		throw new ConfigError(field, `must be a non-empty array of: ${WEBHOOK_EVENT_TYPES.join(", ")}`);
	for (const type of value) {
		if (!(WEBHOOK_EVENT_TYPES as readonly unknown[]).includes(type))
			throw new ConfigError(
				field,
				`unknown event type ${JSON.stringify(type)}; the types are: ${WEBHOOK_EVENT_TYPES.join(", ")}`,
			);
	}
	return new Set(value as WebhookEventType[]);
}
