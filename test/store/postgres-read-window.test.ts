/**
 * A read of a session's log on the PostgreSQL store that holds it, while a commit is in flight:
 * what it returns is the log after the cursor without a hole, even when a run's first events
 * were appended after that commit took the buffers (they are neither on disk nor in the
 * streaming window yet) and a message is streaming. A reader that was handed the window alone
 * would skip those events for good (the run's `agent_start` among them).
 */
import pg from "pg";
import { afterEach, describe, expect, it } from "vitest";
import { openPostgresStore, type PostgresSessionStore } from "../../src/store/postgres/index.js";
import { havePostgres, NO_POSTGRES, PG_URL, testSchemas } from "../helpers/postgres.js";
import { newSession, user } from "./contract.js";

const schemas = testSchemas("read-window");
const ok = await havePostgres();
const opened: PostgresSessionStore[] = [];
const clients: pg.Client[] = [];
afterEach(async () => {
	for (const c of clients.splice(0)) await c.end().catch(() => undefined);
	for (const s of opened.splice(0)) await s.close();
});

describe.skipIf(!ok)("PostgreSQL log reads during a commit", () => {
	it("a read never returns the streaming window without the buffered events before it", async () => {
		const schema = schemas.next();
		const store = await openPostgresStore({ url: PG_URL, schema, poolSize: 4, cluster: true });
		opened.push(store);
		await store.createSession(newSession("s1"));
		await store.startRun("s1", "r1", 10, [user("go")]);
		await store.sync();
		await store.flush();
		const cursor = store.lastEventId("s1") ?? 0;

		// Another transaction holds the session's row: the next commit (which locks it) waits.
		const lockRow = async () => {
			const client = new pg.Client({ connectionString: PG_URL });
			clients.push(client);
			await client.connect();
			await client.query("BEGIN");
			return {
				locked: client.query(`SELECT id FROM ${schema}.sessions WHERE id = 's1' FOR UPDATE`),
				release: () => client.query("COMMIT"),
			};
		};
		const first = await lockRow();
		await first.locked;

		// A read commits what is buffered first: its commit takes the event buffered now and waits
		// for the row.
		store.appendEvent("s1", "queue_update", '{"type":"queue_update"}', 11);
		const read = store.readEvents("s1", cursor, 100);
		await new Promise((resolve) => setTimeout(resolve, 50));
		// Meanwhile a run starts: its first events are buffered for the next commit, and the
		// assistant's message streams (its deltas stay in memory).
		const types = ["agent_start", "turn_start", "message_start", "message_end", "message_start"];
		for (const type of [...types, "message_update", "message_update"]) {
			store.appendEvent("s1", type, JSON.stringify({ type }), 12);
		}
		// The commit after the read's waits too (behind a second lock, queued before it), so the read
		// runs while those events are still only buffered.
		const second = await lockRow();
		await new Promise((resolve) => setTimeout(resolve, 50));
		await first.release();
		const page = await read;
		await second.locked;
		await second.release();

		const ids = page.map((e) => e.id);
		expect(ids.length).toBeGreaterThan(0);
		expect(ids).toEqual(ids.map((_, i) => cursor + 1 + i));

		// Once those are on disk too, the read has everything, the deltas of the streaming message included.
		await store.flush();
		const all = await store.readEvents("s1", cursor, 100);
		expect(all.map((e) => e.type)).toEqual(["queue_update", ...types, "message_update", "message_update"]);
		expect(all.map((e) => e.id)).toEqual(all.map((_, i) => cursor + 1 + i));
	});
});

describe.skipIf(ok)("PostgreSQL log reads during a commit (no PostgreSQL)", () => {
	it(NO_POSTGRES, () => undefined);
});
