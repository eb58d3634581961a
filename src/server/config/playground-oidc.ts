/**
 * The playground's sign-in client as the config file sets it (`auth.jwt.playground`), checked at
 * startup; http/identity/playground-oidc.ts serves it to the page.
 *
 * ```json
 * "playground": {
 *   "clientId": "wheelhouse-playground",
 *   "scopes": ["openid", "profile", "agents"],
 *   "token": "access",
 *   "authorizationParams": { "audience": "https://agents.example.com" }
 * }
 * ```
 *
 * The page is a public client (authorization code with PKCE S256; OAuth 2.0 for Browser-Based Apps):
 * it holds no secret, so the config has no field for one. `token` says which token of the answer
 * the page sends as its bearer: `access` (the default; the token meant for an API) or `id` (for a
 * provider whose access tokens are not JWTs; its audience is the client id, so the client id must
 * be one of `auth.jwt.audience`). `authorizationParams` are extra query parameters of the
 * authorization request (Auth0's `audience`, Keycloak's `kc_idp_hint`); the protocol's own cannot
 * be overridden.
 */
import { ConfigError, isObject, nonEmptyString } from "./config-error.js";
import { insecureUrlReason, providerUrl } from "./provider-url.js";

/** The checked `auth.jwt.playground`. */
export interface PlaygroundOidcSettings {
	clientId: string;
	/** Absent: from the discovery document. */
	authorizationEndpoint?: URL;
	/** Absent: from the discovery document. */
	tokenEndpoint?: URL;
	scopes: string[];
	token: "access" | "id";
	authorizationParams: Record<string, string>;
}

const FIELDS = ["clientId", "authorizationEndpoint", "tokenEndpoint", "scopes", "token", "authorizationParams"];
/** Parameters the page sets itself: a config that changed them would break the flow or its checks. */
const PROTOCOL_PARAMS = [
	"response_type",
	"client_id",
	"redirect_uri",
	"scope",
	"state",
	"nonce",
	"code_challenge",
	"code_challenge_method",
	"response_mode",
];

/** The discovery document's URL, or undefined when the issuer is not an URL the server may read. */
export function discoveryUrl(issuer: string): URL | undefined {
	try {
		const url = new URL(`${issuer.replace(/\/+$/, "")}/.well-known/openid-configuration`);
		return insecureUrlReason(url) ? undefined : url;
	} catch {
		return undefined;
	}
}

/**
 * Checks `raw` (`auth.jwt.playground`, named `field`) against the JWT settings it belongs to.
 * Throws {@link ConfigError} naming the bad field.
 */
export function checkPlaygroundOidc(
	field: string,
	raw: unknown,
	jwt: { issuer: string; audience: string[]; requiredScopes: string[] },
): PlaygroundOidcSettings {
	if (!isObject(raw)) throw new ConfigError(field, "must be an object with at least clientId");
	for (const name of Object.keys(raw)) {
		if (/secret/i.test(name)) {
			throw new ConfigError(
				`${field}.${name}`,
				"the playground is a public client (authorization code with PKCE): a secret in a web page is no secret; remove it and register the client as public",
			);
		}
		if (!FIELDS.includes(name)) {
			throw new ConfigError(`${field}.${name}`, `is not a field of auth.jwt.playground; use ${FIELDS.join(", ")}`);
		}
	}
	const clientId = nonEmptyString(`${field}.clientId`, raw.clientId);
	const endpoint = (name: "authorizationEndpoint" | "tokenEndpoint"): URL | undefined => {
		if (raw[name] === undefined) {
			if (!discoveryUrl(jwt.issuer)) {
				throw new ConfigError(
					`${field}.${name}`,
					`is required: the issuer "${jwt.issuer}" is not an https:// URL its discovery document can be read from`,
				);
			}
			return undefined;
		}
		return providerUrl(`${field}.${name}`, nonEmptyString(`${field}.${name}`, raw[name]));
	};
	const authorizationEndpoint = endpoint("authorizationEndpoint");
	const tokenEndpoint = endpoint("tokenEndpoint");
	let scopes = ["openid", ...jwt.requiredScopes.filter((s) => s !== "openid")];
	if (raw.scopes !== undefined) {
		const list = raw.scopes;
		if (!Array.isArray(list) || list.some((s) => typeof s !== "string" || !/^[\x21\x23-\x5B\x5D-\x7E]+$/.test(s))) {
			throw new ConfigError(`${field}.scopes`, "must be an array of scope names (no spaces or quotes)");
		}
		if (!list.includes("openid")) {
			throw new ConfigError(
				`${field}.scopes`,
				'must include "openid": the page checks the sign-in\'s nonce in the ID token',
			);
		}
		scopes = list as string[];
	}
	let token: "access" | "id" = "access";
	if (raw.token !== undefined) {
		if (raw.token !== "access" && raw.token !== "id")
			throw new ConfigError(`${field}.token`, 'must be "access" or "id"');
		token = raw.token;
	}
	if (token === "id" && !jwt.audience.includes(clientId)) {
		throw new ConfigError(
			`${field}.token`,
			`is "id", whose audience is the client id: add "${clientId}" to auth.jwt.audience, or use the access token`,
		);
	}
	const authorizationParams: Record<string, string> = {};
	if (raw.authorizationParams !== undefined) {
		if (!isObject(raw.authorizationParams)) {
			throw new ConfigError(`${field}.authorizationParams`, "must be an object of strings: { <parameter>: <value> }");
		}
		for (const [name, value] of Object.entries(raw.authorizationParams)) {
			if (PROTOCOL_PARAMS.includes(name)) {
				throw new ConfigError(
					`${field}.authorizationParams.${name}`,
					"is set by the page itself and cannot be changed",
				);
			}
			if (typeof value !== "string") throw new ConfigError(`${field}.authorizationParams.${name}`, "must be a string");
			authorizationParams[name] = value;
		}
	}
	return {
		clientId,
		...(authorizationEndpoint ? { authorizationEndpoint } : {}),
		...(tokenEndpoint ? { tokenEndpoint } : {}),
		scopes,
		token,
		authorizationParams,
	};
}
