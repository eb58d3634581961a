/**
 * The facade-records part of the `SessionStore` contract (run by `contract.ts` for every
 * implementation): records kept per session, kind and key, found by key across one owner's
 * sessions only, replaced when put again, capped per kind, and deleted with their session.
 */
import { describe, expect, it } from "vitest";
import { MAX_FACADE_RECORDS_PER_KIND } from "../../src/store/shared.js";
import type { NewSession, SessionStore } from "../../src/store/types.js";

function session(id: string, ownerId: string | null): NewSession {
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
		metadata: {},
		createdAt: 1,
	};
}

export function facadeRecordsContract(open: () => SessionStore): void {
	describe("facade records", () => {
		it("stores records per session, kind and key, and replaces one when put again", async () => {
			const store = open();
			await store.createSession(session("s1", "a"));
			expect(
				await store.putFacadeRecords(
					"s1",
					[
						{ kind: "openai.response", key: "resp_1", data: '{"status":"in_progress"}' },
						{ kind: "openai.tool_call", key: "call_1", data: "" },
					],
					10,
				),
			).toBe(true);
			expect(await store.getFacadeRecord("s1", "openai.response", "resp_1")).toEqual({
				sessionId: "s1",
				kind: "openai.response",
				key: "resp_1",
				data: '{"status":"in_progress"}',
				createdAt: 10,
			});
			// Kinds are separate namespaces.
			expect(await store.getFacadeRecord("s1", "openai.tool_call", "resp_1")).toBeUndefined();
			await store.putFacadeRecords(
				"s1",
				[{ kind: "openai.response", key: "resp_1", data: '{"status":"completed"}' }],
				20,
			);
			expect(await store.getFacadeRecord("s1", "openai.response", "resp_1")).toMatchObject({
				data: '{"status":"completed"}',
				createdAt: 20,
			});
			expect(await store.getFacadeRecord("nope", "openai.response", "resp_1")).toBeUndefined();
		});

		it("writes nothing for an unknown session", async () => {
			const store = open();
			expect(await store.putFacadeRecords("nope", [{ kind: "k", key: "x", data: "" }], 1)).toBe(false);
			expect(await store.findFacadeRecords("k", "x", null)).toEqual([]);
		});

		it("finds a key across one owner's sessions only, most recently put first", async () => {
			const store = open();
			await store.createSession(session("a1", "owner-a"));
			await store.createSession(session("a2", "owner-a"));
			await store.createSession(session("b1", "owner-b"));
			await store.createSession(session("n1", null));
			await store.putFacadeRecords("a1", [{ kind: "call", key: "call_0", data: "first" }], 5);
			await store.putFacadeRecords("b1", [{ kind: "call", key: "call_0", data: "other owner" }], 6);
			await store.putFacadeRecords("a2", [{ kind: "call", key: "call_0", data: "second" }], 5);
			await store.putFacadeRecords("n1", [{ kind: "call", key: "call_0", data: "no owner" }], 7);
			const found = await store.findFacadeRecords("call", "call_0", "owner-a");
			expect(found.map((r) => [r.sessionId, r.data])).toEqual([
				["a2", "second"],
				["a1", "first"],
			]);
			expect((await store.findFacadeRecords("call", "call_0", "owner-b")).map((r) => r.sessionId)).toEqual(["b1"]);
			expect((await store.findFacadeRecords("call", "call_0", null)).map((r) => r.sessionId)).toEqual(["n1"]);
			expect(await store.findFacadeRecords("call", "call_0", "owner-c")).toEqual([]);
			expect(await store.findFacadeRecords("other", "call_0", "owner-a")).toEqual([]);
			expect(await store.findFacadeRecords("call", "call_0", "owner-a", 1)).toHaveLength(1);
			// Putting again makes a record the most recent.
			await store.putFacadeRecords("a1", [{ kind: "call", key: "call_0", data: "again" }], 8);
			expect((await store.findFacadeRecords("call", "call_0", "owner-a")).map((r) => r.sessionId)).toEqual([
				"a1",
				"a2",
			]);
			await expect(store.findFacadeRecords("call", "call_0", "owner-a", 0)).rejects.toThrow(/limit/);
		});

		it("keeps the newest records of a kind per session", async () => {
			const store = open();
			await store.createSession(session("s1", "a"));
			const records = Array.from({ length: MAX_FACADE_RECORDS_PER_KIND + 2 }, (_, i) => ({
				kind: "call",
				key: `c${i}`,
				data: "",
			}));
			await store.putFacadeRecords("s1", records, 1);
			await store.putFacadeRecords("s1", [{ kind: "response", key: "r0", data: "" }], 2);
			expect(await store.getFacadeRecord("s1", "call", "c0")).toBeUndefined();
			expect(await store.getFacadeRecord("s1", "call", "c1")).toBeUndefined();
			expect(await store.getFacadeRecord("s1", "call", "c2")).toBeDefined();
			expect(await store.getFacadeRecord("s1", "call", `c${MAX_FACADE_RECORDS_PER_KIND + 1}`)).toBeDefined();
			// Another kind has its own cap.
			expect(await store.getFacadeRecord("s1", "response", "r0")).toBeDefined();
		});

		it("deletes a session's records with it", async () => {
			const store = open();
			await store.createSession(session("s1", "a"));
			await store.createSession(session("s2", "a"));
			await store.putFacadeRecords("s1", [{ kind: "call", key: "c", data: "" }], 1);
			await store.putFacadeRecords("s2", [{ kind: "call", key: "c", data: "" }], 1);
			await store.deleteSession("s1");
			expect(await store.getFacadeRecord("s1", "call", "c")).toBeUndefined();
			expect((await store.findFacadeRecords("call", "c", "a")).map((r) => r.sessionId)).toEqual(["s2"]);
			await store.createSession(session("s1", "a"));
			expect(await store.getFacadeRecord("s1", "call", "c")).toBeUndefined();
			await store.deleteSessions(["s2"]);
			expect(await store.findFacadeRecords("call", "c", "a")).toEqual([]);
		});
	});
}
