/**
 * Schedules in an app: the scheduler (started when the app is ready, stopped first when it closes,
 * before the sessions drain) and the `/v1/schedules` routes.
 */
import type { FastifyInstance } from "fastify";
import type { SessionStore } from "../../store/types.js";
import type { ClusterNode } from "../cluster/node.js";
import type { ServerConfig } from "../config/config.js";
import type { WebhookEvents } from "../observability/webhooks/events.js";
import type { AgentProfiles } from "../runtime/profiles.js";
import { Scheduler } from "../runtime/schedules/scheduler.js";
import type { Admission } from "../runtime/session/admission.js";
import type { SessionManager } from "../runtime/session/manager.js";
import { scheduleRoutes } from "./routes/schedules.js";

/** How often the scheduler looks for due schedules (one indexed query; only the lease holder's in a cluster). */
export const SCHEDULE_POLL_MS = 250;

/**
 * How late a tick may fire before it counts as missed: half the lease TTL (so the ticks of a
 * takeover's gap are recorded missed, not fired late), between 1 s and 5 s.
 */
export function scheduleLateMs(leaseTtlMs: number): number {
	return Math.min(5_000, Math.max(1_000, Math.floor(leaseTtlMs / 2)));
}

export interface InstallSchedulesOptions {
	store: SessionStore;
	sessions: SessionManager;
	profiles: AgentProfiles;
	config: ServerConfig;
	cluster?: ClusterNode;
	/** This replica's id in a cluster (the scheduler lease's holder). */
	replicaId?: string;
	webhooks?: { events: WebhookEvents; wake(): void };
	/** Fair admission: fires past a run limit wait for a slot. */
	admission?: Admission;
}

export async function installSchedules(app: FastifyInstance, options: InstallSchedulesOptions): Promise<Scheduler> {
	const { store, sessions, profiles, config, cluster, replicaId, webhooks, admission } = options;
	const scheduler = new Scheduler({
		store,
		logger: app.log.child({ component: "scheduler" }),
		fire: { sessions, profiles, ...(admission ? { admission } : {}) },
		...(cluster && replicaId ? { lease: { holder: replicaId, ttlMs: config.leaseTtlMs } } : {}),
		pollMs: SCHEDULE_POLL_MS,
		lateMs: scheduleLateMs(config.leaseTtlMs),
		...(webhooks ? { webhooks } : {}),
	});
	await app.register(scheduleRoutes, { scheduler });
	app.addHook("onReady", async function startScheduler() {
		scheduler.start();
	});
	app.addHook("preClose", async function stopScheduler() {
		await scheduler.stop();
	});
	return scheduler;
}
