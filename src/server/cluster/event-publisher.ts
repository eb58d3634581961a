/**
 * Live fan-out, the sending side: every event this replica appends to a session's log is
 * published on the session's Redis channel once it is durable (persist, then publish). Events are
 * batched: one store flush covers every event queued while the previous batch was being flushed
 * and published, so the cost is one commit per batch, not per event.
 *
 * An event of a session this replica no longer holds (its lease was taken over while it stalled:
 * the store refused the write) is never published: its id may be the new holder's, and readers
 * skip ids they have seen.
 */
import type { FastifyBaseLogger } from "fastify";
import type { SessionStore } from "../../store/types.js";
import { eventChannel, type RedisLink } from "./redis.js";

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

interface Pending {
	sessionId: string;
	id: number;
	type: string;
	data: string;
}

/** After a failed flush, the wait before the next try (the batch is kept). */
const RETRY_MS = 100;

export class EventPublisher {
	private queue: Pending[] = [];
	private running = false;
	private closed = false;
	/** Events published (for the bench and tests' sanity checks). */
	published = 0;

	constructor(
		private readonly store: SessionStore,
		private readonly redis: RedisLink,
		private readonly prefix: string,
		private readonly logger: FastifyBaseLogger,
	) {}

	/** The session log's tap: queues the event for the next batch. */
	readonly tap = (sessionId: string, id: number, type: string, data: string): void => {
		if (this.closed) return;
		this.queue.push({ sessionId, id, type, data });
		if (!this.running) {
			this.running = true;
			// After the current tick: the events the agent emits together share a batch.
			setImmediate(() => void this.drain());
		}
	};

	private async drain(): Promise<void> {
		try {
			while (this.queue.length > 0 && !this.closed) {
				const batch = this.queue;
				this.queue = [];
				await this.flushStore();
				const held = new Map<string, boolean>();
				const pipeline = this.redis.publisher.pipeline();
				let count = 0;
				for (const event of batch) {
					let isHeld = held.get(event.sessionId);
					if (isHeld === undefined) {
						// A session the store no longer holds answers as unknown: its writes were refused.
						isHeld = this.store.lastEventId(event.sessionId) !== undefined;
						held.set(event.sessionId, isHeld);
					}
					if (!isHeld) continue;
					pipeline.publish(
						eventChannel(this.prefix, event.sessionId),
						encodeEventMessage(event.id, event.type, event.data),
					);
					count++;
				}
				if (count === 0) continue;
				// Redis away: readers fill the gap from the store (they re-check it periodically).
				await pipeline.exec().catch(() => undefined);
				this.published += count;
			}
		} finally {
			this.running = false;
			if (this.queue.length > 0 && !this.closed) {
				this.running = true;
				setImmediate(() => void this.drain());
			}
		}
	}

	/** The store flush, retried until it succeeds: nothing is published before it is durable. */
	private async flushStore(): Promise<void> {
		for (let attempt = 0; !this.closed; attempt++) {
			try {
				await this.store.flush();
				return;
			} catch (err) {
				if (attempt === 0) this.logger.warn({ err }, "store flush before publishing failed; retrying");
				await new Promise((resolve) => setTimeout(resolve, RETRY_MS));
			}
		}
	}

	close(): void {
		this.closed = true;
		this.queue = [];
	}
}
