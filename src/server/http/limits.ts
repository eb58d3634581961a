/**
 * Per-API-key limits of the HTTP layer: requests per minute (`@fastify/rate-limit`, keyed by the
 * authenticated owner) and SSE streams open at once, per key and per session ({@link StreamSlots}).
 * Runs running at once are the session runtime's (`runtime/session/run-slots.ts`). All answer 429 with the envelope; the request limit also sends
 * `retry-after`. `@fastify/rate-limit` is loaded only when the request limit is on. The limits on
 * sessions held and bytes queued live with the sessions (session/manager.ts, session/queues.ts).
 *
 * Requests without a valid key are limited too, by address, at the same rate: auth refuses them
 * before any route's own hooks run, so it asks the limit first ({@link RequestLimit.limitRefused});
 * a loop guessing keys then gets 429 instead of a 401 per guess. They count apart from every key's
 * requests, so a key's own limit is untouched by them.
 */
import type { ServerResponse } from "node:http";
import type { FastifyInstance, FastifyReply, FastifyRequest } from "fastify";
import { apiError } from "./errors.js";

export interface StreamLimits {
	/** Streams one owner may have open at once; 0: no limit. */
	perKey: number;
	/** Streams open at once on one session; 0: no limit. */
	perSession: number;
	/** Called for each refused stream (metrics). */
	onRefused?: () => void;
}

/**
 * Counts the SSE streams open per owner and per session, and refuses one past either limit. A
 * stream holds its slots from {@link hold} until its HTTP response closes (ended by the server,
 * or the client gone), whatever happens in between: a route that fails after taking them gives
 * them back with its error response. Owner `null` (auth off) is one owner. The counts are in
 * memory, per process.
 */
export class StreamSlots {
	private readonly byOwner = new Map<string | null, number>();
	private readonly bySession = new Map<string, number>();

	constructor(private readonly limits: StreamLimits) {}

	/** Streams `ownerId` has open now. */
	openBy(ownerId: string | null): number {
		return this.byOwner.get(ownerId) ?? 0;
	}

	/** Streams open on `sessionId` now. */
	openOn(sessionId: string): number {
		return this.bySession.get(sessionId) ?? 0;
	}

	/**
	 * Takes a stream slot of `ownerId` (and of `sessionId`, for a session's stream) for `response`,
	 * given back when it closes. Throws `TOO_MANY_STREAMS` when either count is at its limit; call
	 * it before the response is opened, so the refusal can still be sent.
	 */
	hold(ownerId: string | null, sessionId: string | undefined, response: ServerResponse): void {
		if (response.closed || response.destroyed) return; // the client is gone: nothing will be streamed
		const { perKey, perSession } = this.limits;
		const ownerCount = this.openBy(ownerId);
		if (perKey > 0 && ownerCount >= perKey) {
			this.limits.onRefused?.();
			throw apiError(
				"TOO_MANY_STREAMS",
				`This API key already has ${ownerCount} streams open (limit ${perKey}, WHEELHOUSE_MAX_STREAMS_PER_KEY); close one first.`,
				{ limit: "perKey", max: perKey },
			);
		}
		const sessionCount = sessionId === undefined ? 0 : this.openOn(sessionId);
		if (sessionId !== undefined && perSession > 0 && sessionCount >= perSession) {
			this.limits.onRefused?.();
			throw apiError(
				"TOO_MANY_STREAMS",
				`Session ${sessionId} already has ${sessionCount} streams open (limit ${perSession}, WHEELHOUSE_MAX_STREAMS_PER_SESSION); close one first.`,
				{ limit: "perSession", max: perSession },
			);
		}
		this.byOwner.set(ownerId, ownerCount + 1);
		if (sessionId !== undefined) this.bySession.set(sessionId, sessionCount + 1);
		response.once("close", () => {
			decrement(this.byOwner, ownerId);
			if (sessionId !== undefined) decrement(this.bySession, sessionId);
		});
	}
}

function decrement<K>(counts: Map<K, number>, key: K): void {
	const count = counts.get(key) ?? 0;
	if (count <= 1) counts.delete(key);
	else counts.set(key, count - 1);
}

/** The window of the request limit. */
const WINDOW_MS = 60_000;

export interface RequestLimitOptions {
	/** Requests per minute per API key (per address with auth off); 0 = none. */
	perMinute: number;
	/**
	 * Requests per minute per address that auth refuses (no key, a wrong one, a bad stream token),
	 * counted apart from every key's own; 0 = none.
	 */
	refusedPerMinute: number;
	/**
	 * Requests per minute of all the callers of one tenant together (`auth.tenantRateLimitPerMinute`),
	 * beside each caller's own; 0 = none. Callers without a tenant are not counted there.
	 */
	perTenantPerMinute?: number;
	/** Called for each refused request (metrics). */
	onRefused?: () => void;
}

/** The installed request limit. */
export interface RequestLimit {
	/** Counts a request auth is about to refuse against its address; throws `RATE_LIMITED` past the limit. */
	limitRefused?(request: FastifyRequest, reply: FastifyReply): Promise<void>;
	/**
	 * Counts an authenticated request against its caller's tenant; throws `RATE_LIMITED` past the
	 * limit. Run it after auth (an `onRequest` hook added after `installAuth`).
	 */
	limitTenant?(request: FastifyRequest, reply: FastifyReply): Promise<void>;
}

/** The limiter's key of a request: its API key's owner, else its address. */
function limitKey(request: FastifyRequest): string {
	return request.ownerId ? `key:${request.ownerId}` : `ip:${request.ip}`;
}

function retryIn(ttlMs: number): number {
	return Math.max(1, Math.ceil(ttlMs / 1000));
}

/**
 * Installs the requests-per-minute limit on every route registered after it, except the open
 * ones (health probes, the OpenAPI document), and the limit of requests auth refuses, per address.
 * The per-route hooks run after the app's own `onRequest` hooks, so after auth (they read
 * `request.ownerId`, which the auth hook sets); install it before the routes, and hand
 * {@link RequestLimit.limitRefused} to auth. The counts are in memory, per app: with several
 * processes behind a balancer the limits hold per process.
 */
export async function installRequestLimit(app: FastifyInstance, options: RequestLimitOptions): Promise<RequestLimit> {
	const { default: rateLimit } = await import("@fastify/rate-limit");
	await app.register(rateLimit, {
		// Without a per-key limit, the plugin only serves the limiter of refused requests below.
		global: options.perMinute > 0,
		max: options.perMinute,
		timeWindow: WINDOW_MS,
		keyGenerator: limitKey,
		allowList: (request: FastifyRequest) => request.routeOptions.config?.public === true,
		onExceeded: () => options.onRefused?.(),
		errorResponseBuilder: (request, context) =>
			apiError(
				"RATE_LIMITED",
				`Too many requests: ${request.ownerId ? "this API key" : "this address"} may send ${context.max} per minute; retry in ${retryIn(context.ttl)} s (the retry-after header).`,
			),
	});
	const limit: RequestLimit = {};
	const perTenant = options.perTenantPerMinute ?? 0;
	if (perTenant > 0) {
		// Its own counts too: a tenant's many callers together are bounded, each caller's own count is untouched.
		const tenantLimiter = app.rateLimit({
			max: perTenant,
			timeWindow: WINDOW_MS,
			keyGenerator: (request: FastifyRequest) => `tenant:${request.principal?.tenant ?? ""}`,
			onExceeded: () => options.onRefused?.(),
			errorResponseBuilder: (_request, context) =>
				apiError(
					"RATE_LIMITED",
					`Too many requests: the callers of your tenant may send ${context.max} per minute together; retry in ${retryIn(context.ttl)} s (the retry-after header).`,
				),
		});
		limit.limitTenant = async (request, reply) => {
			if (!request.principal?.tenant || request.routeOptions.config?.public === true) return;
			await tenantLimiter.call(app, request, reply);
		};
	}
	if (options.refusedPerMinute <= 0) return limit;
	// A limiter of its own (its own counts): a loop guessing keys is slowed, a key's own count is untouched.
	const refused = app.rateLimit({
		max: options.refusedPerMinute,
		timeWindow: WINDOW_MS,
		keyGenerator: (request: FastifyRequest) => `refused:${request.ip}`,
		onExceeded: () => options.onRefused?.(),
		errorResponseBuilder: (_request, context) =>
			apiError(
				"RATE_LIMITED",
				`Too many requests: this address, without a valid API key, may send ${context.max} per minute; retry in ${retryIn(context.ttl)} s (the retry-after header).`,
			),
	});
	limit.limitRefused = async (request, reply) => {
		await refused.call(app, request, reply);
	};
	return limit;
}
