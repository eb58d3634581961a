/**
 * The session leases as cluster mode uses them (the store's `LeaseStore` role, PostgreSQL): a
 * replica that lost a session's lease (it stalled past the TTL and another took the session over)
 * drops the session — its run is aborted here, its streams end, its late writes were refused by
 * the store — and every replica sweeps for runs whose holder died: it takes each over (the store
 * marks the run interrupted and moves its holder's token on; one replica wins), settles it on its
 * stream and continues it or not per the session's `onInterrupt` (`resumeInterruptedSession`),
 * and tells the readers on every replica to re-read the log.
 */
import type { FastifyBaseLogger } from "fastify";
import { isLeaseStore } from "../../store/shared.js";
import type { LeaseStore, SessionStore } from "../../store/types.js";
import type { SessionManager } from "../runtime/session/manager.js";
import type { EventPublisher } from "./event-publisher.js";
import type { EventSubscriptions } from "./event-subscriptions.js";
import { eventChannel, RESYNC_MESSAGE, type RedisLink } from "./redis.js";

/** The store's lease role, or undefined for a store without one. */
export function leasesOf(store: SessionStore): (LeaseStore & SessionStore) | undefined {
	return isLeaseStore(store) ? store : undefined;
}

export interface LeaseKeeperOptions {
	store: SessionStore;
	leases: LeaseStore & SessionStore;
	sessions: SessionManager;
	publisher: EventPublisher;
	subscriptions: EventSubscriptions;
	redis: RedisLink;
	prefix: string;
	logger: FastifyBaseLogger;
	/** Settles and continues (per its policy) the interrupted run of a session this replica took over. */
	resume(sessionId: string, at: number): Promise<{ kind: string }>;
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
		const { leases, redis, prefix, logger } = this.options;
		try {
			const expired = await leases.listExpiredRuns();
			const recovered: string[] = [];
			for (const sessionId of expired) {
				// One replica wins each run (the store moves its holder's token on as it marks it interrupted).
				const outcome = await this.options.resume(sessionId, Date.now());
				if (outcome.kind === "skipped") continue;
				recovered.push(sessionId);
				logger.warn(
					{ sessionId, outcome: outcome.kind },
					"took over a run whose replica stopped renewing its lease; recorded it interrupted",
				);
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
