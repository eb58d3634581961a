/**
 * The two Redis connections of a replica and the names of the channels on them: one connection
 * publishes (it never queues while Redis is away: a publish that cannot be sent fails at once and
 * readers fill the gap from the store), one subscribes (Redis reserves a subscribed connection for
 * that). Both reconnect by themselves; `ready` says whether both are connected, for `/readyz`.
 */

import type { FastifyBaseLogger } from "fastify";
import { Redis } from "ioredis";

/** The channel of a session's live events. */
export function eventChannel(prefix: string, sessionId: string): string {
	return `${prefix}events:${sessionId}`;
}

/** The message on a session's event channel that tells its readers to re-read the log. */
export const RESYNC_MESSAGE = "resync";

/** The channel every replica listens to for control messages. */
export function controlChannel(prefix: string): string {
	return `${prefix}control`;
}

export class RedisLink {
	readonly publisher: Redis;
	readonly subscriber: Redis;
	private closed = false;
	/** Until `connect` succeeds, errors are kept for its rejection instead of logged: startup says it once. */
	private connected = false;
	private firstError: Error | undefined;

	constructor(
		url: string,
		private readonly logger: FastifyBaseLogger,
	) {
		const common = {
			lazyConnect: true,
			maxRetriesPerRequest: 1,
			// Reconnect quickly, never give up: Redis coming back must bring the replica back.
			retryStrategy: (attempt: number) => Math.min(50 * attempt, 1000),
			connectTimeout: 2000,
		};
		this.publisher = new Redis(url, { ...common, enableOfflineQueue: false, connectionName: "wheelhouse-pub" });
		this.subscriber = new Redis(url, { ...common, connectionName: "wheelhouse-sub" });
		for (const [name, client] of [
			["publisher", this.publisher],
			["subscriber", this.subscriber],
		] as const) {
			let reported = false;
			client.on("error", (err: Error) => {
				if (!this.connected) {
					this.firstError ??= err;
					return;
				}
				// One line per outage, not one per reconnect attempt.
				if (reported || this.closed) return;
				reported = true;
				this.logger.warn({ err: err.message, connection: name }, "redis unreachable; retrying");
			});
			client.on("ready", () => {
				if (reported) this.logger.info({ connection: name }, "redis reachable again");
				reported = false;
			});
		}
	}

	/**
	 * Connects both; rejects when Redis cannot be reached now (startup names it), with the first
	 * error the connections met (`connect ECONNREFUSED ...`, not ioredis's "Connection is closed"),
	 * and stops their reconnecting.
	 */
	async connect(): Promise<void> {
		try {
			await Promise.all([this.publisher.connect(), this.subscriber.connect()]);
			this.connected = true;
		} catch (err) {
			this.closed = true;
			this.publisher.disconnect();
			this.subscriber.disconnect();
			throw this.firstError ?? err;
		}
	}

	/** Both connections are up. */
	get ready(): boolean {
		return this.publisher.status === "ready" && this.subscriber.status === "ready";
	}

	async close(): Promise<void> {
		this.closed = true;
		await Promise.allSettled([this.publisher.quit(), this.subscriber.quit()]);
		this.publisher.disconnect();
		this.subscriber.disconnect();
	}
}
