/**
 * Bearer-token auth, decided on the matched route, deny by default.
 *
 * With API keys or JWT auth (`auth.jwt`, identity/jwt.ts) configured every request needs
 * `Authorization: Bearer <credential>` unless the route it
 * matched is declared open (`config: { public: true }`: `/healthz`, `/readyz`, `/openapi.json`, the
 * playground page and its assets, the API reference at `/docs` and its assets).
 * The decision reads the route the router chose, never the URL text: the router decodes
 * percent-encoding and accepts absolute-form targets (`GET http://host/v1/...`), so any test of
 * the URL's spelling can be walked around. A request that matches no route needs a credential too
 * (its 404 tells nothing to a caller without one). CORS preflights are answered by the CORS hook,
 * which must be installed before this one (browsers never send credentials on a preflight).
 *
 * A bearer credential is, in this order: a client token (`whct_...`, identity/client-tokens.ts),
 * one of the API keys, or — when JWT auth is configured and it has a JWT's shape — a JWT of the
 * configured issuer. A refused one is 401 with `WWW-Authenticate: Bearer` naming the error
 * (RFC 6750); a JWT without a required scope is 403 `INSUFFICIENT_SCOPE`.
 *
 * A route declared `config: { streamToken: true }` also accepts, instead of the header, a stream
 * token (see stream-token.ts) or a client token in `?token=`, checked against the session in its
 * `:id`.
 *
 * A client token opens only the routes of its scopes (identity/client-scopes.ts) on its one session:
 * anything else is 403 `INSUFFICIENT_SCOPE`.
 *
 * A route declared `config: { operator: true }` (`/metrics`) takes the operator credential
 * (`WHEELHOUSE_METRICS_TOKEN`) instead of an API key, and refuses every API key: what it shows
 * spans all keys. Without an operator credential it is refused to everyone while API keys or JWT
 * auth are configured (fail closed), and open when they are not (the whole server is open then).
 *
 * A request refused for its credentials first passes `limitRefused` (the per-address limit of
 * requests without a valid key), so a loop guessing keys gets 429 once past it.
 *
 * Keys are compared in constant time: both sides are hashed with SHA-256 and compared with
 * `crypto.timingSafeEqual`, and every configured key is checked (no early exit), so neither the
 * key's length nor which key matched leaks through timing.
 *
 * The request gets `principal` (identity/principal.ts) and `ownerId`, the principal's owner id (a
 * short hash of the key, or of a JWT's issuer, tenant and subject: never a credential), or `null`
 * for both when auth is off. Sessions are owned by the `ownerId` that created them; which sessions
 * a caller sees is store/visibility.ts's rule.
 */
import { createHash, timingSafeEqual } from "node:crypto";
import type { FastifyInstance, FastifyReply, FastifyRequest } from "fastify";
import fp from "fastify-plugin";
import { ownerIdOf } from "../runtime/owner-id.js";
import { apiError } from "./errors.js";
import { scopeOfRoute } from "./identity/client-scopes.js";
import { CLIENT_TOKEN_PREFIX, ClientTokens } from "./identity/client-tokens.js";
import { JwtVerifier, looksLikeJwt } from "./identity/jwt.js";
import { type Principal, Tenants } from "./identity/principal.js";
import type { IdentitySettings } from "./identity/settings.js";
import { AUTH_PLUGIN, CONTEXT_PLUGIN } from "./plugins.js";
import { STREAM_TOKEN_PARAM, StreamTokens } from "./stream-token.js";

declare module "fastify" {
	interface FastifyRequest {
		/** Owner id of the caller (see identity/principal.ts); `null` when auth is off. */
		ownerId: string | null;
		/** Who the caller is; `null` when auth is off. */
		principal: Principal | null;
	}
	interface FastifyContextConfig {
		/** Open without an API key. Default false: every route needs one when keys are configured. */
		public?: boolean;
		/** Also accepts a stream token (`?token=`) minted for the session in the route's `:id`. */
		streamToken?: boolean;
		/** Takes the operator credential (`AuthOptions.operatorToken`) and no API key. */
		operator?: boolean;
	}
}

function sha256(value: string): Buffer {
	return createHash("sha256").update(value).digest();
}

export interface AuthOptions {
	apiKeys: readonly string[];
	/** Lifetime of minted stream tokens. */
	streamTokenTtlMs: number;
	/** JWT auth, key tenants and client tokens (the object form of `auth`); default: API keys only. */
	identity?: IdentitySettings;
	/** The tenants of owner ids ({@link tenantsOf} of `identity`); default: that. */
	tenants?: Tenants;
	/** The credential of `operator` routes (`WHEELHOUSE_METRICS_TOKEN`); none: see the file comment. */
	operatorToken?: string;
	/**
	 * Runs before a request is refused for its credentials (`request.ownerId` is `null`): may throw
	 * its own error instead (429 past the limit of unauthenticated requests). Default: none.
	 */
	limitRefused?: (request: FastifyRequest, reply: FastifyReply) => Promise<void>;
}

/** The tenants of owner ids, with the API keys' of `identity.keyTenants`. */
export function tenantsOf(identity: IdentitySettings | undefined): Tenants {
	const byOwner = new Map<string, string>();
	for (const [apiKey, tenant] of identity?.keyTenants ?? []) byOwner.set(ownerIdOf(apiKey), tenant);
	return new Tenants(byOwner);
}

/** The credentials of one app, for the routes that mint tokens. */
export interface AppCredentials {
	streamTokens: StreamTokens;
	clientTokens: ClientTokens;
	/** The tenant of every owner id (what the visibility rule needs of a caller). */
	tenants: Tenants;
}

declare module "fastify" {
	interface FastifyInstance {
		/** The app's token minters and tenants (the auth plugin's). */
		credentials: AppCredentials;
	}
}

/**
 * Auth as a plugin: {@link installAuth} on the instance it is registered on (not encapsulated, so
 * it covers every route registered after it), with `app.credentials` for the routes that mint
 * tokens. Route plugins name it as a dependency (plugins.ts).
 */
export const authPlugin = fp(
	async function wheelhouseAuth(app: FastifyInstance, options: AuthOptions) {
		app.decorate("credentials", installAuth(app, options));
	},
	{ name: AUTH_PLUGIN, fastify: "5.x", dependencies: [CONTEXT_PLUGIN] },
);

/** The `WWW-Authenticate` value of a 401 (RFC 6750); a description never quotes the token. */
function challenge(error?: string, description?: string): string {
	const parts = ['Bearer realm="wheelhouse"'];
	if (error) parts.push(`error="${error}"`);
	if (description) parts.push(`error_description="${description.replace(/["\\]/g, "'")}"`);
	return parts.join(", ");
}

/**
 * Installs the auth hook on the root instance (so it covers routes registered later by any
 * plugin, and the not-found handler). Install it after CORS. Returns the app's token minters
 * (the routes that mint them need them).
 */
export function installAuth(app: FastifyInstance, options: AuthOptions): AppCredentials {
	const identity = options.identity;
	const keys = options.apiKeys.map((apiKey) => ({
		apiKey,
		hash: sha256(apiKey),
		ownerId: ownerIdOf(apiKey),
		tenant: identity?.keyTenants.get(apiKey) ?? null,
	}));
	const tokens = new StreamTokens(keys, options.streamTokenTtlMs, identity?.clientTokenSecret);
	const clientTokens = new ClientTokens(keys, identity?.clientTokenSecret, identity?.clientTokenTtlMs ?? 15 * 60_000);
	const jwt = identity?.jwt ? new JwtVerifier(identity.jwt) : undefined;
	const operator = options.operatorToken ? sha256(options.operatorToken) : undefined;
	app.decorateRequest("ownerId", null);
	app.decorateRequest("principal", null);
	const tenants = options.tenants ?? tenantsOf(identity);
	const credentials = { streamTokens: tokens, clientTokens, tenants };
	const authOn = keys.length > 0 || jwt !== undefined;
	if (!authOn && operator === undefined) return credentials;

	function keyOf(presentedKey: string): (typeof keys)[number] | undefined {
		const presented = sha256(presentedKey);
		let found: (typeof keys)[number] | undefined;
		for (const key of keys) {
			if (timingSafeEqual(presented, key.hash)) found = key;
		}
		return found;
	}

	function ownerOfKey(presentedKey: string): string | null {
		return keyOf(presentedKey)?.ownerId ?? null;
	}

	/** The bearer credential of `header`, or undefined. */
	function bearerOf(header: string | undefined): string | undefined {
		const match = typeof header === "string" ? /^Bearer\s+(\S+)\s*$/i.exec(header) : null;
		return match?.[1];
	}

	/** Refuses the request with `error`, once the limit of refused requests had its say. */
	async function refuse(request: FastifyRequest, reply: FastifyReply, error: Error): Promise<never> {
		await options.limitRefused?.(request, reply);
		throw error;
	}

	/** An `operator` route: the operator credential, never an API key. */
	async function authenticateOperator(request: FastifyRequest, reply: FastifyReply): Promise<void> {
		if (operator === undefined) {
			if (!authOn) return;
			return refuse(
				request,
				reply,
				apiError(
					"FORBIDDEN",
					"/metrics needs the operator credential, and none is configured: set WHEELHOUSE_METRICS_TOKEN and send it as `Authorization: Bearer <token>` (an API key or a login token does not open /metrics).",
				),
			);
		}
		const presented = bearerOf(request.headers.authorization);
		if (presented === undefined) {
			return refuse(
				request,
				reply,
				apiError("UNAUTHORIZED", "Missing credentials: send the header `Authorization: Bearer <metrics token>`."),
			);
		}
		if (timingSafeEqual(sha256(presented), operator)) return;
		if (ownerOfKey(presented) !== null) {
			throw apiError(
				"FORBIDDEN",
				"An API key does not open /metrics: send the operator credential (WHEELHOUSE_METRICS_TOKEN).",
			);
		}
		return refuse(request, reply, apiError("UNAUTHORIZED", "The metrics token is not valid for this server."));
	}

	/** The principal of a `?token=` (a client token or a stream token); undefined without one. */
	function principalOfQueryToken(request: FastifyRequest, reply: FastifyReply): Principal | null | undefined {
		const token = (request.query as Record<string, unknown> | undefined)?.[STREAM_TOKEN_PARAM];
		const sessionId = (request.params as Record<string, unknown> | undefined)?.id;
		if (typeof token !== "string" || typeof sessionId !== "string") return undefined;
		if (token.startsWith(CLIENT_TOKEN_PREFIX)) {
			const principal = clientTokens.verify(token);
			if (principal) return principal;
			reply.header("www-authenticate", challenge("invalid_token", "the client token is expired or not valid"));
			throw apiError("UNAUTHORIZED", "The client token is expired or not valid: mint a new one with POST /v1/tokens.");
		}
		const verified = tokens.verify(token, sessionId);
		if (!verified) {
			reply.header(
				"www-authenticate",
				challenge("invalid_token", "the stream token is expired or not for this session"),
			);
			throw apiError(
				"UNAUTHORIZED",
				"The stream token is expired or was not minted for this session: mint a new one with POST /v1/sessions/:id/stream-token.",
			);
		}
		if (verified.ownerId === null) return null;
		return principalOfOwner(verified.ownerId);
	}

	/** The principal of a stream token's owner (it carries no more than the owner id). */
	function principalOfOwner(ownerId: string): Principal {
		const isKey = keys.some((k) => k.ownerId === ownerId);
		const subject = isKey ? `key:${ownerId}` : `stream-token:${ownerId}`;
		return { kind: isKey ? "key" : "jwt", ownerId, subject, tenant: tenants.of(ownerId), scopes: [] };
	}

	/** The principal of a bearer credential, or a thrown 401/403. */
	async function principalOfBearer(
		request: FastifyRequest,
		reply: FastifyReply,
		presented: string,
	): Promise<Principal> {
		if (presented.startsWith(CLIENT_TOKEN_PREFIX)) {
			const principal = clientTokens.verify(presented);
			if (principal) return principal;
			reply.header("www-authenticate", challenge("invalid_token", "the client token is expired or not valid"));
			return refuse(
				request,
				reply,
				apiError("UNAUTHORIZED", "The client token is expired or not valid: mint a new one with POST /v1/tokens."),
			);
		}
		const key = keyOf(presented);
		if (key)
			return { kind: "key", ownerId: key.ownerId, subject: `key:${key.ownerId}`, tenant: key.tenant, scopes: [] };
		if (jwt && looksLikeJwt(presented)) {
			const verified = await jwt.verify(presented);
			if (verified.kind !== "rejected") return verified;
			if (verified.error === "insufficient_scope") {
				reply.header("www-authenticate", challenge(verified.error, verified.description));
				throw apiError("INSUFFICIENT_SCOPE", `The token is not enough for this server: ${verified.description}.`);
			}
			reply.header("www-authenticate", challenge(verified.error, verified.description));
			return refuse(request, reply, apiError("UNAUTHORIZED", `The bearer token was refused: ${verified.description}.`));
		}
		reply.header("www-authenticate", challenge("invalid_token", "the credential is not valid for this server"));
		return refuse(
			request,
			reply,
			apiError(
				"UNAUTHORIZED",
				jwt ? "The bearer token is not valid for this server." : "The API key is not valid for this server.",
			),
		);
	}

	/** A client token opens only its scopes' routes on its one session (identity/client-scopes.ts). */
	function checkClientScope(request: FastifyRequest, principal: Principal): void {
		const limits = principal.session;
		if (!limits) return;
		const needed = scopeOfRoute(request.method, request.routeOptions.url);
		const sessionId = (request.params as Record<string, unknown> | undefined)?.id;
		if (needed === undefined || sessionId !== limits.id) {
			throw apiError(
				"INSUFFICIENT_SCOPE",
				"A client token opens only its own session's routes of its scopes; use the key or login that minted it here.",
			);
		}
		if (!limits.scopes.includes(needed)) {
			throw apiError("INSUFFICIENT_SCOPE", `This client token lacks the "${needed}" scope this route needs.`);
		}
	}

	app.addHook("onRequest", async function authenticate(request: FastifyRequest, reply: FastifyReply) {
		const route = request.routeOptions.config;
		if (route?.public === true) return;
		if (route?.operator === true) return authenticateOperator(request, reply);
		if (!authOn) return;
		const header = request.headers.authorization;
		let principal: Principal | null | undefined;
		if (header === undefined && route?.streamToken === true) principal = principalOfQueryToken(request, reply);
		if (principal === undefined) {
			const presented = bearerOf(header);
			if (presented === undefined) {
				reply.header("www-authenticate", challenge());
				return refuse(
					request,
					reply,
					apiError(
						"UNAUTHORIZED",
						`Missing credentials: send the header \`Authorization: Bearer <${jwt ? "api key or token" : "api key"}>\`.`,
					),
				);
			}
			principal = await principalOfBearer(request, reply, presented);
		}
		if (principal === null) return;
		checkClientScope(request, principal);
		request.principal = principal;
		request.ownerId = principal.ownerId;
		// The request's log lines (its "request completed" too) say who called; never the credential.
		const log = request.log.child({ subject: principal.subject, tenant: principal.tenant ?? undefined });
		request.log = log;
		reply.log = log;
	});
	return credentials;
}
