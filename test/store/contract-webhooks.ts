/**
 * The `WebhookOutbox` part of the store contract: putting deliveries (alone and with the facts
 * they report), claiming due ones, settling attempts, listing and pruning. `memory.test.ts` and
 * `sqlite.test.ts` run it against their factory beside `runStoreContract`.
 */
import { afterEach, describe, expect, it } from "vitest";
import type { NewWebhookDelivery, SessionStore } from "../../src/store/types.js";
import { newSession, type StoreFactory, usage } from "./contract.js";

function delivery(id: string, createdAt: number, eventType = "run.completed"): NewWebhookDelivery {
	return { id, endpoint: "http://hooks.test/a", eventType, payload: `{"type":"${eventType}","n":"${id}"}`, createdAt };
}

export function runWebhookOutboxContract(name: string, factory: StoreFactory): void {
	describe(`SessionStore contract (webhook outbox): ${name}`, () => {
		const opened: SessionStore[] = [];
		const open = () => {
			const store = factory();
			opened.push(store);
			return store;
		};
		afterEach(async () => {
			for (const s of opened.splice(0)) await s.close();
		});

		it("puts deliveries pending and due at once, and lists them in creation order", async () => {
			const store = open();
			await store.enqueueWebhooks([delivery("msg_b", 20), delivery("msg_a", 10)]);
			const listed = await store.listWebhooks();
			expect(listed.map((d) => d.id)).toEqual(["msg_a", "msg_b"]);
			expect(listed[0]).toEqual({
				...delivery("msg_a", 10),
				status: "pending",
				attempts: 0,
				nextAttemptAt: 10,
				lastError: null,
				finishedAt: null,
			});
			await expect(store.enqueueWebhooks([delivery("msg_a", 30)])).rejects.toThrow();
			expect(await store.listWebhooks()).toHaveLength(2);
		});

		it("claims due deliveries once until the claim runs out, oldest due first", async () => {
			const store = open();
			await store.enqueueWebhooks([delivery("msg_1", 10), delivery("msg_2", 20), delivery("msg_3", 500)]);
			const first = await store.claimWebhooks(100, 10, 1100);
			expect(first.map((d) => d.id)).toEqual(["msg_1", "msg_2"]);
			expect(first[0]?.nextAttemptAt).toBe(1100);
			expect(await store.claimWebhooks(600, 10, 1600)).toEqual([expect.objectContaining({ id: "msg_3" })]);
			expect(await store.claimWebhooks(1000, 10, 2000)).toEqual([]);
			// Never settled (the process died mid-attempt): due again when the claim runs out.
			expect((await store.claimWebhooks(1100, 1, 2100)).map((d) => d.id)).toEqual(["msg_1"]);
		});

		it("settles attempts: rescheduled, delivered, given up; a finished delivery stays finished", async () => {
			const store = open();
			await store.enqueueWebhooks([delivery("msg_1", 10), delivery("msg_2", 10)]);
			await store.claimWebhooks(10, 10, 1000);
			expect(
				await store.settleWebhook("msg_1", { status: "pending", attempts: 1, nextAttemptAt: 50, error: "HTTP 503" }),
			).toBe(true);
			expect(await store.settleWebhook("msg_2", { status: "failed", attempts: 1, at: 20, error: "HTTP 410" })).toBe(
				true,
			);
			expect(await store.claimWebhooks(49, 10, 1000)).toEqual([]);
			const again = await store.claimWebhooks(50, 10, 1050);
			expect(again).toEqual([expect.objectContaining({ id: "msg_1", attempts: 1, lastError: "HTTP 503" })]);
			expect(await store.settleWebhook("msg_1", { status: "delivered", attempts: 2, at: 60 })).toBe(true);
			expect(await store.settleWebhook("msg_1", { status: "failed", attempts: 3, at: 70, error: "late" })).toBe(false);
			expect(await store.settleWebhook("msg_unknown", { status: "delivered", attempts: 1, at: 70 })).toBe(false);
			expect(await store.listWebhooks({ status: "delivered" })).toEqual([
				expect.objectContaining({ id: "msg_1", attempts: 2, finishedAt: 60, lastError: "HTTP 503" }),
			]);
			expect(await store.listWebhooks({ status: "failed" })).toEqual([
				expect.objectContaining({ id: "msg_2", attempts: 1, finishedAt: 20, lastError: "HTTP 410" }),
			]);
			expect(await store.claimWebhooks(10_000, 10, 20_000)).toEqual([]);
		});

		it("prunes finished deliveries before a cutoff, never pending ones", async () => {
			const store = open();
			await store.enqueueWebhooks([delivery("msg_1", 1), delivery("msg_2", 1), delivery("msg_3", 1)]);
			await store.settleWebhook("msg_1", { status: "delivered", attempts: 1, at: 10 });
			await store.settleWebhook("msg_2", { status: "failed", attempts: 5, at: 30, error: "timeout" });
			expect(await store.pruneWebhooks(20)).toBe(1);
			expect(await store.pruneWebhooks(1000)).toBe(1);
			expect((await store.listWebhooks()).map((d) => d.id)).toEqual(["msg_3"]);
		});

		it("puts a run end's deliveries with the run end, and none for an unknown run", async () => {
			const store = open();
			await store.createSession(newSession("s1"));
			await store.startRun("s1", "r1", 100);
			const end = { status: "completed" as const, endedAt: 200, usage: usage(1, 1, 0) };
			expect(store.endRun("s1", "r-missing", end, [delivery("msg_x", 200)])).toBe(false);
			expect(store.endRun("s1", "r1", end, [delivery("msg_1", 200)])).toBe(true);
			await store.sync();
			expect((await store.listWebhooks()).map((d) => d.id)).toEqual(["msg_1"]);
		});

		it("puts a pending interaction's deliveries with it, told the session's current run", async () => {
			const store = open();
			await store.createSession(newSession("s1"));
			await store.startRun("s1", "r1", 100);
			const seen: (string | null)[] = [];
			const put = (toolCallId: string, sessionId = "s1") =>
				store.putPending({ sessionId, toolCallId, kind: "approval", payload: "{}", createdAt: 110 }, (runId) => {
					seen.push(runId);
					return [delivery(`msg_${toolCallId}`, 110, "approval.requested")];
				});
			expect(await put("c1")).toBe(true);
			expect(await put("c2", "missing")).toBe(false);
			expect(seen).toEqual(["r1"]);
			expect(await store.listWebhooks()).toEqual([
				expect.objectContaining({ id: "msg_c1", eventType: "approval.requested" }),
			]);
		});

		it("puts recovery's deliveries with the interruption of each running session", async () => {
			const store = open();
			await store.createSession(newSession("s1"));
			await store.createSession(newSession("idle"));
			await store.startRun("s1", "r1", 100);
			await store.sync();
			const changed = await store.recoverInterrupted(500, (sessionId, runId) => [
				delivery(`msg_${sessionId}_${runId}`, 500, "run.interrupted"),
			]);
			expect(changed).toEqual(["s1"]);
			expect((await store.listWebhooks()).map((d) => d.id)).toEqual(["msg_s1_r1"]);
		});
	});
}
