/**
 * The PostgreSQL store's barrier waits for every write called before it, also a durable write
 * that was still waiting for the store's asynchronous start when the barrier was called: an
 * approval's row (`putPending`, which nothing awaits) is in the database, readable from another
 * connection, once a `sync()` called right after it resolves; and `syncPending` says so meanwhile.
 * (What a replica answering the approval reads; before, the barrier could resolve first.)
 */
import { afterEach, describe, expect, it } from "vitest";
import { openPostgresStore, type PostgresSessionStore } from "../../src/store/postgres/index.js";
import { havePostgres, NO_POSTGRES, PG_URL, pgQuery, testSchemas } from "../helpers/postgres.js";
import { newSession } from "./contract.js";

const schemas = testSchemas("barrier-order");
const ok = await havePostgres();
const opened: PostgresSessionStore[] = [];
afterEach(async () => {
	for (const s of opened.splice(0)) await s.close();
});

describe.skipIf(!ok)("PostgreSQL barrier order", () => {
	it("a sync() called after a durable write no one awaits resolves only once that write is committed", async () => {
		const schema = schemas.next();
		const store = await openPostgresStore({ url: PG_URL, schema, poolSize: 2 });
		opened.push(store);
		await store.createSession(newSession("s"));
		await store.sync();
		for (let i = 0; i < 20; i++) {
			void store.putPending({ sessionId: "s", toolCallId: `call-${i}`, kind: "approval", payload: "{}", createdAt: 1 });
			expect(store.syncPending).toBe(true);
			await store.sync();
			const rows = await pgQuery<{ n: number }>(
				`SELECT count(*)::int AS n FROM ${schema}.pending_interactions WHERE tool_call_id = $1`,
				[`call-${i}`],
			);
			expect(rows[0]?.n, `call-${i} readable after the barrier`).toBe(1);
		}
	});
});

describe.skipIf(ok)("PostgreSQL barrier order (no database)", () => {
	it.skip(NO_POSTGRES, () => {});
});
