/**
 * Session records are copied, never shared: `copySessionRecord` (what the memory store hands out
 * and keeps) and the stores' session reads and writes. A record with every field set — nested
 * ones included — is copied, every value of one side is changed, and the other side must not
 * move. The fixtures are typed so that a field added to `SessionRecord` must be set here.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { createMemoryStore } from "../../src/store/memory.js";
import { copySessionRecord, NESTED_RECORD_FIELDS } from "../../src/store/shared.js";
import { openSqliteStore } from "../../src/store/sqlite/index.js";
import type { NewSession, SessionConfig, SessionRecord, SessionStore } from "../../src/store/types.js";

/** `T` with every field, also of nested objects, required: a fixture of it sets everything. */
type Complete<T> = T extends readonly (infer U)[]
	? Complete<U>[]
	: T extends object
		? { [K in keyof T]-?: Complete<T[K]> }
		: T;

const fullConfig: Complete<SessionConfig> = {
	model: "faux/echo",
	systemPrompt: "be brief",
	thinkingLevel: "low",
	tools: ["calculate", "get_current_time"],
	toolExecution: "sequential",
	steeringMode: "all",
	followUpMode: "one-at-a-time",
	metadata: { team: "x", profile: "p" },
	clientTools: [
		{
			name: "pick_color",
			description: "Ask the user to pick a color",
			parameters: {
				type: "object",
				properties: { palette: { type: "array", items: { type: "string" }, default: ["red", "blue"] } },
				required: ["palette"],
			},
			approval: "always",
		},
	],
	toolApprovals: { pick_color: "always", "files__*": "never" },
	compaction: { enabled: true, reserveTokens: 1000, keepRecentTokens: 2000 },
	budget: { maxTokens: 10_000, maxCostUsd: 1.5, maxTurnsPerRun: 4 },
	onInterrupt: "stop",
};

function fullRecord(): Complete<SessionRecord> {
	return {
		id: "s1",
		ownerId: "owner-a",
		tenant: "org-a",
		visibility: "tenant",
		...structuredClone(fullConfig),
		createdAt: 1000,
		updatedAt: 1001,
		lastActiveAt: 1002,
		status: "interrupted",
		interruptedAt: 1003,
		currentRunId: "r1",
		usage: {
			input: 1,
			output: 2,
			cacheRead: 3,
			cacheWrite: 4,
			totalTokens: 10,
			cost: { input: 0.1, output: 0.2, cacheRead: 0.3, cacheWrite: 0.4, total: 1 },
		},
		messageCount: 5,
		lastEventId: 6,
	};
}

/** Every object and array reachable from `value` (itself included). */
function objectsOf(value: unknown, into = new Set<object>()): Set<object> {
	if (typeof value !== "object" || value === null || into.has(value)) return into;
	into.add(value);
	for (const v of Object.values(value)) objectsOf(v, into);
	return into;
}

/** A different value of the same kind. */
function changed(v: unknown): unknown {
	if (typeof v === "string") return `${v}!`;
	if (typeof v === "number") return v + 1;
	if (typeof v === "boolean") return !v;
	return "changed";
}

/** Changes every value reachable from `value` in place, and adds an element or key to every array and object. */
function mutateEverything(value: object): void {
	const entries = value as Record<string, unknown>;
	for (const key of Object.keys(entries)) {
		const v = entries[key];
		if (typeof v === "object" && v !== null) mutateEverything(v);
		else entries[key] = changed(v);
	}
	if (Array.isArray(value)) value.push("added");
	else entries.added = "added";
}

describe("copySessionRecord", () => {
	it("copies every field", () => {
		const record = fullRecord();
		const copy = copySessionRecord(record);
		expect(copy).toStrictEqual(record);
		expect(Object.keys(copy).sort()).toEqual(Object.keys(record).sort());
	});

	it("shares no object with the original: every nested field is copied", () => {
		const record = fullRecord();
		for (const field of NESTED_RECORD_FIELDS) expect(typeof record[field], field).toBe("object");
		const copy = copySessionRecord(record);
		const originals = objectsOf(record);
		const shared = [...objectsOf(copy)].filter((o) => originals.has(o));
		expect(shared).toEqual([]);
	});

	it("changing every value of the copy leaves the original as it was, and the reverse", () => {
		const record = fullRecord();
		const copy = copySessionRecord(record);
		mutateEverything(copy);
		expect(record).toStrictEqual(fullRecord());
		expect(copy).not.toEqual(fullRecord());

		const original = fullRecord();
		const held = copySessionRecord(original);
		mutateEverything(original);
		expect(held).toStrictEqual(fullRecord());
	});

	it("keeps an own `__proto__` key of a client tool's schema as data, not as the copy's prototype", () => {
		const record = fullRecord();
		const parameters = JSON.parse('{"type":"object","__proto__":{"polluted":true}}') as Record<string, unknown>;
		record.clientTools[0]!.parameters = parameters;
		const copy = copySessionRecord(record);
		const copied = copy.clientTools[0]!.parameters as Record<string, unknown>;
		expect(Object.getPrototypeOf(copied)).toBe(Object.prototype);
		expect(Object.hasOwn(copied, "__proto__")).toBe(true);
		expect(copied).toStrictEqual(parameters);
		expect(Object.getOwnPropertyDescriptor(copied, "__proto__")?.value).not.toBe(
			Object.getOwnPropertyDescriptor(parameters, "__proto__")?.value,
		);
	});
});

const dir = mkdtempSync(join(tmpdir(), "wheelhouse-record-copy-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));
let n = 0;

const stores: [string, () => SessionStore][] = [
	["memory", () => createMemoryStore()],
	["sqlite", () => openSqliteStore({ path: join(dir, `db-${n++}.db`) })],
];

/** A new session with every config field set. */
function fullSession(id: string): Complete<NewSession> {
	return {
		id,
		ownerId: "owner-a",
		tenant: "org-a",
		visibility: "tenant",
		...structuredClone(fullConfig),
		createdAt: 1000,
	};
}

describe.each(stores)("%s store: session records are copies", (_name, open) => {
	it("keeps nothing of what createSession was given, and hands out records nothing of the store shows through", async () => {
		const store = open();
		try {
			const given = fullSession("s1");
			const created = await store.createSession(given);
			const stored = structuredClone(created);
			mutateEverything(given);
			mutateEverything(created);
			expect(await store.getSession("s1")).toStrictEqual(stored);

			const read = (await store.getSession("s1"))!;
			mutateEverything(read);
			const listed = (await store.listSessions()).sessions[0]!;
			expect(listed).toStrictEqual(stored);
			mutateEverything(listed);
			expect(await store.getSession("s1")).toStrictEqual(stored);
		} finally {
			await store.close();
		}
	});

	it("later changes of the stored session do not show through a record a caller holds", async () => {
		const store = open();
		try {
			await store.createSession(fullSession("s1"));
			const held = (await store.getSession("s1"))!;
			const before = structuredClone(held);
			const patch: Partial<SessionConfig> = structuredClone(fullConfig);
			mutateEverything(patch);
			const updated = (await store.updateSession("s1", patch as Partial<SessionConfig>, 2000))!;
			expect(updated.clientTools).toEqual(patch.clientTools);
			mutateEverything(patch);
			expect((await store.getSession("s1"))?.clientTools).toEqual(updated.clientTools);
			await store.startRun("s1", "r1", 3000);
			store.endRun("s1", "r1", {
				status: "completed",
				endedAt: 3001,
				usage: { ...fullRecord().usage, cost: { ...fullRecord().usage.cost } },
			});
			store.appendEvent("s1", "agent_start", "{}", 3002);
			expect(held).toStrictEqual(before);
			expect(await store.getSession("s1")).not.toEqual(before);
		} finally {
			await store.close();
		}
	});
});
