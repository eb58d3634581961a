/**
 * Bearer-token auth, decided on the matched route, deny by default.
 *
 * With API keys configured every request needs `Authorization: Bearer <key>` unless the route it
 * matched is declared open (`config: { public: true }`: `/healthz`, `/readyz`, `/openapi.json`, the
 * playground page and its assets, the API reference at `/docs` and its assets).
 * The decision reads the route the router chose, never the URL text: the router decodes
 * percent-encoding and accepts absolute-form targets (`GET http://host/v1/...`), so any test of
 * the URL's spelling can be walked around. A request that matches no route needs a key too (its
 * 404 tells nothing to a caller without one). CORS preflights are answered by the CORS hook, which
 * must be installed before this one (browsers never send credentials on a preflight).
 *
 * A route declared `config: { streamToken: true }` also accepts, instead of the header, a stream
 * token in `?token=` minted for the session in its `:id` (see stream-token.ts).
 *
 * A route declared `config: { operator: true }` (`/metrics`) takes the operator credential
 * (`WHEELHOUSE_METRICS_TOKEN`) instead of an API key, and refuses every API key: what it shows
 * spans all keys. Without an operator credential it is refused to everyone while API keys are
 * configured (fail closed), and open when they are not (the whole server is open then).
 *
 * A request refused for its credentials first passes `limitRefused` (the per-address limit of
 * requests without a valid key), so a loop guessing keys gets 429 once past it.
 *
 * Keys are compared in constant time: both sides are hashed with SHA-256 and compared with
 * `crypto.timingSafeEqual`, and every configured key is checked (no early exit), so neither the
 * key's length nor which key matched leaks through timing.
 *
 * The request gets `ownerId`: a short hash of the matching key (never the key itself), or `null`
 * when auth is off. Sessions are owned by the `ownerId` that created them.
 */
import { createHash, timingSafeEqual } from "node:crypto";
import type { FastifyInstance, FastifyReply, FastifyRequest } from "fastify";
import { apiError } from "./errors.js";
import { STREAM_TOKEN_PARAM, StreamTokens } from "./stream-token.js";

declare module "fastify" {
	interface FastifyRequest {
		/** Hash id of the API key that authenticated the request; `null` when auth is off. */
		ownerId: string | null;
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

/** The owner id of an API key: the first 16 hex chars of its SHA-256 (safe to store and log). */
export function ownerIdOf(apiKey: string): string {
	return sha256(apiKey).toString("hex").slice(0, 16);
}

export interface AuthOptions {
	apiKeys: readonly string[];
	/** Lifetime of minted stream tokens. */
	streamTokenTtlMs: number;
	/** The credential of `operator` routes (`WHEELHOUSE_METRICS_TOKEN`); none: see the file comment. */
	operatorToken?: string;
	/**
	 * Runs before a request is refused for its credentials (`request.ownerId` is `null`): may throw
	 * its own error instead (429 past the limit of unauthenticated requests). Default: none.
	 */
	limitRefused?: (request: FastifyRequest, reply: FastifyReply) => Promise<void>;
}

/**
 * Installs the auth hook on the root instance (so it covers routes registered later by any
 * plugin, and the not-found handler). Install it after CORS. Returns the app's stream tokens
 * (the route that mints them needs them).
 */
export function installAuth(app: FastifyInstance, options: AuthOptions): StreamTokens {
	const keys = options.apiKeys.map((apiKey) => ({ apiKey, hash: sha256(apiKey), ownerId: ownerIdOf(apiKey) }));
	const tokens = new StreamTokens(keys, options.streamTokenTtlMs);
	const operator = options.operatorToken ? sha256(options.operatorToken) : undefined;
	app.decorateRequest("ownerId", null);
	if (keys.length === 0 && operator === undefined) return tokens;

	function ownerOfKey(presentedKey: string): string | null {
		const presented = sha256(presentedKey);
		let ownerId: string | null = null;
		for (const key of keys) {
			if (timingSafeEqual(presented, key.hash)) ownerId = key.ownerId;
		}
		return ownerId;
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
			if (keys.length === 0) return;
			return refuse(
				request,
				reply,
				apiError(
					"FORBIDDEN",
					"/metrics needs the operator credential, and none is configured: set WHEELHOUSE_METRICS_TOKEN and send it as `Authorization: Bearer <token>` (an API key does not open /metrics).",
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

	function ownerOfStreamToken(request: FastifyRequest): string | null | undefined {
		const token = (request.query as Record<string, unknown> | undefined)?.[STREAM_TOKEN_PARAM];
		const sessionId = (request.params as Record<string, unknown> | undefined)?.id;
		if (typeof token !== "string" || typeof sessionId !== "string") return undefined;
		const verified = tokens.verify(token, sessionId);
		if (!verified) {
			throw apiError(
				"UNAUTHORIZED",
				"The stream token is expired or was not minted for this session: mint a new one with POST /v1/sessions/:id/stream-token.",
			);
		}
		return verified.ownerId;
	}

	app.addHook("onRequest", async function authenticate(request: FastifyRequest, reply: FastifyReply) {
		const route = request.routeOptions.config;
		if (route?.public === true) return;
		if (route?.operator === true) return authenticateOperator(request, reply);
		if (keys.length === 0) return;
		const header = request.headers.authorization;
		if (header === undefined && route?.streamToken === true) {
			const ownerId = ownerOfStreamToken(request);
			if (ownerId !== undefined) {
				request.ownerId = ownerId;
				return;
			}
		}
		const presented = bearerOf(header);
		if (presented === undefined) {
			return refuse(
				request,
				reply,
				apiError("UNAUTHORIZED", "Missing credentials: send the header `Authorization: Bearer <api key>`."),
			);
		}
		const ownerId = ownerOfKey(presented);
		if (ownerId === null)
			return refuse(request, reply, apiError("UNAUTHORIZED", "The API key is not valid for this server."));
		request.ownerId = ownerId;
	});
	return tokens;
}
