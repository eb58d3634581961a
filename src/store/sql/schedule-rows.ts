/**
 * The `schedules` and `schedule_fires` rows and their mapping to records: the tables have the same
 * columns in both SQL stores, so both read them through this. A schedule's spec (what the client
 * set) is one JSON column: it is read and written whole, and only `state` and `next_fire_at` are
 * queried.
 */
import type { FireKind, FireOutcome, ScheduleFire, ScheduleRecord, ScheduleSpec, ScheduleState } from "../types.js";

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
