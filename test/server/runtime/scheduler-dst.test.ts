/**
 * The scheduler itself across DST changes, not only the cron arithmetic: a `Scheduler` built as
 * install-schedules.ts builds it (a real store, the app's real session manager and profiles, each
 * fire a real run on the echo model), driven by a controlled clock (its `now` option) through the
 * spring-forward and the fall-back days of America/New_York. Every schedule's ticks are recorded
 * at the right UTC instants, each once, as `fired` at its instant (not a millisecond early): 09:00
 * local on both sides of a change; a local time the spring change skips at the first instant after
 * the gap; one the fall change repeats once; a half-hourly cron over the changes every 30 real
 * minutes (no tick in the skipped hour, both half hours of the repeated one, none twice).
 *
 * The dates are in 2037 so that the app's own scheduler, which reads the real clock, never finds
 * these schedules due and leaves them to the one under test.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { Scheduler } from "../../../src/server/runtime/schedules/scheduler.js";
import { firstTick } from "../../../src/server/runtime/schedules/timing.js";
import { createMemoryStore } from "../../../src/store/memory.js";
import { openSqliteStore } from "../../../src/store/sqlite/index.js";
import type { ScheduleFire, ScheduleRecord, ScheduleSpec, SessionStore } from "../../../src/store/types.js";
import { waitUntil } from "../../helpers/cluster.js";
import { startServer, type TestServer } from "../../helpers/server.js";

const ZONE = "America/New_York";
let server: TestServer | undefined;
let scheduler: Scheduler | undefined;
const cleanups: (() => void)[] = [];
afterEach(async () => {
	await scheduler?.stop();
	scheduler = undefined;
	await server?.close();
	server = undefined;
	for (const c of cleanups.splice(0)) c();
});

const stores: [string, () => SessionStore][] = [
	["memory", () => createMemoryStore()],
	[
		"sqlite",
		() => {
			const dir = mkdtempSync(join(tmpdir(), "wh-scheduler-dst-"));
			const store = openSqliteStore({ path: join(dir, "db.sqlite") });
			cleanups.push(() => rmSync(dir, { recursive: true, force: true }));
			cleanups.unshift(() => void store.close());
			return store;
		},
	],
];

const iso = (ms: number) => new Date(ms).toISOString().slice(0, 16);
const localTime = (ms: number) =>
	new Intl.DateTimeFormat("en-US", { timeZone: ZONE, hour: "2-digit", minute: "2-digit", hourCycle: "h23" }).format(ms);

/**
 * Runs a scheduler over `crons` from `from` to `to`: the clock stops one millisecond before each
 * next tick the store holds (nothing may fire then), then at the tick (its fires must be recorded
 * and settled before the clock moves on, as they would be in real time). Returns each cron's fires,
 * oldest first.
 */
async function drive(makeStore: () => SessionStore, crons: string[], from: string, to: string) {
	const store = makeStore();
	server = await startServer({ store });
	const s = server;
	let clock = Date.parse(from);
	const end = Date.parse(to);
	// Without fires to settle, every read of the clock is the start of a pass.
	let reads = 0;
	const passes = async (n: number) => {
		const target = reads + n;
		await waitUntil(`${n} scheduler passes`, async () => (reads >= target ? true : undefined), 20_000, 5);
	};
	scheduler = new Scheduler({
		store,
		logger: s.app.log.child({ component: "scheduler" }),
		fire: { sessions: s.app.wheelhouse.sessions, profiles: s.app.wheelhouse.profiles },
		pollMs: 10,
		lateMs: 1_000,
		now: () => {
			reads += 1;
			return clock;
		},
	});
	const ids: string[] = [];
	for (const [i, cron] of crons.entries()) {
		const spec: ScheduleSpec = {
			cron,
			at: null,
			timezone: ZONE,
			profile: "",
			sessionId: null,
			prompt: `tick of ${cron}`,
			ifBusy: "followUp",
			missed: "skip",
			metadata: {},
		};
		const record: ScheduleRecord = {
			...spec,
			id: `sch_dst_${i}`,
			ownerId: null,
			state: "active",
			nextFireAt: firstTick(spec, clock),
			lastFireAt: null,
			createdAt: clock,
			updatedAt: clock,
		};
		await store.schedules.createSchedule(record);
		ids.push(record.id);
	}
	const allFires = async () =>
		(await Promise.all(ids.map((id) => store.schedules.listFires(id, { limit: 1000 })))).flat();
	scheduler.start();

	for (let steps = 0; ; steps++) {
		expect(steps, "more ticks than the window holds").toBeLessThan(100);
		const records = await Promise.all(ids.map(async (id) => (await store.schedules.getSchedule(id))!));
		const next = Math.min(...records.map((r) => r.nextFireAt ?? Number.POSITIVE_INFINITY));
		if (next > end) break;
		const before = (await allFires()).length;
		clock = next - 1;
		await passes(3);
		expect((await allFires()).length, `a fire before ${iso(next)}`).toBe(before);
		clock = next;
		await waitUntil(`the fires of ${iso(next)} settled`, async () => {
			const moved = await Promise.all(ids.map(async (id) => (await store.schedules.getSchedule(id))!.nextFireAt));
			if (moved.some((at) => at === next)) return undefined;
			const fires = await allFires();
			return fires.every((f) => f.outcome !== "firing") ? true : undefined;
		});
	}
	// The rest of the window: nothing more fires.
	const total = (await allFires()).length;
	clock = end;
	await passes(3);
	expect((await allFires()).length).toBe(total);

	const byCron = new Map<string, ScheduleFire[]>();
	for (const [i, id] of ids.entries()) {
		byCron.set(crons[i]!, (await store.schedules.listFires(id, { limit: 1000 })).reverse());
	}
	return { byCron, store };
}

/** Checks every fire is an on-time tick that fired a run of a new session; returns their instants. */
async function firedAt(fires: ScheduleFire[]): Promise<string[]> {
	for (const f of fires) {
		expect(f).toMatchObject({ kind: "tick", outcome: "fired", reason: null, createdAt: f.tickAt });
		expect(f.runId).toEqual(expect.any(String));
		const session = await server!.request("GET", `/v1/sessions/${f.sessionId}`);
		expect(session.body.metadata).toMatchObject({ "wheelhouse.schedule": f.scheduleId });
	}
	const instants = fires.map((f) => f.tickAt);
	expect(new Set(instants).size, "a tick fired twice").toBe(instants.length);
	return instants.map(iso);
}

describe.each(stores)("a running scheduler across DST changes (%s store)", (_name, makeStore) => {
	it("spring forward: 09:00 local on both sides, a skipped local time at the end of the gap, no tick in the gap", async () => {
		const { byCron } = await drive(
			makeStore,
			["0 9 * * *", "30 2 * * *", "*/30 0-4 8 3 *"],
			"2037-03-06T12:00:00Z",
			"2037-03-10T00:00:00Z",
		);
		const daily = byCron.get("0 9 * * *")!;
		expect(await firedAt(daily)).toEqual([
			"2037-03-06T14:00",
			"2037-03-07T14:00",
			"2037-03-08T13:00",
			"2037-03-09T13:00",
		]);
		for (const f of daily) expect(localTime(f.tickAt)).toBe("09:00");
		// 02:30 does not exist on 2037-03-08: that day it fires at 03:00 EDT, the first instant after the gap.
		expect(await firedAt(byCron.get("30 2 * * *")!)).toEqual([
			"2037-03-07T07:30",
			"2037-03-08T07:00",
			"2037-03-09T06:30",
		]);
		// Local 00:00–04:30 that night: 02:00 and 02:30 do not exist, so 01:30 EST is followed by 03:00 EDT.
		expect(await firedAt(byCron.get("*/30 0-4 8 3 *")!)).toEqual([
			"2037-03-08T05:00",
			"2037-03-08T05:30",
			"2037-03-08T06:00",
			"2037-03-08T06:30",
			"2037-03-08T07:00",
			"2037-03-08T07:30",
			"2037-03-08T08:00",
			"2037-03-08T08:30",
		]);
	}, 120_000);

	it("fall back: 09:00 local on both sides, a repeated local time once a day, half hours every 30 real minutes", async () => {
		const { byCron } = await drive(
			makeStore,
			["0 9 * * *", "30 1 * * *", "*/30 0-3 1 11 *"],
			"2037-10-30T12:00:00Z",
			"2037-11-03T00:00:00Z",
		);
		const daily = byCron.get("0 9 * * *")!;
		expect(await firedAt(daily)).toEqual([
			"2037-10-30T13:00",
			"2037-10-31T13:00",
			"2037-11-01T14:00",
			"2037-11-02T14:00",
		]);
		for (const f of daily) expect(localTime(f.tickAt)).toBe("09:00");
		// 01:30 exists twice on 2037-11-01 (EDT, then EST): it fires once that day, at the first.
		expect(await firedAt(byCron.get("30 1 * * *")!)).toEqual([
			"2037-10-31T05:30",
			"2037-11-01T05:30",
			"2037-11-02T06:30",
		]);
		// Local 00:00–03:30 that night is four and a half real hours: a tick every 30 minutes, none twice.
		expect(await firedAt(byCron.get("*/30 0-3 1 11 *")!)).toEqual([
			"2037-11-01T04:00",
			"2037-11-01T04:30",
			"2037-11-01T05:00",
			"2037-11-01T05:30",
			"2037-11-01T06:00",
			"2037-11-01T06:30",
			"2037-11-01T07:00",
			"2037-11-01T07:30",
			"2037-11-01T08:00",
			"2037-11-01T08:30",
		]);
	}, 120_000);
});
