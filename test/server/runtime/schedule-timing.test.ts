/**
 * When schedules fire: a daily cron read in America/New_York fires at 09:00 local on both sides of
 * each DST change (so 13:00 or 14:00 UTC); seconds fields work; and a scheduler pass over a due
 * schedule fires the ticks on time, records the late ones as missed, and with `missed: "once"`
 * fires the newest missed one late.
 */
import { describe, expect, it } from "vitest";
import { cronProblem, nextTick, planDue } from "../../../src/server/runtime/schedules/timing.js";
import type { ScheduleRecord } from "../../../src/store/types.js";

const localTime = (ms: number, timeZone: string) =>
	new Intl.DateTimeFormat("en-US", { timeZone, hour: "2-digit", minute: "2-digit", hourCycle: "h23" }).format(ms);

function ticks(spec: { cron: string; timezone: string }, from: string, n: number): number[] {
	const out: number[] = [];
	let t = Date.parse(from);
	for (let i = 0; i < n; i++) {
		t = nextTick({ ...spec, at: null }, t) as number;
		out.push(t);
	}
	return out;
}

describe("cron ticks", () => {
	const ny = { cron: "0 9 * * *", timezone: "America/New_York" };

	it("fires at 09:00 New York time across the spring-forward change", () => {
		const t = ticks(ny, "2026-03-06T12:00:00Z", 4);
		expect(t.map((ms) => new Date(ms).toISOString())).toEqual([
			"2026-03-06T14:00:00.000Z",
			"2026-03-07T14:00:00.000Z",
			"2026-03-08T13:00:00.000Z",
			"2026-03-09T13:00:00.000Z",
		]);
		for (const ms of t) expect(localTime(ms, ny.timezone)).toBe("09:00");
	});

	it("fires at 09:00 New York time across the fall-back change", () => {
		const t = ticks(ny, "2026-10-30T12:00:00Z", 4);
		expect(t.map((ms) => new Date(ms).toISOString())).toEqual([
			"2026-10-30T13:00:00.000Z",
			"2026-10-31T13:00:00.000Z",
			"2026-11-01T14:00:00.000Z",
			"2026-11-02T14:00:00.000Z",
		]);
		for (const ms of t) expect(localTime(ms, ny.timezone)).toBe("09:00");
	});

	it("fires once at a local time the fall-back change repeats", () => {
		// 01:30 exists twice on 2026-11-01 in New York: one fire that day.
		const t = ticks({ cron: "30 1 * * *", timezone: "America/New_York" }, "2026-10-31T12:00:00Z", 3);
		const days = t.map((ms) => new Date(ms).toISOString().slice(0, 10));
		expect(new Set(days).size).toBe(3);
	});

	it("reads a seconds field, and refuses bad expressions and zones", () => {
		expect(
			ticks({ cron: "*/2 * * * * *", timezone: "UTC" }, "2026-01-01T00:00:00Z", 3).map((ms) => ms % 60_000),
		).toEqual([2000, 4000, 6000]);
		expect(cronProblem("61 * * * *", "UTC")).toMatch(/not a cron expression/);
		expect(cronProblem("* * * * *", "Nowhere/City")).toMatch(/IANA/);
		expect(cronProblem("0 9 * * 1-5", "Europe/Berlin")).toBeUndefined();
	});

	it("gives a one-shot one tick", () => {
		expect(nextTick({ cron: null, at: 5000, timezone: "UTC" }, 1000)).toBe(5000);
		expect(nextTick({ cron: null, at: 5000, timezone: "UTC" }, 5000)).toBeNull();
	});
});

describe("a pass over a due schedule", () => {
	const base: ScheduleRecord = {
		id: "s",
		ownerId: null,
		cron: "*/2 * * * * *",
		at: null,
		timezone: "UTC",
		profile: "",
		sessionId: null,
		prompt: "p",
		ifBusy: "followUp",
		missed: "skip",
		metadata: {},
		state: "active",
		nextFireAt: 10_000,
		lastFireAt: null,
		createdAt: 0,
		updatedAt: 0,
	};

	it("fires the ticks on time and moves on to the next", () => {
		const plan = planDue(base, 10_300, 1000);
		expect(plan.fires.map((f) => [f.kind, f.tickAt, f.outcome])).toEqual([["tick", 10_000, "firing"]]);
		expect(plan.nextFireAt).toBe(12_000);
	});

	it("records the ticks of a gap as missed and fires the one on time", () => {
		const plan = planDue(base, 16_500, 1000);
		expect(plan.fires.map((f) => [f.kind, f.tickAt, f.outcome])).toEqual([
			["tick", 10_000, "missed"],
			["tick", 12_000, "missed"],
			["tick", 14_000, "missed"],
			["tick", 16_000, "firing"],
		]);
		expect(plan.nextFireAt).toBe(18_000);
	});

	it("with missed: once, fires the newest missed tick late, besides the one on time", () => {
		const both = planDue({ ...base, missed: "once" }, 16_500, 1000);
		expect(both.fires.map((f) => [f.kind, f.tickAt, f.outcome])).toEqual([
			["tick", 10_000, "missed"],
			["tick", 12_000, "missed"],
			["catch_up", 14_000, "firing"],
			["tick", 16_000, "firing"],
		]);
		const plan = planDue({ ...base, missed: "once" }, 15_500, 1000);
		expect(plan.fires.map((f) => [f.kind, f.tickAt, f.outcome])).toEqual([
			["tick", 10_000, "missed"],
			["tick", 12_000, "missed"],
			["catch_up", 14_000, "firing"],
		]);
		expect(plan.nextFireAt).toBe(16_000);
	});

	it("ends a one-shot", () => {
		const plan = planDue({ ...base, cron: null, at: 10_000 }, 10_100, 1000);
		expect(plan).toMatchObject({ nextFireAt: null, state: "done" });
		expect(plan.fires).toHaveLength(1);
	});
});
