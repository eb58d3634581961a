/**
 * The filtered session list, part of the `SessionStore` contract (run by `contract.ts` for every
 * implementation): status, metadata pairs and update times filter, combined with the owner (and
 * its tenant's shared sessions) and the cursor, in list order; a bad filter is refused.
 */
import { describe, expect, it } from "vitest";
import type { NewSession, SessionStore } from "../../src/store/types.js";

function session(id: string, createdAt: number, metadata: Record<string, string>, ownerId = "a"): NewSession {
	return {
		id,
		ownerId,
		model: "faux/echo",
		systemPrompt: "",
		thinkingLevel: "off",
		tools: [],
		toolExecution: "parallel",
		steeringMode: "one-at-a-time",
		followUpMode: "one-at-a-time",
		metadata,
		createdAt,
	};
}

export function sessionFilterContract(open: () => SessionStore): void {
	describe("filtered session list", () => {
		it("filters by status, metadata and update time, with the owner and the cursor", async () => {
			const store = open();
			for (let i = 0; i < 10; i++) {
				await store.createSession(session(`s${i}`, 100 + i, { team: i % 2 ? "red" : "blue", n: String(i) }));
			}
			await store.createSession(session("other", 50, { team: "red" }, "b"));
			await store.startRun("s3", "r3", 200);
			await store.startRun("s5", "r5", 200);
			await store.updateSession("s7", { systemPrompt: "changed" }, 5000);
			await store.sync();

			// `all`: every owner's sessions.
			const ids = async (filter: object, owner: "a" | "all" = "a") =>
				(await store.listSessions({ ...(owner === "a" ? { ownerId: "a" } : {}), filter })).sessions.map((s) => s.id);
			expect(await ids({ status: "running" })).toEqual(["s3", "s5"]);
			expect(await ids({ metadata: { team: "red" } })).toEqual(["s1", "s3", "s5", "s7", "s9"]);
			expect(await ids({ metadata: { team: "red" } }, "all")).toEqual(["other", "s1", "s3", "s5", "s7", "s9"]);
			expect(await ids({ metadata: { team: "red", n: "5" } })).toEqual(["s5"]);
			expect(await ids({ metadata: { team: "red" }, status: "idle" })).toEqual(["s1", "s7", "s9"]);
			expect(await ids({ updatedAfter: 1000 })).toEqual(["s7"]);
			expect(await ids({ updatedBefore: 1000, metadata: { team: "red" } })).toEqual(["s1", "s3", "s5", "s9"]);
			expect(await ids({ metadata: { missing: "x" } })).toEqual([]);

			// Pages of a filtered list follow one another by the cursor.
			const first = await store.listSessions({ ownerId: "a", filter: { metadata: { team: "blue" } }, limit: 2 });
			expect(first.sessions.map((s) => s.id)).toEqual(["s0", "s2"]);
			const second = await store.listSessions({
				ownerId: "a",
				filter: { metadata: { team: "blue" } },
				limit: 2,
				cursor: first.nextCursor,
			});
			expect(second.sessions.map((s) => s.id)).toEqual(["s4", "s6"]);
			const last = await store.listSessions({
				ownerId: "a",
				filter: { metadata: { team: "blue" } },
				limit: 2,
				cursor: second.nextCursor,
			});
			expect(last.sessions.map((s) => s.id)).toEqual(["s8"]);
			expect(last.nextCursor).toBeUndefined();
		});

		it("filters what a caller may see: its own sessions and its tenant's shared ones", async () => {
			const store = open();
			const shared = (s: NewSession, tenant: string | null, visibility: "owner" | "tenant"): NewSession => ({
				...s,
				tenant,
				visibility,
			});
			await store.createSession(shared(session("own", 100, { team: "red" }, "alice"), "org-a", "owner"));
			await store.createSession(shared(session("mate-shared", 101, { team: "red" }, "bob"), "org-a", "tenant"));
			await store.createSession(shared(session("mate-private", 102, { team: "red" }, "bob"), "org-a", "owner"));
			await store.createSession(shared(session("other-shared", 103, { team: "red" }, "carol"), "org-b", "tenant"));
			await store.createSession(shared(session("no-tenant", 104, { team: "red" }, "dan"), null, "tenant"));
			await store.createSession(shared(session("mate-blue", 105, { team: "blue" }, "bob"), "org-a", "tenant"));
			await store.startRun("mate-shared", "r1", 200);
			await store.sync();

			const ids = async (filter: object, tenant: string | null = "org-a") =>
				(await store.listSessions({ ownerId: "alice", tenant, filter })).sessions.map((s) => s.id);
			// A metadata pair (SQLite starts from the pairs' index) and conditions on the sessions only.
			expect(await ids({ metadata: { team: "red" } })).toEqual(["own", "mate-shared"]);
			expect(await ids({ status: "idle" })).toEqual(["own", "mate-blue"]);
			expect(await ids({ metadata: { team: "red" }, status: "running" })).toEqual(["mate-shared"]);
			// Without a tenant: its own only.
			expect(await ids({ metadata: { team: "red" } }, null)).toEqual(["own"]);
			const page = await store.listSessions({
				ownerId: "alice",
				tenant: "org-a",
				filter: { status: "idle" },
				limit: 1,
			});
			expect(page.sessions.map((s) => s.id)).toEqual(["own"]);
			const next = await store.listSessions({
				ownerId: "alice",
				tenant: "org-a",
				filter: { status: "idle" },
				limit: 1,
				cursor: page.nextCursor,
			});
			expect(next.sessions.map((s) => s.id)).toEqual(["mate-blue"]);
		});

		it("merges the caller's own and its tenant's shared sessions in list order, each once, page by page", async () => {
			const store = open();
			const make = (id: string, createdAt: number, owner: string, visibility: "owner" | "tenant") =>
				store.createSession({ ...session(id, createdAt, { team: "red" }, owner), tenant: "org-a", visibility });
			// Interleaved: alice's own (one of them shared, so in both halves), bob's shared and private.
			await make("a1", 100, "alice", "owner");
			await make("b1", 101, "bob", "tenant");
			await make("a2", 102, "alice", "tenant");
			await make("b2", 103, "bob", "owner");
			await make("b3", 104, "bob", "tenant");
			await make("a3", 105, "alice", "owner");
			await store.sync();
			const all = ["a1", "b1", "a2", "b3", "a3"];
			for (const filter of [{ metadata: { team: "red" } }, { status: "idle" as const }, undefined]) {
				const seen: string[] = [];
				let cursor: string | undefined;
				do {
					const page = await store.listSessions({
						ownerId: "alice",
						tenant: "org-a",
						limit: 2,
						...(filter ? { filter } : {}),
						...(cursor ? { cursor } : {}),
					});
					seen.push(...page.sessions.map((s) => s.id));
					cursor = page.nextCursor;
				} while (cursor);
				expect(seen, JSON.stringify(filter)).toEqual(all);
			}
			// A shared session's new metadata is found by the tenant too (the pairs move with the config).
			await store.updateSession("b3", { metadata: { team: "blue" } }, 5000);
			const blue = await store.listSessions({
				ownerId: "alice",
				tenant: "org-a",
				filter: { metadata: { team: "blue" } },
			});
			expect(blue.sessions.map((s) => s.id)).toEqual(["b3"]);
			// As bob: his own (shared or not) and alice's shared one.
			const asBob = await store.listSessions({
				ownerId: "bob",
				tenant: "org-a",
				filter: { metadata: { team: "red" } },
			});
			expect(asBob.sessions.map((s) => s.id)).toEqual(["b1", "a2", "b2"]);
		});

		it("refuses more than 8 metadata pairs and keys with quotes", async () => {
			const store = open();
			const many = Object.fromEntries(Array.from({ length: 9 }, (_, i) => [`k${i}`, "v"]));
			await expect(store.listSessions({ filter: { metadata: many } })).rejects.toThrow(/at most 8/);
			await expect(store.listSessions({ filter: { metadata: { 'a"b': "v" } } })).rejects.toThrow(/key/);
		});
	});
}
