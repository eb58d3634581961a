/**
 * The memory store's schedules (`ScheduleStore` of schedule-types.ts): maps in the process, copies
 * on read and write, lost with the process like the rest of the memory store. Its scheduler lease
 * is real (a second scheduler on the same store waits for it), on the process clock.
 */

import {
	firesStale,
	freshFires,
	lastFireAfter,
	type NewScheduleFire,
	patchSchedule,
	type ScheduleFire,
	type SchedulePage,
	type SchedulePatch,
	type ScheduleRecord,
	type SchedulerFence,
	type ScheduleStore,
	scheduleExistsError,
} from "./schedule-types.js";
import { checkLimit, cursorPage, decodeCursor } from "./shared.js";
import type { NewWebhookDelivery } from "./webhook-types.js";

const copy = <T>(value: T): T => structuredClone(value);

export class MemorySchedules implements ScheduleStore {
	private readonly schedules = new Map<string, ScheduleRecord>();
	private readonly fires = new Map<number, ScheduleFire>();
	private nextFireId = 1;
	private lease: { holder: string; token: number; expires: number } | undefined;
	private leaseToken = 0;

	constructor(
		private readonly open: () => void,
		private readonly putWebhooks: (deliveries: readonly NewWebhookDelivery[]) => void,
	) {}

	async createSchedule(schedule: ScheduleRecord): Promise<ScheduleRecord> {
		this.open();
		if (this.schedules.has(schedule.id)) throw scheduleExistsError(schedule.id);
		this.schedules.set(schedule.id, copy(schedule));
		return copy(schedule);
	}

	async getSchedule(id: string): Promise<ScheduleRecord | undefined> {
		this.open();
		const s = this.schedules.get(id);
		return s && copy(s);
	}

	async listSchedules(
		options: { ownerId?: string | null; cursor?: string; limit?: number } = {},
	): Promise<SchedulePage> {
		this.open();
		const limit = checkLimit("limit", options.limit, 50, 1, 1000);
		const after = options.cursor === undefined ? undefined : decodeCursor(options.cursor);
		const all = [...this.schedules.values()]
			.filter((s) => options.ownerId === undefined || s.ownerId === options.ownerId)
			.filter((s) => !after || s.createdAt > after[0] || (s.createdAt === after[0] && s.id > after[1]))
			.sort((a, b) => a.createdAt - b.createdAt || (a.id < b.id ? -1 : a.id > b.id ? 1 : 0));
		const { page, ...next } = cursorPage(all, limit);
		return { schedules: page.map(copy), ...next };
	}

	async updateSchedule(id: string, patch: SchedulePatch, at: number): Promise<ScheduleRecord | undefined> {
		this.open();
		const current = this.schedules.get(id);
		if (!current) return undefined;
		const next = patchSchedule(current, patch, at);
		this.schedules.set(id, next);
		return copy(next);
	}

	async deleteSchedule(id: string): Promise<boolean> {
		this.open();
		if (!this.schedules.delete(id)) return false;
		for (const [fireId, fire] of this.fires) if (fire.scheduleId === id) this.fires.delete(fireId);
		return true;
	}

	async dueSchedules(now: number, limit?: number): Promise<ScheduleRecord[]> {
		this.open();
		const max = checkLimit("limit", limit, 100, 1, 1000);
		return [...this.schedules.values()]
			.filter((s) => s.state === "active" && s.nextFireAt !== null && s.nextFireAt <= now)
			.sort((a, b) => (a.nextFireAt ?? 0) - (b.nextFireAt ?? 0) || (a.id < b.id ? -1 : 1))
			.slice(0, max)
			.map(copy);
	}

	private holds(fence: SchedulerFence | undefined): boolean {
		return !fence || (this.lease?.holder === fence.holder && this.lease.token === fence.token);
	}

	async recordFires(
		scheduleId: string,
		fires: readonly NewScheduleFire[],
		next: Parameters<ScheduleStore["recordFires"]>[2],
		options: Parameters<ScheduleStore["recordFires"]>[3] = {},
	): Promise<ScheduleFire[] | "stale" | undefined> {
		this.open();
		const s = this.schedules.get(scheduleId);
		if (!s) return undefined;
		if (!this.holds(options.fence)) return "stale";
		if (firesStale(s, next)) return "stale";
		const taken = new Set(
			[...this.fires.values()].filter((f) => f.scheduleId === scheduleId && f.kind !== "manual").map((f) => f.tickAt),
		);
		const stored = freshFires(fires, taken).map((f) => ({
			...copy(f),
			settledAt: f.settledAt ?? null,
			id: this.nextFireId++,
		}));
		for (const fire of stored) this.fires.set(fire.id, fire);
		if (next.nextFireAt !== undefined) s.nextFireAt = next.nextFireAt;
		if (next.state) s.state = next.state;
		s.lastFireAt = lastFireAfter(s, stored);
		s.updatedAt = next.at;
		if (options.webhooks) this.putWebhooks(options.webhooks(stored));
		return stored.map(copy);
	}

	async settleFire(
		fireId: number,
		settle: Parameters<ScheduleStore["settleFire"]>[1],
		webhooks?: readonly NewWebhookDelivery[],
	): Promise<ScheduleFire | undefined> {
		this.open();
		const fire = this.fires.get(fireId);
		if (fire?.outcome !== "firing") return undefined;
		fire.outcome = settle.outcome;
		fire.sessionId = settle.sessionId ?? fire.sessionId;
		fire.runId = settle.runId ?? fire.runId;
		fire.reason = settle.reason ?? null;
		fire.settledAt = settle.at;
		if (webhooks) this.putWebhooks(webhooks);
		return copy(fire);
	}

	async listUnsettledFires(before: number, limit?: number): Promise<ScheduleFire[]> {
		this.open();
		const max = checkLimit("limit", limit, 100, 1, 1000);
		return [...this.fires.values()]
			.filter((f) => f.outcome === "firing" && f.createdAt < before)
			.slice(0, max)
			.map(copy);
	}

	async listFires(scheduleId: string, options: { beforeId?: number; limit?: number } = {}): Promise<ScheduleFire[]> {
		this.open();
		const limit = checkLimit("limit", options.limit, 50, 1, 1000);
		return [...this.fires.values()]
			.filter((f) => f.scheduleId === scheduleId && (options.beforeId === undefined || f.id < options.beforeId))
			.sort((a, b) => b.id - a.id)
			.slice(0, limit)
			.map(copy);
	}

	async takeSchedulerLease(holder: string, ttlMs: number): Promise<number | undefined> {
		this.open();
		const now = Date.now();
		if (this.lease && this.lease.holder !== holder && this.lease.expires > now) return undefined;
		if (this.lease?.holder !== holder) this.leaseToken++;
		this.lease = { holder, token: this.leaseToken, expires: now + ttlMs };
		return this.leaseToken;
	}

	async renewSchedulerLease(fence: SchedulerFence, ttlMs: number): Promise<boolean> {
		this.open();
		if (!this.lease || !this.holds(fence)) return false;
		this.lease.expires = Date.now() + ttlMs;
		return true;
	}

	async releaseSchedulerLease(fence: SchedulerFence): Promise<void> {
		this.open();
		if (this.lease && this.holds(fence)) this.lease = { ...this.lease, holder: "", expires: 0 };
	}
}
