/**
 * Rewind, regenerate and edit across a compaction (docs/branching.md): a session with a compaction
 * entry in its transcript (made by `POST /v1/sessions/:id/compact`, summary from a scripted model).
 * A rewind to a message before the compaction supersedes the compaction entry with the messages
 * after the cut; the live transcript ends at the cut, and the next run's context is the whole
 * transcript again, without the summary (the request the model receives is checked). A regenerate
 * after the compaction keeps it live (the next context is the summary, the kept messages and the
 * user message answered again), and an edit of a message the compaction summarised supersedes it.
 * On the memory and SQLite stores.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { createMemoryStore } from "../../../src/store/memory.js";
import { openSqliteStore } from "../../../src/store/sqlite/index.js";
import type { SessionStore } from "../../../src/store/types.js";
import { promptAndWait, scriptedModel, text400, textOf, transcript, usage } from "../../helpers/scripted-session.js";
import { startServer, type TestServer } from "../../helpers/server.js";

const model = scriptedModel("rewind-compaction-faux");
let server: TestServer | undefined;
const cleanups: (() => void)[] = [];
afterEach(async () => {
	await server?.close();
	server = undefined;
	model.requests.length = 0;
	for (const c of cleanups.splice(0)) c();
});

const stores: [string, () => SessionStore][] = [
	["memory", () => createMemoryStore()],
	[
		"sqlite",
		() => {
			const dir = mkdtempSync(join(tmpdir(), "wh-rewind-compaction-"));
			const store = openSqliteStore({ path: join(dir, "db.sqlite") });
			cleanups.push(() => rmSync(dir, { recursive: true, force: true }));
			cleanups.unshift(() => void store.close());
			return store;
		},
	],
];

/** A new user message as the model is sent it. */
const userSent = (text: string) => ({ role: "user", content: [{ type: "text", text }], timestamp: expect.any(Number) });

/**
 * Two turns, a manual compaction that keeps the second answer (wh-3), then a third turn:
 * wh-0 U1, wh-1 A1, wh-2 U2, wh-3 A2, wh-4 compaction, wh-5 U3, wh-6 A3. `more` scripts the calls after.
 */
async function compactedSession(makeStore: () => SessionStore, ...more: Parameters<typeof model.script>) {
	server = await startServer({ store: makeStore(), models: [model.faux.getModel()] });
	const s = server;
	const id = (await s.request("POST", "/v1/sessions", { body: { model: model.spec } })).body.id as string;
	model.script(
		{ content: text400("A1"), usage: usage(300) },
		{ content: text400("A2"), usage: usage(500) },
		{ content: "THE SUMMARY", usage: usage(120) },
		{ content: "A3", usage: usage(400) },
		...more,
	);
	await promptAndWait(s, id, text400("U1"));
	await promptAndWait(s, id, text400("U2"));
	const compacted = await s.request("POST", `/v1/sessions/${id}/compact`, { body: { keepRecentTokens: 100 } });
	expect(compacted.status, JSON.stringify(compacted.body)).toBe(200);
	expect(compacted.body).toMatchObject({ messageIndex: 4, message: { role: "compaction", firstKeptIndex: 3 } });
	await promptAndWait(s, id, "U3");
	const before = await transcript(s, id);
	expect(before.map((m) => m.role)).toEqual([
		"user",
		"assistant",
		"user",
		"assistant",
		"compaction",
		"user",
		"assistant",
	]);
	// The third turn's context was the summary and the kept answer: the compaction is in effect.
	expect(model.requests[3]!.messages).toEqual([
		{
			role: "user",
			content: [{ type: "text", text: expect.stringContaining("THE SUMMARY") }],
			timestamp: expect.any(Number),
		},
		before[3],
		before[5],
	]);
	return { s, id, before };
}

describe.each(stores)("branching across a compaction (%s store)", (_name, makeStore) => {
	it("a rewind before the compaction supersedes it; the next run's context is the whole transcript again", async () => {
		const { s, id, before } = await compactedSession(makeStore, { content: "A4", usage: usage(600) });

		const rewound = await s.request("POST", `/v1/sessions/${id}/rewind`, { body: { toMessageId: "wh-3" } });
		expect(rewound.status, JSON.stringify(rewound.body)).toBe(200);
		expect(rewound.body).toMatchObject({
			messageCount: 4,
			branch: { branch: 1, fromMessageId: "wh-4", messageCount: 3 },
		});
		// The compaction entry went into the superseded branch, with the turn after it.
		expect(rewound.body.branch.messages).toEqual(before.slice(4));
		expect(rewound.body.branch.messages[0]).toMatchObject({ role: "compaction", summary: "THE SUMMARY" });
		expect(await transcript(s, id)).toEqual(before.slice(0, 4));
		const branches = (await s.request("GET", `/v1/sessions/${id}/branches`)).body.branches;
		expect(branches).toEqual([
			expect.objectContaining({ branch: 1, fromMessageId: "wh-4", messages: before.slice(4) }),
		]);

		// The next run sends everything up to the cut (no summary: its compaction is superseded).
		await promptAndWait(s, id, "U4");
		expect(model.requests).toHaveLength(5);
		expect(model.requests[4]!.messages).toEqual([...before.slice(0, 4), userSent("U4")]);
		expect(model.requests[4]!.messages.some((m) => textOf(m).includes("THE SUMMARY"))).toBe(false);
		const after = await transcript(s, id);
		expect(after.map((m) => m.role)).toEqual(["user", "assistant", "user", "assistant", "user", "assistant"]);
		expect(after.slice(0, 4)).toEqual(before.slice(0, 4));
		expect(after.slice(4).map(textOf)).toEqual(["U4", "A4"]);
		const page = (await s.request("GET", `/v1/sessions/${id}/messages?includeSuperseded=true`)).body;
		expect(page.total).toBe(6);
		expect(page.superseded).toEqual([
			expect.objectContaining({ branch: 1, fromMessageId: "wh-4", messages: before.slice(4) }),
		]);
	});

	it("a regenerate after the compaction keeps it; an edit of a summarised message supersedes it", async () => {
		const { s, id, before } = await compactedSession(
			makeStore,
			{ content: "A3 again", usage: usage(450) },
			{ content: "A2 edited", usage: usage(350) },
		);

		const regen = await s.request("POST", `/v1/sessions/${id}/regenerate`);
		expect(regen.status, JSON.stringify(regen.body)).toBe(202);
		await s.app.wheelhouse.sessions.get(id, null).waitForIdle();
		// Only the answer after the compaction is superseded; the summary is still the context.
		expect(model.requests[4]!.messages).toEqual(model.requests[3]!.messages);
		const regenerated = await transcript(s, id);
		expect(regenerated.slice(0, 6)).toEqual(before.slice(0, 6));
		expect(regenerated).toHaveLength(7);
		expect(textOf(regenerated[6])).toBe("A3 again");

		// Editing U2, which the compaction summarised: the cut is before it, so the compaction goes too.
		const edit = await s.request("PATCH", `/v1/sessions/${id}/messages/wh-2`, { body: { content: "U2 edited" } });
		expect(edit.status, JSON.stringify(edit.body)).toBe(202);
		await s.app.wheelhouse.sessions.get(id, null).waitForIdle();
		expect(model.requests[5]!.messages).toEqual([...before.slice(0, 2), userSent("U2 edited")]);
		const edited = await transcript(s, id);
		expect(edited.map((m) => m.role)).toEqual(["user", "assistant", "user", "assistant"]);
		expect(edited.slice(2).map(textOf)).toEqual(["U2 edited", "A2 edited"]);
		const branches = (await s.request("GET", `/v1/sessions/${id}/branches`)).body.branches;
		expect(branches.map((b: any) => [b.branch, b.fromMessageId, b.messages.map((m: any) => m.role)])).toEqual([
			[1, "wh-6", ["assistant"]],
			[2, "wh-2", ["user", "assistant", "compaction", "user", "assistant"]],
		]);
		expect(branches[0].messages).toEqual(before.slice(6));
		expect(branches[1].messages).toEqual(regenerated.slice(2));
	});
});
