/**
 * The PostgreSQL store's schema handling on a real database: a fresh schema is created and
 * migrated; a schema newer than this build, or one holding someone else's tables, is refused
 * without a single change; one store per schema unless in cluster mode (the instance-owner lock).
 */
import { afterEach, describe, expect, it } from "vitest";
import {
	LATEST_PG_SCHEMA_VERSION,
	openPostgresStore,
	type PostgresSessionStore,
} from "../../src/store/postgres/index.js";
import { MIGRATIONS, VERSION_TABLE } from "../../src/store/postgres/migrations.js";
import { havePostgres, NO_POSTGRES, PG_URL, pgQuery, testSchemas } from "../helpers/postgres.js";
import { newSession } from "./contract.js";

const schemas = testSchemas("schema");
const ok = await havePostgres();
const opened: PostgresSessionStore[] = [];
afterEach(async () => {
	for (const s of opened.splice(0)) await s.close();
});

async function open(schema: string, cluster = false): Promise<PostgresSessionStore> {
	const store = await openPostgresStore({ url: PG_URL, schema, poolSize: 2, cluster });
	opened.push(store);
	return store;
}

const tables = async (schema: string) =>
	(
		await pgQuery<{ table_name: string }>(
			"SELECT table_name FROM information_schema.tables WHERE table_schema = $1 ORDER BY table_name",
			[schema],
		)
	).map((r) => r.table_name);

describe.skipIf(!ok)("PostgreSQL store schema", () => {
	it("creates and migrates a fresh schema, and opens it again without migrating", async () => {
		const schema = schemas.next();
		const store = await open(schema);
		expect(store.schemaVersion).toBe(LATEST_PG_SCHEMA_VERSION);
		expect(await tables(schema)).toEqual(
			expect.arrayContaining([
				"sessions",
				"messages",
				"event_batches",
				"usage_daily",
				"webhook_outbox",
				"facade_records",
			]),
		);
		const versions = await pgQuery<{ version: number }>(
			`SELECT version FROM ${schema}.wheelhouse_schema_version ORDER BY version`,
		);
		// Every migration applied once, in one go.
		expect(versions.map((v) => v.version)).toEqual(Array.from({ length: LATEST_PG_SCHEMA_VERSION }, (_, i) => i + 1));
		await store.createSession(newSession("s1"));
		await store.close();
		const again = await open(schema);
		expect((await again.getSession("s1"))?.id).toBe("s1");
		// Opening again migrated nothing: still one row per migration.
		expect(await pgQuery(`SELECT version FROM ${schema}.wheelhouse_schema_version`)).toHaveLength(
			LATEST_PG_SCHEMA_VERSION,
		);
	});

	it("migrates a version-2 schema: its sessions get no tenant and stay visible to their owner only", async () => {
		const schema = schemas.next();
		const before = MIGRATIONS.filter((m) => m.version <= 2);
		await pgQuery(
			`CREATE SCHEMA ${schema}; SET search_path TO ${schema}; ${before.map((m) => m.sql).join("\n")};
			 CREATE TABLE ${VERSION_TABLE} (version INTEGER PRIMARY KEY, description TEXT NOT NULL, applied_at BIGINT NOT NULL);
			 INSERT INTO ${VERSION_TABLE} VALUES (1, 'one', 0), (2, 'two', 0);
			 INSERT INTO sessions (id, owner_id, config, created_at, updated_at, last_active_at, usage)
			 VALUES ('old', 'owner-old', '${JSON.stringify(newSession("x")).replace(/'/g, "''")}', 1, 1, 1, '{}');
			 SET search_path TO public;`,
		);
		const store = await open(schema);
		const old = await store.getSession("old");
		expect({ tenant: old?.tenant, visibility: old?.visibility }).toEqual({ tenant: null, visibility: "owner" });
		expect((await store.listSessions({ ownerId: "someone", tenant: "org-a" })).sessions).toEqual([]);
		expect((await store.listSessions({ ownerId: "owner-old", tenant: null })).sessions.map((r) => r.id)).toEqual([
			"old",
		]);
	});

	it("refuses a schema newer than this build, changing nothing", async () => {
		const schema = schemas.next();
		await (await open(schema)).close();
		opened.length = 0;
		await pgQuery(`INSERT INTO ${schema}.wheelhouse_schema_version VALUES (99, 'from the future', 0)`);
		const before = await tables(schema);
		await expect(openPostgresStore({ url: PG_URL, schema })).rejects.toThrow(
			/schema version 99, newer than this Wheelhouse build supports.*upgrade Wheelhouse/,
		);
		expect(await tables(schema)).toEqual(before);
	});

	it("refuses a schema holding tables it does not know, and writes nothing into it", async () => {
		const schema = schemas.next();
		await pgQuery(`CREATE SCHEMA ${schema}`);
		await pgQuery(`CREATE TABLE ${schema}.customers (id int)`);
		await expect(openPostgresStore({ url: PG_URL, schema })).rejects.toThrow(
			/not a Wheelhouse store.*found customers.*refusing to modify it/,
		);
		expect(await tables(schema)).toEqual(["customers"]);
	});

	it("lets one store own a schema at a time (naming the owner), unless in cluster mode", async () => {
		const schema = schemas.next();
		const first = await open(schema);
		await expect(openPostgresStore({ url: PG_URL, schema })).rejects.toThrow(
			new RegExp(`in use by another Wheelhouse process \\(pid ${process.pid} on host`),
		);
		// Replicas share a schema: no owner lock in cluster mode.
		const replica = await open(schema, true);
		await first.createSession(newSession("s1"));
		expect((await replica.getSession("s1"))?.id).toBe("s1");
		await first.close();
		const next = await open(schema);
		expect((await next.getSession("s1"))?.id).toBe("s1");
	});

	it("opens a fresh schema from many stores starting at once: replicas all open, single stores one owner", {
		timeout: 60_000,
	}, async () => {
		// Several rounds: creating a schema (or a table) that does not exist yet from two connections at
		// once fails one of them on the catalog's unique index unless something orders them.
		for (let round = 0; round < 8; round++) {
			const replicas = schemas.next();
			const stores = await Promise.all([1, 2, 3].map(() => open(replicas, true)));
			for (const store of stores) expect(store.schemaVersion).toBe(LATEST_PG_SCHEMA_VERSION);

			const single = schemas.next();
			const results = await Promise.allSettled([1, 2, 3].map(() => open(single)));
			const refused = results.filter((r) => r.status === "rejected").map((r) => String(r.reason));
			expect(results.filter((r) => r.status === "fulfilled")).toHaveLength(1);
			for (const reason of refused) expect(reason).toMatch(/in use by another Wheelhouse process/);
			for (const s of opened.splice(0)) await s.close();
		}
	});

	it("stops with a clear message when the database is unreachable", async () => {
		await expect(openPostgresStore({ url: "postgres://postgres:hunter22@127.0.0.1:1/test" })).rejects.toThrow(
			/PostgreSQL at postgres:\/\/postgres:redacted@127\.0\.0\.1:1\/test is unreachable/,
		);
	});
});

it.skipIf(ok)(`PostgreSQL store schema: ${NO_POSTGRES}`, () => {});
