/**
 * The admission part of the `SessionStore` contract (run by `contract.ts` for every
 * implementation): a run takes a free slot or waits (durably) behind its group; the next waiting
 * run is given round-robin between groups and FIFO within one, only when its tenant and owner
 * have a free slot and no start of its group is in flight; slots come back on release; a dead
 * holder's started runs give their slot back and its unstarted ones wait again at their place.
 * A request's place (no messages, held by the process its request waits in) takes its turn like
 * any run but stays its waiter's when another process claims it, and is dropped with a dead waiter.
 */
import { describe, expect, it } from "vitest";
import type { AdmissionLimits, NewAdmission, SessionStore } from "../../src/store/types.js";

const LIMITS: AdmissionLimits = { perTenant: 1, perKey: 0 };

function run(sessionId: string, tenant: string | null, ownerId = `owner-${tenant}`): NewAdmission {
	return { sessionId, ownerId, tenant, messages: [{ role: "user", content: sessionId, timestamp: 1 }], enqueuedAt: 1 };
}

export function admissionContract(open: () => SessionStore): void {
	describe("admission queue", () => {
		it("admits while a slot is free, queues past it with positions, refuses a second wait on one session", async () => {
			const q = open().admission!;
			const first = await q.admit(run("a1", "A"), LIMITS, "h1", 10);
			expect(first.kind).toBe("admitted");
			const second = await q.admit(run("a2", "A"), LIMITS, "h1", 11);
			const third = await q.admit(run("a3", "A"), LIMITS, "h1", 12);
			expect(second).toMatchObject({ kind: "queued", position: 1 });
			expect(third).toMatchObject({ kind: "queued", position: 2 });
			expect(await q.admit(run("a2", "A"), LIMITS, "h1", 13)).toEqual({ kind: "session_waiting", position: 1 });
			// Another tenant has its own slot.
			expect((await q.admit(run("b1", "B"), LIMITS, "h1", 14)).kind).toBe("admitted");
			const entries = await q.list();
			expect(entries.map((e) => [e.sessionId, e.state])).toEqual([
				["a1", "running"],
				["a2", "queued"],
				["a3", "queued"],
				["b1", "running"],
			]);
			expect(entries[1]!.messages).toEqual(run("a2", "A").messages);
		});

		it("gives freed slots FIFO within a tenant, round-robin between tenants, after the start is recorded", async () => {
			const q = open().admission!;
			const limits: AdmissionLimits = { perTenant: 0, perKey: 1 };
			// Two owners without a tenant are two groups; each owner one slot.
			const a = await q.admit(run("a1", null, "oa"), limits, "h1", 1);
			const b = await q.admit(run("b1", null, "ob"), limits, "h1", 1);
			await q.admit(run("a2", null, "oa"), limits, "h1", 2);
			await q.admit(run("a3", null, "oa"), limits, "h1", 2);
			await q.admit(run("b2", null, "ob"), limits, "h1", 2);
			expect(await q.claimNext(limits, "h1", 3)).toBeUndefined();
			if (a.kind !== "admitted" || b.kind !== "admitted") throw new Error("expected admitted");
			await q.release(a.entry.id);
			const next = await q.claimNext(limits, "h2", 4);
			expect(next).toMatchObject({ sessionId: "a2", state: "running", holder: "h2" });
			// a2 has not started: nothing else of its group may pass it, even with a slot.
			await q.release(b.entry.id);
			const other = await q.claimNext(limits, "h2", 5);
			expect(other?.sessionId).toBe("b2");
			expect(await q.claimNext(limits, "h2", 5)).toBeUndefined();
			await q.markStarted(next!.id, "run-a2");
			await q.release(next!.id);
			expect((await q.claimNext(limits, "h2", 6))?.sessionId).toBe("a3");
			expect(await q.position((await q.list()).find((e) => e.sessionId === "a3")!.id)).toBeUndefined();
		});

		it("recovers a dead holder's slots: a started run's slot comes back, an unstarted one waits again first", async () => {
			const q = open().admission!;
			const started = await q.admit(run("a1", "A"), LIMITS, "dead", 10);
			await q.admit(run("b1", "B"), LIMITS, "dead", 10);
			await q.admit(run("a2", "A"), LIMITS, "alive", 11);
			await q.admit(run("b2", "B"), LIMITS, "alive", 11);
			if (started.kind !== "admitted") throw new Error("expected admitted");
			await q.markStarted(started.entry.id, "run-a1");
			await q.heartbeat("alive", 100);
			expect(await q.recover("alive", 50)).toBe(2);
			const entries = await q.list();
			expect(entries.map((e) => [e.sessionId, e.state])).toEqual([
				["b1", "queued"],
				["a2", "queued"],
				["b2", "queued"],
			]);
			// b1 goes before b2 (its place kept); A's slot is free again.
			const first = await q.claimNext(LIMITS, "alive", 101);
			const second = await q.claimNext(LIMITS, "alive", 101);
			expect([first?.sessionId, second?.sessionId].sort()).toEqual(["a2", "b1"]);
			await q.requeue(first!.id);
			expect((await q.list()).find((e) => e.id === first!.id)?.state).toBe("queued");
		});

		it("keeps a request's place its waiter's through a claim, and drops it when the waiter dies", async () => {
			const q = open().admission!;
			const place = (sessionId: string, waiter: string): NewAdmission => ({
				sessionId,
				ownerId: "owner-A",
				tenant: "A",
				messages: [],
				enqueuedAt: 1,
				waiter,
			});
			const holding = await q.admit(run("a1", "A"), LIMITS, "h1", 10);
			const waiting = await q.admit(place("a2", "w1"), LIMITS, "h1", 11);
			const orphan = await q.admit(place("a3", "dead"), LIMITS, "h1", 12);
			if (holding.kind !== "admitted" || waiting.kind !== "queued" || orphan.kind !== "queued")
				throw new Error("expected one admitted, two queued");
			expect(waiting.position).toBe(1);
			expect(await q.entry(waiting.entry.id)).toMatchObject({ state: "queued", holder: "w1", messages: [] });
			// Another process frees the slot and claims the next: the place stays its waiter's.
			await q.release(holding.entry.id);
			const claimed = await q.claimNext(LIMITS, "h2", 20);
			expect(claimed).toMatchObject({ id: waiting.entry.id, state: "running", holder: "w1" });
			expect(await q.position(orphan.entry.id)).toBe(1);
			// The waiter is alive (its heartbeat covers the claimed place); the other's died.
			await q.heartbeat("w1", 100);
			expect(await q.recover("h2", 50)).toBe(1);
			expect(await q.entry(orphan.entry.id)).toBeUndefined();
			expect(await q.entry(waiting.entry.id)).toMatchObject({ state: "running", holder: "w1" });
			// A dead waiter's claimed place is dropped too, never queued again for another process to start.
			expect(await q.recover("h2", 200)).toBe(1);
			expect(await q.list()).toEqual([]);
		});
	});
}
