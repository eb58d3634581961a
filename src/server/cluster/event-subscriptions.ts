/**
 * Live fan-out, the receiving side: one Redis subscription per session that has readers on this
 * replica, shared by them (subscribed with the first reader, dropped with the last). Readers get
 * every message of their session's channel; after the subscriber connection reconnects they are
 * told to re-read the store (messages published while it was away are lost to pub/sub).
 */
import type { FastifyBaseLogger } from "fastify";
import { decodeEventMessage } from "./event-publisher.js";
import { eventChannel, RESYNC_MESSAGE, type RedisLink } from "./redis.js";

/** A reader of one session's live events. */
export interface LiveEventReader {
	/** A published event of the session, in publish order. */
	event(id: number, type: string, data: string): void;
	/** Messages may have been lost (the subscription was re-established): re-read the store. */
	resync(): void;
	/** The session is going away here (deleted, shutdown): end the stream. */
	close(reason: string): void;
}

export class EventSubscriptions {
	private readonly readers = new Map<string, Set<LiveEventReader>>();
	/** Subscriptions being set up, by channel: a reader added meanwhile waits for the same one. */
	private readonly subscribing = new Map<string, Promise<void>>();

	constructor(
		private readonly redis: RedisLink,
		private readonly prefix: string,
		private readonly logger: FastifyBaseLogger,
	) {
		redis.subscriber.on("message", (channel: string, message: string) => this.dispatch(channel, message));
		let connectedBefore = false;
		redis.subscriber.on("ready", () => {
			if (connectedBefore) for (const set of this.readers.values()) for (const reader of set) reader.resync();
			connectedBefore = true;
		});
	}

	private sessionOf(channel: string): string | undefined {
		const head = eventChannel(this.prefix, "");
		return channel.startsWith(head) ? channel.slice(head.length) : undefined;
	}

	private dispatch(channel: string, message: string): void {
		const sessionId = this.sessionOf(channel);
		const set = sessionId === undefined ? undefined : this.readers.get(sessionId);
		if (!set) return;
		if (message === RESYNC_MESSAGE) {
			for (const reader of set) reader.resync();
			return;
		}
		const event = decodeEventMessage(message);
		if (!event) return;
		for (const reader of set) {
			try {
				reader.event(event.id, event.type, event.data);
			} catch (err) {
				this.logger.error({ err, sessionId }, "live event reader failed");
			}
		}
	}

	/**
	 * Adds a reader of the session's channel; resolves once the subscription is in place (what is
	 * published from then on reaches the reader), to the function that removes it. When Redis
	 * is unreachable it resolves anyway: the reader then lives on the store alone until the
	 * subscriber reconnects (ioredis subscribes again then, and the reader is told to resync).
	 */
	async add(sessionId: string, reader: LiveEventReader): Promise<() => void> {
		const channel = eventChannel(this.prefix, sessionId);
		let set = this.readers.get(sessionId);
		if (!set) {
			set = new Set();
			this.readers.set(sessionId, set);
			const subscribing = this.redis.subscriber
				.subscribe(channel)
				.then(() => undefined)
				.catch((err: unknown) => {
					this.logger.warn(
						{ err, sessionId },
						"could not subscribe to live events; reading the store until Redis is back",
					);
				})
				.finally(() => this.subscribing.delete(channel));
			this.subscribing.set(channel, subscribing);
		}
		set.add(reader);
		await this.subscribing.get(channel);
		return () => this.remove(sessionId, reader);
	}

	private remove(sessionId: string, reader: LiveEventReader): void {
		const set = this.readers.get(sessionId);
		if (!set?.delete(reader) || set.size > 0) return;
		this.readers.delete(sessionId);
		this.redis.subscriber.unsubscribe(eventChannel(this.prefix, sessionId)).catch(() => undefined);
	}

	/** Ends every reader of the session on this replica (it was deleted). */
	closeSession(sessionId: string, reason: string): void {
		for (const reader of [...(this.readers.get(sessionId) ?? [])]) reader.close(reason);
	}

	/** Ends every reader (shutdown). */
	closeAll(reason: string): void {
		for (const sessionId of [...this.readers.keys()]) this.closeSession(sessionId, reason);
	}

	/** Sessions with readers here. */
	get sessionCount(): number {
		return this.readers.size;
	}
}
