/**
 * Live fan-out, the receiving side: one Redis subscription per session that has readers on this
 * replica, shared by them (subscribed with the first reader, dropped with the last). Readers get
 * every message of their session's channel; after the subscriber connection reconnects they are
 * told to re-read the store (messages published while it was away are lost to pub/sub).
 *
 * A subscribe that fails (Redis unreachable) is retried while the session has readers here: at
 * once when the subscriber connection is ready again, and with backoff meanwhile (never longer
 * apart than `retryMaxMs`, a heartbeat interval), so its readers get live events again within
 * one heartbeat of Redis coming back. Until then they live on their periodic re-reads of the
 * store. Once the subscription is in place its readers re-read the log (what was published
 * before it is only there, and in the session's tail, `tail`).
 *
 * A subscribe that gets no answer at all (a link that stays open while Redis answers nothing)
 * holds a new reader at most `retryMaxMs`: it then starts on the store alone, as after a failed
 * subscribe, and re-reads the log once the subscribe is answered. Otherwise such a stream would
 * send nothing, not even what the store has, for as long as the link stays mute.
 */
import type { FastifyBaseLogger } from "fastify";
import { EventTail } from "./event-tail.js";
import { decodeEventMessage, eventChannel, RESYNC_MESSAGE, type RedisLink } from "./redis.js";

/** A reader of one session's live events. */
export interface LiveEventReader {
	/** A published event of the session, in publish order. */
	event(id: number, type: string, data: string): void;
	/** Messages may have been lost (the subscription was re-established): re-read the store. */
	resync(): void;
	/** The session is going away here (deleted, shutdown): end the stream. */
	close(reason: string): void;
}

/** The readers of one session here, and the state of their subscription. */
interface Channel {
	readers: Set<LiveEventReader>;
	/** Set once Redis confirmed the subscribe; false while it is being sent or waits for a retry. */
	subscribed: boolean;
	/** The subscribe in flight, if any (a reader added meanwhile waits for it). */
	subscribing: Promise<void> | undefined;
	/** The next retry of a failed subscribe. */
	retry: NodeJS.Timeout | undefined;
	/** Failed subscribes in a row (the backoff). */
	failures: number;
	/** A reader stopped waiting for the subscribe in flight (it reads the store until it is answered). */
	unanswered: boolean;
}

/** The first retry of a failed subscribe; doubled per failure up to the options' `retryMaxMs`. */
const RETRY_FIRST_MS = 50;

export interface EventSubscriptionsOptions {
	/** The longest wait between two tries of a failed subscribe (a heartbeat interval). */
	retryMaxMs: number;
}

export class EventSubscriptions {
	private readonly channels = new Map<string, Channel>();
	private closed = false;
	/** The sessions' tails, read back by readers that resume or missed live messages. */
	readonly tail: EventTail;

	constructor(
		private readonly redis: RedisLink,
		private readonly prefix: string,
		private readonly logger: FastifyBaseLogger,
		private readonly options: EventSubscriptionsOptions = { retryMaxMs: 1000 },
	) {
		this.tail = new EventTail(redis.publisher, prefix);
		redis.subscriber.on("message", (channel: string, message: string) => this.dispatch(channel, message));
		let connectedBefore = false;
		redis.subscriber.on("ready", () => {
			if (connectedBefore) {
				for (const [sessionId, channel] of this.channels) {
					// ioredis subscribed again to what it had; what failed is tried now.
					if (!channel.subscribed) this.subscribe(sessionId, channel);
					for (const reader of channel.readers) reader.resync();
				}
			}
			connectedBefore = true;
		});
	}

	private sessionOf(channel: string): string | undefined {
		const head = eventChannel(this.prefix, "");
		return channel.startsWith(head) ? channel.slice(head.length) : undefined;
	}

	private dispatch(channel: string, message: string): void {
		const sessionId = this.sessionOf(channel);
		const readers = sessionId === undefined ? undefined : this.channels.get(sessionId)?.readers;
		if (!readers) return;
		if (message === RESYNC_MESSAGE) {
			for (const reader of readers) reader.resync();
			return;
		}
		const event = decodeEventMessage(message);
		if (!event) return;
		for (const reader of readers) {
			try {
				reader.event(event.id, event.type, event.data);
			} catch (err) {
				this.logger.error({ err, sessionId }, "live event reader failed");
			}
		}
	}

	/** Sends the subscribe of `sessionId`'s channel (unless one is in flight); a failure schedules a retry. */
	private subscribe(sessionId: string, channel: Channel): Promise<void> {
		if (channel.subscribing) return channel.subscribing;
		clearTimeout(channel.retry);
		channel.retry = undefined;
		const attempt = this.redis.subscriber
			.subscribe(eventChannel(this.prefix, sessionId))
			.then(
				() => {
					if (this.channels.get(sessionId) !== channel) return;
					const late = channel.failures > 0 || channel.unanswered;
					channel.subscribed = true;
					channel.failures = 0;
					channel.unanswered = false;
					// Subscribed after failing, or after readers stopped waiting: what was published
					// before is in the store only.
					if (late) for (const reader of channel.readers) reader.resync();
				},
				(err: unknown) => {
					if (this.channels.get(sessionId) !== channel || this.closed) return;
					if (channel.failures === 0) {
						this.logger.warn(
							{ err, sessionId },
							"could not subscribe to live events; reading the store and retrying until Redis is back",
						);
					}
					channel.failures++;
					const wait = Math.min(RETRY_FIRST_MS * 2 ** (channel.failures - 1), this.options.retryMaxMs);
					channel.retry = setTimeout(() => {
						channel.retry = undefined;
						if (this.channels.get(sessionId) === channel) void this.subscribe(sessionId, channel);
					}, wait);
					channel.retry.unref();
				},
			)
			.finally(() => {
				channel.subscribing = undefined;
			});
		channel.subscribing = attempt;
		return attempt;
	}

	/**
	 * Adds a reader of the session's channel; resolves once the subscription is in place (what is
	 * published from then on reaches the reader), to the function that removes it. When Redis
	 * is unreachable it resolves after the first try anyway, and when the try gets no answer it
	 * resolves after `retryMaxMs`: the reader then lives on the store alone until the subscribe
	 * succeeds (and tells it to resync).
	 */
	async add(sessionId: string, reader: LiveEventReader): Promise<() => void> {
		let channel = this.channels.get(sessionId);
		if (!channel) {
			channel = {
				readers: new Set(),
				subscribed: false,
				subscribing: undefined,
				retry: undefined,
				failures: 0,
				unanswered: false,
			};
			this.channels.set(sessionId, channel);
			void this.subscribe(sessionId, channel);
		}
		channel.readers.add(reader);
		if (channel.subscribing) await this.answered(sessionId, channel, channel.subscribing);
		return () => this.remove(sessionId, reader);
	}

	/** Waits for `subscribing` at most `retryMaxMs`; past it the channel is marked unanswered (once reported). */
	private async answered(sessionId: string, channel: Channel, subscribing: Promise<void>): Promise<void> {
		let timer: NodeJS.Timeout | undefined;
		const late = new Promise<"late">((resolve) => {
			timer = setTimeout(() => resolve("late"), this.options.retryMaxMs);
			timer.unref();
		});
		const outcome = await Promise.race([subscribing.then(() => "answered" as const), late]);
		clearTimeout(timer);
		if (outcome === "answered" || channel.subscribed) return;
		if (!channel.unanswered && this.channels.get(sessionId) === channel) {
			this.logger.warn(
				{ sessionId, waitedMs: this.options.retryMaxMs },
				"the subscribe to a session's live events has not been answered; its readers read the store until it is",
			);
		}
		channel.unanswered = true;
	}

	private remove(sessionId: string, reader: LiveEventReader): void {
		const channel = this.channels.get(sessionId);
		if (!channel?.readers.delete(reader) || channel.readers.size > 0) return;
		this.channels.delete(sessionId);
		clearTimeout(channel.retry);
		this.redis.subscriber.unsubscribe(eventChannel(this.prefix, sessionId)).catch(() => undefined);
	}

	/** Ends every reader of the session on this replica (it was deleted). */
	closeSession(sessionId: string, reason: string): void {
		for (const reader of [...(this.channels.get(sessionId)?.readers ?? [])]) reader.close(reason);
	}

	/** Ends every reader (shutdown). */
	closeAll(reason: string): void {
		this.closed = true;
		for (const sessionId of [...this.channels.keys()]) this.closeSession(sessionId, reason);
		for (const channel of this.channels.values()) clearTimeout(channel.retry);
	}
}
