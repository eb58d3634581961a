/**
 * The schedules part of the `SessionStore` contract (run by `contract.ts` for every
 * implementation): schedules stored, listed, changed and deleted; fires recorded at most once per
 * tick, only while the schedule's next tick is what the scheduler read and its lease holds; fires
 * settled once, with their webhook deliveries in the same write; the scheduler lease taken by one
 * holder at a time, its token growing on each take by another.
 */
import { describe, expect, it } from "vitest";
import type { NewScheduleFire, ScheduleRecord, SessionStore } from "../../src/store/types.js";

export function schedule(id: string, over: Partial<ScheduleRecord> = {}): ScheduleRecord {
	return {
		id,
		ownerId: "owner-a",
		cron: "*/5 * * * * *",
		at: null,
		timezone: "UTC",
		profile: "",
		sessionId: null,
		prompt: "hello",
		ifBusy: "followUp",
		missed: "skip",
		metadata: { team: "x" },
		state: "active",
		nextFireAt: 5000,
		lastFireAt: null,
		createdAt: 1000,
		updatedAt: 1000,
		...over,
	};
}

function fire(tickAt: number, over: Partial<NewScheduleFire> = {}): NewScheduleFire {
	return {
		scheduleId: "sch1",
		kind: "tick",
		tickAt,
		outcome: "firing",
		sessionId: null,
		runId: null,
		reason: null,
		createdAt: tickAt,
		...over,
	};
}

const delivery = (id: string) => ({
	id,
	endpoint: "http://example.test/hook",
	eventType: "schedule.fired",
	payload: "{}",
	createdAt: 1,
});

export function schedulesContract(open: () => SessionStore): void {
	describe("schedules", () => {
		it("stores, reads, changes and deletes a schedule (with its fires)", async () => {
			const { schedules } = open();
			const created = await schedules.createSchedule(schedule("sch1"));
			expect(created.id).toBe("sch1");
			await expect(schedules.createSchedule(schedule("sch1"))).rejects.toThrow(/exists/);
			expect(await schedules.getSchedule("sch1")).toEqual(schedule("sch1"));
			const changed = await schedules.updateSchedule(
				"sch1",
				{ prompt: "bye", state: "paused", nextFireAt: 9000 },
				2000,
			);
			expect(changed).toMatchObject({
				prompt: "bye",
				state: "paused",
				nextFireAt: 9000,
				updatedAt: 2000,
				cron: "*/5 * * * * *",
			});
			expect(await schedules.getSchedule("sch1")).toEqual(changed);
			expect(await schedules.updateSchedule("nope", { prompt: "x" }, 1)).toBeUndefined();
			await schedules.recordFires("sch1", [fire(9000)], { nextFireAt: 10_000, at: 9000 });
			expect(await schedules.deleteSchedule("sch1")).toBe(true);
			expect(await schedules.deleteSchedule("sch1")).toBe(false);
			expect(await schedules.getSchedule("sch1")).toBeUndefined();
			expect(await schedules.listFires("sch1")).toEqual([]);
		});

		it("lists in creation order, by owner, with a cursor", async () => {
			const { schedules } = open();
			for (let i = 0; i < 5; i++) {
				await schedules.createSchedule(schedule(`s${i}`, { createdAt: 100 + i, ownerId: i % 2 ? "b" : "a" }));
			}
			const first = await schedules.listSchedules({ limit: 2 });
			expect(first.schedules.map((s) => s.id)).toEqual(["s0", "s1"]);
			const second = await schedules.listSchedules({ limit: 2, cursor: first.nextCursor });
			expect(second.schedules.map((s) => s.id)).toEqual(["s2", "s3"]);
			const third = await schedules.listSchedules({ limit: 2, cursor: second.nextCursor });
			expect(third.schedules.map((s) => s.id)).toEqual(["s4"]);
			expect(third.nextCursor).toBeUndefined();
			expect((await schedules.listSchedules({ ownerId: "b" })).schedules.map((s) => s.id)).toEqual(["s1", "s3"]);
			await expect(schedules.listSchedules({ cursor: "garbage" })).rejects.toThrow(/cursor/);
		});

		it("finds the active schedules that are due, earliest first", async () => {
			const { schedules } = open();
			await schedules.createSchedule(schedule("late", { nextFireAt: 3000 }));
			await schedules.createSchedule(schedule("early", { nextFireAt: 2000 }));
			await schedules.createSchedule(schedule("future", { nextFireAt: 9000 }));
			await schedules.createSchedule(schedule("paused", { nextFireAt: 1000, state: "paused" }));
			await schedules.createSchedule(schedule("done", { nextFireAt: null, state: "done" }));
			expect((await schedules.dueSchedules(5000)).map((s) => s.id)).toEqual(["early", "late"]);
		});

		it("records a tick once, only while the next tick is the one read, and moves it on", async () => {
			const store = open();
			const { schedules } = store;
			await schedules.createSchedule(schedule("sch1"));
			const stored = await schedules.recordFires(
				"sch1",
				[fire(5000)],
				{ expectNextFireAt: 5000, nextFireAt: 10_000, at: 5001 },
				{
					webhooks: (stored) =>
						stored.map((f) => ({ ...delivery("msg_a"), payload: JSON.stringify({ fireId: f.id }) })),
				},
			);
			expect(stored).toEqual([expect.objectContaining({ scheduleId: "sch1", tickAt: 5000, outcome: "firing" })]);
			// Another scheduler that read the same next tick: stale, nothing written.
			expect(
				await schedules.recordFires("sch1", [fire(5000)], { expectNextFireAt: 5000, nextFireAt: 10_000, at: 5002 }),
			).toBe("stale");
			// The same tick again, without an expectation: left out; the rest of the write is made.
			expect(await schedules.recordFires("sch1", [fire(5000)], { nextFireAt: 15_000, at: 5002 })).toEqual([]);
			const after = await schedules.getSchedule("sch1");
			expect(after).toMatchObject({ nextFireAt: 15_000, lastFireAt: 5000, updatedAt: 5002 });
			expect((await schedules.listFires("sch1")).length).toBe(1);
			expect((await store.listWebhooks()).map((w) => [w.id, JSON.parse(w.payload).fireId])).toEqual([
				["msg_a", (stored as { id: number }[])[0]!.id],
			]);
			// Manual fires are not ticks: two at the same time are both kept.
			await schedules.recordFires("sch1", [fire(6000, { kind: "manual" })], { at: 6000 });
			await schedules.recordFires("sch1", [fire(6000, { kind: "manual" })], { at: 6000 });
			expect((await schedules.getSchedule("sch1"))?.nextFireAt).toBe(15_000);
			expect((await schedules.listFires("sch1")).map((f) => f.kind)).toEqual(["manual", "manual", "tick"]);
			expect(await schedules.recordFires("nope", [fire(1)], { nextFireAt: 2, at: 1 })).toBeUndefined();
		});

		it("a pause committed after the scheduler read the schedule wins: its pass is stale and writes nothing", async () => {
			const { schedules } = open();
			await schedules.createSchedule(schedule("sch1"));
			const read = (await schedules.dueSchedules(5000))[0]!;
			expect(read.state).toBe("active");
			await schedules.updateSchedule("sch1", { state: "paused" }, 5001);
			expect(
				await schedules.recordFires("sch1", [fire(5000)], {
					expectNextFireAt: read.nextFireAt,
					expectState: "active",
					nextFireAt: 10_000,
					at: 5002,
				}),
			).toBe("stale");
			expect(await schedules.getSchedule("sch1")).toMatchObject({ state: "paused", nextFireAt: 5000 });
			expect(await schedules.listFires("sch1")).toEqual([]);
		});

		it("records several missed ticks with a catch-up in one write, and a one-shot becomes done", async () => {
			const { schedules } = open();
			await schedules.createSchedule(schedule("sch1"));
			const stored = await schedules.recordFires(
				"sch1",
				[
					fire(5000, { outcome: "missed", settledAt: 20_000 }),
					fire(10_000, { outcome: "missed", settledAt: 20_000 }),
					fire(15_000, { kind: "catch_up" }),
				],
				{ expectNextFireAt: 5000, nextFireAt: null, state: "done", at: 20_000 },
			);
			expect(stored !== "stale" && stored?.map((f) => [f.tickAt, f.outcome, f.settledAt])).toEqual([
				[5000, "missed", 20_000],
				[10_000, "missed", 20_000],
				[15_000, "firing", null],
			]);
			expect(await schedules.getSchedule("sch1")).toMatchObject({
				state: "done",
				nextFireAt: null,
				lastFireAt: 15_000,
			});
			expect(await schedules.dueSchedules(Number.MAX_SAFE_INTEGER)).toEqual([]);
		});

		it("settles a firing fire once, with its deliveries; lists unsettled ones", async () => {
			const store = open();
			const { schedules } = store;
			await schedules.createSchedule(schedule("sch1"));
			const [f] = (await schedules.recordFires("sch1", [fire(5000)], { nextFireAt: 10_000, at: 5000 })) as {
				id: number;
			}[];
			expect((await schedules.listUnsettledFires(6000)).map((u) => u.id)).toEqual([f!.id]);
			expect(await schedules.listUnsettledFires(5000)).toEqual([]);
			const settled = await schedules.settleFire(f!.id, { outcome: "fired", sessionId: "s1", runId: "r1", at: 5100 }, [
				delivery("msg_b"),
			]);
			expect(settled).toMatchObject({ outcome: "fired", sessionId: "s1", runId: "r1", settledAt: 5100, reason: null });
			expect(await schedules.settleFire(f!.id, { outcome: "failed", reason: "x", at: 5200 })).toBeUndefined();
			expect(await schedules.listUnsettledFires(6000)).toEqual([]);
			expect((await schedules.listFires("sch1"))[0]).toEqual(settled);
			expect((await store.listWebhooks()).map((w) => w.id)).toEqual(["msg_b"]);
		});

		it("pages fires newest first", async () => {
			const { schedules } = open();
			await schedules.createSchedule(schedule("sch1"));
			for (let t = 1; t <= 5; t++) {
				await schedules.recordFires("sch1", [fire(t * 1000, { outcome: "fired" })], { nextFireAt: null, at: t });
			}
			const first = await schedules.listFires("sch1", { limit: 2 });
			expect(first.map((f) => f.tickAt)).toEqual([5000, 4000]);
			const next = await schedules.listFires("sch1", { limit: 10, beforeId: first.at(-1)!.id });
			expect(next.map((f) => f.tickAt)).toEqual([3000, 2000, 1000]);
		});

		it("gives the scheduler lease to one holder at a time, and fences the one that lost it", async () => {
			const { schedules } = open();
			await schedules.createSchedule(schedule("sch1"));
			const a = await schedules.takeSchedulerLease("a", 60_000);
			expect(a).toBeTypeOf("number");
			expect(await schedules.takeSchedulerLease("a", 60_000)).toBe(a);
			expect(await schedules.takeSchedulerLease("b", 60_000)).toBeUndefined();
			expect(await schedules.renewSchedulerLease({ holder: "a", token: a! }, 60_000)).toBe(true);
			expect(
				await schedules.recordFires(
					"sch1",
					[fire(5000)],
					{ nextFireAt: 10_000, at: 5000 },
					{ fence: { holder: "a", token: a! } },
				),
			).not.toBe("stale");
			await schedules.releaseSchedulerLease({ holder: "a", token: a! });
			const b = await schedules.takeSchedulerLease("b", 60_000);
			expect(b).toBeGreaterThan(a!);
			// a's writes under its old token are refused; so is its renewal.
			expect(
				await schedules.recordFires(
					"sch1",
					[fire(10_000)],
					{ nextFireAt: 15_000, at: 10_000 },
					{ fence: { holder: "a", token: a! } },
				),
			).toBe("stale");
			expect(await schedules.renewSchedulerLease({ holder: "a", token: a! }, 60_000)).toBe(false);
			expect((await schedules.getSchedule("sch1"))?.nextFireAt).toBe(10_000);
		});

		it("lets another holder take an expired lease", async () => {
			const { schedules } = open();
			const a = await schedules.takeSchedulerLease("a", 1);
			const deadline = Date.now() + 5_000;
			let b: number | undefined;
			while (b === undefined && Date.now() < deadline) {
				await new Promise((r) => setTimeout(r, 10));
				b = await schedules.takeSchedulerLease("b", 60_000);
			}
			expect(b).toBeGreaterThan(a!);
		});
	});
}
