/**
 * Live fan-out, the sending side: every event this replica appends to a session's log is
 * published on the session's Redis channel once it is durable (persist, then publish), after it
 * was appended to the session's tail (`event-tail.ts`), where readers on any replica find the
 * deltas the store does not keep. Events are
 * batched: one store flush covers every event queued while the previous batch was being flushed
 * and published, so the cost is one commit per batch, not per event.
 *
 * An event of a session whose lease this replica lost (taken over while it stalled: the store
 * refused the write) is never published: its id may be the new holder's, and readers skip ids
 * they have seen. The store reports the loss when the flush finds it, before the flush resolves;
 * a loss no write of the batch ran into (a delta is not written) is found by the lease guard,
 * which a batch waits for when the replica may have stalled past the TTL (see `lease-guard.ts`).
 */
import { setTimeout as sleep } from "node:timers/promises";
import type { FastifyBaseLogger } from "fastify";
import type { SessionStore } from "../../store/types.js";
import type { SessionObserver } from "../runtime/session/observers.js";
import { defineTailCommands, publishToTail } from "./event-tail.js";
import type { LeaseGuard } from "./lease-guard.js";
import { encodeEventMessage, type RedisLink } from "./redis.js";

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
	/** Sessions lost while the current batch was being flushed: its events of them are dropped. */
	private lostInFlight = new Set<string>();
	/** Events queued since the start (a sequence number for `idle`). */
	private queued = 0;
	/** Every event queued up to this number was published or dropped. */
	private settled = 0;
	/** `idle()` callers, each waiting for the events queued up to `upTo`. */
	private idleWaiters: { upTo: number; resolve: () => void }[] = [];
	private running = false;
	private closed = false;

	constructor(
		private readonly store: SessionStore,
		private readonly redis: RedisLink,
		private readonly prefix: string,
		private readonly logger: FastifyBaseLogger,
		/** The lease guard (a store with leases): a batch is published only while it is fresh. */
		private readonly guard?: Pick<LeaseGuard, "whenFresh">,
	) {
		defineTailCommands(redis.publisher);
	}

	/** Observes every session's events (`LiveSessionDeps.fanOut`): queues each for the next batch. */
	readonly observer: SessionObserver = {
		event: (event) => this.tap(event.sessionId, event.id, event.type, event.data),
	};

	private tap(sessionId: string, id: number, type: string, data: string): void {
		if (this.closed) return;
		this.queue.push({ sessionId, id, type, data });
		this.queued++;
		if (!this.running) {
			this.running = true;
			// After the current tick: the events the agent emits together share a batch.
			setImmediate(() => void this.drain());
		}
	}

	private async drain(): Promise<void> {
		try {
			while (this.queue.length > 0 && !this.closed) {
				const batch = this.queue;
				this.queue = [];
				// A batch takes the whole queue: once it is out, so is every event queued before it.
				const upTo = this.queued;
				this.lostInFlight = new Set();
				await this.publish(batch);
				this.settle(upTo);
			}
		} finally {
			this.running = false;
			if (this.queue.length > 0 && !this.closed) {
				this.running = true;
				setImmediate(() => void this.drain());
			} else {
				this.settle(this.queued);
			}
		}
	}

	/** Makes `batch` durable, then appends it to the sessions' tails and publishes it. */
	private async publish(batch: Pending[]): Promise<void> {
		await this.flushStore();
		// After a stall: the renewal first, so the sessions lost meanwhile are known (and dropped).
		await this.guard?.whenFresh();
		const lost = this.lostInFlight;
		// Per session, in id order: one script call appends its events to the tail and publishes them.
		const bySession = new Map<string, { ids: number[]; messages: string[] }>();
		let count = 0;
		for (const event of batch) {
			if (lost.has(event.sessionId)) continue;
			let events = bySession.get(event.sessionId);
			if (!events) {
				events = { ids: [], messages: [] };
				bySession.set(event.sessionId, events);
			}
			events.ids.push(event.id);
			events.messages.push(encodeEventMessage(event.id, event.type, event.data));
			count++;
		}
		if (count === 0) return;
		const pipeline = this.redis.publisher.pipeline();
		for (const [sessionId, events] of bySession) {
			publishToTail(pipeline, this.prefix, sessionId, events.ids, events.messages);
		}
		// Redis away: readers fill the gap from the store (they re-check it periodically).
		await pipeline.exec().catch(() => undefined);
	}

	/** Every event queued up to `upTo` is out: the `idle()` callers waiting for no later one go on. */
	private settle(upTo: number): void {
		this.settled = Math.max(this.settled, upTo);
		if (this.idleWaiters.length === 0) return;
		const waiting: typeof this.idleWaiters = [];
		for (const waiter of this.idleWaiters) {
			if (waiter.upTo <= this.settled) waiter.resolve();
			else waiting.push(waiter);
		}
		this.idleWaiters = waiting;
	}

	/** The store lost the session's lease: its events not yet published never will be. */
	sessionLost(sessionId: string): void {
		this.lostInFlight.add(sessionId);
		this.queue = this.queue.filter((event) => event.sessionId !== sessionId);
	}

	/**
	 * Resolves once every event queued so far was published (or dropped); events queued after the
	 * call are not waited for, so other sessions' steady stream of events never holds it.
	 */
	idle(): Promise<void> {
		const upTo = this.queued;
		if (upTo <= this.settled || (!this.running && this.queue.length === 0)) return Promise.resolve();
		return new Promise((resolve) => this.idleWaiters.push({ upTo, resolve }));
	}

	/** The store flush, retried until it succeeds: nothing is published before it is durable. */
	private async flushStore(): Promise<void> {
		for (let attempt = 0; !this.closed; attempt++) {
			try {
				await this.store.flush();
				return;
			} catch (err) {
				if (attempt === 0) this.logger.warn({ err }, "store flush before publishing failed; retrying");
				await sleep(RETRY_MS);
			}
		}
	}

	close(): void {
		this.closed = true;
		this.queue = [];
		for (const waiter of this.idleWaiters.splice(0)) waiter.resolve();
	}
}
