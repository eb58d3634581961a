/**
 * Rewind, regenerate and the edit of a user message against a real server process, on SQLite and
 * on PostgreSQL: three user turns, a fork after the second (4 messages, the parent identical, both
 * go on); a rewind then a prompt (the new branch live, the old one listed as superseded); a
 * regenerate that a `Last-Event-ID` resume follows exactly, and a snapshot that shows the rewound
 * transcript; an edit; the event log read back after a restart, byte for byte what the live stream
 * carried (SQLite refers to stored messages from its log: the rewind must not change old events);
 * and every one of the four refused with 409 while a run is active.
 */
import { execFile } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { promisify } from "node:util";
import { afterAll, afterEach, describe, expect, it } from "vitest";
import { waitUntil, words } from "../../helpers/cluster.js";
import { docBlock } from "../../helpers/doc-blocks.js";
import { json, type MainProcess, startMain, stopAll } from "../../helpers/main-process.js";
import { havePostgres, PG_URL, testSchemas } from "../../helpers/postgres.js";
import { openSse, type SseEvent, type SseReader } from "../../helpers/sse.js";

const pgOk = await havePostgres();
const schemas = testSchemas("rewind");
const dir = mkdtempSync(path.join(tmpdir(), "wh-rewind-"));
afterEach(() => stopAll());
afterAll(() => rmSync(dir, { recursive: true, force: true }));

interface Backend {
	name: string;
	skip: boolean;
	/** Options of `startMain` for one store (a new one per call of `make`). */
	make(): { db: string; env?: Record<string, string> };
}

let dbCount = 0;
const backends: Backend[] = [
	{ name: "SQLite", skip: false, make: () => ({ db: path.join(dir, `rewind-${++dbCount}.db`) }) },
	{
		name: "PostgreSQL",
		skip: !pgOk,
		make: () => ({
			db: "unused.db",
			env: {
				WHEELHOUSE_STORE: "postgres",
				WHEELHOUSE_DATABASE_URL: PG_URL,
				WHEELHOUSE_DATABASE_SCHEMA: schemas.next(),
				WHEELHOUSE_DATABASE_POOL_SIZE: "4",
			},
		}),
	},
];

const text = (m: any): string => (typeof m.content === "string" ? m.content : m.content[0].text);

async function idle(base: string, id: string): Promise<void> {
	await waitUntil("the session idle", async () => {
		const s = (await json(`${base}/v1/sessions/${id}`)).body;
		return s.status === "idle" && !s.isStreaming ? true : undefined;
	});
}

async function turn(base: string, id: string, message: string): Promise<void> {
	const res = await json(`${base}/v1/sessions/${id}/prompt`, "POST", { message });
	expect(res.status, JSON.stringify(res.body)).toBe(202);
	await idle(base, id);
}

async function transcript(base: string, id: string): Promise<any[]> {
	return (await json(`${base}/v1/sessions/${id}/messages?limit=1000`)).body.messages;
}

/**
 * The events of `reader` a log keeps, as id, type and raw data: those with an id (the snapshot has
 * none), but the deltas of a message (the SQL stores keep them only while it streams).
 */
function logged(events: SseEvent[]): { id: number; event: string; data: string }[] {
	return events
		.filter((e) => e.id !== undefined && e.event !== "message_update" && e.event !== "session_snapshot")
		.map((e) => ({ id: e.id!, event: e.event, data: JSON.stringify(e.data) }));
}

describe.each(backends)("branching on $name", (backend) => {
	it.skipIf(backend.skip)(
		"fork, rewind, regenerate and edit; superseded branches listed; resume exact across the change",
		{ timeout: 120_000 },
		async () => {
			const options = backend.make();
			let server: MainProcess = await startMain(options);
			let base = server.url;
			const id = (await json(`${base}/v1/sessions`, "POST", { model: "faux/echo" })).body.id as string;
			const live: SseReader = await openSse(`${base}/v1/sessions/${id}/events`);
			for (const m of ["one", "two", "three"]) await turn(base, id, m);
			const three = await transcript(base, id);
			expect(three.map(text)).toEqual(["one", "one", "two", "two", "three", "three"]);

			// Fork after the second turn: 4 messages; the parent identical; both go on.
			const fork = await json(`${base}/v1/sessions/${id}/fork`, "POST", { atMessageId: "wh-3" });
			expect(fork.status, JSON.stringify(fork.body)).toBe(201);
			expect(fork.body.messageCount).toBe(4);
			expect(await transcript(base, id)).toEqual(three);
			await turn(base, fork.body.id, "fork goes on");
			expect((await transcript(base, fork.body.id)).map(text)).toEqual([
				"one",
				"one",
				"two",
				"two",
				"fork goes on",
				"fork goes on",
			]);
			expect(await transcript(base, id)).toEqual(three);

			// Rewind to the second answer: the third turn is superseded, kept as branch 1.
			const rewound = await json(`${base}/v1/sessions/${id}/rewind`, "POST", { toMessageId: "wh-3" });
			expect(rewound.status, JSON.stringify(rewound.body)).toBe(200);
			expect(rewound.body).toMatchObject({
				messageCount: 4,
				branch: { branch: 1, fromMessageId: "wh-4", messageCount: 2 },
			});
			expect(rewound.body.branch.messages).toEqual(three.slice(4));
			expect((await json(`${base}/v1/sessions/${id}`)).body).toMatchObject({ messageCount: 4, status: "idle" });
			await live.waitFor((e) => e.event === "transcript_rewound", 10_000);

			// A prompt goes on from the cut: the new branch is live, the old one listed as superseded.
			await turn(base, id, "four");
			const afterPrompt = await transcript(base, id);
			expect(afterPrompt.map(text)).toEqual(["one", "one", "two", "two", "four", "four"]);
			expect(afterPrompt.slice(0, 4)).toEqual(three.slice(0, 4));
			const page = (await json(`${base}/v1/sessions/${id}/messages?includeSuperseded=true`)).body;
			expect(page.total).toBe(6);
			expect(page.superseded).toEqual([
				expect.objectContaining({ branch: 1, fromMessageId: "wh-4", messages: three.slice(4) }),
			]);
			expect((await json(`${base}/v1/sessions/${id}/messages`)).body.superseded).toBeUndefined();

			// Regenerate: the last answer is superseded and answered again; a resume from before it
			// gets exactly what the live stream got.
			await waitUntil("the live stream caught up", async () => {
				const last = live.ids().at(-1);
				return last !== undefined && live.events.at(-1)?.event === "agent_end" ? last : undefined;
			});
			const before = live.ids().at(-1)!;
			const regen = await json(`${base}/v1/sessions/${id}/regenerate`, "POST");
			expect(regen.status, JSON.stringify(regen.body)).toBe(202);
			expect(regen.body.firstEventId).toBe(before + 1);
			const regenEnd = await live.waitFor((e) => e.event === "agent_end" && e.id! > before, 10_000);
			const resumed = await openSse(`${base}/v1/sessions/${id}/events`, {
				headers: { "last-event-id": String(before) },
			});
			await resumed.waitFor((e) => e.id === regenEnd.id, 10_000);
			const liveAfter = logged(live.events).filter((e) => e.id > before && e.id <= regenEnd.id!);
			expect(logged(resumed.events).filter((e) => e.id <= regenEnd.id!)).toEqual(liveAfter);
			expect(liveAfter[0]).toMatchObject({ id: before + 1, event: "transcript_rewound" });
			expect(JSON.parse(liveAfter[0]!.data)).toMatchObject({
				messageCount: 5,
				fromMessageId: "wh-5",
				branch: 2,
				superseded: 1,
				reason: "regenerate",
			});
			expect(liveAfter.map((e) => e.event)).toContain("agent_start");
			resumed.close();
			const regenerated = await transcript(base, id);
			expect(regenerated).toHaveLength(6);
			expect(regenerated.slice(0, 5)).toEqual(afterPrompt.slice(0, 5));
			expect(regenerated[5]).not.toEqual(afterPrompt[5]);
			// A late joiner's snapshot shows the rewound-and-regenerated session.
			const joiner = await openSse(`${base}/v1/sessions/${id}/events`);
			const snapshot = await joiner.waitFor((e) => e.event === "session_snapshot");
			expect(snapshot.data.state).toMatchObject({ messageCount: 6 });
			joiner.close();

			// Edit the second user message: it and what followed become branch 3; the new text is prompted.
			const notUser = await json(`${base}/v1/sessions/${id}/messages/wh-3`, "PATCH", { content: "x" });
			expect(notUser.status).toBe(404);
			expect(notUser.body.error.code).toBe("MESSAGE_NOT_FOUND");
			const edit = await json(`${base}/v1/sessions/${id}/messages/wh-2`, "PATCH", { content: "TWO" });
			expect(edit.status, JSON.stringify(edit.body)).toBe(202);
			await idle(base, id);
			expect((await transcript(base, id)).map(text)).toEqual(["one", "one", "TWO", "TWO"]);
			const branches = (await json(`${base}/v1/sessions/${id}/branches`)).body.branches;
			expect(branches.map((b: any) => [b.branch, b.fromMessageId, b.messages.map(text)])).toEqual([
				[1, "wh-4", ["three", "three"]],
				[2, "wh-5", ["four"]],
				[3, "wh-2", ["two", "two", "four", "four"]],
			]);
			expect(branches[1].messages[0]).toEqual(afterPrompt[5]);
			expect(branches[2].messages).toEqual(regenerated.slice(2));
			await live.waitFor((e) => e.event === "agent_end" && e.id! > regenEnd.id!, 10_000);
			const seen = logged(live.events);
			live.close();

			// After a restart the log reads back exactly as it was streamed, rewinds and all.
			server.child.kill("SIGTERM");
			expect(await server.exited, server.output()).toEqual({ code: 0, signal: null });
			server = await startMain({ ...options, port: server.port });
			base = server.url;
			const replay = await openSse(`${base}/v1/sessions/${id}/events`, { headers: { "last-event-id": "0" } });
			await replay.waitFor((e) => e.id === seen.at(-1)!.id, 10_000);
			expect(logged(replay.events)).toEqual(seen);
			replay.close();
			expect((await json(`${base}/v1/sessions/${id}/branches`)).body.branches).toEqual(branches);
			await turn(base, id, "after restart");
			expect((await transcript(base, id)).map(text)).toEqual([
				"one",
				"one",
				"TWO",
				"TWO",
				"after restart",
				"after restart",
			]);
		},
	);

	it.skipIf(backend.skip)(
		"refuses all four on a running session; bad ids and nothing to regenerate",
		{
			timeout: 60_000,
		},
		async () => {
			const options = backend.make();
			const server = await startMain({ ...options, env: { ...options.env, WHEELHOUSE_FAUX_DELAY_MS: "10" } });
			const base = server.url;
			const id = (await json(`${base}/v1/sessions`, "POST", { model: "faux/echo" })).body.id as string;
			const nothing = await json(`${base}/v1/sessions/${id}/regenerate`, "POST");
			expect(nothing.status).toBe(422);
			expect(nothing.body.error.code).toBe("NOTHING_TO_REGENERATE");
			const unknown = await json(`${base}/v1/sessions/${id}/rewind`, "POST", { toMessageId: "wh-0" });
			expect(unknown.status).toBe(404);
			expect(unknown.body.error.message).toMatch(/body\.toMessageId/);

			const run = await json(`${base}/v1/sessions/${id}/prompt`, "POST", { message: words(300) });
			expect(run.status).toBe(202);
			for (const [method, route, body] of [
				["POST", "fork", {}],
				["POST", "rewind", { toMessageId: "wh-0" }],
				["POST", "regenerate", undefined],
				["PATCH", "messages/wh-0", { content: "edited" }],
			] as const) {
				const busy = await json(`${base}/v1/sessions/${id}/${route}`, method, body);
				expect(busy.status, `${route}: ${JSON.stringify(busy.body)}`).toBe(409);
				expect(busy.body.error.code).toBe("AGENT_BUSY");
			}
			await idle(base, id);
			expect((await transcript(base, id)).map(text)).toEqual([words(300), words(300)]);
			expect((await json(`${base}/v1/sessions/${id}/branches`)).body.branches).toEqual([]);
		},
	);
});

it("docs/branching.md: the rewind, prompt and regenerate lines run as pasted", { timeout: 60_000 }, async () => {
	const server = await startMain({ db: path.join(dir, "docs-example.db") });
	const id = (await json(`${server.url}/v1/sessions`, "POST", { model: "faux/echo" })).body.id as string;
	for (const m of ["one", "two", "three"]) await turn(server.url, id, m);
	const block = docBlock("docs/branching.md", "sh", "/regenerate").code;
	const { stdout } = await promisify(execFile)(
		"bash",
		["-c", `set -e\n${block.replaceAll("localhost:3000", new URL(server.url).host)}`],
		{ env: { PATH: process.env.PATH, ID: id }, timeout: 30_000 },
	);
	// The last line is the branch listing, after the regenerate's run ended.
	await idle(server.url, id);
	const listed = JSON.parse(stdout.trim().split("\n").at(-1)!).branches;
	expect(listed.map((b: any) => [b.branch, b.messages.map(text)])).toEqual([
		[1, ["three", "three"]],
		[2, ["four"]],
	]);
	expect((await transcript(server.url, id)).map(text)).toEqual(["one", "one", "two", "two", "four", "four"]);
});
