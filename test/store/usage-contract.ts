/**
 * The usage-accounting part of the `SessionStore` contract (run by `contract.ts` for every
 * implementation): rows written with the messages, by owner, tenant, UTC day and model, equal to
 * the sum of the stored messages' usage; a tenant's rows read together, and no other tenant's.
 */
import { describe, expect, it } from "vitest";
import type { AgentMessage } from "../../src/agent/types.js";
import type { AssistantMessage } from "../../src/ai/types.js";
import type { NewSession, SessionStore, UsageTotals } from "../../src/store/types.js";

const DAY1 = Date.parse("2026-03-01T23:59:00Z");
const DAY2 = Date.parse("2026-03-02T00:01:00Z");

function session(id: string, ownerId: string | null, tenant: string | null = null): NewSession {
	return {
		id,
		ownerId,
		tenant,
		model: "faux/echo",
		systemPrompt: "",
		thinkingLevel: "off",
		tools: [],
		toolExecution: "parallel",
		steeringMode: "one-at-a-time",
		followUpMode: "one-at-a-time",
		metadata: {},
		createdAt: 1,
	};
}

function use(input: number, output: number, cost: number): UsageTotals {
	return {
		input,
		output,
		cacheRead: 1,
		cacheWrite: 0,
		totalTokens: input + output + 1,
		cost: { input: cost, output: 0, cacheRead: 0, cacheWrite: 0, total: cost },
	};
}

function reply(model: string, timestamp: number, u: UsageTotals): AssistantMessage {
	return {
		role: "assistant",
		content: [{ type: "text", text: "ok" }],
		api: "faux",
		provider: "faux",
		model,
		usage: u,
		stopReason: "stop",
		timestamp,
	};
}

const all = { fromDay: "2000-01-01", toDay: "2100-01-01" };

export function usageContract(open: () => SessionStore): void {
	describe("usage accounting", () => {
		it("adds each stored assistant message's usage to its owner, UTC day and model; one turn each", async () => {
			const store = open();
			await store.createSession(session("s1", "k1"), [reply("echo", DAY1, use(1000, 1000, 9))]);
			await store.createSession(session("s2", "k1"));
			await store.createSession(session("s3", "k2"));
			await store.startRun("s1", "r1", DAY1, [{ role: "user", content: "hi", timestamp: DAY1 }]);
			store.appendMessages("s1", [reply("echo", DAY1, use(10, 5, 0.25)), reply("echo", DAY2, use(20, 2, 0.5))]);
			store.appendMessages("s2", [reply("echo", DAY1, use(7, 3, 0.125)), reply("big", DAY1, use(100, 0, 1))]);
			store.appendMessages("s3", [reply("echo", DAY1, use(1, 1, 1))]);
			// A call refused before it was made (a budget's error message, no tokens) is no turn.
			const refused = { ...reply("echo", DAY1, use(0, 0, 0)), stopReason: "error" as const, errorMessage: "limit" };
			refused.usage.cacheRead = 0;
			refused.usage.totalTokens = 0;
			store.appendMessages("s1", [refused]);
			const compaction = {
				role: "compaction",
				summary: "s",
				firstKeptIndex: 0,
				reason: "manual",
				tokensBefore: 1,
				tokensAfter: 1,
				model: "faux/echo",
				usage: use(50, 10, 0.0625),
				timestamp: DAY2,
			} as unknown as AgentMessage;
			store.appendMessages("s2", [compaction]);
			const rows = await store.readUsage({ ownerId: "k1", ...all });
			expect(rows).toEqual([
				{
					ownerId: "k1",
					tenant: null,
					day: "2026-03-01",
					provider: "faux",
					model: "big",
					input: 100,
					output: 0,
					cacheRead: 1,
					cacheWrite: 0,
					totalTokens: 101,
					costUsd: 1,
					turns: 1,
				},
				{
					ownerId: "k1",
					tenant: null,
					day: "2026-03-01",
					provider: "faux",
					model: "echo",
					input: 17,
					output: 8,
					cacheRead: 2,
					cacheWrite: 0,
					totalTokens: 27,
					costUsd: 0.375,
					turns: 2,
				},
				{
					ownerId: "k1",
					tenant: null,
					day: "2026-03-02",
					provider: "faux",
					model: "echo",
					input: 70,
					output: 12,
					cacheRead: 2,
					cacheWrite: 0,
					totalTokens: 84,
					costUsd: 0.5625,
					turns: 1,
				},
			]);
			expect((await store.readUsage({ ownerId: "k2", ...all })).map((r) => r.totalTokens)).toEqual([3]);
			expect(await store.readUsage({ ownerId: "k1", fromDay: "2026-03-02", toDay: "2026-03-02" })).toHaveLength(1);
			expect(await store.readUsage({ ownerId: "nobody", ...all })).toEqual([]);
		});

		it("adds calls of no session (recordUsage) to the owner's rows, beside the sessions' calls", async () => {
			const store = open();
			await store.createSession(session("s1", "k1"));
			store.appendMessages("s1", [reply("echo", DAY1, use(10, 5, 0.25))]);
			const call = (day: string, u: UsageTotals) => ({ day, provider: "faux", model: "echo", usage: u, turns: 1 });
			await store.recordUsage("k1", [call("2026-03-01", use(1, 2, 0.5)), call("2026-03-01", use(3, 4, 0.5))]);
			await store.recordUsage(null, [call("2026-03-02", use(5, 5, 1))]);
			await store.recordUsage("k1", []);
			const rows = await store.readUsage({ ownerId: "k1", ...all });
			expect(rows.map((r) => [r.day, r.model, r.input, r.output, r.totalTokens, r.costUsd, r.turns])).toEqual([
				["2026-03-01", "echo", 14, 11, 28, 1.25, 3],
			]);
			expect((await store.readUsage({ ownerId: null, ...all })).map((r) => [r.day, r.totalTokens, r.turns])).toEqual([
				["2026-03-02", 11, 1],
			]);
		});

		it("keeps the session's tenant on its rows; a tenant's read has every owner of it and no other tenant", async () => {
			const store = open();
			await store.createSession(session("a1", "alice", "org-a"));
			await store.createSession(session("b1", "bob", "org-a"));
			await store.createSession(session("c1", "carol", "org-b"));
			await store.createSession(session("n1", "nobody"));
			store.appendMessages("a1", [reply("echo", DAY1, use(1, 1, 0.5))]);
			await store.drainQueued("b1", [], [reply("echo", DAY1, use(2, 2, 0.25)), reply("big", DAY2, use(4, 4, 1))]);
			store.appendMessages("c1", [reply("echo", DAY1, use(100, 100, 8))]);
			store.appendMessages("n1", [reply("echo", DAY1, use(50, 50, 4))]);
			const call = { day: "2026-03-02", provider: "faux", model: "echo", usage: use(8, 8, 2), turns: 1 };
			await store.recordUsage("alice", [call], "org-a");

			const orgA = await store.readUsage({ ownerId: null, tenant: "org-a", ...all });
			expect(orgA.map((r) => [r.day, r.model, r.ownerId, r.tenant, r.totalTokens, r.turns])).toEqual([
				["2026-03-01", "echo", "alice", "org-a", 3, 1],
				["2026-03-01", "echo", "bob", "org-a", 5, 1],
				["2026-03-02", "big", "bob", "org-a", 9, 1],
				["2026-03-02", "echo", "alice", "org-a", 17, 1],
			]);
			expect(
				(await store.readUsage({ ownerId: null, tenant: "org-b", ...all })).map((r) => [r.ownerId, r.totalTokens]),
			).toEqual([["carol", 201]]);
			expect(await store.readUsage({ ownerId: "alice", tenant: "org-c", ...all })).toEqual([]);
			expect((await store.readUsage({ ownerId: "alice", ...all })).map((r) => [r.day, r.tenant])).toEqual([
				["2026-03-01", "org-a"],
				["2026-03-02", "org-a"],
			]);
			expect((await store.readUsage({ ownerId: "nobody", ...all })).map((r) => r.tenant)).toEqual([null]);
			// The store's sums: what a budget reads.
			expect(await store.sumUsage({ ownerId: null, tenant: "org-a", ...all })).toEqual({
				totalTokens: 34,
				costUsd: 3.75,
			});
			expect(
				await store.sumUsage({ ownerId: null, tenant: "org-a", fromDay: "2026-03-02", toDay: "2026-03-02" }),
			).toEqual({ totalTokens: 26, costUsd: 3 });
			expect(await store.sumUsage({ ownerId: "carol", ...all })).toEqual({ totalTokens: 201, costUsd: 8 });
			expect(await store.sumUsage({ ownerId: null, tenant: "org-c", ...all })).toEqual({ totalTokens: 0, costUsd: 0 });
			await expect(store.sumUsage({ ownerId: null, tenant: "", ...all })).rejects.toThrow(/tenant must be/);
			await expect(store.readUsage({ ownerId: null, tenant: "", ...all })).rejects.toThrow(/tenant must be/);
		});

		it("accounts the owner null (auth off), keeps usage when the session is deleted, and checks the days", async () => {
			const store = open();
			await store.createSession(session("s1", null));
			await store.drainQueued("s1", [], [reply("echo", DAY1, use(3, 4, 0.5))]);
			await store.deleteSession("s1");
			const rows = await store.readUsage({ ownerId: null, ...all });
			expect(rows.map((r) => [r.ownerId, r.totalTokens, r.turns])).toEqual([[null, 8, 1]]);
			await expect(store.readUsage({ ownerId: null, fromDay: "2026-13-01", toDay: "2026-12-31" })).rejects.toThrow(
				/fromDay must be a day/,
			);
			await expect(store.readUsage({ ownerId: null, fromDay: "2026-03-02", toDay: "2026-03-01" })).rejects.toThrow(
				/must not be after/,
			);
		});
	});
}
