/**
 * The PostgreSQL the tests use (127.0.0.1:5432, database `test`, user `postgres`, trust auth; or
 * `TEST_DATABASE_URL`). Where it is not reachable the tests skip with one line; with
 * `TEST_REQUIRE_ALL=1` (CI) that is an error instead. Each test file works in schemas of its own,
 * named after the file and the process, and drops them when it is done.
 */
import { randomBytes } from "node:crypto";
import pg from "pg";
import { afterAll } from "vitest";

export const PG_URL = process.env.TEST_DATABASE_URL ?? "postgres://postgres@127.0.0.1:5432/test";

let reachable: Promise<boolean> | undefined;

async function probe(): Promise<boolean> {
	const client = new pg.Client({ connectionString: PG_URL, connectionTimeoutMillis: 2000 });
	client.on("error", () => undefined);
	try {
		await client.connect();
		await client.query("SELECT 1");
		return true;
	} catch {
		return false;
	} finally {
		await client.end().catch(() => undefined);
	}
}

/** Whether PostgreSQL answers; throws when it does not and `TEST_REQUIRE_ALL=1`. */
export async function havePostgres(): Promise<boolean> {
	reachable ??= probe();
	const ok = await reachable;
	if (!ok && process.env.TEST_REQUIRE_ALL === "1") {
		throw new Error(`TEST_REQUIRE_ALL=1 and no PostgreSQL at ${PG_URL} (start it or set TEST_DATABASE_URL)`);
	}
	return ok;
}

/** The skip line of a test that needs PostgreSQL. */
export const NO_POSTGRES = `skipped: no PostgreSQL at ${PG_URL} (set TEST_DATABASE_URL)`;

/** Runs a statement on the test database (setup and inspection). */
export async function pgQuery<R extends pg.QueryResultRow = pg.QueryResultRow>(
	sql: string,
	params: unknown[] = [],
): Promise<R[]> {
	const client = new pg.Client({ connectionString: PG_URL });
	await client.connect();
	try {
		return (await client.query<R>(sql, params)).rows;
	} finally {
		await client.end();
	}
}

/**
 * A family of schema names for one test file (`next()` gives a fresh one each call); every schema
 * of the family is dropped after the file's tests.
 */
export function testSchemas(file: string): { next(): string } {
	const base = `t_${file
		.replace(/[^a-z0-9]/gi, "_")
		.toLowerCase()
		.slice(0, 24)}_${process.pid}_${randomBytes(3).toString("hex")}`;
	let n = 0;
	afterAll(async () => {
		if (!(await reachable)) return;
		const rows = await pgQuery<{ nspname: string }>("SELECT nspname FROM pg_namespace WHERE nspname LIKE $1 || '%'", [
			base,
		]);
		// In batches: one DROP of every schema of a long suite locks more objects than the server's lock table holds.
		const names = rows.map((r) => r.nspname);
		for (let i = 0; i < names.length; i += 10) {
			await pgQuery(`DROP SCHEMA IF EXISTS ${names.slice(i, i + 10).join(", ")} CASCADE`);
		}
	}, 120_000);
	return { next: () => `${base}_${n++}` };
}
