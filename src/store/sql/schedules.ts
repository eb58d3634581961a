/**
 * The schedules of both SQL stores (`ScheduleStore` of ../schedule-types.ts), written once over a
 * driver that answers with its statements, its transactions and its scheduler lease. Two rules
 * keep a tick from firing twice however schedulers race: recording fires reads the schedule's row
 * in the write (locked to its end on PostgreSQL) and checks that its `next_fire_at` is still the
 * one the scheduler read (and a unique index allows one fire per tick besides); and a fenced
 * scheduler's writes check its lease token in the same transaction, so one that lost the lease
 * records nothing after another took over.
 */
import {
	firesStale,
	freshFires,
	lastFireAfter,
	patchSchedule,
	type ScheduleStore,
	scheduleExistsError,
} from "../schedule-types.js";
import { checkLimit, cursorPage, decodeCursor } from "../shared.js";
import type {
	NewScheduleFire,
	NewWebhookDelivery,
	ScheduleFire,
	SchedulePage,
	SchedulePatch,
	ScheduleRecord,
	SchedulerFence,
} from "../types.js";
import type { Answer, SqlTx } from "./driver.js";
import {
	type FireRow,
	fireParams,
	SCHEDULER_LEASE,
	type ScheduleDialect,
	type ScheduleRow,
	scheduleParams,
	scheduleSql,
	specOf,
	toFire,
	toSchedule,
	touchesSpec,
} from "./schedule-rows.js";
import { type Steps, wait } from "./steps.js";

/** A schedules write's statements, and the webhook deliveries it puts in the same commit. */
export interface ScheduleTx extends SqlTx {
	putWebhooks(deliveries: readonly NewWebhookDelivery[]): Answer<void>;
}

/** What the schedules ask of a SQL store. */
export interface ScheduleDriver {
	readonly dialect: ScheduleDialect;
	/** Before every method: throws once the store is closed; a store that connects waits until it has. */
	begin(): Answer<void>;
	/** The rows of a read, after every write called before it. */
	read<T>(sql: string, params: readonly unknown[]): Answer<T[]>;
	/** A durable write: `body` in one transaction, committed with the store's writes queued before it. */
	write<T>(body: (tx: ScheduleTx) => Steps<T>): Answer<T>;
	/** `ScheduleStore.takeSchedulerLease`, on the driver's clock. */
	takeLease(holder: string, ttlMs: number): Answer<number | undefined>;
	/** `ScheduleStore.renewSchedulerLease`, on the driver's clock. */
	renewLease(fence: SchedulerFence, ttlMs: number): Answer<boolean>;
	/** `ScheduleStore.releaseSchedulerLease`. */
	releaseLease(fence: SchedulerFence): Answer<void>;
}

/** True when `fence` (if any) holds the lease, read in `tx` (PostgreSQL: share-locked to its end). */
function* fenceHolds(tx: SqlTx, holds: string, fence: SchedulerFence | undefined): Steps<boolean> {
	if (!fence) return true;
	const rows = yield* wait(tx.rows(holds, [SCHEDULER_LEASE, fence.holder, fence.token]));
	return rows.length > 0;
}

export class SqlSchedules implements ScheduleStore {
	private readonly sql: ReturnType<typeof scheduleSql>;

	constructor(private readonly driver: ScheduleDriver) {
		this.sql = scheduleSql(driver.dialect);
	}

	/** `fn` once `begin` has passed: within the call when it answered at once (SQLite). */
	private async after<T>(fn: () => Answer<T>): Promise<T> {
		const ready = this.driver.begin();
		if (ready instanceof Promise) await ready;
		return fn();
	}

	private async rows<T>(sql: string, params: readonly unknown[]): Promise<T[]> {
		return this.after(() => this.driver.read<T>(sql, params));
	}

	private write<T>(body: (tx: ScheduleTx, sql: ReturnType<typeof scheduleSql>) => Steps<T>): Promise<T> {
		return this.after(() => this.driver.write((tx) => body(tx, this.sql)));
	}

	async createSchedule(schedule: ScheduleRecord): Promise<ScheduleRecord> {
		const inserted = await this.write((tx, sql) => wait(tx.run(sql.insert, scheduleParams(schedule))));
		if (inserted === 0) throw scheduleExistsError(schedule.id);
		return structuredClone(schedule);
	}

	async getSchedule(id: string): Promise<ScheduleRecord | undefined> {
		const [row] = await this.rows<ScheduleRow>(this.sql.get, [id]);
		return row && toSchedule(row);
	}

	async listSchedules(
		options: { ownerId?: string | null; cursor?: string; limit?: number } = {},
	): Promise<SchedulePage> {
		const limit = checkLimit("limit", options.limit, 50, 1, 1000);
		const [at, id] = options.cursor === undefined ? [-1, ""] : decodeCursor(options.cursor);
		const rows =
			options.ownerId === undefined
				? await this.rows<ScheduleRow>(this.sql.listAll, [at, id, limit + 1])
				: await this.rows<ScheduleRow>(this.sql.listOwner, [options.ownerId, at, id, limit + 1]);
		const { page, ...next } = cursorPage(rows.map(toSchedule), limit);
		return { schedules: page, ...next };
	}

	updateSchedule(id: string, patch: SchedulePatch, at: number): Promise<ScheduleRecord | undefined> {
		return this.write(function* (tx, sql) {
			const [row] = yield* wait(tx.rows<ScheduleRow>(sql.lock, [id]));
			if (!row) return undefined;
			const next = patchSchedule(toSchedule(row), patch, at);
			const spec = touchesSpec(patch) ? specOf(next) : row.spec;
			yield* wait(tx.run(sql.update, [spec, next.state, next.nextFireAt, at, id]));
			return next;
		});
	}

	deleteSchedule(id: string): Promise<boolean> {
		return this.write(function* (tx, sql) {
			yield* wait(tx.run(sql.deleteFires, [id]));
			return (yield* wait(tx.run(sql.delete, [id]))) > 0;
		});
	}

	async dueSchedules(now: number, limit?: number): Promise<ScheduleRecord[]> {
		const max = checkLimit("limit", limit, 100, 1, 1000);
		return (await this.rows<ScheduleRow>(this.sql.due, [now, max])).map(toSchedule);
	}

	recordFires(
		scheduleId: string,
		fires: readonly NewScheduleFire[],
		next: Parameters<ScheduleStore["recordFires"]>[2],
		options: Parameters<ScheduleStore["recordFires"]>[3] = {},
	): Promise<ScheduleFire[] | "stale" | undefined> {
		const { dialect } = this.driver;
		return this.write(function* (tx, sql): Steps<ScheduleFire[] | "stale" | undefined> {
			const [row] = yield* wait(tx.rows<ScheduleRow>(sql.lock, [scheduleId]));
			if (!row) return undefined;
			if (!(yield* fenceHolds(tx, sql.holds, options.fence))) return "stale";
			const current = toSchedule(row);
			if (firesStale(current, next)) return "stale";
			const ticks = fires.filter((f) => f.kind !== "manual").map((f) => f.tickAt);
			const taken =
				ticks.length === 0
					? []
					: yield* wait(tx.rows<{ tick_at: number }>(sql.ticksTaken, [scheduleId, dialect.tickList(ticks)]));
			const stored: ScheduleFire[] = [];
			for (const f of freshFires(fires, new Set(taken.map((r) => Number(r.tick_at))))) {
				const [inserted] = yield* wait(tx.rows<FireRow>(sql.insertFire, fireParams(scheduleId, f)));
				stored.push(toFire(inserted as FireRow));
			}
			const nextFireAt = next.nextFireAt === undefined ? current.nextFireAt : next.nextFireAt;
			const state = next.state ?? current.state;
			yield* wait(tx.run(sql.advance, [nextFireAt, state, lastFireAfter(current, stored), next.at, scheduleId]));
			if (options.webhooks) yield* wait(tx.putWebhooks(options.webhooks(stored)));
			return stored;
		});
	}

	settleFire(
		fireId: number,
		settle: Parameters<ScheduleStore["settleFire"]>[1],
		webhooks?: readonly NewWebhookDelivery[],
	): Promise<ScheduleFire | undefined> {
		const params = [settle.outcome, settle.sessionId ?? null, settle.runId ?? null, settle.reason ?? null, settle.at];
		return this.write(function* (tx, sql) {
			const [row] = yield* wait(tx.rows<FireRow>(sql.settle, [...params, fireId]));
			if (!row) return undefined;
			if (webhooks) yield* wait(tx.putWebhooks(webhooks));
			return toFire(row);
		});
	}

	async listUnsettledFires(before: number, limit?: number): Promise<ScheduleFire[]> {
		const max = checkLimit("limit", limit, 100, 1, 1000);
		return (await this.rows<FireRow>(this.sql.unsettled, [before, max])).map(toFire);
	}

	async listFires(scheduleId: string, options: { beforeId?: number; limit?: number } = {}): Promise<ScheduleFire[]> {
		const limit = checkLimit("limit", options.limit, 50, 1, 1000);
		const beforeId = options.beforeId ?? Number.MAX_SAFE_INTEGER;
		return (await this.rows<FireRow>(this.sql.fires, [scheduleId, beforeId, limit])).map(toFire);
	}

	takeSchedulerLease(holder: string, ttlMs: number): Promise<number | undefined> {
		return this.after(() => this.driver.takeLease(holder, ttlMs));
	}

	renewSchedulerLease(fence: SchedulerFence, ttlMs: number): Promise<boolean> {
		return this.after(() => this.driver.renewLease(fence, ttlMs));
	}

	releaseSchedulerLease(fence: SchedulerFence): Promise<void> {
		return this.after(() => this.driver.releaseLease(fence));
	}
}
