/**
 * Per-API-key limits: requests per minute (`@fastify/rate-limit`, keyed by the authenticated
 * owner) and runs running at once ({@link RunSlots}). Both answer 429 with the envelope; the
 * request limit also sends `retry-after`. `@fastify/rate-limit` is loaded only when the request limit is on.
 */
import type { FastifyInstance, FastifyRequest } from "fastify";
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
				`This API key already has ${count} ${count === 1 ? "run" : "runs"} running (limit ${this.max}); wait for one to end, or queue the message with ifBusy "steer" or "followUp" on a running session.`,
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

/**
 * Installs the requests-per-minute limit on every route registered after it, except the open
 * ones (health probes, the OpenAPI document): install it after auth (its hook reads
 * `request.ownerId`, which the auth hook sets) and before the routes. The store is in memory,
 * per app: with several processes behind a balancer the limit holds per process.
 */
export async function installRequestLimit(app: FastifyInstance, options: RequestLimitOptions): Promise<void> {
	const { default: rateLimit } = await import("@fastify/rate-limit");
	await app.register(rateLimit, {
		max: options.perMinute,
		timeWindow: WINDOW_MS,
		keyGenerator: (request: FastifyRequest) => (request.ownerId ? `key:${request.ownerId}` : `ip:${request.ip}`),
		allowList: (request: FastifyRequest) => request.routeOptions.config?.public === true,
		onExceeded: () => options.onRefused?.(),
		errorResponseBuilder: (_request, context) =>
			apiError(
				"RATE_LIMITED",
				`Too many requests: this API key may send ${context.max} per minute; retry in ${Math.max(1, Math.ceil(context.ttl / 1000))} s (the retry-after header).`,
			),
	});
}
