/**
 * The schedules' part of the store contract (`ScheduleStore`, reached as `store.schedules`) and
 * the records it keeps: schedules, their fires, and the scheduler lease that makes one replica
 * fire at a time. What a schedule means (cron, timezones, what a fire does) is the server's
 * (src/server/runtime/schedules/); the store keeps the facts and makes the two decisions that must be
 * atomic across replicas: that a tick is fired at most once, and that a fenced scheduler cannot
 * record anything after another replica took the scheduler over. The rules every store applies
 * alike in those decisions are at the end.
 */
import type { NewWebhookDelivery } from "./webhook-types.js";

/** What a fire does when the session it prompts is running: queue as a follow-up, skip the tick, or abort the run and prompt. */
export type ScheduleIfBusy = "followUp" | "skip" | "interrupt";

/** What happens to ticks that came due while no replica held the scheduler: recorded as missed, or one of them fired late. */
export type ScheduleMissedPolicy = "skip" | "once";

/** `active` fires when due; `paused` does not (its ticks pass unrecorded); `done`: a one-shot (`at`) that fired. */
export type ScheduleState = "active" | "paused" | "done";

/** What a schedule is told to do: when (`cron` or `at`), and what (a prompt to a new or an existing session). */
export interface ScheduleSpec {
	/** A cron expression (5 or 6 fields, seconds first when 6); `null` for a one-shot. */
	cron: string | null;
	/** The one-shot's time (epoch ms); `null` for a cron schedule. */
	at: number | null;
	/** IANA timezone the cron expression is read in. */
	timezone: string;
	/** A new session per fire, with this profile's settings (`""`: the server's defaults); `null` with `sessionId`. */
	profile: string | null;
	/** The session every fire prompts; `null` with `profile`. */
	sessionId: string | null;
	prompt: string;
	ifBusy: ScheduleIfBusy;
	missed: ScheduleMissedPolicy;
	/** Free-form string map from the client; also given to the sessions a fire creates. */
	metadata: Record<string, string>;
}

/** A schedule as stored. */
export interface ScheduleRecord extends ScheduleSpec {
	id: string;
	/** The API key's owner id that created it (`null` with auth off): its fires run as that owner. */
	ownerId: string | null;
	state: ScheduleState;
	/** The next tick to fire (epoch ms); `null` when there is none (a fired one-shot). */
	nextFireAt: number | null;
	/** The tick of the last fire recorded (any outcome); `null` before the first. */
	lastFireAt: number | null;
	createdAt: number;
	updatedAt: number;
}

/** Why a fire happened: its tick came, a catch-up of missed ticks (`missed: "once"`), or `run-now`. */
export type FireKind = "tick" | "catch_up" | "manual";

/**
 * What a fire came to. `firing`: recorded, its run not started yet (the record is durable before
 * the run starts; a fire left `firing` by a replica that died is settled `failed` by the next
 * holder). `fired`: a run started (or the prompt was queued as a follow-up). `skipped`: the session
 * was busy (`ifBusy: "skip"`) or gone. `missed`: its tick passed while no replica held the
 * scheduler. `failed`: the run could not start (a limit, a budget, an error).
 */
export type FireOutcome = "firing" | "fired" | "skipped" | "missed" | "failed";

/** One fire of a schedule. */
export interface ScheduleFire {
	/** Store-assigned, increasing in record order (global, not per schedule). */
	id: number;
	scheduleId: string;
	kind: FireKind;
	/** The tick it belongs to (epoch ms); for a `manual` fire, when it was asked for. */
	tickAt: number;
	outcome: FireOutcome;
	sessionId: string | null;
	runId: string | null;
	/** Why it was skipped or failed; `null` otherwise. */
	reason: string | null;
	createdAt: number;
	/** When it reached its outcome; `null` while `firing`. */
	settledAt: number | null;
}

/** A fire to record (the store assigns its id). */
export type NewScheduleFire = Omit<ScheduleFire, "id" | "settledAt"> & { settledAt?: number | null };

/** What `listSchedules` returns. */
export interface SchedulePage {
	schedules: ScheduleRecord[];
	nextCursor?: string;
}

/** The holder and token of the scheduler lease a write is made under (see `takeSchedulerLease`). */
export interface SchedulerFence {
	holder: string;
	token: number;
}

/** The fields `updateSchedule` may change. */
export type SchedulePatch = Partial<ScheduleSpec & Pick<ScheduleRecord, "state" | "nextFireAt">>;

/**
 * The schedules' store. Durability as the rest of the store: every write is durable when its
 * promise resolves; reads see every write called before them. An unknown schedule is a value
 * (undefined, false, `[]`), never a throw; misuse (a duplicate id, a bad limit or cursor) rejects.
 */
export interface ScheduleStore {
	/** Stores a new schedule. Rejects if the id exists (misuse). Durable on resolve. */
	createSchedule(schedule: ScheduleRecord): Promise<ScheduleRecord>;

	/** The schedule, or undefined. */
	getSchedule(id: string): Promise<ScheduleRecord | undefined>;

	/**
	 * Schedules in creation order (ties by id), `limit` 1..1000 (default 50) per page. `ownerId`
	 * filters to one owner (`null`: created without auth); omit it for all. A malformed cursor rejects.
	 */
	listSchedules(options?: { ownerId?: string | null; cursor?: string; limit?: number }): Promise<SchedulePage>;

	/** Applies `patch` and sets `updatedAt = at`; undefined for an unknown schedule. Durable on resolve. */
	updateSchedule(id: string, patch: SchedulePatch, at: number): Promise<ScheduleRecord | undefined>;

	/** Deletes the schedule and its fires. Resolves to false if unknown. Durable on resolve. */
	deleteSchedule(id: string): Promise<boolean>;

	/** Active schedules with `nextFireAt <= now`, earliest due first, at most `limit` (1..1000, default 100). */
	dueSchedules(now: number, limit?: number): Promise<ScheduleRecord[]>;

	/**
	 * Records fires of one schedule and moves its `nextFireAt` on, in one transaction, with
	 * the deliveries `webhooks` builds from the stored fires (with their ids) in the same commit —
	 * only if the schedule's
	 * `nextFireAt` is still `expectNextFireAt` (`undefined`: whatever it is; a `run-now`), its state
	 * still `expectState` (a pause committed after the scheduler read the schedule wins), and, with
	 * `fence`, only if the scheduler lease is still held with that token. A tick is recorded at
	 * most once per schedule (kinds `tick` and `catch_up`; `manual` fires are not ticks): a fire of
	 * a tick that has one already is left out. `nextFireAt` undefined leaves it as it is; `state`
	 * sets the schedule's state too (a one-shot becomes `done`). Resolves to the fires stored;
	 * `"stale"` when it wrote nothing because the expectation or the fence failed (another replica
	 * moved on); undefined for an unknown schedule. Durable on resolve.
	 */
	recordFires(
		scheduleId: string,
		fires: readonly NewScheduleFire[],
		next: {
			expectNextFireAt?: number | null;
			expectState?: ScheduleState;
			nextFireAt?: number | null;
			state?: ScheduleState;
			at: number;
		},
		options?: {
			fence?: SchedulerFence;
			webhooks?: (stored: readonly ScheduleFire[]) => readonly NewWebhookDelivery[];
		},
	): Promise<ScheduleFire[] | "stale" | undefined>;

	/**
	 * Settles a `firing` fire: its outcome, session, run and reason, with `webhooks` in the same
	 * commit. Resolves to the settled fire, or undefined when there is no such `firing` fire.
	 * Durable on resolve.
	 */
	settleFire(
		fireId: number,
		settle: {
			outcome: Exclude<FireOutcome, "firing" | "missed">;
			sessionId?: string | null;
			runId?: string | null;
			reason?: string | null;
			at: number;
		},
		webhooks?: readonly NewWebhookDelivery[],
	): Promise<ScheduleFire | undefined>;

	/** Fires still `firing` that were recorded before `before`: left by a replica that died mid-fire. */
	listUnsettledFires(before: number, limit?: number): Promise<ScheduleFire[]>;

	/**
	 * A schedule's fires, newest first, at most `limit` (1..1000, default 50); with `beforeId`,
	 * only fires with a lower id (the next page). `[]` for an unknown schedule.
	 */
	listFires(scheduleId: string, options?: { beforeId?: number; limit?: number }): Promise<ScheduleFire[]>;

	/**
	 * Takes the scheduler lease for `holder` for `ttlMs` if it is free, expired or already
	 * `holder`'s (then renewed, same token). Resolves to the token (it grows on every take by
	 * another holder), or undefined while another holder's lease runs. The memory and SQLite
	 * stores read the process clock here; PostgreSQL the database's.
	 */
	takeSchedulerLease(holder: string, ttlMs: number): Promise<number | undefined>;

	/** Extends the lease if `fence` still holds it; false when it was lost. */
	renewSchedulerLease(fence: SchedulerFence, ttlMs: number): Promise<boolean>;

	/** Gives the lease up if `fence` still holds it (the token stays, so later writes under it are refused). */
	releaseSchedulerLease(fence: SchedulerFence): Promise<void>;
}

// The rules every store's schedules apply alike (the memory store over its maps, the SQL stores
// inside their transactions).

/** A `createSchedule` with an id that exists: misuse. */
export function scheduleExistsError(id: string): Error {
	return new Error(`schedule ${id} exists: generate unique ids`);
}

/** The schedule after `patch`, as `updateSchedule` stores it. */
export function patchSchedule(current: ScheduleRecord, patch: SchedulePatch, at: number): ScheduleRecord {
	return { ...current, ...structuredClone(patch), updatedAt: at };
}

/** True when `recordFires` must write nothing: the schedule moved on since the scheduler read it. */
export function firesStale(current: ScheduleRecord, next: Parameters<ScheduleStore["recordFires"]>[2]): boolean {
	return (
		(next.expectNextFireAt !== undefined && current.nextFireAt !== next.expectNextFireAt) ||
		(next.expectState !== undefined && current.state !== next.expectState)
	);
}

/** The fires `recordFires` stores: `manual` ones, and those of a tick not `taken` by a fire already. */
export function freshFires(fires: readonly NewScheduleFire[], taken: ReadonlySet<number>): NewScheduleFire[] {
	return fires.filter((f) => f.kind === "manual" || !taken.has(f.tickAt));
}

/** The schedule's `lastFireAt` once `stored` are recorded: the latest tick of any fire. */
export function lastFireAfter(current: ScheduleRecord, stored: readonly ScheduleFire[]): number | null {
	return stored.reduce<number | null>((m, f) => (m === null || f.tickAt > m ? f.tickAt : m), current.lastFireAt);
}
