/**
 * SQLite schema 16 on a database of schema 14: migrating fills `session_metadata.shared_tenant`
 * from the sessions shared with a tenant, so a caller of that tenant finds them by a metadata pair
 * (the list reads that half from the pairs' shared-tenant index), and the triggers keep it after.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import Database from "better-sqlite3";
import { afterEach, beforeEach, expect, it } from "vitest";
import { openSqliteStore } from "../../src/store/sqlite/index.js";
import { migrate } from "../../src/store/sqlite/migrations.js";
import type { NewSession } from "../../src/store/types.js";

let dir: string;
beforeEach(() => {
	dir = mkdtempSync(join(tmpdir(), "wh-v16-"));
});
afterEach(() => rmSync(dir, { recursive: true, force: true }));

function session(id: string, ownerId: string, visibility: "owner" | "tenant", createdAt: number): NewSession {
	return {
		id,
		ownerId,
		tenant: "org-a",
		visibility,
		model: "faux/echo",
		systemPrompt: "",
		thinkingLevel: "off",
		tools: [],
		toolExecution: "parallel",
		steeringMode: "one-at-a-time",
		followUpMode: "one-at-a-time",
		metadata: { team: "red" },
		createdAt,
	};
}

it("backfills the shared sessions' tenant into session_metadata; the tenant's callers find them by a pair", async () => {
	// Rows as the current store writes them, copied into a database left at schema 14 (its triggers
	// write the pairs without a shared tenant).
	const source = openSqliteStore({ path: join(dir, "source.db") });
	await source.createSession(session("bob-shared", "bob", "tenant", 100));
	await source.createSession(session("bob-private", "bob", "owner", 101));
	await source.createSession(session("alice-own", "alice", "owner", 102));
	await source.close();
	const path = join(dir, "v14.db");
	const old = new Database(path);
	migrate(old, path, 14);
	const rows = new Database(join(dir, "source.db"), { readonly: true })
		.prepare("SELECT * FROM sessions")
		.all() as Record<string, unknown>[];
	for (const row of rows) {
		const columns = Object.keys(row);
		old
			.prepare(`INSERT INTO sessions (${columns.join(", ")}) VALUES (${columns.map((c) => `@${c}`).join(", ")})`)
			.run(row);
	}
	expect(old.prepare("SELECT max(version) FROM schema_version").pluck().get()).toBe(14);
	old.close();

	const store = openSqliteStore({ path });
	const red = async (ownerId: string) =>
		(await store.listSessions({ ownerId, tenant: "org-a", filter: { metadata: { team: "red" } } })).sessions.map(
			(s) => s.id,
		);
	expect(await red("alice")).toEqual(["bob-shared", "alice-own"]);
	expect(await red("bob")).toEqual(["bob-shared", "bob-private"]);
	// New sessions get theirs from the insert trigger.
	await store.createSession(session("carol-shared", "carol", "tenant", 103));
	expect(await red("alice")).toEqual(["bob-shared", "alice-own", "carol-shared"]);
	await store.close();
	const check = new Database(path, { readonly: true });
	expect(check.prepare("SELECT session_id, shared_tenant FROM session_metadata ORDER BY session_id").all()).toEqual([
		{ session_id: "alice-own", shared_tenant: null },
		{ session_id: "bob-private", shared_tenant: null },
		{ session_id: "bob-shared", shared_tenant: "org-a" },
		{ session_id: "carol-shared", shared_tenant: "org-a" },
	]);
	check.close();
});
