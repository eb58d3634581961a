/**
 * The PostgreSQL store's schedules (`ScheduleStore` of ../schedule-types.ts): the `schedules`,
 * `schedule_fires` and `scheduler_lease` tables, shared by every replica. Two rules keep a tick
 * from firing twice however replicas race: recording fires locks the schedule's row and checks
 * that its `next_fire_at` is still the one the scheduler read (and a unique index allows one fire
 * per tick besides); and a scheduler's writes carry its lease token, checked under a share lock on
 * the lease row in the same transaction, so a replica that lost the lease (it stalled past the
 * TTL) records nothing after another took over. Lease expiry is on the database's clock.
 */
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
import type { CommitQueue } from "./commit.js";
import type { Queryable, Read } from "./connection.js";
import { DB_NOW_MS } from "./leases.js";
import { putDeliveries } from "./webhook-outbox.js";

const LEASE = "scheduler";

/** True when `fence` holds the lease; the row stays share-locked until the transaction ends. */
async function holds(tx: Queryable, fence: SchedulerFence | undefined): Promise<boolean> {
	if (!fence) return true;
	const r = await tx.query("SELECT 1 FROM scheduler_lease WHERE name = $1 AND holder = $2 AND token = $3 FOR SHARE", [
		LEASE,
		fence.holder,
		fence.token,
	]);
	return (r.rowCount ?? 0) > 0;
}

export class PgSchedules implements ScheduleStore {
	constructor(
		private readonly commits: CommitQueue,
		private readonly read: Read,
		private readonly begin: () => Promise<void>,
	) {}

	async createSchedule(schedule: ScheduleRecord): Promise<ScheduleRecord> {
		await this.begin();
		const inserted = await this.commits.durable(async (tx) => {
			const r = await tx.query(
				`INSERT INTO schedules (id, owner_id, spec, state, next_fire_at, last_fire_at, created_at, updated_at)
				 VALUES ($1, $2, $3, $4, $5, $6, $7, $8) ON CONFLICT (id) DO NOTHING`,
				[
					schedule.id,
					schedule.ownerId,
					specOf(schedule),
					schedule.state,
					schedule.nextFireAt,
					schedule.lastFireAt,
					schedule.createdAt,
					schedule.updatedAt,
				],
			);
			return (r.rowCount ?? 0) > 0;
		});
		if (!inserted) throw new Error(`schedule ${schedule.id} exists: generate unique ids`);
		return structuredClone(schedule);
	}

	async getSchedule(id: string): Promise<ScheduleRecord | undefined> {
		const rows = await this.read<ScheduleRow>("SELECT * FROM schedules WHERE id = $1", [id]);
		return rows[0] && toSchedule(rows[0]);
	}

	async listSchedules(
		options: { ownerId?: string | null; cursor?: string; limit?: number } = {},
	): Promise<SchedulePage> {
		const limit = checkLimit("limit", options.limit, 50, 1, 1000);
		const [at, id] = options.cursor === undefined ? [-1, ""] : decodeCursor(options.cursor);
		const rows =
			options.ownerId === undefined
				? await this.read<ScheduleRow>(
						"SELECT * FROM schedules WHERE (created_at, id) > ($1, $2) ORDER BY created_at, id LIMIT $3",
						[at, id, limit + 1],
					)
				: await this.read<ScheduleRow>(
						`SELECT * FROM schedules WHERE owner_id IS NOT DISTINCT FROM $1 AND (created_at, id) > ($2, $3)
						 ORDER BY created_at, id LIMIT $4`,
						[options.ownerId, at, id, limit + 1],
					);
		const schedules = rows.slice(0, limit).map(toSchedule);
		const last = schedules.at(-1);
		return { schedules, ...(rows.length > limit && last ? { nextCursor: encodeCursor(last.createdAt, last.id) } : {}) };
	}

	async updateSchedule(id: string, patch: SchedulePatch, at: number): Promise<ScheduleRecord | undefined> {
		await this.begin();
		return this.commits.durable(async (tx) => {
			const row = (await tx.query<ScheduleRow>("SELECT * FROM schedules WHERE id = $1 FOR UPDATE", [id])).rows[0];
			if (!row) return undefined;
			const current = toSchedule(row);
			const next: ScheduleRecord = { ...current, ...structuredClone(patch), updatedAt: at };
			await tx.query("UPDATE schedules SET spec = $1, state = $2, next_fire_at = $3, updated_at = $4 WHERE id = $5", [
				touchesSpec(patch) ? specOf(next) : row.spec,
				next.state,
				next.nextFireAt,
				at,
				id,
			]);
			return next;
		});
	}

	async deleteSchedule(id: string): Promise<boolean> {
		await this.begin();
		return this.commits.durable(async (tx) => {
			await tx.query("DELETE FROM schedule_fires WHERE schedule_id = $1", [id]);
			return ((await tx.query("DELETE FROM schedules WHERE id = $1", [id])).rowCount ?? 0) > 0;
		});
	}

	async dueSchedules(now: number, limit?: number): Promise<ScheduleRecord[]> {
		const max = checkLimit("limit", limit, 100, 1, 1000);
		const rows = await this.read<ScheduleRow>(
			"SELECT * FROM schedules WHERE state = 'active' AND next_fire_at <= $1 ORDER BY next_fire_at, id LIMIT $2",
			[now, max],
		);
		return rows.map(toSchedule);
	}

	async recordFires(
		scheduleId: string,
		fires: readonly NewScheduleFire[],
		next: Parameters<ScheduleStore["recordFires"]>[2],
		options: Parameters<ScheduleStore["recordFires"]>[3] = {},
	): Promise<ScheduleFire[] | "stale" | undefined> {
		await this.begin();
		return this.commits.durable(async (tx): Promise<ScheduleFire[] | "stale" | undefined> => {
			const row = (await tx.query<ScheduleRow>("SELECT * FROM schedules WHERE id = $1 FOR UPDATE", [scheduleId]))
				.rows[0];
			if (!row) return undefined;
			if (!(await holds(tx, options.fence))) return "stale";
			const current = toSchedule(row);
			if (next.expectNextFireAt !== undefined && current.nextFireAt !== next.expectNextFireAt) return "stale";
			if (next.expectState !== undefined && current.state !== next.expectState) return "stale";
			const ticks = fires.filter((f) => f.kind !== "manual").map((f) => f.tickAt);
			const taken = new Set<number>();
			if (ticks.length > 0) {
				const r = await tx.query<{ tick_at: number }>(
					"SELECT tick_at FROM schedule_fires WHERE schedule_id = $1 AND kind <> 'manual' AND tick_at = ANY($2::bigint[])",
					[scheduleId, ticks],
				);
				for (const row of r.rows) taken.add(Number(row.tick_at));
			}
			const stored: ScheduleFire[] = [];
			for (const f of fires) {
				if (f.kind !== "manual" && taken.has(f.tickAt)) continue;
				const inserted = await tx.query<FireRow>(
					`INSERT INTO schedule_fires (schedule_id, kind, tick_at, outcome, session_id, run_id, reason, created_at, settled_at)
					 VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9) RETURNING *`,
					[scheduleId, f.kind, f.tickAt, f.outcome, f.sessionId, f.runId, f.reason, f.createdAt, f.settledAt ?? null],
				);
				stored.push(toFire(inserted.rows[0] as FireRow));
			}
			const lastTick = stored.reduce((m, f) => Math.max(m, f.tickAt), Number.NEGATIVE_INFINITY);
			const last = Number.isFinite(lastTick) ? Math.max(lastTick, current.lastFireAt ?? lastTick) : current.lastFireAt;
			await tx.query(
				"UPDATE schedules SET next_fire_at = $1, state = $2, last_fire_at = $3, updated_at = $4 WHERE id = $5",
				[
					next.nextFireAt === undefined ? current.nextFireAt : next.nextFireAt,
					next.state ?? current.state,
					last,
					next.at,
					scheduleId,
				],
			);
			if (options.webhooks) await putDeliveries(tx, options.webhooks(stored));
			return stored;
		});
	}

	async settleFire(
		fireId: number,
		settle: Parameters<ScheduleStore["settleFire"]>[1],
		webhooks?: readonly NewWebhookDelivery[],
	): Promise<ScheduleFire | undefined> {
		await this.begin();
		return this.commits.durable(async (tx) => {
			const r = await tx.query<FireRow>(
				`UPDATE schedule_fires SET outcome = $1, session_id = coalesce($2, session_id), run_id = coalesce($3, run_id),
				 reason = $4, settled_at = $5 WHERE id = $6 AND outcome = 'firing' RETURNING *`,
				[settle.outcome, settle.sessionId ?? null, settle.runId ?? null, settle.reason ?? null, settle.at, fireId],
			);
			const row = r.rows[0];
			if (!row) return undefined;
			if (webhooks) await putDeliveries(tx, webhooks);
			return toFire(row);
		});
	}

	async listUnsettledFires(before: number, limit?: number): Promise<ScheduleFire[]> {
		const max = checkLimit("limit", limit, 100, 1, 1000);
		const rows = await this.read<FireRow>(
			"SELECT * FROM schedule_fires WHERE outcome = 'firing' AND created_at < $1 ORDER BY created_at LIMIT $2",
			[before, max],
		);
		return rows.map(toFire);
	}

	async listFires(scheduleId: string, options: { beforeId?: number; limit?: number } = {}): Promise<ScheduleFire[]> {
		const limit = checkLimit("limit", options.limit, 50, 1, 1000);
		const rows = await this.read<FireRow>(
			"SELECT * FROM schedule_fires WHERE schedule_id = $1 AND id < $2 ORDER BY id DESC LIMIT $3",
			[scheduleId, options.beforeId ?? Number.MAX_SAFE_INTEGER, limit],
		);
		return rows.map(toFire);
	}

	async takeSchedulerLease(holder: string, ttlMs: number): Promise<number | undefined> {
		await this.begin();
		return this.commits.durable(async (tx) => {
			const r = await tx.query<{ token: number }>(
				`INSERT INTO scheduler_lease (name, holder, token, expires) VALUES ($1, $2, 1, ${DB_NOW_MS} + $3)
				 ON CONFLICT (name) DO UPDATE SET
				   token = CASE WHEN scheduler_lease.holder = $2 THEN scheduler_lease.token ELSE scheduler_lease.token + 1 END,
				   holder = $2, expires = ${DB_NOW_MS} + $3
				 WHERE scheduler_lease.holder = $2 OR scheduler_lease.expires < ${DB_NOW_MS}
				 RETURNING token`,
				[LEASE, holder, ttlMs],
			);
			const token = r.rows[0]?.token;
			return token === undefined ? undefined : Number(token);
		});
	}

	async renewSchedulerLease(fence: SchedulerFence, ttlMs: number): Promise<boolean> {
		await this.begin();
		return this.commits.durable(async (tx) => {
			const r = await tx.query(
				`UPDATE scheduler_lease SET expires = ${DB_NOW_MS} + $4 WHERE name = $1 AND holder = $2 AND token = $3`,
				[LEASE, fence.holder, fence.token, ttlMs],
			);
			return (r.rowCount ?? 0) > 0;
		});
	}

	async releaseSchedulerLease(fence: SchedulerFence): Promise<void> {
		await this.begin();
		await this.commits.durable(async (tx) => {
			await tx.query(
				"UPDATE scheduler_lease SET holder = '', expires = 0 WHERE name = $1 AND holder = $2 AND token = $3",
				[LEASE, fence.holder, fence.token],
			);
		});
	}
}
