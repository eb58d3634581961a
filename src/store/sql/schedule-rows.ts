/**
 * The `schedules`, `schedule_fires` and `scheduler_lease` rows, their mapping to records, and the
 * statements both SQL stores run on them: the tables have the same columns in both. A schedule's
 * spec (what the client set) is one JSON column: it is read and written whole, and only `state`
 * and `next_fire_at` are queried.
 */
import type {
	FireKind,
	FireOutcome,
	NewScheduleFire,
	ScheduleFire,
	ScheduleRecord,
	ScheduleSpec,
	ScheduleState,
} from "../types.js";

export interface ScheduleRow {
	id: string;
	owner_id: string | null;
	spec: string;
	state: ScheduleState;
	next_fire_at: number | string | null;
	last_fire_at: number | string | null;
	created_at: number | string;
	updated_at: number | string;
}

export interface FireRow {
	id: number | string;
	schedule_id: string;
	kind: FireKind;
	tick_at: number | string;
	outcome: FireOutcome;
	session_id: string | null;
	run_id: string | null;
	reason: string | null;
	created_at: number | string;
	settled_at: number | string | null;
}

const SPEC_KEYS = [
	"cron",
	"at",
	"timezone",
	"profile",
	"sessionId",
	"prompt",
	"ifBusy",
	"missed",
	"metadata",
] as const satisfies readonly (keyof ScheduleSpec)[];

/** The spec part of a schedule, as the `spec` column stores it. */
export function specOf(schedule: ScheduleSpec): string {
	const spec: Record<string, unknown> = {};
	for (const key of SPEC_KEYS) spec[key] = schedule[key];
	return JSON.stringify(spec);
}

/** True when the patch changes a field of the spec (the `spec` column is rewritten). */
export function touchesSpec(patch: object): boolean {
	return SPEC_KEYS.some((key) => key in patch);
}

const num = (v: number | string): number => Number(v);
const numOrNull = (v: number | string | null): number | null => (v === null ? null : Number(v));

export function toSchedule(row: ScheduleRow): ScheduleRecord {
	return {
		...(JSON.parse(row.spec) as ScheduleSpec),
		id: row.id,
		ownerId: row.owner_id,
		state: row.state,
		nextFireAt: numOrNull(row.next_fire_at),
		lastFireAt: numOrNull(row.last_fire_at),
		createdAt: num(row.created_at),
		updatedAt: num(row.updated_at),
	};
}

export function toFire(row: FireRow): ScheduleFire {
	return {
		id: num(row.id),
		scheduleId: row.schedule_id,
		kind: row.kind,
		tickAt: num(row.tick_at),
		outcome: row.outcome,
		sessionId: row.session_id,
		runId: row.run_id,
		reason: row.reason,
		createdAt: num(row.created_at),
		settledAt: numOrNull(row.settled_at),
	};
}

/** The one row of `scheduler_lease`. */
export const SCHEDULER_LEASE = "scheduler";

/** Where the two SQL dialects' schedule statements differ. */
export interface ScheduleDialect {
	/** Appended to a schedule's read in a write: locks the row until the transaction ends ("": the write locks the database). */
	lockRow: string;
	/** Appended to the lease's read in a write: the lease cannot change until the transaction ends. */
	shareRow: string;
	/** `tick_at` is one of a list of ticks, given as one parameter … */
	tickIn: string;
	/** … in this form. */
	tickList(ticks: readonly number[]): unknown;
}

/** The statements of both stores' schedules, `?` placeholders (the PostgreSQL driver numbers them). */
export function scheduleSql(dialect: ScheduleDialect) {
	return {
		insert: `INSERT INTO schedules (id, owner_id, spec, state, next_fire_at, last_fire_at, created_at, updated_at)
			VALUES (?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (id) DO NOTHING`,
		get: "SELECT * FROM schedules WHERE id = ?",
		lock: `SELECT * FROM schedules WHERE id = ?${dialect.lockRow}`,
		listAll: "SELECT * FROM schedules WHERE (created_at, id) > (?, ?) ORDER BY created_at, id LIMIT ?",
		listOwner: `SELECT * FROM schedules WHERE owner_id IS NOT DISTINCT FROM ? AND (created_at, id) > (?, ?)
			ORDER BY created_at, id LIMIT ?`,
		update: "UPDATE schedules SET spec = ?, state = ?, next_fire_at = ?, updated_at = ? WHERE id = ?",
		advance: "UPDATE schedules SET next_fire_at = ?, state = ?, last_fire_at = ?, updated_at = ? WHERE id = ?",
		delete: "DELETE FROM schedules WHERE id = ?",
		deleteFires: "DELETE FROM schedule_fires WHERE schedule_id = ?",
		due: "SELECT * FROM schedules WHERE state = 'active' AND next_fire_at <= ? ORDER BY next_fire_at, id LIMIT ?",
		ticksTaken: `SELECT tick_at FROM schedule_fires WHERE schedule_id = ? AND kind <> 'manual' AND tick_at ${dialect.tickIn}`,
		insertFire: `INSERT INTO schedule_fires (schedule_id, kind, tick_at, outcome, session_id, run_id, reason, created_at, settled_at)
			VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?) RETURNING *`,
		settle: `UPDATE schedule_fires SET outcome = ?, session_id = coalesce(?, session_id), run_id = coalesce(?, run_id),
			reason = ?, settled_at = ? WHERE id = ? AND outcome = 'firing' RETURNING *`,
		unsettled: "SELECT * FROM schedule_fires WHERE outcome = 'firing' AND created_at < ? ORDER BY created_at LIMIT ?",
		fires: "SELECT * FROM schedule_fires WHERE schedule_id = ? AND id < ? ORDER BY id DESC LIMIT ?",
		holds: `SELECT 1 FROM scheduler_lease WHERE name = ? AND holder = ? AND token = ?${dialect.shareRow}`,
	};
}

export type ScheduleSql = ReturnType<typeof scheduleSql>;

/** The parameters of `insert`. */
export function scheduleParams(schedule: ScheduleRecord): unknown[] {
	return [
		schedule.id,
		schedule.ownerId,
		specOf(schedule),
		schedule.state,
		schedule.nextFireAt,
		schedule.lastFireAt,
		schedule.createdAt,
		schedule.updatedAt,
	];
}

/** The parameters of `insertFire`. */
export function fireParams(scheduleId: string, f: NewScheduleFire): unknown[] {
	return [scheduleId, f.kind, f.tickAt, f.outcome, f.sessionId, f.runId, f.reason, f.createdAt, f.settledAt ?? null];
}
