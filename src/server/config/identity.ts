/**
 * The object form of `auth` in the config file: who may call the server besides the API keys, and
 * which tenant each caller belongs to. Checked at startup; a bad field stops it, named.
 *
 * ```json
 * "auth": {
 *   "mode": "keys",
 *   "jwt": {
 *     "issuer": "https://login.example.com/",
 *     "audience": "https://agents.example.com",
 *     "jwksUrl": "https://login.example.com/.well-known/jwks.json",
 *     "algorithms": ["RS256"],
 *     "clockToleranceSec": 30,
 *     "subjectClaim": "sub",
 *     "tenantClaim": "org_id",
 *     "requiredScopes": ["agents"],
 *     "playground": { "clientId": "wheelhouse-playground" }
 *   },
 *   "keyTenants": { "<an API key of apiKeys>": "org-a" },
 *   "clientTokenSecret": "${WHEELHOUSE_CLIENT_TOKEN_SECRET}",
 *   "clientTokenTtlMs": 900000,
 *   "maxRunsPerTenant": 4,
 *   "admission": "queue",
 *   "admissionTimeoutMs": 60000,
 *   "tenantRateLimitPerMinute": 6000,
 *   "tenantBudgets": { "org-a": { "maxCostUsd": 100, "period": "month" } },
 *   "usageAdminScope": "usage:tenant",
 *   "usageAdminKeys": ["<an API key of apiKeys with a tenant>"]
 * }
 * ```
 *
 * `mode` is `WHEELHOUSE_AUTH` (`keys` or `none`; the variable wins). Without `jwt`, only API keys
 * authenticate; `jwt.playground` lets the playground page sign in with the provider
 * (playground-oidc.ts). `keyTenants` gives API keys a tenant (named by the key itself, as `keyBudgets` are);
 * a key without an entry has none. `clientTokenSecret` (32 characters or more, the same on every
 * replica) signs the client tokens and stream tokens of JWT callers; API-key callers' tokens are
 * signed with a secret derived from their key. `maxRunsPerTenant` bounds the runs all callers of
 * one tenant have running together (429 `TOO_MANY_RUNS` past it), beside `maxRunsPerKey`;
 * `tenantRateLimitPerMinute` their requests per minute together (429 `RATE_LIMITED`). `admission`
 * says what a prompt past either run limit gets: `reject` (the default, 429) or `queue` (it waits
 * in the store's admission queue and starts when a slot frees; runtime/session/admission.ts).
 * `admissionTimeoutMs` bounds how long a request that starts its run itself (a facade's, a
 * continue) waits queued before it is answered 429 `ADMISSION_TIMEOUT` with its place given up.
 * `tenantBudgets` limits the tokens and cost of all callers of one tenant together
 * (tenant-budgets.ts; 429 `TENANT_BUDGET_EXHAUSTED` once spent). A JWT carrying the scope
 * `usageAdminScope` (default `usage:tenant`), or an API key of `usageAdminKeys` (it must have a
 * tenant in `keyTenants`), may read its whole tenant's usage (`GET /v1/usage?scope=tenant`); others
 * read their own only.
 */
import { MissingEnvError, substituteEnv } from "../../tools/env.js";
import { ConfigError, isObject, nonEmptyString } from "./config-error.js";
import { checkPlaygroundOidc, type PlaygroundOidcSettings } from "./playground-oidc.js";
import { providerUrl } from "./provider-url.js";
import { noTenantBudgets, type TenantBudgetConfig, tenantBudgetsFrom } from "./tenant-budgets.js";

/** How bearer JWTs are verified. */
export interface JwtSettings {
	issuer: string;
	audience: string[];
	jwksUrl: URL;
	algorithms: string[];
	clockToleranceSec: number;
	subjectClaim: string;
	/** Absent: JWT callers have no tenant. */
	tenantClaim?: string;
	/** Each must be in the token's scopes (`scope`, space-separated, or `scp`, an array or string). */
	requiredScopes: string[];
	/** How long the fetched key set is used before it is fetched again. */
	jwksCacheMaxAgeMs: number;
	/** The least time between two fetches of the key set for an unknown `kid`. */
	jwksCooldownMs: number;
	/** How long a key-set fetch may take. */
	jwksTimeoutMs: number;
	/** The playground's sign-in client (playground-oidc.ts); absent: the page takes pasted tokens only. */
	playground?: PlaygroundOidcSettings;
}

/** The checked section. */
export interface IdentitySettings {
	jwt?: JwtSettings;
	/** Tenant by API key (the key itself; auth.ts hashes it). */
	keyTenants: Map<string, string>;
	clientTokenSecret?: string;
	clientTokenTtlMs: number;
	/** Runs the owners of one tenant may have running together; absent: no limit. */
	maxRunsPerTenant?: number;
	/** Requests per minute of the callers of one tenant together; absent: no limit. */
	tenantRateLimitPerMinute?: number;
	/** What a prompt past a run limit gets: `reject` (429 `TOO_MANY_RUNS`) or `queue` (it waits for a slot). */
	admission: "reject" | "queue";
	/** How long a request that starts its run itself may wait for a slot under `queue`. */
	admissionTimeoutMs: number;
	/** Token and cost limits of each tenant's callers together. */
	tenantBudgets: TenantBudgetConfig;
	/** The JWT scope that lets a caller read its whole tenant's usage. */
	usageAdminScope: string;
	/** The API keys (the keys themselves) that may read their whole tenant's usage. */
	usageAdminKeys: string[];
}

export const DEFAULT_ADMISSION_TIMEOUT_MS = 60_000;
export const DEFAULT_USAGE_ADMIN_SCOPE = "usage:tenant";

export const DEFAULT_CLIENT_TOKEN_TTL_MS = 15 * 60 * 1000;
const MAX_CLIENT_TOKEN_TTL_MS = 24 * 60 * 60 * 1000;
const MIN_SECRET_LENGTH = 32;
const ALGORITHMS = ["RS256", "RS384", "RS512", "PS256", "PS384", "PS512", "ES256", "ES384", "ES512", "EdDSA"];
const FIELDS = [
	"mode",
	"jwt",
	"keyTenants",
	"clientTokenSecret",
	"clientTokenTtlMs",
	"maxRunsPerTenant",
	"tenantRateLimitPerMinute",
	"admission",
	"admissionTimeoutMs",
	"tenantBudgets",
	"usageAdminScope",
	"usageAdminKeys",
];
const JWT_FIELDS = [
	"issuer",
	"audience",
	"jwksUrl",
	"algorithms",
	"clockToleranceSec",
	"subjectClaim",
	"tenantClaim",
	"requiredScopes",
	"jwksCacheMaxAgeMs",
	"jwksCooldownMs",
	"jwksTimeoutMs",
	"playground",
];

/** True when the raw `auth` section (`ServerConfig.authConfig`) turns JWT auth on (read before it is checked). */
export function hasJwtAuth(authConfig: unknown): boolean {
	return typeof authConfig === "object" && authConfig !== null && (authConfig as { jwt?: unknown }).jwt !== undefined;
}

function stringList(field: string, value: unknown, allowEmpty: boolean): string[] {
	const list = typeof value === "string" ? [value] : value;
	if (!Array.isArray(list) || (!allowEmpty && list.length === 0) || list.some((v) => typeof v !== "string" || !v)) {
		throw new ConfigError(field, `must be ${allowEmpty ? "an" : "a non-empty"} array of non-empty strings`);
	}
	return list as string[];
}

function integer(field: string, value: unknown, fallback: number, min: number, max: number): number {
	if (value === undefined) return fallback;
	if (!Number.isInteger(value) || (value as number) < min || (value as number) > max) {
		throw new ConfigError(field, `must be a whole number from ${min} to ${max}; got ${JSON.stringify(value)}`);
	}
	return value as number;
}

function checkJwt(field: string, raw: unknown): JwtSettings {
	if (!isObject(raw)) throw new ConfigError(field, "must be an object with issuer, audience and jwksUrl");
	for (const name of Object.keys(raw)) {
		if (!JWT_FIELDS.includes(name)) {
			throw new ConfigError(`${field}.${name}`, `is not a field of auth.jwt; use ${JWT_FIELDS.join(", ")}`);
		}
	}
	const issuer = nonEmptyString(`${field}.issuer`, raw.issuer);
	const audience = stringList(`${field}.audience`, raw.audience, false);
	const jwksUrl = providerUrl(`${field}.jwksUrl`, nonEmptyString(`${field}.jwksUrl`, raw.jwksUrl));
	const algorithms =
		raw.algorithms === undefined ? ["RS256"] : stringList(`${field}.algorithms`, raw.algorithms, false);
	for (const alg of algorithms) {
		// Symmetric algorithms (HS*) would make the key set's secret a shared one, and `none` no check at all.
		if (!ALGORITHMS.includes(alg)) {
			throw new ConfigError(`${field}.algorithms`, `"${alg}" is not accepted; use some of ${ALGORITHMS.join(", ")}`);
		}
	}
	const subjectClaim =
		raw.subjectClaim === undefined ? "sub" : nonEmptyString(`${field}.subjectClaim`, raw.subjectClaim);
	const tenantClaim =
		raw.tenantClaim === undefined ? undefined : nonEmptyString(`${field}.tenantClaim`, raw.tenantClaim);
	const requiredScopes =
		raw.requiredScopes === undefined ? [] : stringList(`${field}.requiredScopes`, raw.requiredScopes, true);
	return {
		issuer,
		audience,
		jwksUrl,
		algorithms,
		clockToleranceSec: integer(`${field}.clockToleranceSec`, raw.clockToleranceSec, 30, 0, 600),
		subjectClaim,
		...(tenantClaim ? { tenantClaim } : {}),
		requiredScopes,
		jwksCacheMaxAgeMs: integer(`${field}.jwksCacheMaxAgeMs`, raw.jwksCacheMaxAgeMs, 600_000, 100, 86_400_000),
		jwksCooldownMs: integer(`${field}.jwksCooldownMs`, raw.jwksCooldownMs, 30_000, 0, 3_600_000),
		jwksTimeoutMs: integer(`${field}.jwksTimeoutMs`, raw.jwksTimeoutMs, 5_000, 100, 60_000),
		...(raw.playground === undefined
			? {}
			: {
					playground: checkPlaygroundOidc(`${field}.playground`, raw.playground, { issuer, audience, requiredScopes }),
				}),
	};
}

/**
 * Checks the object form of `auth` (`raw`; undefined: API keys only) against `apiKeys`. `field`
 * names it in messages (`<file>: auth`). Throws {@link ConfigError} naming the bad field.
 */
export function resolveIdentitySettings(
	raw: unknown,
	apiKeys: readonly string[],
	field = "auth",
	env: Record<string, string | undefined> = process.env,
): IdentitySettings {
	const settings: IdentitySettings = {
		keyTenants: new Map(),
		clientTokenTtlMs: DEFAULT_CLIENT_TOKEN_TTL_MS,
		admission: "reject",
		admissionTimeoutMs: DEFAULT_ADMISSION_TIMEOUT_MS,
		tenantBudgets: noTenantBudgets(),
		usageAdminScope: DEFAULT_USAGE_ADMIN_SCOPE,
		usageAdminKeys: [],
	};
	if (raw === undefined) return settings;
	if (!isObject(raw)) throw new ConfigError(field, `must be "keys", "none" or an object`);
	for (const name of Object.keys(raw)) {
		if (!FIELDS.includes(name))
			throw new ConfigError(`${field}.${name}`, `is not a field of auth; use ${FIELDS.join(", ")}`);
	}
	if (raw.jwt !== undefined) settings.jwt = checkJwt(`${field}.jwt`, raw.jwt);
	if (raw.keyTenants !== undefined) {
		if (!isObject(raw.keyTenants))
			throw new ConfigError(`${field}.keyTenants`, "must be an object: { <api key>: <tenant> }");
		for (const [key, tenant] of Object.entries(raw.keyTenants)) {
			// Named without printing the key.
			const name = `${field}.keyTenants["${key.slice(0, 4)}…"]`;
			if (!apiKeys.includes(key)) throw new ConfigError(name, "is not one of apiKeys (WHEELHOUSE_API_KEYS)");
			settings.keyTenants.set(key, nonEmptyString(name, tenant));
		}
	}
	if (raw.clientTokenSecret !== undefined) {
		let secret = raw.clientTokenSecret;
		if (typeof secret === "string") {
			try {
				secret = substituteEnv(secret, `${field}.clientTokenSecret`, env as NodeJS.ProcessEnv);
			} catch (error) {
				if (error instanceof MissingEnvError)
					throw new ConfigError(`${field}.clientTokenSecret`, `environment variable ${error.variable} is not set`);
				throw error;
			}
		}
		if (typeof secret !== "string" || secret.length < MIN_SECRET_LENGTH) {
			throw new ConfigError(
				`${field}.clientTokenSecret`,
				`must be a string of at least ${MIN_SECRET_LENGTH} characters (e.g. \`openssl rand -hex 32\`)`,
			);
		}
		settings.clientTokenSecret = secret;
	}
	settings.clientTokenTtlMs = integer(
		`${field}.clientTokenTtlMs`,
		raw.clientTokenTtlMs,
		DEFAULT_CLIENT_TOKEN_TTL_MS,
		1000,
		MAX_CLIENT_TOKEN_TTL_MS,
	);
	if (raw.maxRunsPerTenant !== undefined && raw.maxRunsPerTenant !== 0) {
		settings.maxRunsPerTenant = integer(`${field}.maxRunsPerTenant`, raw.maxRunsPerTenant, 0, 1, 1_000_000);
	}
	if (raw.tenantRateLimitPerMinute !== undefined && raw.tenantRateLimitPerMinute !== 0) {
		settings.tenantRateLimitPerMinute = integer(
			`${field}.tenantRateLimitPerMinute`,
			raw.tenantRateLimitPerMinute,
			0,
			1,
			100_000_000,
		);
	}
	if (raw.admission !== undefined) {
		if (raw.admission !== "reject" && raw.admission !== "queue") {
			throw new ConfigError(`${field}.admission`, 'must be "reject" or "queue"');
		}
		settings.admission = raw.admission;
	}
	settings.admissionTimeoutMs = integer(
		`${field}.admissionTimeoutMs`,
		raw.admissionTimeoutMs,
		DEFAULT_ADMISSION_TIMEOUT_MS,
		100,
		60 * 60 * 1000,
	);
	settings.tenantBudgets = tenantBudgetsFrom(raw.tenantBudgets, `${field}.tenantBudgets`);
	if (raw.usageAdminScope !== undefined) {
		const scope = nonEmptyString(`${field}.usageAdminScope`, raw.usageAdminScope);
		if (/\s/.test(scope)) throw new ConfigError(`${field}.usageAdminScope`, "must be one scope, without spaces");
		settings.usageAdminScope = scope;
	}
	if (raw.usageAdminKeys !== undefined) {
		const keys = stringList(`${field}.usageAdminKeys`, raw.usageAdminKeys, true);
		keys.forEach((key, i) => {
			// Named without printing the key.
			const name = `${field}.usageAdminKeys[${i}] ("${key.slice(0, 4)}…")`;
			if (!apiKeys.includes(key)) throw new ConfigError(name, "is not one of apiKeys (WHEELHOUSE_API_KEYS)");
			if (!settings.keyTenants.has(key)) {
				throw new ConfigError(
					name,
					"has no tenant: give it one in auth.keyTenants (its tenant's usage is what it reads)",
				);
			}
		});
		settings.usageAdminKeys = keys;
	}
	return settings;
}
