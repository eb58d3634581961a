import { describe, expect, it } from "vitest";
import { createMemoryStore } from "../../../src/store/index.js";
import type { SessionStore } from "../../../src/store/types.js";
import { PendingInteractions, type PendingPersistence, type PendingRequest } from "../../../src/tools/index.js";

// The server hands its SessionStore to PendingInteractions: the structural subset must match.
const _storeFits: (store: SessionStore) => PendingPersistence = (store) => store;

describe("PendingInteractions", () => {
	it("delivers an answer to the waiting call exactly once; later answers are 'finished', strangers 'unknown'", async () => {
		const changes: PendingRequest[][] = [];
		const pending = new PendingInteractions("s1", { onChange: (list) => changes.push(list) });
		const waiting = pending.wait({
			kind: "approval",
			toolCallId: "c1",
			toolName: "rm",
			args: { path: "/" },
			timeoutMs: 60_000,
		});
		expect(pending.list()).toMatchObject([{ kind: "approval", toolCallId: "c1", toolName: "rm", args: { path: "/" } }]);
		expect(pending.resolve("client_tool", "c1", { content: "x" })).toBe("unknown");
		expect(pending.resolve("approval", "c1", { approve: true, reason: "ok" })).toBe("resolved");
		await expect(waiting).resolves.toEqual({ kind: "resolved", value: { approve: true, reason: "ok" } });
		expect(pending.resolve("approval", "c1", { approve: false })).toBe("finished");
		expect(pending.resolve("approval", "nope", { approve: false })).toBe("unknown");
		expect(pending.list()).toEqual([]);
		expect(changes.map((c) => c.length)).toEqual([1, 0]);
	});

	it("times out", async () => {
		const pending = new PendingInteractions("s1");
		const outcome = await pending.wait({
			kind: "client_tool",
			toolCallId: "c2",
			toolName: "t",
			args: {},
			timeoutMs: 10,
		});
		expect(outcome).toEqual({ kind: "timeout", timeoutMs: 10 });
		expect(pending.resolve("client_tool", "c2", { content: "late" })).toBe("finished");
	});

	it("ends on abort, also when already aborted", async () => {
		const pending = new PendingInteractions("s1");
		const controller = new AbortController();
		const waiting = pending.wait({
			kind: "client_tool",
			toolCallId: "c3",
			toolName: "t",
			args: {},
			timeoutMs: 60_000,
			signal: controller.signal,
		});
		controller.abort(new Error("stop"));
		const outcome = await waiting;
		expect(outcome.kind).toBe("aborted");
		expect(pending.list()).toEqual([]);
		const again = await pending.wait({
			kind: "client_tool",
			toolCallId: "c4",
			toolName: "t",
			args: {},
			timeoutMs: 60_000,
			signal: controller.signal,
		});
		expect(again.kind).toBe("aborted");
	});

	it("refuses a second wait for the same call and kind", () => {
		const pending = new PendingInteractions("s1");
		void pending.wait({ kind: "approval", toolCallId: "c5", toolName: "t", args: {}, timeoutMs: 60_000 });
		expect(() => pending.wait({ kind: "approval", toolCallId: "c5", toolName: "t", args: {}, timeoutMs: 1 })).toThrow(
			"already pending",
		);
		pending.abortAll();
	});

	it("persists to the session store and lists orphans after a restart", async () => {
		const store = createMemoryStore();
		await store.createSession({
			id: "s1",
			ownerId: null,
			createdAt: 1,
			model: "faux/echo",
			systemPrompt: "",
			thinkingLevel: "off",
			tools: [],
			toolExecution: "parallel",
			steeringMode: "one-at-a-time",
			followUpMode: "one-at-a-time",
			metadata: {},
		});
		const before = new PendingInteractions("s1", { store, now: () => 1000 });
		void before.wait({
			kind: "approval",
			toolCallId: "c6",
			toolName: "deploy",
			args: { env: "prod" },
			timeoutMs: 5000,
		});
		expect(await store.listPending("s1")).toMatchObject([{ toolCallId: "c6", kind: "approval", createdAt: 1000 }]);

		// A new process: the waiter is gone, the record is listed as an orphan.
		const after = await PendingInteractions.load("s1", { store });
		expect(after.list()).toEqual([
			{
				kind: "approval",
				toolCallId: "c6",
				toolName: "deploy",
				args: { env: "prod" },
				createdAt: 1000,
				expiresAt: 6000,
				orphaned: true,
			},
		]);
		expect(after.resolve("approval", "c6", { approve: true })).toBe("finished");
		expect(after.clearOrphaned()).toBe(1);
		expect(await store.listPending("s1")).toEqual([]);

		// A settled wait removes its record.
		before.resolve("approval", "c6", { approve: false });
		const fresh = await PendingInteractions.load("s1", { store });
		const waiting = fresh.wait({ kind: "client_tool", toolCallId: "c7", toolName: "t", args: {}, timeoutMs: 60_000 });
		fresh.resolve("client_tool", "c7", { content: "done" });
		await waiting;
		expect(await store.listPending("s1", { includeResolved: true })).toEqual([]);
	});
});
