/**
 * The wire shapes of `/v1/schedules`: what a client sends to create or change a schedule, and the
 * schedule and fire records it gets back (the store's records as they are).
 */
import { Type } from "@sinclair/typebox";

const Cron = Type.String({
	minLength: 1,
	maxLength: 200,
	description:
		'A cron expression: 5 fields (minute hour day month weekday), or 6 with seconds first; read in `timezone`. E.g. `"0 9 * * 1-5"`, `"*/10 * * * * *"`.',
});
const At = Type.String({
	minLength: 1,
	maxLength: 64,
	description: "A one-shot: the time to fire once, as an ISO 8601 date-time with an offset (`2026-12-24T09:00:00Z`).",
});
const Timezone = Type.String({
	minLength: 1,
	maxLength: 64,
	description: 'IANA timezone the cron expression is read in (default `"UTC"`). DST is followed.',
});
const IfBusy = Type.Union([Type.Literal("followUp"), Type.Literal("skip"), Type.Literal("interrupt")], {
	description:
		"With `sessionId`: what a fire does while the session runs — queue the prompt as a follow-up (default), skip the tick (recorded as skipped), or abort the run and prompt.",
});
const Missed = Type.Union([Type.Literal("skip"), Type.Literal("once")], {
	description:
		"Ticks that passed while no replica could fire (a restart, a takeover): record them as missed (default), or fire the newest once, late.",
});
const Metadata = Type.Record(Type.String(), Type.String(), {
	description: "Free-form string map; also set on the sessions fires create.",
});
const Prompt = Type.String({ minLength: 1, maxLength: 100_000, description: "The user message each fire sends." });

export const CreateScheduleBody = Type.Object(
	{
		cron: Type.Optional(Cron),
		at: Type.Optional(At),
		timezone: Type.Optional(Timezone),
		profile: Type.Optional(
			Type.String({
				maxLength: 200,
				description:
					'A new session per fire, from this agent profile (`""`: the server\'s defaults). Exactly one of `profile` and `sessionId`.',
			}),
		),
		sessionId: Type.Optional(
			Type.String({ minLength: 1, maxLength: 200, description: "The session every fire prompts (through `ifBusy`)." }),
		),
		prompt: Prompt,
		ifBusy: Type.Optional(IfBusy),
		missed: Type.Optional(Missed),
		metadata: Type.Optional(Metadata),
	},
	{ additionalProperties: false, title: "CreateScheduleBody" },
);

export const PatchScheduleBody = Type.Object(
	{
		cron: Type.Optional(Cron),
		at: Type.Optional(At),
		timezone: Type.Optional(Timezone),
		prompt: Type.Optional(Prompt),
		ifBusy: Type.Optional(IfBusy),
		missed: Type.Optional(Missed),
		metadata: Type.Optional(Metadata),
	},
	{
		additionalProperties: false,
		title: "PatchScheduleBody",
		description:
			"Only the given fields change. Giving `cron` makes a one-shot a cron schedule and the reverse with `at`; the next tick is computed again from now.",
	},
);

const Nullable = <T extends ReturnType<typeof Type.String> | ReturnType<typeof Type.Number>>(t: T) =>
	Type.Union([t, Type.Null()]);

export const ScheduleView = Type.Object(
	{
		id: Type.String(),
		cron: Nullable(Type.String()),
		at: Nullable(Type.Number({ description: "The one-shot's time, epoch ms." })),
		timezone: Type.String(),
		profile: Nullable(Type.String()),
		sessionId: Nullable(Type.String()),
		prompt: Type.String(),
		ifBusy: IfBusy,
		missed: Missed,
		metadata: Type.Record(Type.String(), Type.String()),
		state: Type.Union([Type.Literal("active"), Type.Literal("paused"), Type.Literal("done")]),
		nextFireAt: Nullable(Type.Number({ description: "The next tick, epoch ms; null when none is left." })),
		lastFireAt: Nullable(Type.Number()),
		createdAt: Type.Number(),
		updatedAt: Type.Number(),
	},
	{ additionalProperties: false, title: "Schedule" },
);

export const ScheduleList = Type.Object(
	{ schedules: Type.Array(ScheduleView), nextCursor: Type.Optional(Type.String()) },
	{ additionalProperties: false, title: "ScheduleList" },
);

export const FireView = Type.Object(
	{
		id: Type.Number(),
		scheduleId: Type.String(),
		kind: Type.Union([Type.Literal("tick"), Type.Literal("catch_up"), Type.Literal("manual")]),
		tickAt: Type.Number({ description: "The tick it belongs to (a manual fire: when it was asked for), epoch ms." }),
		outcome: Type.Union([
			Type.Literal("firing"),
			Type.Literal("fired"),
			Type.Literal("skipped"),
			Type.Literal("missed"),
			Type.Literal("failed"),
		]),
		sessionId: Nullable(Type.String()),
		runId: Nullable(Type.String()),
		reason: Nullable(Type.String()),
		createdAt: Type.Number(),
		settledAt: Nullable(Type.Number()),
	},
	{ additionalProperties: false, title: "ScheduleFire" },
);

export const FireList = Type.Object(
	{
		fires: Type.Array(FireView),
		nextBefore: Type.Optional(Type.Number({ description: "Pass as `?before=` for older fires." })),
	},
	{ additionalProperties: false, title: "ScheduleFireList" },
);

export const ScheduleParams = Type.Object({ id: Type.String({ minLength: 1, maxLength: 200 }) });

export const FiresQuery = Type.Object(
	{
		before: Type.Optional(Type.Integer({ minimum: 1 })),
		limit: Type.Optional(Type.Integer({ minimum: 1, maximum: 1000, default: 50 })),
	},
	{ additionalProperties: false },
);
