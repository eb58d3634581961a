/**
 * The schedule routes: create, list, read, change, pause, resume, run now and delete schedules,
 * and page through their fires. A schedule belongs to the API key that created it; its fires run
 * as that key (src/server/runtime/schedules/fire.ts).
 */
import { randomBytes } from "node:crypto";
import type { FastifyPluginAsyncTypebox } from "@fastify/type-provider-typebox";
import { Type } from "@sinclair/typebox";
import type { ScheduleRecord, ScheduleSpec } from "../../../store/types.js";
import { profileNamed } from "../../runtime/profiles.js";
import type { Scheduler } from "../../runtime/schedules/scheduler.js";
import {
	CreateScheduleBody,
	FireList,
	FiresQuery,
	FireView,
	PatchScheduleBody,
	ScheduleList,
	ScheduleParams,
	ScheduleView,
} from "../../runtime/schedules/schemas.js";
import { cronProblem, firstTick, timezoneProblem } from "../../runtime/schedules/timing.js";
import { apiError } from "../errors.js";
import { routePlugin } from "../plugins.js";
import { responses } from "../schemas.js";

export interface ScheduleRoutesOptions {
	scheduler: Scheduler;
}

function newScheduleId(): string {
	return `sch_${randomBytes(12).toString("base64url")}`;
}

/** Epoch ms of an ISO 8601 date-time with an offset; 400 naming `field` otherwise. */
function parseAt(value: string, field: string): number {
	const ms = /(Z|[+-]\d\d:?\d\d)$/i.test(value) ? Date.parse(value) : Number.NaN;
	if (!Number.isFinite(ms)) {
		throw apiError(
			"VALIDATION_FAILED",
			`${field}: "${value}" is not an ISO 8601 date-time with an offset (e.g. "2026-12-24T09:00:00Z").`,
		);
	}
	return ms;
}

/** Checks the timing of a spec: one of `cron` and `at`, a usable expression and timezone. */
function checkTiming(spec: Pick<ScheduleSpec, "cron" | "at" | "timezone">): void {
	if ((spec.cron === null) === (spec.at === null)) {
		throw apiError("VALIDATION_FAILED", "body: give exactly one of `cron` (repeating) and `at` (one-shot).");
	}
	const problem = spec.cron !== null ? cronProblem(spec.cron, spec.timezone) : timezoneProblem(spec.timezone);
	if (problem) throw apiError("VALIDATION_FAILED", `body.${spec.cron !== null ? "cron" : "timezone"}: ${problem}.`);
}

/** `/v1/schedules` and its sub-resources. */
export const scheduleRoutes: FastifyPluginAsyncTypebox<ScheduleRoutesOptions> = routePlugin(
	"wheelhouse-schedules",
	async (app, { scheduler }) => {
		const tags = ["schedules"];
		const store = () => app.wheelhouse.sessions.store.schedules;

		/** The schedule, if it is the caller's; 404 otherwise. */
		async function owned(id: string, ownerId: string | null): Promise<ScheduleRecord> {
			const schedule = await store().getSchedule(id);
			if (!schedule || schedule.ownerId !== ownerId) {
				throw apiError("SCHEDULE_NOT_FOUND", `No schedule ${id} exists for this API key.`);
			}
			return schedule;
		}

		app.post(
			"/v1/schedules",
			{
				schema: {
					tags,
					summary: "Create a schedule (cron or one-shot) that prompts a new or an existing session",
					body: CreateScheduleBody,
					response: responses({ 201: ScheduleView }),
				},
			},
			async function createSchedule(request, reply) {
				const body = request.body;
				if ((body.profile === undefined) === (body.sessionId === undefined)) {
					throw apiError(
						"VALIDATION_FAILED",
						"body: give exactly one of `profile` (a new session per fire) and `sessionId` (prompt that session).",
					);
				}
				const spec: ScheduleSpec = {
					cron: body.cron ?? null,
					at: body.at === undefined ? null : parseAt(body.at, "body.at"),
					timezone: body.timezone ?? "UTC",
					profile: body.profile ?? null,
					sessionId: body.sessionId ?? null,
					prompt: body.prompt,
					ifBusy: body.ifBusy ?? "followUp",
					missed: body.missed ?? "skip",
					metadata: body.metadata ?? {},
				};
				checkTiming(spec);
				if (spec.profile) profileNamed(app.wheelhouse.profiles, spec.profile);
				// The session must exist and be the caller's now; a fire after it was deleted is skipped.
				if (spec.sessionId !== null) await app.wheelhouse.sessions.open(spec.sessionId, request.ownerId);
				const now = Date.now();
				const schedule: ScheduleRecord = {
					...spec,
					id: newScheduleId(),
					ownerId: request.ownerId,
					state: "active",
					nextFireAt: firstTick(spec, now),
					lastFireAt: null,
					createdAt: now,
					updatedAt: now,
				};
				const created = await store().createSchedule(schedule);
				scheduler.poke();
				return reply.code(201).send(created);
			},
		);

		app.get(
			"/v1/schedules",
			{
				schema: {
					tags,
					summary: "List schedules (oldest first, cursor pagination)",
					querystring: Type.Object(
						{
							cursor: Type.Optional(Type.String({ maxLength: 1000 })),
							limit: Type.Optional(Type.Integer({ minimum: 1, maximum: 1000, default: 50 })),
						},
						{ additionalProperties: false },
					),
					response: responses({ 200: ScheduleList }),
				},
			},
			async function listSchedules(request) {
				try {
					return await store().listSchedules({
						ownerId: request.ownerId,
						limit: request.query.limit ?? 50,
						...(request.query.cursor ? { cursor: request.query.cursor } : {}),
					});
				} catch (err) {
					if (err instanceof RangeError) throw apiError("VALIDATION_FAILED", `querystring.cursor: ${err.message}`);
					throw err;
				}
			},
		);

		app.get(
			"/v1/schedules/:id",
			{ schema: { tags, summary: "A schedule", params: ScheduleParams, response: responses({ 200: ScheduleView }) } },
			async function getSchedule(request) {
				return owned(request.params.id, request.ownerId);
			},
		);

		app.patch(
			"/v1/schedules/:id",
			{
				schema: {
					tags,
					summary: "Change a schedule (the next tick is computed again when its timing changes)",
					params: ScheduleParams,
					body: PatchScheduleBody,
					response: responses({ 200: ScheduleView }),
				},
			},
			async function patchSchedule(request) {
				const current = await owned(request.params.id, request.ownerId);
				const body = request.body;
				const timing = {
					cron: body.at !== undefined ? null : (body.cron ?? current.cron),
					at: body.cron !== undefined ? null : body.at !== undefined ? parseAt(body.at, "body.at") : current.at,
					timezone: body.timezone ?? current.timezone,
				};
				if (body.cron !== undefined && body.at !== undefined) checkTiming({ ...timing, cron: body.cron });
				checkTiming(timing);
				const retimed = body.cron !== undefined || body.at !== undefined || body.timezone !== undefined;
				const now = Date.now();
				const nextFireAt = retimed ? firstTick(timing, now) : current.nextFireAt;
				const state = retimed && current.state === "done" && nextFireAt !== null ? "active" : current.state;
				const { cron: _c, at: _a, timezone: _t, ...rest } = body;
				const updated = await store().updateSchedule(
					current.id,
					{ ...rest, ...timing, ...(retimed ? { nextFireAt, state } : {}) },
					now,
				);
				if (!updated) throw apiError("SCHEDULE_NOT_FOUND", `No schedule ${current.id} exists for this API key.`);
				scheduler.poke();
				return updated;
			},
		);

		app.delete(
			"/v1/schedules/:id",
			{
				schema: {
					tags,
					summary: "Delete a schedule and its fires (runs it started go on)",
					params: ScheduleParams,
					response: responses({ 200: Type.Object({ deleted: Type.Boolean(), id: Type.String() }) }),
				},
			},
			async function deleteSchedule(request) {
				const schedule = await owned(request.params.id, request.ownerId);
				await store().deleteSchedule(schedule.id);
				return { deleted: true, id: schedule.id };
			},
		);

		app.post(
			"/v1/schedules/:id/pause",
			{
				schema: {
					tags,
					summary: "Pause a schedule: its ticks pass unfired and unrecorded until it is resumed",
					params: ScheduleParams,
					response: responses({ 200: ScheduleView }),
				},
			},
			async function pauseSchedule(request) {
				const schedule = await owned(request.params.id, request.ownerId);
				if (schedule.state !== "active") return schedule;
				return (await store().updateSchedule(schedule.id, { state: "paused" }, Date.now())) ?? schedule;
			},
		);

		app.post(
			"/v1/schedules/:id/resume",
			{
				schema: {
					tags,
					summary: "Resume a paused schedule from its next tick after now (a passed one-shot fires per `missed`)",
					params: ScheduleParams,
					response: responses({ 200: ScheduleView }),
				},
			},
			async function resumeSchedule(request) {
				const schedule = await owned(request.params.id, request.ownerId);
				if (schedule.state !== "paused") return schedule;
				const now = Date.now();
				const resumed = await store().updateSchedule(
					schedule.id,
					{ state: "active", nextFireAt: firstTick(schedule, now) },
					now,
				);
				scheduler.poke();
				return resumed ?? schedule;
			},
		);

		app.post(
			"/v1/schedules/:id/run-now",
			{
				schema: {
					tags,
					summary:
						"Fire a schedule once now, besides its ticks (also when paused); answers once the fire's run started",
					params: ScheduleParams,
					response: responses({ 202: FireView }),
				},
			},
			async function runScheduleNow(request, reply) {
				const schedule = await owned(request.params.id, request.ownerId);
				const now = Date.now();
				const stored = await store().recordFires(
					schedule.id,
					[
						{
							scheduleId: schedule.id,
							kind: "manual",
							tickAt: now,
							outcome: "firing",
							sessionId: null,
							runId: null,
							reason: null,
							createdAt: now,
						},
					],
					{ at: now },
				);
				const fire = Array.isArray(stored) ? stored[0] : undefined;
				if (!fire) throw apiError("SCHEDULE_NOT_FOUND", `No schedule ${schedule.id} exists for this API key.`);
				const settled = await scheduler.carryOut(schedule, fire);
				return reply.code(202).send(settled ?? fire);
			},
		);

		app.get(
			"/v1/schedules/:id/fires",
			{
				schema: {
					tags,
					summary: "A schedule's fires, newest first (`?before=` pages back)",
					params: ScheduleParams,
					querystring: FiresQuery,
					response: responses({ 200: FireList }),
				},
			},
			async function listFires(request) {
				const schedule = await owned(request.params.id, request.ownerId);
				const limit = request.query.limit ?? 50;
				const fires = await store().listFires(schedule.id, {
					limit,
					...(request.query.before !== undefined ? { beforeId: request.query.before } : {}),
				});
				const last = fires.at(-1);
				return { fires, ...(fires.length === limit && last ? { nextBefore: last.id } : {}) };
			},
		);
	},
);
