/**
 * docs/upgrading.md keeps pace with the migrations: a note for every SQLite and PostgreSQL
 * migration (and none for a migration that does not exist), and the table's line for the code on
 * `main` names the latest schema versions.
 */
import { readFileSync } from "node:fs";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { MIGRATIONS as PG_MIGRATIONS } from "../../src/store/postgres/migrations.js";
import { MIGRATIONS as SQLITE_MIGRATIONS } from "../../src/store/sqlite/migrations.js";
import { repoRoot } from "../helpers/main-process.js";

const doc = readFileSync(path.join(repoRoot, "docs", "upgrading.md"), "utf8");

/** The versions of the `### <engine> <n>` headings, in the order written. */
function notes(engine: string): number[] {
	return [...doc.matchAll(new RegExp(`^### ${engine} (\\d+)$`, "gm"))].map((m) => Number(m[1]));
}

describe("docs/upgrading.md", () => {
	it("has a note for every SQLite migration, in order", () => {
		expect(notes("SQLite")).toEqual(SQLITE_MIGRATIONS.map((m) => m.version));
	});

	it("has a note for every PostgreSQL migration, in order", () => {
		expect(notes("PostgreSQL")).toEqual(PG_MIGRATIONS.map((m) => m.version));
	});

	it("gives the latest schema versions for the unreleased code", () => {
		const row = /^\| unreleased[^|]*\| (\d+) \| (\d+) \|$/m.exec(doc);
		expect(row, "the table's unreleased line").not.toBeNull();
		expect(Number(row![1])).toBe(SQLITE_MIGRATIONS.at(-1)!.version);
		expect(Number(row![2])).toBe(PG_MIGRATIONS.at(-1)!.version);
	});
});
