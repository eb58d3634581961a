/**
 * Per-API-key limits: requests per minute (`@fastify/rate-limit`, keyed by the authenticated
 * owner) and runs running at once ({@link RunSlots}). Both answer 429 with the envelope; the
 * request limit also sends `retry-after`. `@fastify/rate-limit` is loaded only when the request limit is on.
 *
 * Requests without a valid key are limited too, by address, at the same rate: auth refuses them
 * before any route's own hooks run, so it asks the limit first ({@link RequestLimit.limitRefused});
 * a loop guessing keys then gets 429 instead of a 401 per guess. They count apart from every key's
 * requests, so a key's own limit is untouched by them.
 */
import type { FastifyInstance, FastifyReply, FastifyRequest } from "fastify";
import { apiError } from "./errors.js";

/**
 * Counts the runs each owner has running and refuses one past the maximum. A run holds its slot
 * from the moment its session is claimed until the session is idle again (a run handed over by
 * `ifBusy: "interrupt"` keeps it). Owner `null` (auth off) is one owner: the limit then bounds all
 * runs together.
 */
export class RunSlots {
	private readonly running = new Map<string | null, number>();

	constructor(
		readonly max: number,
		private readonly onRefused: () => void = () => {},
	) {}

	/** Takes a slot for `ownerId`; throws `TOO_MANY_RUNS` when it has `max` already. */
	acquire(ownerId: string | null): void {
		const count = this.running.get(ownerId) ?? 0;
		if (count >= this.max) {
			this.onRefused();
			throw apiError(
				"TOO_MANY_RUNS",
				`This API key already has ${count} runs running (limit ${this.max}); wait for one to end, or queue the message with ifBusy "steer" or "followUp" on a running session.`,
			);
		}
		this.running.set(ownerId, count + 1);
	}

	/** Gives back a slot taken by {@link acquire}. */
	release(ownerId: string | null): void {
		const count = this.running.get(ownerId) ?? 0;
		if (count <= 1) this.running.delete(ownerId);
		else this.running.set(ownerId, count - 1);
	}
}

/** The window of the request limit. */
const WINDOW_MS = 60_000;

export interface RequestLimitOptions {
	perMinute: number;
	/** Called for each refused request (metrics). */
	onRefused?: () => void;
}

/** The installed request limit. */
export interface RequestLimit {
	/** Counts a request auth is about to refuse against its address; throws `RATE_LIMITED` past the limit. */
	limitRefused(request: FastifyRequest, reply: FastifyReply): Promise<void>;
}

/** The limiter's key of a request: its API key's owner, else its address. */
function limitKey(request: FastifyRequest): string {
	return request.ownerId ? `key:${request.ownerId}` : `ip:${request.ip}`;
}

/**
 * Installs the requests-per-minute limit on every route registered after it, except the open
 * ones (health probes, the OpenAPI document). Its per-route hooks run after the app's own
 * `onRequest` hooks, so after auth (they read `request.ownerId`, which the auth hook sets); install
 * it before the routes, and hand {@link RequestLimit.limitRefused} to auth. The store is in
 * memory, per app: with several processes behind a balancer the limit holds per process.
 */
export async function installRequestLimit(app: FastifyInstance, options: RequestLimitOptions): Promise<RequestLimit> {
	const { default: rateLimit } = await import("@fastify/rate-limit");
	await app.register(rateLimit, {
		max: options.perMinute,
		timeWindow: WINDOW_MS,
		keyGenerator: limitKey,
		allowList: (request: FastifyRequest) => request.routeOptions.config?.public === true,
		onExceeded: () => options.onRefused?.(),
		errorResponseBuilder: (request, context) =>
			apiError(
				"RATE_LIMITED",
				`Too many requests: ${request.ownerId ? "this API key" : "this address, without a valid API key,"} may send ${context.max} per minute; retry in ${Math.max(1, Math.ceil(context.ttl / 1000))} s (the retry-after header).`,
			),
	});
	// The same limiter and store: one count per address, whichever hook counted the request.
	const limiter = app.rateLimit();
	return {
		limitRefused: async (request, reply) => {
			await limiter.call(app, request, reply);
		},
	};
}
