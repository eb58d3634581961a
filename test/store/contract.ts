/**
 * The `SessionStore` contract suite: one set of behaviours every implementation must show.
 * `memory.test.ts` and `sqlite.test.ts` run it against their factory.
 */
import { afterEach, describe, expect, it } from "vitest";
import type { AgentMessage } from "../../src/agent/types.js";
import type { AssistantMessage, UserMessage } from "../../src/ai/types.js";
import type { NewSession, SessionStore, StoreOptions, UsageTotals } from "../../src/store/types.js";
import { admissionContract } from "./admission-contract.js";
import { facadeRecordsContract } from "./facade-records-contract.js";
import { schedulesContract } from "./schedules-contract.js";
import { sessionFilterContract } from "./session-filter-contract.js";
import { usageContract } from "./usage-contract.js";

export type StoreFactory = (options?: StoreOptions) => SessionStore;

export function newSession(id: string, over: Partial<NewSession> = {}): NewSession {
	return {
		id,
		ownerId: "owner-a",
		model: "faux/echo",
		systemPrompt: "be brief",
		thinkingLevel: "off",
		tools: ["calculate", "get_current_time"],
		toolExecution: "parallel",
		steeringMode: "one-at-a-time",
		followUpMode: "one-at-a-time",
		metadata: { team: "x" },
		createdAt: 1000,
		...over,
	};
}

/** A client-side tool declaration as a client sends it (nested schema: stored and returned whole). */
export const pickColor = {
	name: "pick_color",
	description: "Ask the user to pick a color",
	parameters: {
		type: "object",
		properties: { question: { type: "string" }, palette: { type: "array", items: { type: "string" } } },
		required: ["question"],
	},
	approval: "never" as const,
};

export function user(text: string, timestamp = 1): UserMessage {
	return { role: "user", content: text, timestamp };
}

export function usage(input: number, output: number, costTotal: number): UsageTotals {
	return {
		input,
		output,
		cacheRead: 0,
		cacheWrite: 0,
		totalTokens: input + output,
		cost: { input: costTotal / 2, output: costTotal / 2, cacheRead: 0, cacheWrite: 0, total: costTotal },
	};
}

export function assistant(text: string, u = usage(10, 5, 0.5)): AssistantMessage {
	return {
		role: "assistant",
		content: [{ type: "text", text }],
		api: "faux",
		provider: "faux",
		model: "echo",
		usage: u,
		stopReason: "stop",
		timestamp: 2,
	};
}

export function runStoreContract(name: string, factory: StoreFactory): void {
	describe(`SessionStore contract: ${name}`, () => {
		const opened: SessionStore[] = [];
		const open = (options?: StoreOptions) => {
			const store = factory(options);
			opened.push(store);
			return store;
		};
		afterEach(async () => {
			for (const s of opened.splice(0)) await s.close();
		});

		describe("sessions", () => {
			it("creates a session with its config, idle status, zero usage and no events", async () => {
				const store = open();
				const rec = await store.createSession(newSession("s1"));
				expect(rec).toMatchObject({
					id: "s1",
					ownerId: "owner-a",
					model: "faux/echo",
					systemPrompt: "be brief",
					thinkingLevel: "off",
					tools: ["calculate", "get_current_time"],
					toolExecution: "parallel",
					steeringMode: "one-at-a-time",
					followUpMode: "one-at-a-time",
					metadata: { team: "x" },
					createdAt: 1000,
					updatedAt: 1000,
					lastActiveAt: 1000,
					status: "idle",
					interruptedAt: null,
					currentRunId: null,
					messageCount: 0,
					lastEventId: 0,
				});
				expect(rec.usage.totalTokens).toBe(0);
				expect(rec.usage.cost.total).toBe(0);
				expect(await store.getSession("s1")).toEqual(rec);
			});

			it("returns copies: mutating a returned record does not change the store", async () => {
				const store = open();
				const rec = await store.createSession(newSession("s1"));
				rec.tools.push("evil");
				rec.metadata.team = "changed";
				const again = await store.getSession("s1");
				expect(again?.tools).toEqual(["calculate", "get_current_time"]);
				expect(again?.metadata).toEqual({ team: "x" });
			});

			it("refuses a duplicate id with a message that says how to fix it", async () => {
				const store = open();
				await store.createSession(newSession("s1"));
				await expect(store.createSession(newSession("s1"))).rejects.toThrow(/already exists.*unique id/);
			});

			it("creates a session with a starting transcript", async () => {
				const store = open();
				const rec = await store.createSession(newSession("s1"), [user("a"), assistant("b")]);
				expect(rec.messageCount).toBe(2);
				expect((await store.listMessages("s1"))?.messages).toEqual([user("a"), assistant("b")]);
			});

			it("patches only the given config fields and sets updatedAt", async () => {
				const store = open();
				await store.createSession(newSession("s1"));
				const rec = await store.updateSession("s1", { model: "openai/gpt-x", tools: [], metadata: { a: "1" } }, 2000);
				expect(rec).toMatchObject({
					model: "openai/gpt-x",
					tools: [],
					metadata: { a: "1" },
					systemPrompt: "be brief",
					steeringMode: "one-at-a-time",
					updatedAt: 2000,
					createdAt: 1000,
				});
				expect(await store.getSession("s1")).toEqual(rec);
				expect(await store.updateSession("nope", { model: "x/y" }, 1)).toBeUndefined();
			});

			it("keeps client tool declarations and approval policies with the config; none by default", async () => {
				const store = open();
				expect(await store.createSession(newSession("plain"))).toMatchObject({ clientTools: [], toolApprovals: {} });
				const rec = await store.createSession(
					newSession("s1", { clientTools: [pickColor], toolApprovals: { pick_color: "always", "files__*": "never" } }),
				);
				expect([rec.clientTools, rec.toolApprovals]).toEqual([
					[pickColor],
					{ pick_color: "always", "files__*": "never" },
				]);
				expect(await store.getSession("s1")).toEqual(rec);
				expect((await store.listSessions()).sessions.find((s) => s.id === "s1")).toEqual(rec);
			});

			it("patches client tools and approval policies alone, and returns copies of them", async () => {
				const store = open();
				await store.createSession(
					newSession("s1", { clientTools: [pickColor], toolApprovals: { pick_color: "always" } }),
				);
				const other = { name: "open_file", description: "Open a file on the user's machine" };
				const rules = await store.updateSession("s1", { toolApprovals: { calculate: "always" } }, 2000);
				expect(rules).toMatchObject({ clientTools: [pickColor], toolApprovals: { calculate: "always" } });
				const tools = await store.updateSession("s1", { clientTools: [other] }, 3000);
				expect(tools).toMatchObject({
					clientTools: [other],
					toolApprovals: { calculate: "always" },
					systemPrompt: "be brief",
					updatedAt: 3000,
				});
				tools!.clientTools[0]!.description = "changed";
				(tools!.clientTools[0] as { parameters?: unknown }).parameters = { type: "object" };
				tools!.toolApprovals.calculate = "never";
				const again = await store.getSession("s1");
				expect([again?.clientTools, again?.toolApprovals]).toEqual([[other], { calculate: "always" }]);
				expect(await store.updateSession("s1", { clientTools: [], toolApprovals: {} }, 4000)).toMatchObject({
					clientTools: [],
					toolApprovals: {},
				});
			});

			it("touchSession moves lastActiveAt forward, and retention sees it", async () => {
				const store = open();
				await store.createSession(newSession("s1"));
				expect(store.touchSession("s1", 5000)).toBe(true);
				expect((await store.getSession("s1"))?.lastActiveAt).toBe(5000);
				expect(store.touchSession("s1", 4000)).toBe(true);
				expect((await store.getSession("s1"))?.lastActiveAt).toBe(5000);
				expect(await store.listIdleSessions(5001)).toEqual(["s1"]);
				expect(await store.listIdleSessions(5000)).toEqual([]);
				expect(store.touchSession("nope", 5000)).toBe(false);
			});
		});

		describe("listing sessions", () => {
			it("pages in creation order (ties by id) with a cursor until the end", async () => {
				const store = open();
				const ids = ["e", "d", "c", "b", "a"];
				for (const [i, id] of ids.entries()) {
					await store.createSession(newSession(id, { createdAt: i < 2 ? 100 : 200 + i }));
				}
				const seen: string[] = [];
				let cursor: string | undefined;
				let pages = 0;
				do {
					const page = await store.listSessions({ limit: 2, ...(cursor ? { cursor } : {}) });
					seen.push(...page.sessions.map((s) => s.id));
					cursor = page.nextCursor;
					pages++;
				} while (cursor);
				expect(seen).toEqual(["d", "e", "c", "b", "a"]);
				expect(pages).toBe(3);
			});

			it("filters by owner, with null meaning sessions created without auth", async () => {
				const store = open();
				await store.createSession(newSession("a1", { ownerId: "a" }));
				await store.createSession(newSession("b1", { ownerId: "b" }));
				await store.createSession(newSession("n1", { ownerId: null }));
				await store.createSession(newSession("a2", { ownerId: "a", createdAt: 2000 }));
				expect((await store.listSessions({ ownerId: "a" })).sessions.map((s) => s.id)).toEqual(["a1", "a2"]);
				expect((await store.listSessions({ ownerId: null })).sessions.map((s) => s.id)).toEqual(["n1"]);
				expect((await store.listSessions()).sessions).toHaveLength(4);
				const first = await store.listSessions({ ownerId: "a", limit: 1 });
				expect(first.sessions.map((s) => s.id)).toEqual(["a1"]);
				expect(
					(await store.listSessions({ ownerId: "a", limit: 1, cursor: first.nextCursor })).sessions.map((s) => s.id),
				).toEqual(["a2"]);
			});

			it("lists what a caller may see: its own sessions and its tenant's shared ones, stored with tenant and visibility", async () => {
				const store = open();
				await store.createSession(newSession("alice-own", { ownerId: "alice", tenant: "org-a" }));
				await store.createSession(
					newSession("alice-shared", { ownerId: "alice", tenant: "org-a", visibility: "tenant", createdAt: 1001 }),
				);
				await store.createSession(newSession("bob-own", { ownerId: "bob", tenant: "org-a", createdAt: 1002 }));
				await store.createSession(
					newSession("carol-shared", { ownerId: "carol", tenant: "org-b", visibility: "tenant", createdAt: 1003 }),
				);
				// Shared without a tenant: nobody else sees it.
				await store.createSession(newSession("dan-shared", { ownerId: "dan", visibility: "tenant", createdAt: 1004 }));
				const ids = async (ownerId: string, tenant: string | null) =>
					(await store.listSessions({ ownerId, tenant })).sessions.map((s) => s.id);
				expect(await ids("alice", "org-a")).toEqual(["alice-own", "alice-shared"]);
				expect(await ids("bob", "org-a")).toEqual(["alice-shared", "bob-own"]);
				expect(await ids("carol", "org-b")).toEqual(["carol-shared"]);
				expect(await ids("eve", null)).toEqual([]);
				expect(await ids("dan", null)).toEqual(["dan-shared"]);
				const page = await store.listSessions({ ownerId: "bob", tenant: "org-a", limit: 1 });
				expect(page.sessions.map((s) => s.id)).toEqual(["alice-shared"]);
				const next = await store.listSessions({ ownerId: "bob", tenant: "org-a", limit: 1, cursor: page.nextCursor });
				expect(next.sessions.map((s) => s.id)).toEqual(["bob-own"]);
				const shared = await store.getSession("alice-shared");
				expect({ tenant: shared?.tenant, visibility: shared?.visibility }).toEqual({
					tenant: "org-a",
					visibility: "tenant",
				});
				const plain = await store.getSession("bob-own");
				expect({ tenant: plain?.tenant, visibility: plain?.visibility }).toEqual({
					tenant: "org-a",
					visibility: "owner",
				});
			});

			it("rejects a malformed cursor and an out-of-range limit", async () => {
				const store = open();
				await expect(store.listSessions({ cursor: "garbage!" })).rejects.toThrow(/cursor/);
				await expect(store.listSessions({ limit: 0 })).rejects.toThrow(/limit/);
				await expect(store.listSessions({ limit: 1001 })).rejects.toThrow(/limit/);
			});
		});

		describe("transcript", () => {
			it("appends in order and pages by offset and limit", async () => {
				const store = open();
				await store.createSession(newSession("s1"));
				expect(store.appendMessages("s1", [user("0"), user("1")])).toBe(2);
				expect(store.appendMessages("s1", [user("2"), user("3"), user("4")])).toBe(5);
				expect(await store.countMessages("s1")).toBe(5);
				expect((await store.getSession("s1"))?.messageCount).toBe(5);
				const page = await store.listMessages("s1", { offset: 1, limit: 3 });
				expect(page?.offset).toBe(1);
				expect(page?.total).toBe(5);
				expect(page?.messages.map((m) => (m as UserMessage).content)).toEqual(["1", "2", "3"]);
				expect((await store.listMessages("s1", { offset: 5 }))?.messages).toEqual([]);
				await expect(store.listMessages("s1", { limit: 0 })).rejects.toThrow(/limit/);
			});

			it("round-trips assistant and tool-result messages exactly", async () => {
				const store = open();
				await store.createSession(newSession("s1"));
				const messages: AgentMessage[] = [
					assistant("hi"),
					{
						role: "toolResult",
						toolCallId: "c1",
						toolName: "calculate",
						content: [{ type: "text", text: "4" }],
						details: { exact: true },
						isError: false,
						timestamp: 3,
					},
				];
				store.appendMessages("s1", messages);
				expect((await store.listMessages("s1"))?.messages).toEqual(messages);
			});

			it("rewinds: the end moves into a numbered superseded branch, events keep their data, appends go on at the cut", async () => {
				const store = open();
				await store.createSession(newSession("s1"));
				const old = [user("q"), assistant("the first answer, long enough to be referred to by the event log")];
				store.appendMessages("s1", old);
				const event = JSON.stringify({ type: "message_end", message: old[1] });
				const id = store.appendEvent("s1", "message_end", event) as number;
				await store.flush();
				const branch = await store.rewindTranscript("s1", 1, 5000);
				expect(branch).toEqual({ branch: 1, fromIndex: 1, supersededAt: 5000, messages: [old[1]] });
				expect(await store.countMessages("s1")).toBe(1);
				expect((await store.getSession("s1"))?.messageCount).toBe(1);
				const next = assistant("another answer, also long enough to be referred to by the event log");
				expect(store.appendMessages("s1", [next])).toBe(2);
				store.appendEvent("s1", "message_end", JSON.stringify({ type: "message_end", message: next }));
				await store.flush();
				expect((await store.listMessages("s1"))?.messages).toEqual([old[0], next]);
				const events = await store.readEvents("s1", 0);
				expect(events.find((e) => e.id === id)?.data).toBe(event);
				expect(events.at(-1)?.data).toBe(JSON.stringify({ type: "message_end", message: next }));
				// Nothing after the cut: no branch is made.
				expect((await store.rewindTranscript("s1", 2, 6000))?.messages).toEqual([]);
				await store.rewindTranscript("s1", 0, 7000);
				expect(await store.listSuperseded("s1")).toEqual([
					{ branch: 1, fromIndex: 1, supersededAt: 5000, messages: [old[1]] },
					{ branch: 2, fromIndex: 0, supersededAt: 7000, messages: [old[0], next] },
				]);
				expect(await store.listSuperseded("nope")).toBeUndefined();
				expect(await store.rewindTranscript("nope", 0, 1)).toBeUndefined();
				await store.deleteSession("s1");
				expect(await store.listSuperseded("s1")).toBeUndefined();
			});
		});

		describe("event log", () => {
			it("assigns per-session ids 1, 2, 3 ... and reads after an id", async () => {
				const store = open();
				await store.createSession(newSession("s1"));
				await store.createSession(newSession("s2"));
				const ids = [1, 2, 3, 4].map((i) => store.appendEvent("s1", "message_update", `{"i":${i}}`, 10 + i));
				expect(ids).toEqual([1, 2, 3, 4]);
				expect(store.appendEvent("s2", "agent_start", "{}", 1)).toBe(1);
				expect(store.lastEventId("s1")).toBe(4);
				expect((await store.getSession("s1"))?.lastEventId).toBe(4);
				expect(await store.readEvents("s1", 2)).toEqual([
					{ id: 3, type: "message_update", data: '{"i":3}', createdAt: 13 },
					{ id: 4, type: "message_update", data: '{"i":4}', createdAt: 14 },
				]);
				expect((await store.readEvents("s1", 0, 2)).map((e) => e.id)).toEqual([1, 2]);
				expect(await store.readEvents("s1", 4)).toEqual([]);
				expect(await store.oldestEventId("s1")).toBe(1);
				expect((await store.readEvents("s2", 0)).map((e) => e.type)).toEqual(["agent_start"]);
			});

			it("keeps a streaming message's deltas readable, and after its message_end as deltaRetention says", async () => {
				const store = open();
				await store.createSession(newSession("s1"));
				store.appendEvent("s1", "agent_start", "{}", 1); // 1
				store.appendEvent("s1", "message_start", "{}", 2); // 2
				for (let i = 0; i < 4; i++) store.appendEvent("s1", "message_update", `{"d":${i}}`, 3 + i); // 3..6
				const ids = async (after: number, limit?: number) =>
					(await store.readEvents("s1", after, limit)).map((e) => e.id);
				// While the message streams, a resume from anywhere gets every event, in order.
				expect(await ids(0)).toEqual([1, 2, 3, 4, 5, 6]);
				expect(await ids(3)).toEqual([4, 5, 6]);
				expect(await ids(0, 3)).toEqual([1, 2, 3]);
				expect(await store.readEvents("s1", 5)).toEqual([
					{ id: 6, type: "message_update", data: '{"d":3}', createdAt: 6 },
				]);
				store.appendEvent("s1", "message_end", "{}", 10); // 7
				store.appendEvent("s1", "turn_end", "{}", 11); // 8
				if (store.deltaRetention === "all") {
					expect(await ids(0)).toEqual([1, 2, 3, 4, 5, 6, 7, 8]);
					expect(await ids(4)).toEqual([5, 6, 7, 8]);
				} else {
					expect(await ids(0)).toEqual([1, 2, 7, 8]);
					expect(await ids(4)).toEqual([7, 8]);
				}
				expect(await store.oldestEventId("s1")).toBe(1);
				expect(store.appendEvent("s1", "agent_end", "{}", 12)).toBe(9);
				expect(() => store.appendEvent("s1", "", "{}")).toThrow(/non-empty event name/);
			});

			it("sizes a page by bytes when asked: stops before the event that does not fit, never returns an empty page", async () => {
				const store = open();
				await store.createSession(newSession("s1"));
				for (const size of [10, 30, 30, 100, 5]) store.appendEvent("s1", "e", "x".repeat(size));
				const ids = async (after: number, maxBytes: number, limit?: number) =>
					(await store.readEvents("s1", after, limit, maxBytes)).map((e) => e.id);
				expect(await ids(0, 70)).toEqual([1, 2, 3]);
				expect(await ids(0, 69)).toEqual([1, 2]);
				expect(await ids(0, 70, 2)).toEqual([1, 2]);
				// An event larger than the budget comes alone.
				expect(await ids(3, 50)).toEqual([4]);
				expect(await ids(3, 1000)).toEqual([4, 5]);
				expect(await ids(5, 1)).toEqual([]);
				await expect(store.readEvents("s1", 0, 10, 0)).rejects.toThrow(/maxBytes/);
			});

			it("stores data verbatim (not re-serialised)", async () => {
				const store = open();
				await store.createSession(newSession("s1"));
				const data = '{"b":1,  "a":"line\\nbreak é"}';
				store.appendEvent("s1", "x", data);
				expect((await store.readEvents("s1", 0))[0]?.data).toBe(data);
			});

			it("caps the log per session; ids continue after trimming", async () => {
				const store = open({ maxEventsPerSession: 5 });
				expect(store.maxEventsPerSession).toBe(5);
				await store.createSession(newSession("s1"));
				for (let i = 0; i < 12; i++) store.appendEvent("s1", "e", String(i), i);
				expect((await store.readEvents("s1", 0)).map((e) => e.id)).toEqual([8, 9, 10, 11, 12]);
				expect(await store.oldestEventId("s1")).toBe(8);
				expect(store.lastEventId("s1")).toBe(12);
				expect(store.appendEvent("s1", "e", "x")).toBe(13);
				expect(await store.oldestEventId("s1")).toBe(9);
			});

			it("has no oldest id before the first event", async () => {
				const store = open();
				await store.createSession(newSession("s1"));
				expect(await store.oldestEventId("s1")).toBeUndefined();
				expect(store.lastEventId("s1")).toBe(0);
			});
		});

		describe("queue", () => {
			it("keeps steering and follow-up messages in order, by kind, until removed", async () => {
				const store = open();
				await store.createSession(newSession("s1"));
				const a = await store.enqueue("s1", "steer", user("s-a"), 2000);
				const b = await store.enqueue("s1", "followUp", user("f-b"), 2001);
				const c = await store.enqueue("s1", "steer", user("s-c"), 2002);
				expect(a && b && c).toBeTruthy();
				expect((a?.id ?? 0) < (b?.id ?? 0) && (b?.id ?? 0) < (c?.id ?? 0)).toBe(true);
				expect(a).toMatchObject({ sessionId: "s1", kind: "steer", message: user("s-a"), createdAt: 2000 });
				expect((await store.getSession("s1"))?.lastActiveAt).toBe(2002);
				expect((await store.listQueued("s1")).map((q) => q.id)).toEqual([a?.id, b?.id, c?.id]);
				expect((await store.listQueued("s1", "steer")).map((q) => (q.message as UserMessage).content)).toEqual([
					"s-a",
					"s-c",
				]);
				expect(await store.clearQueue("s1", "followUp")).toBe(1);
				expect((await store.listQueued("s1")).map((q) => q.id)).toEqual([a?.id, c?.id]);
				expect(await store.clearQueue("s1")).toBe(2);
				expect(await store.listQueued("s1")).toEqual([]);
			});

			it("moves a drained message from the queue into the transcript in one step, after the messages before it", async () => {
				const store = open();
				await store.createSession(newSession("s1"));
				const a = await store.enqueue("s1", "steer", user("steer a"), 2000);
				const b = await store.enqueue("s1", "followUp", user("follow b"), 2001);
				await store.startRun("s1", "r1", 2002, [user("prompt")]);
				store.appendMessages("s1", [assistant("answer")]);
				expect(await store.drainQueued("s1", [a?.id ?? -1], [user("steer a")])).toBe(3);
				expect((await store.listQueued("s1")).map((q) => q.id)).toEqual([b?.id]);
				expect(await store.countMessages("s1")).toBe(3);
				expect((await store.getSession("s1"))?.messageCount).toBe(3);
				expect((await store.listMessages("s1"))?.messages).toEqual([
					user("prompt"),
					assistant("answer"),
					user("steer a"),
				]);
				// The messages are stored even if their entry is gone (the loop delivered them); other
				// sessions' entries are never touched.
				await store.createSession(newSession("s2"));
				const other = await store.enqueue("s2", "steer", user("s2 only"), 2003);
				expect(await store.drainQueued("s1", [a?.id ?? -1, other?.id ?? -1], [user("again")])).toBe(4);
				expect((await store.listQueued("s2")).map((q) => q.id)).toEqual([other?.id]);
				expect(await store.drainQueued("s1", [b?.id ?? -1], [])).toBe(4);
				expect(await store.listQueued("s1")).toEqual([]);
				expect(await store.drainQueued("x", [other?.id ?? -1], [user("nobody")])).toBeUndefined();
				expect(await store.listQueued("s2")).toHaveLength(1);
			});
		});

		describe("runs and recovery", () => {
			it("tracks a run from start to end and adds its usage to the session totals", async () => {
				const store = open();
				await store.createSession(newSession("s1"));
				expect(await store.startRun("s1", "r1", 3000)).toEqual({ updatedAt: expect.any(Number) });
				expect(await store.getSession("s1")).toMatchObject({
					status: "running",
					currentRunId: "r1",
					lastActiveAt: 3000,
				});
				expect(store.endRun("s1", "r1", { status: "completed", endedAt: 3500, usage: usage(100, 20, 0.25) })).toBe(
					true,
				);
				await store.startRun("s1", "r2", 4000);
				store.endRun("s1", "r2", { status: "error", endedAt: 4100, usage: usage(1, 2, 0.5), errorMessage: "boom" });
				const rec = await store.getSession("s1");
				expect(rec).toMatchObject({ status: "idle", currentRunId: null, lastActiveAt: 4100 });
				expect(rec?.usage.input).toBe(101);
				expect(rec?.usage.output).toBe(22);
				expect(rec?.usage.cost.total).toBeCloseTo(0.75);
				const runs = await store.listRuns("s1");
				expect(runs.map((r) => [r.id, r.status, r.startedAt, r.endedAt, r.errorMessage])).toEqual([
					["r1", "completed", 3000, 3500, null],
					["r2", "error", 4000, 4100, "boom"],
				]);
				expect(runs[0]?.usage.totalTokens).toBe(120);
				expect((await store.listRuns("s1", 1)).map((r) => r.id)).toEqual(["r2"]);
			});

			it("a run's claim answers the session's config version (updatedAt) as the claim read it", async () => {
				const store = open();
				await store.createSession(newSession("s1"));
				expect(await store.startRun("s1", "r1", 1100)).toEqual({ updatedAt: 1000 });
				store.endRun("s1", "r1", { status: "completed", endedAt: 1200, usage: usage(0, 0, 0) });
				// A config stored after a caller read the session (another replica's PATCH): the next claim says so.
				expect(await store.getSession("s1")).toMatchObject({ updatedAt: 1000 });
				await store.updateSession("s1", { systemPrompt: "be thorough" }, 5000);
				expect(await store.startRun("s1", "r2", 5100)).toEqual({ updatedAt: 5000 });
				// A run does not change it; a refused claim answers nothing.
				expect(await store.startRun("s1", "r3", 5200)).toBe(false);
				store.endRun("s1", "r2", { status: "completed", endedAt: 5300, usage: usage(0, 0, 0) });
				expect(await store.startRun("s1", "r4", 5400)).toEqual({ updatedAt: 5000 });
			});

			it("stores a run's prompt with its start", async () => {
				const store = open();
				await store.createSession(newSession("s1"), [user("earlier")]);
				expect(await store.startRun("s1", "r1", 10, [user("the prompt", 10)])).toEqual({
					updatedAt: expect.any(Number),
				});
				expect((await store.listMessages("s1"))?.messages).toEqual([user("earlier"), user("the prompt", 10)]);
				expect(await store.getSession("s1")).toMatchObject({ status: "running", currentRunId: "r1", messageCount: 2 });
				expect(store.appendMessages("s1", [assistant("answer")])).toBe(3);
				expect(await store.startRun("nope", "r2", 11, [user("lost")])).toBe(false);
				await expect(store.startRun("s1", "r1", 12, [user("again")])).rejects.toThrow(/already exists/);
				expect(await store.countMessages("s1")).toBe(3);
			});

			it("claims a session for a run only while no run is active on it", async () => {
				const store = open();
				await store.createSession(newSession("s1"));
				expect(await store.startRun("s1", "r1", 1, [user("first")])).toEqual({ updatedAt: expect.any(Number) });
				// The claim fails while r1 runs, and writes nothing: no run, no prompt.
				expect(await store.startRun("s1", "r2", 2, [user("second")])).toBe(false);
				expect(await store.listRuns("s1")).toHaveLength(1);
				expect(await store.countMessages("s1")).toBe(1);
				expect(await store.getSession("s1")).toMatchObject({ status: "running", currentRunId: "r1" });
				// Ending another run does not release it; ending r1 does.
				expect(store.endRun("s1", "r2", { status: "completed", endedAt: 3, usage: usage(0, 0, 0) })).toBe(false);
				expect(store.endRun("s1", "r1", { status: "completed", endedAt: 3, usage: usage(0, 0, 0) })).toBe(true);
				expect(await store.startRun("s1", "r2", 4, [user("second")])).toEqual({ updatedAt: expect.any(Number) });
				expect((await store.listMessages("s1"))?.messages).toEqual([user("first"), user("second")]);
				expect((await store.listRuns("s1")).map((r) => [r.id, r.status])).toEqual([
					["r1", "completed"],
					["r2", "running"],
				]);
			});

			it("opens known sessions only, and the barrier resolves with the writes it waited for readable", async () => {
				const store = open();
				expect(await store.openSession("x")).toBe(false);
				await store.createSession(newSession("s1"));
				expect(await store.openSession("s1")).toBe(true);
				expect(await store.openSession("s1")).toBe(true);
				await store.startRun("s1", "r1", 1, [user("p")]);
				store.appendMessages("s1", [assistant("a")]);
				store.endRun("s1", "r1", { status: "completed", endedAt: 2, usage: usage(1, 1, 0) });
				await store.sync();
				expect(store.syncPending).toBe(false);
				expect(await store.getSession("s1")).toMatchObject({ status: "idle", messageCount: 2 });
			});

			it("releases a session from the working set with its writes durable; opened again, its ids go on", async () => {
				const store = open();
				await store.createSession(newSession("s1"));
				expect(await store.releaseSession("x")).toBe(false);
				await store.startRun("s1", "r1", 1, [user("p")]);
				const first = store.appendEvent("s1", "agent_start", "{}")!;
				store.appendMessages("s1", [assistant("a")]);
				const last = store.appendEvent("s1", "agent_end", "{}")!;
				store.endRun("s1", "r1", { status: "completed", endedAt: 2, usage: usage(1, 1, 0) });
				expect(await store.releaseSession("s1")).toBe(true);
				expect(store.syncPending).toBe(false);
				expect(await store.getSession("s1")).toMatchObject({ status: "idle", messageCount: 2 });
				// Ids reserved ahead of use may count as used: skipped, never handed out again.
				expect((await store.getSession("s1"))!.lastEventId).toBeGreaterThanOrEqual(last);
				expect((await store.readEvents("s1", 0)).map((e) => e.id)).toEqual([first, last]);
				expect(await store.openSession("s1")).toBe(true);
				expect(await store.startRun("s1", "r2", 3, [user("q")])).toEqual({ updatedAt: expect.any(Number) });
				expect(store.appendEvent("s1", "agent_start", "{}")).toBeGreaterThan(last);
				expect(store.appendMessages("s1", [assistant("b")])).toBe(4);
				await store.sync();
				expect((await store.listMessages("s1"))?.messages).toEqual([
					user("p"),
					assistant("a"),
					user("q"),
					assistant("b"),
				]);
			});

			it("refuses a duplicate run id and ignores unknown runs", async () => {
				const store = open();
				await store.createSession(newSession("s1"));
				await store.startRun("s1", "r1", 1);
				await expect(store.startRun("s1", "r1", 2)).rejects.toThrow(/already exists/);
				expect(store.endRun("s1", "nope", { status: "completed", endedAt: 1, usage: usage(0, 0, 0) })).toBe(false);
			});

			it("keeps run ids unique across sessions until their session is deleted", async () => {
				const store = open();
				await store.createSession(newSession("s1"));
				await store.createSession(newSession("s2"));
				await store.startRun("s1", "r1", 1);
				await expect(store.startRun("s2", "r1", 2)).rejects.toThrow(/already exists/);
				expect(await store.deleteSession("s1")).toBe(true);
				expect(await store.startRun("s2", "r1", 3)).toEqual({ updatedAt: expect.any(Number) });
				expect((await store.listRuns("s2", 10)).map((r) => r.id)).toEqual(["r1"]);
			});

			it("marks running sessions interrupted, with the usage of the run's persisted messages", async () => {
				const store = open();
				await store.createSession(newSession("busy"), [user("before")]);
				await store.createSession(newSession("calm"));
				await store.startRun("busy", "r1", 100);
				store.appendMessages("busy", [user("go"), assistant("partial turn", usage(7, 3, 0.1))]);
				await store.startRun("calm", "r2", 100);
				store.endRun("calm", "r2", { status: "completed", endedAt: 150, usage: usage(1, 1, 0) });
				expect(await store.recoverInterrupted(9999)).toEqual(["busy"]);
				expect(await store.getSession("busy")).toMatchObject({
					status: "interrupted",
					interruptedAt: 9999,
					currentRunId: "r1",
				});
				expect((await store.getSession("busy"))?.usage.totalTokens).toBe(10);
				expect((await store.listRuns("busy"))[0]).toMatchObject({ status: "interrupted", endedAt: 9999 });
				expect((await store.getSession("calm"))?.status).toBe("idle");
				expect(await store.recoverInterrupted(10_000)).toEqual([]);
				// The next run clears the interruption.
				await store.startRun("busy", "r3", 11_000);
				expect(await store.getSession("busy")).toMatchObject({ status: "running", interruptedAt: null });
			});

			it("with sessionIds, marks only those of the running sessions interrupted (a takeover)", async () => {
				const store = open();
				for (const id of ["a", "b", "c"]) {
					await store.createSession(newSession(id));
					await store.startRun(id, `run-${id}`, 100);
				}
				const reported: [string, string | null][] = [];
				const webhooks = (sessionId: string, runId: string | null) => {
					reported.push([sessionId, runId]);
					return [];
				};
				expect(await store.recoverInterrupted(500, webhooks, ["b", "unknown"])).toEqual(["b"]);
				expect(reported).toEqual([["b", "run-b"]]);
				expect((await store.getSession("a"))?.status).toBe("running");
				expect(await store.getSession("b")).toMatchObject({ status: "interrupted", interruptedAt: 500 });
				expect(await store.recoverInterrupted(600, undefined, [])).toEqual([]);
				expect((await store.recoverInterrupted(700)).sort()).toEqual(["a", "c"]);
			});

			it("stores the onInterrupt policy: continue when not given, as set by create or update", async () => {
				const store = open();
				expect((await store.createSession(newSession("default"))).onInterrupt).toBe("continue");
				const stop = await store.createSession({ ...newSession("stop"), onInterrupt: "stop" });
				expect(stop.onInterrupt).toBe("stop");
				expect((await store.updateSession("default", { onInterrupt: "stop" }, 5))?.onInterrupt).toBe("stop");
				expect((await store.updateSession("stop", { systemPrompt: "x" }, 6))?.onInterrupt).toBe("stop");
				expect((await store.getSession("default"))?.onInterrupt).toBe("stop");
			});
		});

		describe("pending interactions", () => {
			it("stores, lists, resolves and deletes approvals and client tool calls", async () => {
				const store = open();
				await store.createSession(newSession("s1"));
				expect(
					await store.putPending({
						sessionId: "s1",
						toolCallId: "c1",
						kind: "approval",
						payload: '{"tool":"rm"}',
						createdAt: 1,
					}),
				).toBe(true);
				await store.putPending({ sessionId: "s1", toolCallId: "c2", kind: "client_tool", payload: "{}", createdAt: 2 });
				expect((await store.listPending("s1")).map((p) => p.toolCallId)).toEqual(["c1", "c2"]);
				expect(await store.resolvePending("s1", "c1", '{"approved":true}', 5)).toBe(true);
				expect(await store.resolvePending("s1", "c1", '{"approved":false}', 6)).toBe(false);
				expect((await store.listPending("s1")).map((p) => p.toolCallId)).toEqual(["c2"]);
				expect((await store.listPending("s1", { includeResolved: true }))[0]).toEqual({
					sessionId: "s1",
					toolCallId: "c1",
					kind: "approval",
					payload: '{"tool":"rm"}',
					createdAt: 1,
					resolvedAt: 5,
					resolution: '{"approved":true}',
				});
				// Putting again replaces the request and clears the old answer.
				await store.putPending({
					sessionId: "s1",
					toolCallId: "c1",
					kind: "approval",
					payload: '{"v":2}',
					createdAt: 1,
				});
				expect((await store.listPending("s1")).map((p) => [p.toolCallId, p.payload])).toEqual([
					["c1", '{"v":2}'],
					["c2", "{}"],
				]);
				expect(await store.deletePending("s1", "c1")).toBe(true);
				expect(await store.deletePending("s1", "c1")).toBe(false);
				expect((await store.listPending("s1", { includeResolved: true })).map((p) => p.toolCallId)).toEqual(["c2"]);
			});
		});

		describe("idempotency keys", () => {
			const record = (sessionId: string, key: string, createdAt = 1, outcome = '{"n":1}') => ({
				sessionId,
				key,
				operation: "prompt",
				fingerprint: `fp-${key}`,
				outcome,
				createdAt,
			});

			it("enqueue stores the record its withKey builds from the queued entry; nothing for an unknown session", async () => {
				const store = open();
				await store.createSession(newSession("s1"));
				const queued = await store.enqueue("s1", "followUp", user("m"), 5, (q) =>
					record("s1", "kq", 5, JSON.stringify({ queuedId: q.id, kind: q.kind })),
				);
				expect(queued).toBeDefined();
				expect((await store.getIdempotencyKey("s1", "kq"))?.outcome).toBe(
					JSON.stringify({ queuedId: queued?.id, kind: "followUp" }),
				);
				let built = false;
				const none = await store.enqueue("nope", "steer", user("m"), 5, () => {
					built = true;
					return record("nope", "kq", 5);
				});
				expect(none).toBeUndefined();
				expect(built).toBe(false);
				expect(await store.getIdempotencyKey("nope", "kq")).toBeUndefined();
			});

			it("stores a record per session and key, returns copies, and replaces it when put again", async () => {
				const store = open();
				await store.createSession(newSession("s1"));
				await store.createSession(newSession("s2"));
				expect(await store.putIdempotencyKey(record("s1", "k1"))).toBe(true);
				expect(await store.getIdempotencyKey("s1", "k1")).toEqual(record("s1", "k1"));
				// Keys are per session.
				expect(await store.getIdempotencyKey("s2", "k1")).toBeUndefined();
				const copy = await store.getIdempotencyKey("s1", "k1");
				if (copy) copy.outcome = "changed";
				expect((await store.getIdempotencyKey("s1", "k1"))?.outcome).toBe('{"n":1}');
				await store.putIdempotencyKey(record("s1", "k1", 2, '{"n":2}'));
				expect(await store.getIdempotencyKey("s1", "k1")).toEqual(record("s1", "k1", 2, '{"n":2}'));
				// Any printable key is stored as given.
				const odd = ` a "quoted" key \\ with ${"x".repeat(230)} `;
				await store.putIdempotencyKey(record("s1", odd));
				expect((await store.getIdempotencyKey("s1", odd))?.key).toBe(odd);
			});

			it("keeps the most recently put records of each session up to the cap", async () => {
				const store = open({ maxIdempotencyKeysPerSession: 3 });
				await store.createSession(newSession("s1"));
				await store.createSession(newSession("s2"));
				for (const key of ["a", "b", "c"]) await store.putIdempotencyKey(record("s1", key));
				await store.putIdempotencyKey(record("s2", "z"));
				// Putting "a" again makes it the most recent: "b" is the oldest now.
				await store.putIdempotencyKey(record("s1", "a"));
				await store.putIdempotencyKey(record("s1", "d"));
				const kept: string[] = [];
				for (const k of ["a", "b", "c", "d"]) if (await store.getIdempotencyKey("s1", k)) kept.push(k);
				expect(kept).toEqual(["a", "c", "d"]);
				expect(await store.getIdempotencyKey("s2", "z")).toBeDefined();
			});

			it("expires records created before a cutoff, in every session", async () => {
				const store = open();
				await store.createSession(newSession("s1"));
				await store.createSession(newSession("s2"));
				await store.putIdempotencyKey(record("s1", "old", 100));
				await store.putIdempotencyKey(record("s2", "old", 150));
				await store.putIdempotencyKey(record("s1", "new", 200));
				expect(await store.deleteIdempotencyKeys(200)).toBe(2);
				expect(await store.getIdempotencyKey("s1", "old")).toBeUndefined();
				expect(await store.getIdempotencyKey("s2", "old")).toBeUndefined();
				expect((await store.getIdempotencyKey("s1", "new"))?.createdAt).toBe(200);
				expect(await store.deleteIdempotencyKeys(200)).toBe(0);
			});

			it("refuses an unknown session and forgets a deleted session's keys", async () => {
				const store = open();
				expect(await store.putIdempotencyKey(record("x", "k"))).toBe(false);
				expect(await store.getIdempotencyKey("x", "k")).toBeUndefined();
				await store.createSession(newSession("s1"));
				await store.putIdempotencyKey(record("s1", "k"));
				await store.deleteSession("s1");
				await store.createSession(newSession("s1"));
				expect(await store.getIdempotencyKey("s1", "k")).toBeUndefined();
			});

			it("rejects an out-of-range cap", async () => {
				expect(() => factory({ maxIdempotencyKeysPerSession: 0 })).toThrow(/maxIdempotencyKeysPerSession/);
			});
		});

		usageContract(() => open());

		facadeRecordsContract(() => open());

		schedulesContract(() => open());

		admissionContract(() => open());

		sessionFilterContract(() => open());

		describe("delete, retention and unknown sessions", () => {
			it("deletes everything of a session; a new session with the same id starts empty", async () => {
				const store = open();
				await store.createSession(newSession("s1"), [user("a")]);
				store.appendEvent("s1", "e", "{}");
				await store.enqueue("s1", "steer", user("q"), 1);
				await store.startRun("s1", "r1", 1);
				await store.putPending({ sessionId: "s1", toolCallId: "c", kind: "approval", payload: "{}", createdAt: 1 });
				expect(await store.deleteSession("s1")).toBe(true);
				expect(await store.deleteSession("s1")).toBe(false);
				expect(await store.getSession("s1")).toBeUndefined();
				await store.createSession(newSession("s1"));
				expect(await store.countMessages("s1")).toBe(0);
				expect(await store.readEvents("s1", 0)).toEqual([]);
				expect(store.lastEventId("s1")).toBe(0);
				expect(await store.listQueued("s1")).toEqual([]);
				expect(await store.listRuns("s1")).toEqual([]);
				expect(await store.listPending("s1", { includeResolved: true })).toEqual([]);
				expect((await store.getSession("s1"))?.status).toBe("idle");
			});

			it("treats an unknown session as a value on every method, never a throw", async () => {
				const store = open();
				expect(await store.getSession("x")).toBeUndefined();
				expect(store.appendMessages("x", [user("a")])).toBeUndefined();
				expect(await store.listMessages("x")).toBeUndefined();
				expect(await store.countMessages("x")).toBeUndefined();
				expect(store.appendEvent("x", "e", "{}")).toBeUndefined();
				expect(await store.readEvents("x", 0)).toEqual([]);
				expect(store.lastEventId("x")).toBeUndefined();
				expect(await store.oldestEventId("x")).toBeUndefined();
				expect(await store.enqueue("x", "steer", user("a"), 1)).toBeUndefined();
				expect(await store.listQueued("x")).toEqual([]);
				expect(await store.drainQueued("x", [1], [user("a")])).toBeUndefined();
				expect(await store.clearQueue("x")).toBe(0);
				expect(await store.startRun("x", "r", 1)).toBe(false);
				expect(store.endRun("x", "r", { status: "aborted", endedAt: 1, usage: usage(0, 0, 0) })).toBe(false);
				expect(await store.listRuns("x")).toEqual([]);
				expect(
					await store.putPending({ sessionId: "x", toolCallId: "c", kind: "approval", payload: "{}", createdAt: 1 }),
				).toBe(false);
				expect(await store.resolvePending("x", "c", "{}", 1)).toBe(false);
				expect(await store.deletePending("x", "c")).toBe(false);
				expect(await store.listPending("x")).toEqual([]);
				expect(await store.deleteSessions(["x"])).toBe(0);
			});

			it("lists idle sessions (not running) least recently active first, and deletes them", async () => {
				const store = open();
				await store.createSession(newSession("old", { createdAt: 100 }));
				await store.createSession(newSession("older", { createdAt: 50 }));
				await store.createSession(newSession("fresh", { createdAt: 5000 }));
				await store.createSession(newSession("busy", { createdAt: 10 }));
				await store.startRun("busy", "r", 20);
				expect(await store.listIdleSessions(1000)).toEqual(["older", "old"]);
				expect(await store.listIdleSessions(1000, 1)).toEqual(["older"]);
				expect(await store.deleteSessions(["older", "old", "missing"])).toBe(2);
				expect((await store.listSessions()).sessions.map((s) => s.id)).toEqual(["busy", "fresh"]);
			});

			it("throws on use after close, and close is idempotent", async () => {
				const store = factory();
				await store.close();
				await store.close();
				await expect(store.getSession("s")).rejects.toThrow(/closed/);
				expect(() => store.appendEvent("s", "e", "{}")).toThrow(/closed/);
			});
		});
	});
}
