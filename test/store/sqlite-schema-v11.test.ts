/**
 * SQLite schema 11 on old and frozen databases: migrating the frozen v10 sample fills
 * `session_metadata` from the sessions' metadata (the filtered list finds them); the frozen v11
 * sample opens with its schedule, fires and lease, and its metadata triggers go on working.
 */
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import Database from "better-sqlite3";
import { afterEach, beforeEach, expect, it } from "vitest";
import { openSqliteStore } from "../../src/store/sqlite/index.js";

let dir: string;
beforeEach(() => {
	dir = mkdtempSync(join(tmpdir(), "wh-v11-"));
});
afterEach(() => rmSync(dir, { recursive: true, force: true }));

function fixture(version: number): string {
	const path = join(dir, `v${version}.db`);
	const db = new Database(path);
	db.exec(readFileSync(join(import.meta.dirname, "fixtures", `schema-v${version}.sql`), "utf8"));
	db.close();
	return path;
}

it("migrates the v10 sample: its sessions' metadata is searchable", async () => {
	const store = openSqliteStore({ path: fixture(10) });
	const page = await store.listSessions({ filter: { metadata: { facade: "openai.responses" } } });
	expect(page.sessions.map((s) => s.id)).toContain("v10-responses");
	expect((await store.listSessions({ filter: { metadata: { facade: "nope" } } })).sessions).toEqual([]);
	expect(await store.schedules.listSchedules()).toEqual({ schedules: [] });
	await store.close();
});

it("opens the v11 sample: schedule, fires and lease are there; metadata stays in step", async () => {
	const store = openSqliteStore({ path: fixture(11) });
	expect(await store.schedules.getSchedule("sch_v11")).toMatchObject({
		cron: "0 9 * * 1-5",
		timezone: "America/New_York",
		missed: "once",
		state: "active",
		nextFireAt: 1_770_040_800_000,
		lastFireAt: 1_769_968_800_000,
	});
	expect((await store.schedules.listFires("sch_v11")).map((f) => [f.kind, f.outcome, f.sessionId])).toEqual([
		["catch_up", "fired", "v11-scheduled"],
		["tick", "missed", null],
	]);
	// The lease row is another holder's, long expired: taken over with the next token.
	expect(await store.schedules.takeSchedulerLease("someone-else", 1000)).toBe(2);
	const ops = await store.listSessions({ ownerId: "owner-v11", filter: { metadata: { team: "ops" } } });
	expect(ops.sessions.map((s) => s.id)).toEqual(["v11-scheduled"]);
	// A config change moves the session's pairs (the update trigger); a deletion removes them.
	await store.updateSession("v11-other", { metadata: { team: "ops" } }, 1_770_000_001_000);
	expect(
		(await store.listSessions({ ownerId: "owner-v11", filter: { metadata: { team: "ops" } } })).sessions.map(
			(s) => s.id,
		),
	).toEqual(["v11-scheduled", "v11-other"]);
	expect((await store.listSessions({ filter: { metadata: { team: "sales" } } })).sessions).toEqual([]);
	await store.deleteSession("v11-scheduled");
	expect((await store.listSessions({ filter: { metadata: { "wheelhouse.schedule": "sch_v11" } } })).sessions).toEqual(
		[],
	);
	await store.close();
});
