/**
 * The two Redis connections of a replica and the names of the channels and keys on them: one
 * connection publishes and reads the sessions' tails (it never queues while Redis is away: a
 * command that cannot be sent fails at once and readers fill the gap from the store), one subscribes (Redis reserves a subscribed connection for
 * that). Both reconnect by themselves; `ready` says whether both are connected, for `/readyz`.
 */

import type { FastifyBaseLogger } from "fastify";
import { Redis } from "ioredis";

/** The channel of a session's live events. */
export function eventChannel(prefix: string, sessionId: string): string {
	return `${prefix}events:${sessionId}`;
}

/** The Redis Stream of a session's recent events, deltas included (see `event-tail.ts`). */
export function tailKey(prefix: string, sessionId: string): string {
	return `${prefix}tail:${sessionId}`;
}

/** The highest event id published of a session (see `event-tail.ts`). */
export function highWaterKey(prefix: string, sessionId: string): string {
	return `${prefix}published:${sessionId}`;
}

/** One published event: `id`, `type` and `data` on three lines (data is one-line JSON). */
export function encodeEventMessage(id: number, type: string, data: string): string {
	return `${id}\n${type}\n${data}`;
}

/** The parsed message, or undefined for one that is not an event message. */
export function decodeEventMessage(message: string): { id: number; type: string; data: string } | undefined {
	const first = message.indexOf("\n");
	const second = first < 0 ? -1 : message.indexOf("\n", first + 1);
	if (second < 0) return undefined;
	const id = Number(message.slice(0, first));
	if (!Number.isSafeInteger(id) || id <= 0) return undefined;
	return { id, type: message.slice(first + 1, second), data: message.slice(second + 1) };
}

/** The message on a session's event channel that tells its readers to re-read the log. */
export const RESYNC_MESSAGE = "resync";

/** The channel every replica listens to for control messages. */
export function controlChannel(prefix: string): string {
	return `${prefix}control`;
}

/** How long a command on the publishing connection may wait for its answer. */
const COMMAND_TIMEOUT_MS = 2000;

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
		this.publisher = new Redis(url, {
			...common,
			enableOfflineQueue: false,
			// A connection that stays open while Redis answers nothing (a half-dead link) must not hold
			// a reader's tail read, or the publisher, forever: they fail, and the store fills in.
			commandTimeout: COMMAND_TIMEOUT_MS,
			connectionName: "wheelhouse-pub",
		});
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
