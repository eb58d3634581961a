/**
 * The scheduler: every `pollMs` it finds the schedules that are due, records their fires, then
 * carries each fire out and records its outcome.
 *
 * 1. In a cluster, only the replica holding the scheduler lease fires; the others try to take it
 *    every pass and get it once it expired (its holder died or stalled past the TTL). Every
 *    record is written under the lease token (the store refuses a stale one), and recording a tick
 *    also checks the schedule's next tick is still the one read, so no tick fires twice however
 *    replicas race. One replica (no cluster) needs no lease.
 * 2. A fire is durable (`firing`) before its run starts; the run's session and id, or why it was
 *    skipped or failed, are recorded when it started, with the webhook delivery in the same commit.
 * 3. Ticks that passed while nobody fired (a takeover's gap, a restart) are recorded `missed`, or
 *    one fires late as a catch-up (`missed: "once"`), see timing.ts.
 * 4. A fire left `firing` by a process that died before its run started is settled `failed`.
 */
import type { FastifyBaseLogger } from "fastify";
import type {
	NewWebhookDelivery,
	ScheduleFire,
	ScheduleRecord,
	SchedulerFence,
	SessionStore,
} from "../../../store/types.js";
import type { WebhookEvents } from "../../observability/webhooks/events.js";
import { carryOutFire, type FireDeps } from "./fire.js";
import { planDue } from "./timing.js";

export interface SchedulerOptions {
	store: SessionStore;
	logger: FastifyBaseLogger;
	fire: FireDeps;
	/** Cluster mode: fire only while holding the scheduler lease, as `holder`. */
	lease?: { holder: string; ttlMs: number };
	/** How often due schedules are looked for. */
	pollMs: number;
	/** A tick older than this when its pass comes was missed (see timing.ts). */
	lateMs: number;
	/** Builds webhook deliveries; absent when webhooks are off. */
	webhooks?: { events: WebhookEvents; wake(): void };
	/** The clock (tests); default `Date.now`. */
	now?: () => number;
}

/** A fire still `firing` this long after it was recorded was left by a process that died. */
const ABANDONED_AFTER_MS = 60_000;

export class Scheduler {
	private timer: NodeJS.Timeout | undefined;
	private passing: Promise<void> | undefined;
	private fence: SchedulerFence | undefined;
	private stopped = false;
	/** The last pass failed (its failure was logged; the next ones are not until one works). */
	private failing = false;
	private lastSweep = 0;
	/** When the lease was last renewed or tried for (process clock). */
	private leaseCheckedAt = Number.NEGATIVE_INFINITY;
	/** Fires being carried out (awaited at stop, so none is cut between its record and its outcome). */
	private readonly inFlight = new Set<Promise<void>>();
	private readonly now: () => number;

	constructor(private readonly options: SchedulerOptions) {
		this.now = options.now ?? Date.now;
	}

	start(): void {
		this.stopped = false;
		this.schedulePass(0);
	}

	/** Stops polling, lets fires being carried out settle, gives the lease up. */
	async stop(): Promise<void> {
		this.stopped = true;
		clearTimeout(this.timer);
		await this.passing;
		await Promise.allSettled([...this.inFlight]);
		if (this.fence) {
			await this.options.store.schedules.releaseSchedulerLease(this.fence).catch(() => undefined);
			this.fence = undefined;
		}
	}

	/** Runs a pass now (after the one in progress); the routes call it after a change. */
	poke(): void {
		if (!this.stopped && !this.passing) this.schedulePass(0);
	}

	private schedulePass(delay: number): void {
		clearTimeout(this.timer);
		this.timer = setTimeout(() => {
			this.passing = this.pass()
				.then(() => {
					if (this.failing) this.options.logger.info("scheduler passes work again");
					this.failing = false;
				})
				.catch((err: unknown) => {
					// Once per outage, not once per pass (a store that is down fails every pass).
					if (!this.failing) this.options.logger.warn({ err }, "scheduler pass failed; retrying every pass");
					this.failing = true;
				})
				.finally(() => {
					this.passing = undefined;
					if (!this.stopped) this.schedulePass(this.options.pollMs);
				});
		}, delay);
		this.timer.unref();
	}

	/**
	 * True while this process may fire: it holds the lease, or there is none to hold. The lease is
	 * renewed, or tried for, every third of its TTL, not every pass: the store refuses the records
	 * of a holder that lost it meanwhile anyway (fencing), so no pass needs a fresh renewal.
	 */
	private async holdLease(): Promise<boolean> {
		const { lease, store } = this.options;
		if (!lease) return true;
		const now = Date.now();
		if (now - this.leaseCheckedAt < lease.ttlMs / 3) return this.fence !== undefined;
		this.leaseCheckedAt = now;
		if (this.fence && (await store.schedules.renewSchedulerLease(this.fence, lease.ttlMs))) return true;
		if (this.fence) this.options.logger.warn("lost the scheduler lease to another replica");
		const token = await store.schedules.takeSchedulerLease(lease.holder, lease.ttlMs);
		this.fence = token === undefined ? undefined : { holder: lease.holder, token };
		if (this.fence) this.options.logger.info({ token }, "took the scheduler lease: this replica fires the schedules");
		return this.fence !== undefined;
	}

	private async pass(): Promise<void> {
		if (!(await this.holdLease())) return;
		const now = this.now();
		if (now - this.lastSweep > ABANDONED_AFTER_MS / 4) {
			this.lastSweep = now;
			await this.settleAbandoned(now);
		}
		const due = await this.options.store.schedules.dueSchedules(now, 100);
		for (const schedule of due) {
			if (this.stopped) return;
			await this.fireDue(schedule, now);
		}
	}

	/** Records the fires of one due schedule; carries out the ones to fire. */
	private async fireDue(schedule: ScheduleRecord, now: number): Promise<void> {
		const plan = planDue(schedule, now, this.options.lateMs);
		const missed = plan.fires.filter((f) => f.outcome === "missed");
		// Built from the stored fires (their ids), committed with them.
		const webhooks = (fires: readonly ScheduleFire[]) =>
			fires.filter((f) => f.outcome === "missed").flatMap((f) => this.deliveries("schedule.missed", f, schedule));
		const stored = await this.options.store.schedules.recordFires(
			schedule.id,
			plan.fires,
			{
				expectNextFireAt: schedule.nextFireAt,
				expectState: "active",
				nextFireAt: plan.nextFireAt,
				...(plan.state ? { state: plan.state } : {}),
				at: now,
			},
			{ ...(this.fence ? { fence: this.fence } : {}), webhooks },
		);
		if (stored === undefined || stored === "stale") return; // deleted, or another scheduler moved on
		if (missed.length > 0) {
			this.options.webhooks?.wake();
			this.options.logger.warn({ scheduleId: schedule.id, missed: missed.length }, "schedule ticks missed");
		}
		for (const fire of stored) if (fire.outcome === "firing") this.carryOut(schedule, fire);
	}

	/** Carries a recorded fire out and records its outcome; tracked until it is recorded. */
	carryOut(schedule: ScheduleRecord, fire: ScheduleFire): Promise<ScheduleFire | undefined> {
		const done = (async () => {
			const result = await carryOutFire(this.options.fire, schedule);
			const at = this.now();
			const settledFire: ScheduleFire = { ...fire, ...result, settledAt: at };
			const type =
				result.outcome === "fired"
					? "schedule.fired"
					: result.outcome === "skipped"
						? "schedule.skipped"
						: "schedule.failed";
			const settled = await this.options.store.schedules.settleFire(
				fire.id,
				{ ...result, at },
				this.deliveries(type, settledFire, schedule),
			);
			this.options.webhooks?.wake();
			if (result.outcome === "failed") {
				this.options.logger.warn(
					{ scheduleId: schedule.id, fireId: fire.id, reason: result.reason },
					"schedule fire failed",
				);
			}
			return settled;
		})().catch((err: unknown) => {
			this.options.logger.error({ err, scheduleId: schedule.id, fireId: fire.id }, "recording a schedule fire failed");
			return undefined;
		});
		const tracked = done.then(() => undefined);
		this.inFlight.add(tracked);
		void tracked.finally(() => this.inFlight.delete(tracked));
		return done;
	}

	/** Settles fires a dead process left `firing` (it recorded them; their runs never started, or nobody knows). */
	private async settleAbandoned(now: number): Promise<void> {
		const { schedules } = this.options.store;
		for (const fire of await schedules.listUnsettledFires(now - ABANDONED_AFTER_MS)) {
			const schedule = await schedules.getSchedule(fire.scheduleId);
			const reason = "the process firing it stopped before recording its outcome";
			const settled = { ...fire, outcome: "failed" as const, reason, settledAt: now };
			await schedules.settleFire(
				fire.id,
				{ outcome: "failed", reason, at: now },
				schedule ? this.deliveries("schedule.failed", settled, schedule) : [],
			);
		}
	}

	private deliveries(
		type: "schedule.fired" | "schedule.skipped" | "schedule.missed" | "schedule.failed",
		fire: ScheduleFire,
		schedule: ScheduleRecord,
	): NewWebhookDelivery[] {
		if (!this.options.webhooks) return [];
		return this.options.webhooks.events.scheduleFire(type, fire.settledAt ?? fire.createdAt, {
			scheduleId: schedule.id,
			fireId: fire.id,
			kind: fire.kind,
			tickAt: fire.tickAt,
			outcome: fire.outcome,
			sessionId: fire.sessionId,
			runId: fire.runId,
			reason: fire.reason,
			metadata: schedule.metadata,
		});
	}
}
