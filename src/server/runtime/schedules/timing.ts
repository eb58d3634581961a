/**
 * When a schedule fires: its cron expression read in its timezone (croner: 5 or 6 fields, seconds
 * first when 6; DST as croner handles it — a local time that does not exist that day fires at the
 * first instant after it, a fixed time that exists twice fires once, a stepped one at every real
 * step), or its one-shot time; and which of its due ticks a scheduler pass fires, records as
 * missed, or fires late as a catch-up.
 */
import { Cron } from "croner";
import type { NewScheduleFire, ScheduleRecord, ScheduleSpec } from "../../../store/types.js";

/** At most this many missed ticks of one schedule are recorded one by one in a pass; older ones go unrecorded. */
export const MAX_RECORDED_MISSED = 100;

/** Missed ticks older than this (before the late window) are not walked nor recorded. */
const RECORD_HORIZON_MS = 3_600_000;

/** At most this many on-time ticks of one schedule fire in one pass (a per-second cron and a slow pass). */
const MAX_ON_TIME = 10;

/** Why a cron expression or timezone is unusable (a sentence naming what to fix), or undefined. */
export function cronProblem(cron: string, timezone: string): string | undefined {
	const zone = timezoneProblem(timezone);
	if (zone) return zone;
	try {
		const job = new Cron(cron, { timezone, paused: true, mode: "5-or-6-parts" });
		if (job.nextRun() === null) return `"${cron}" never fires after now`;
		return undefined;
	} catch (err) {
		return `"${cron}" is not a cron expression (5 fields, or 6 with seconds first): ${(err as Error).message}`;
	}
}

/** Why `timezone` is not an IANA timezone this runtime knows, or undefined. */
export function timezoneProblem(timezone: string): string | undefined {
	try {
		new Intl.DateTimeFormat("en-US", { timeZone: timezone });
		return undefined;
	} catch {
		return `"${timezone}" is not an IANA timezone (e.g. "UTC", "America/New_York")`;
	}
}

/** The first tick of `spec` strictly after `after` (epoch ms), or null when there is none (a one-shot's passed). */
export function nextTick(spec: Pick<ScheduleSpec, "cron" | "at" | "timezone">, after: number): number | null {
	if (spec.cron === null) return spec.at !== null && spec.at > after ? spec.at : null;
	const next = new Cron(spec.cron, { timezone: spec.timezone, paused: true, mode: "5-or-6-parts" }).nextRun(
		new Date(after),
	);
	return next ? next.getTime() : null;
}

/** The first tick of a schedule made or resumed at `now`: a one-shot keeps its time even if it passed (then it is late). */
export function firstTick(spec: Pick<ScheduleSpec, "cron" | "at" | "timezone">, now: number): number | null {
	if (spec.cron === null) return spec.at;
	return nextTick(spec, now);
}

/** What one scheduler pass does with a due schedule. */
export interface FirePlan {
	/** Fires to record: missed ticks (settled), then the ticks to fire (`firing`). */
	fires: NewScheduleFire[];
	nextFireAt: number | null;
	/** `done` when no tick is left; otherwise undefined: the pass leaves the state as stored. */
	state: "done" | undefined;
}

/**
 * Plans a pass over a due schedule at `now`. A tick at most `lateMs` old fires (`tick`); an older
 * one was missed (no scheduler held the lease, or the server was down): recorded `missed`, except
 * that with `missed: "once"` the newest missed tick fires late as a `catch_up` (besides a tick on
 * time, if there is one).
 */
export function planDue(schedule: ScheduleRecord, now: number, lateMs: number): FirePlan {
	const due: number[] = [];
	let tick = schedule.nextFireAt;
	// Ticks more than an hour older than the late ones go unrecorded: a per-second cron after a day
	// down would otherwise be walked tick by tick.
	const horizon = now - lateMs - RECORD_HORIZON_MS;
	if (tick !== null && schedule.cron !== null && tick < horizon) tick = nextTick(schedule, horizon - 1);
	// Ticks between nextFireAt and now, at most enough to know the newest ones.
	while (tick !== null && tick <= now) {
		due.push(tick);
		if (due.length > MAX_RECORDED_MISSED + MAX_ON_TIME) due.shift();
		tick = schedule.cron === null ? null : nextTick(schedule, tick);
	}
	const onTime = due.filter((t) => now - t <= lateMs).slice(-MAX_ON_TIME);
	const late = due.filter((t) => now - t > lateMs);
	const base = { scheduleId: schedule.id, sessionId: null, runId: null, createdAt: now };
	const fires: NewScheduleFire[] = [];
	const catchUp = schedule.missed === "once" ? late.pop() : undefined;
	for (const t of late.slice(-MAX_RECORDED_MISSED)) {
		fires.push({
			...base,
			kind: "tick",
			tickAt: t,
			outcome: "missed",
			reason: "no scheduler was running at this tick",
			settledAt: now,
		});
	}
	if (catchUp !== undefined)
		fires.push({ ...base, kind: "catch_up", tickAt: catchUp, outcome: "firing", reason: null });
	for (const t of onTime) fires.push({ ...base, kind: "tick", tickAt: t, outcome: "firing", reason: null });
	const nextFireAt = schedule.cron === null ? null : nextTick(schedule, Math.max(now, due.at(-1) ?? now));
	return { fires, nextFireAt, state: nextFireAt === null ? "done" : undefined };
}
