/**
 * The SQLite store's schedules (`ScheduleStore` of ../schedule-types.ts): the `schedules`,
 * `schedule_fires` and `scheduler_lease` tables and their statements. Writes go through the
 * store's commit queue as durable writes, so fires and the webhook deliveries that report them
 * commit together. One process owns an SQLite file, so the lease is only ever contended by two
 * schedulers in one process; it is kept anyway, with the same meaning as on PostgreSQL.
 */
import type Database from "better-sqlite3";
import { checkLimit, decodeCursor, encodeCursor } from "../shared.js";
import { type FireRow, type ScheduleRow, specOf, toFire, toSchedule, touchesSpec } from "../sql/schedule-rows.js";
import type {
	NewScheduleFire,
	NewWebhookDelivery,
	ScheduleFire,
	SchedulePage,
	SchedulePatch,
	ScheduleRecord,
	SchedulerFence,
	ScheduleStore,
} from "../types.js";
import type { CommitQueue } from "./commit-queue.js";
import type { Statement } from "./statements.js";
import type { SqliteWebhookOutbox } from "./webhook-outbox.js";

const LEASE = "scheduler";

export class SqliteSchedules implements ScheduleStore {
	private readonly s: Record<string, Statement>;

	constructor(
		db: Database.Database,
		private readonly commits: CommitQueue,
		private readonly outbox: SqliteWebhookOutbox,
		private readonly open: () => void,
	) {
		const prepare = (sql: string) => db.prepare(sql) as Statement;
		this.s = {
			insert: prepare(
				`INSERT INTO schedules (id, owner_id, spec, state, next_fire_at, last_fire_at, created_at, updated_at)
				 VALUES (?, ?, ?, ?, ?, ?, ?, ?)`,
			),
			get: prepare("SELECT * FROM schedules WHERE id = ?"),
			listAll: prepare("SELECT * FROM schedules WHERE (created_at, id) > (?, ?) ORDER BY created_at, id LIMIT ?"),
			listOwner: prepare(
				`SELECT * FROM schedules WHERE owner_id IS ? AND (created_at, id) > (?, ?)
				 ORDER BY created_at, id LIMIT ?`,
			),
			update: prepare(`UPDATE schedules SET spec = ?, state = ?, next_fire_at = ?, updated_at = ? WHERE id = ?`),
			advance: prepare(
				`UPDATE schedules SET next_fire_at = ?, state = ?, last_fire_at = max(coalesce(last_fire_at, ?), ?),
				 updated_at = ? WHERE id = ?`,
			),
			delete: prepare("DELETE FROM schedules WHERE id = ?"),
			deleteFires: prepare("DELETE FROM schedule_fires WHERE schedule_id = ?"),
			due: prepare(
				`SELECT * FROM schedules WHERE state = 'active' AND next_fire_at <= ?
				 ORDER BY next_fire_at, id LIMIT ?`,
			),
			tickExists: prepare("SELECT 1 FROM schedule_fires WHERE schedule_id = ? AND tick_at = ? AND kind <> 'manual'"),
			insertFire: prepare(
				`INSERT INTO schedule_fires (schedule_id, kind, tick_at, outcome, session_id, run_id, reason, created_at, settled_at)
				 VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?) RETURNING *`,
			),
			settle: prepare(
				`UPDATE schedule_fires SET outcome = ?, session_id = coalesce(?, session_id), run_id = coalesce(?, run_id),
				 reason = ?, settled_at = ? WHERE id = ? AND outcome = 'firing' RETURNING *`,
			),
			unsettled: prepare(
				"SELECT * FROM schedule_fires WHERE outcome = 'firing' AND created_at < ? ORDER BY created_at LIMIT ?",
			),
			fires: prepare("SELECT * FROM schedule_fires WHERE schedule_id = ? AND id < ? ORDER BY id DESC LIMIT ?"),
			lease: prepare("SELECT * FROM scheduler_lease WHERE name = ?"),
			putLease: prepare(
				`INSERT INTO scheduler_lease (name, holder, token, expires) VALUES (?, ?, ?, ?)
				 ON CONFLICT (name) DO UPDATE SET holder = excluded.holder, token = excluded.token, expires = excluded.expires`,
			),
		};
	}

	async createSchedule(schedule: ScheduleRecord): Promise<ScheduleRecord> {
		this.open();
		return this.commits.durable(() => {
			if (this.s.get.get(schedule.id)) throw new Error(`schedule ${schedule.id} exists: generate unique ids`);
			this.s.insert.run(
				schedule.id,
				schedule.ownerId,
				specOf(schedule),
				schedule.state,
				schedule.nextFireAt,
				schedule.lastFireAt,
				schedule.createdAt,
				schedule.updatedAt,
			);
			return structuredClone(schedule);
		}, []);
	}

	private read(id: string): ScheduleRecord | undefined {
		const row = this.s.get.get(id) as ScheduleRow | undefined;
		return row && toSchedule(row);
	}

	async getSchedule(id: string): Promise<ScheduleRecord | undefined> {
		this.open();
		return this.read(id);
	}

	async listSchedules(
		options: { ownerId?: string | null; cursor?: string; limit?: number } = {},
	): Promise<SchedulePage> {
		this.open();
		const limit = checkLimit("limit", options.limit, 50, 1, 1000);
		const [at, id] = options.cursor === undefined ? [-1, ""] : decodeCursor(options.cursor);
		const rows = (
			options.ownerId === undefined
				? this.s.listAll.all(at, id, limit + 1)
				: this.s.listOwner.all(options.ownerId, at, id, limit + 1)
		) as ScheduleRow[];
		const schedules = rows.slice(0, limit).map(toSchedule);
		const last = schedules.at(-1);
		return { schedules, ...(rows.length > limit && last ? { nextCursor: encodeCursor(last.createdAt, last.id) } : {}) };
	}

	async updateSchedule(id: string, patch: SchedulePatch, at: number): Promise<ScheduleRecord | undefined> {
		this.open();
		return this.commits.durable(() => {
			const current = this.read(id);
			if (!current) return undefined;
			const next: ScheduleRecord = { ...current, ...structuredClone(patch), updatedAt: at };
			this.s.update.run(touchesSpec(patch) ? specOf(next) : specOf(current), next.state, next.nextFireAt, at, id);
			return next;
		}, []);
	}

	async deleteSchedule(id: string): Promise<boolean> {
		this.open();
		return this.commits.durable(() => {
			this.s.deleteFires.run(id);
			return this.s.delete.run(id).changes > 0;
		}, []);
	}

	async dueSchedules(now: number, limit?: number): Promise<ScheduleRecord[]> {
		this.open();
		const max = checkLimit("limit", limit, 100, 1, 1000);
		return (this.s.due.all(now, max) as ScheduleRow[]).map(toSchedule);
	}

	private holds(fence: SchedulerFence | undefined): boolean {
		if (!fence) return true;
		const lease = this.s.lease.get(LEASE) as { holder: string; token: number } | undefined;
		return lease?.holder === fence.holder && lease.token === fence.token;
	}

	async recordFires(
		scheduleId: string,
		fires: readonly NewScheduleFire[],
		next: Parameters<ScheduleStore["recordFires"]>[2],
		options: Parameters<ScheduleStore["recordFires"]>[3] = {},
	): Promise<ScheduleFire[] | "stale" | undefined> {
		this.open();
		return this.commits.durable((): ScheduleFire[] | "stale" | undefined => {
			const current = this.read(scheduleId);
			if (!current) return undefined;
			if (!this.holds(options.fence)) return "stale";
			if (next.expectNextFireAt !== undefined && current.nextFireAt !== next.expectNextFireAt) return "stale";
			if (next.expectState !== undefined && current.state !== next.expectState) return "stale";
			const fresh = fires.filter((f) => f.kind === "manual" || !this.s.tickExists.get(scheduleId, f.tickAt));
			const stored = fresh.map((f) =>
				toFire(
					this.s.insertFire.get(
						scheduleId,
						f.kind,
						f.tickAt,
						f.outcome,
						f.sessionId,
						f.runId,
						f.reason,
						f.createdAt,
						f.settledAt ?? null,
					) as FireRow,
				),
			);
			const lastTick = stored.reduce((m, f) => Math.max(m, f.tickAt), Number.NEGATIVE_INFINITY);
			const last = Number.isFinite(lastTick) ? lastTick : current.lastFireAt;
			this.s.advance.run(
				next.nextFireAt === undefined ? current.nextFireAt : next.nextFireAt,
				next.state ?? current.state,
				last,
				last,
				next.at,
				scheduleId,
			);
			if (options.webhooks) this.outbox.put(options.webhooks(stored));
			return stored;
		}, []);
	}

	async settleFire(
		fireId: number,
		settle: Parameters<ScheduleStore["settleFire"]>[1],
		webhooks?: readonly NewWebhookDelivery[],
	): Promise<ScheduleFire | undefined> {
		this.open();
		return this.commits.durable(() => {
			const row = this.s.settle.get(
				settle.outcome,
				settle.sessionId ?? null,
				settle.runId ?? null,
				settle.reason ?? null,
				settle.at,
				fireId,
			) as FireRow | undefined;
			if (!row) return undefined;
			if (webhooks) this.outbox.put(webhooks);
			return toFire(row);
		}, []);
	}

	async listUnsettledFires(before: number, limit?: number): Promise<ScheduleFire[]> {
		this.open();
		const max = checkLimit("limit", limit, 100, 1, 1000);
		return (this.s.unsettled.all(before, max) as FireRow[]).map(toFire);
	}

	async listFires(scheduleId: string, options: { beforeId?: number; limit?: number } = {}): Promise<ScheduleFire[]> {
		this.open();
		const limit = checkLimit("limit", options.limit, 50, 1, 1000);
		return (this.s.fires.all(scheduleId, options.beforeId ?? Number.MAX_SAFE_INTEGER, limit) as FireRow[]).map(toFire);
	}

	async takeSchedulerLease(holder: string, ttlMs: number): Promise<number | undefined> {
		this.open();
		return this.commits.durable(() => {
			const now = Date.now();
			const lease = this.s.lease.get(LEASE) as { holder: string; token: number; expires: number } | undefined;
			if (lease && lease.holder !== holder && lease.expires > now) return undefined;
			const token = lease?.holder === holder ? lease.token : (lease?.token ?? 0) + 1;
			this.s.putLease.run(LEASE, holder, token, now + ttlMs);
			return token;
		}, []);
	}

	async renewSchedulerLease(fence: SchedulerFence, ttlMs: number): Promise<boolean> {
		this.open();
		return this.commits.durable(() => {
			if (!this.holds(fence)) return false;
			this.s.putLease.run(LEASE, fence.holder, fence.token, Date.now() + ttlMs);
			return true;
		}, []);
	}

	async releaseSchedulerLease(fence: SchedulerFence): Promise<void> {
		this.open();
		this.commits.durable(() => {
			if (this.holds(fence)) this.s.putLease.run(LEASE, "", fence.token, 0);
		}, []);
	}
}
