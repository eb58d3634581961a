/**
 * A released migration never changes: databases on users' volumes ran its exact text (SQLite keeps
 * the DDL in `sqlite_master`), and both stores build some of theirs from shared DDL
 * (`src/store/sql/shared-ddl.ts`), so an edit there would change migrations of both. Each released
 * migration's SQL is pinned here by a digest; a new migration adds its line, no line ever changes.
 */
import { createHash } from "node:crypto";
import { describe, expect, it } from "vitest";
import { MIGRATIONS as PG_MIGRATIONS } from "../../src/store/postgres/migrations.js";
import { MIGRATIONS as SQLITE_MIGRATIONS } from "../../src/store/sqlite/migrations.js";

const digest = (sql: string) => createHash("sha256").update(sql).digest("hex").slice(0, 16);

const SQLITE: Record<number, string> = {
	1: "3bbaed3d41181b4f",
	2: "465df8c4a35df534",
	3: "f8ffe0371dbca5be",
	4: "e3b0c44298fc1c14",
	5: "21b48aefea30b810",
	6: "5aeb834f037ca673",
	7: "cb5973c0e51f4ee4",
	8: "d09b557d7fab61f8",
	9: "28e80acc43aef1b5",
	10: "982d461173572e57",
	11: "87ef548b26e35552",
	12: "f70a6b11c7f64fd8",
	13: "2bc5c5f9356b7e39",
	14: "85f674ead8b8d909",
	15: "7bc8ad4749679a9c",
	16: "b92559706f3a4ef7",
};

const POSTGRES: Record<number, string> = {
	1: "7f3af891aca20979",
	2: "8f6a31c574a57dc8",
	3: "270acde03363a817",
	4: "f70a6b11c7f64fd8",
	5: "0f323f08c839f6b1",
	6: "44dd65d320062649",
	7: "7bc8ad4749679a9c",
	8: "75985dce59489017",
};

describe("released migrations", () => {
	for (const [engine, migrations, pinned] of [
		["SQLite", SQLITE_MIGRATIONS, SQLITE],
		["PostgreSQL", PG_MIGRATIONS, POSTGRES],
	] as const) {
		it(`${engine}: every released migration runs the SQL it was released with`, () => {
			const released = migrations.filter((m) => pinned[m.version] !== undefined);
			expect(released.map((m) => m.version)).toEqual(Object.keys(pinned).map(Number));
			expect(Object.fromEntries(released.map((m) => [m.version, digest(m.sql)]))).toEqual(pinned);
		});
	}
});
