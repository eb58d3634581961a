/**
 * The session leases as cluster mode uses them (the store's `LeaseStore` role, PostgreSQL): a
 * replica that lost a session's lease (it stalled past the TTL and another took the session over)
 * drops the session — its run is aborted here, its streams end, its late writes were refused by
 * the store — and every replica sweeps for runs whose holder died, taking each over exactly once:
 * the interruption is recorded and announced as at a restart (recovery.ts), and readers on every
 * replica are told to re-read the log.
 */
import type { FastifyBaseLogger } from "fastify";
import { isLeaseStore } from "../../store/shared.js";
import type { LeaseStore, SessionStore } from "../../store/types.js";
import { announceInterruption } from "../recovery.js";
import type { SessionManager } from "../session/manager.js";
import type { WebhookEvents } from "../webhooks/events.js";
import type { EventPublisher } from "./event-publisher.js";
import type { EventSubscriptions } from "./event-subscriptions.js";
import { eventChannel, RESYNC_MESSAGE, type RedisLink } from "./redis.js";

/** The store's lease role, or undefined for a store without one. */
export function leasesOf(store: SessionStore): LeaseStore | undefined {
	return isLeaseStore(store) ? store : undefined;
}

export interface LeaseKeeperOptions {
	store: SessionStore;
	leases: LeaseStore;
	sessions: SessionManager;
	publisher: EventPublisher;
	subscriptions: EventSubscriptions;
	redis: RedisLink;
	prefix: string;
	logger: FastifyBaseLogger;
	webhooks?: WebhookEvents;
}

export class LeaseKeeper {
	private timer: NodeJS.Timeout | undefined;
	private sweeping = false;
	private readonly unsubscribe: () => void;

	constructor(private readonly options: LeaseKeeperOptions) {
		this.unsubscribe = options.leases.onSessionLost((sessionId) => this.lost(sessionId));
	}

	/** Sweeps every third of the TTL, from a random offset (replicas started together spread out). */
	start(): void {
		const every = Math.max(100, Math.floor(this.options.leases.leaseTtlMs / 3));
		const first = setTimeout(
			() => {
				this.timer = setInterval(() => void this.sweep(), every);
				this.timer.unref();
				void this.sweep();
			},
			Math.floor(Math.random() * every),
		);
		first.unref();
		this.timer = first;
	}

	stop(): void {
		clearTimeout(this.timer);
		clearInterval(this.timer);
		this.unsubscribe();
	}

	/** Gives up the lease of a session whose run here ended, once its events are published. */
	async release(sessionId: string): Promise<void> {
		await this.options.publisher.idle();
		await this.options.leases.releaseSession(sessionId);
	}

	private lost(sessionId: string): void {
		const { publisher, sessions, logger } = this.options;
		publisher.sessionLost(sessionId);
		logger.warn({ sessionId }, "another replica took this session over (its lease expired here): dropping it");
		sessions
			.forget(sessionId, "the session was taken over by another replica")
			.catch((err: unknown) => logger.error({ err, sessionId }, "dropping a lost session failed"));
	}

	/** Takes over the runs whose replica died, and announces each interruption. */
	async sweep(): Promise<string[]> {
		if (this.sweeping) return [];
		this.sweeping = true;
		const { store, leases, redis, prefix, logger } = this.options;
		try {
			if ((await leases.listExpiredRuns(1)).length === 0) return [];
			const at = Date.now();
			const webhooks = this.options.webhooks;
			// One replica wins each run (the store moves its holder's token on in the same commit).
			const recovered = await leases.recoverExpiredRuns(
				at,
				webhooks && ((sessionId, runId) => webhooks.runInterrupted(sessionId, runId, at)),
			);
			for (const sessionId of recovered) await announceInterruption(store, sessionId, at);
			if (recovered.length > 0) await store.flush();
			for (const sessionId of recovered) {
				logger.warn({ sessionId }, "took over a run whose replica stopped renewing its lease; recorded it interrupted");
				await redis.publisher.publish(eventChannel(prefix, sessionId), RESYNC_MESSAGE).catch(() => undefined);
				if (!this.options.sessions.inMemory(sessionId)?.isBusy) await leases.releaseSession(sessionId);
			}
			return recovered;
		} catch (err) {
			logger.warn({ err }, "sweeping expired leases failed; retrying at the next sweep");
			return [];
		} finally {
			this.sweeping = false;
		}
	}
}
