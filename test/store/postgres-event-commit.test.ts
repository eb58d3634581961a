/**
 * The PostgreSQL store's commits that carry only buffered events, reservation extensions and
 * activity times (a streaming server's usual commit, single-replica mode): one statement sent
 * without BEGIN/COMMIT, which takes effect whole or not at all. A commit whose insert fails writes
 * none of its parts and keeps them all for the next try; a trim in the same statement leaves the
 * same rows as trimming after the insert.
 */
import type pg from "pg";
import { afterEach, describe, expect, it, vi } from "vitest";
import { openPostgresStore, type PostgresSessionStore } from "../../src/store/postgres/index.js";
import { ID_RESERVATION } from "../../src/store/sql/event-buffer.js";
import { havePostgres, NO_POSTGRES, PG_URL, pgQuery, testSchemas } from "../helpers/postgres.js";
import { newSession } from "./contract.js";

const schemas = testSchemas("event-commit");
const ok = await havePostgres();
const opened: PostgresSessionStore[] = [];
afterEach(async () => {
	for (const s of opened.splice(0)) await s.close().catch(() => undefined);
});

/** A store (cap 8 events per session, no flush timer) whose connections record the statements they send. */
async function recordingStore(schema: string, retryDelayMs = 1000) {
	const errors: Error[] = [];
	const store = await openPostgresStore({
		url: PG_URL,
		schema,
		poolSize: 2,
		maxEventsPerSession: 8,
		flushIntervalMs: 60_000,
		retryDelayMs,
		onFlushError: (e) => errors.push(e),
	});
	opened.push(store);
	const sent: string[] = [];
	const pool = (store as unknown as { pool: pg.Pool }).pool;
	const recorded = new WeakSet<pg.PoolClient>();
	pool.on("acquire", (client) => {
		if (recorded.has(client)) return;
		recorded.add(client);
		const query = client.query.bind(client) as (...args: unknown[]) => unknown;
		(client as unknown as { query: (...args: unknown[]) => unknown }).query = (...args: unknown[]) => {
			const first = args[0];
			sent.push(typeof first === "string" ? first : String((first as { text?: string }).text));
			return query(...args);
		};
	});
	return { store, sent, errors };
}

type SessionRow = { event_id_reserved: number; last_active_at: number };

async function sessionRow(schema: string, id: string): Promise<SessionRow> {
	const [row] = await pgQuery<{ event_id_reserved: string; last_active_at: string }>(
		`SELECT event_id_reserved, last_active_at FROM ${schema}.sessions WHERE id = $1`,
		[id],
	);
	return { event_id_reserved: Number(row?.event_id_reserved), last_active_at: Number(row?.last_active_at) };
}

async function batchRows(schema: string, id: string): Promise<{ first: number; last: number }[]> {
	const rows = await pgQuery<{ first_id: string; last_id: string }>(
		`SELECT first_id, last_id FROM ${schema}.event_batches WHERE session_id = $1 ORDER BY last_id`,
		[id],
	);
	return rows.map((r) => ({ first: Number(r.first_id), last: Number(r.last_id) }));
}

function append(store: PostgresSessionStore, id: string, n: number): void {
	for (let i = 0; i < n; i++) expect(store.appendEvent(id, "note", JSON.stringify({ i }))).toEqual(expect.any(Number));
}

describe.skipIf(!ok)("PostgreSQL commits of events only", () => {
	it("write events, the trim, the reservation and the activity time in one statement without BEGIN/COMMIT", async () => {
		const schema = schemas.next();
		const { store, sent, errors } = await recordingStore(schema);
		await store.createSession(newSession("s"));
		append(store, "s", 4);
		await store.sync();
		expect(await batchRows(schema, "s")).toEqual([{ first: 1, last: 4 }]);
		const reservedBefore = (await sessionRow(schema, "s")).event_id_reserved;
		expect(reservedBefore).toBeLessThan(604 + ID_RESERVATION / 2);
		// Ids 5..604: id 514 comes within half a block of the reservation (1,025), and the floor
		// (604 - 8) drops the first row.
		append(store, "s", 600);
		const at = Date.now() + 3_600_000;
		expect(store.touchSession("s", at)).toBe(true);
		sent.length = 0;
		await store.sync();
		expect(errors).toEqual([]);
		expect(sent).toHaveLength(1);
		expect(sent[0]).toMatch(/INSERT INTO event_batches/);
		expect(sent[0]).toMatch(/DELETE FROM event_batches/);
		expect(sent[0]).toMatch(/UPDATE sessions/);
		expect(await batchRows(schema, "s")).toEqual([{ first: 5, last: 604 }]);
		const row = await sessionRow(schema, "s");
		expect(row.last_active_at).toBe(at);
		// Extended a block from an id within half a block of the old reservation.
		expect(row.event_id_reserved).toBeGreaterThan(reservedBefore);
		expect(row.event_id_reserved).toBeGreaterThanOrEqual(604 + ID_RESERVATION / 2);
		const events = await store.readEvents("s", 0);
		expect(events.map((e) => e.id)).toEqual([597, 598, 599, 600, 601, 602, 603, 604]);
		expect(events.at(-1)?.data).toBe(JSON.stringify({ i: 599 }));
	});

	it("write none of a commit whose insert fails, and all of it on the next try", async () => {
		const schema = schemas.next();
		const { store, sent, errors } = await recordingStore(schema, 50);
		await store.createSession(newSession("s"));
		await store.sync();
		const before = await sessionRow(schema, "s");
		// Ids 1..520: id 513 comes within half a block of the reservation, which is extended.
		expect(before.event_id_reserved).toBeLessThan(520 + ID_RESERVATION / 2);
		// A row where the batch of ids 1..520 goes: its insert fails (a unique violation).
		await pgQuery(
			`INSERT INTO ${schema}.event_batches (session_id, last_id, first_id, data) VALUES ('s', 520, 520, 'x')`,
		);
		append(store, "s", 520);
		const at = Date.now() + 3_600_000;
		expect(store.touchSession("s", at)).toBe(true);
		sent.length = 0;
		await store.sync();
		expect(sent.some((s) => /^\s*BEGIN/.test(s))).toBe(false);
		expect(errors[0]?.message).toMatch(/520 events stay queued/);
		// Nothing of it is on disk: neither the reservation nor the activity time went in without the events.
		expect(await sessionRow(schema, "s")).toEqual(before);
		expect(await batchRows(schema, "s")).toEqual([{ first: 520, last: 520 }]);

		await pgQuery(`DELETE FROM ${schema}.event_batches WHERE session_id = 's'`);
		await vi.waitFor(async () => expect(await batchRows(schema, "s")).toEqual([{ first: 1, last: 520 }]), {
			timeout: 10_000,
			interval: 50,
		});
		const row = await sessionRow(schema, "s");
		expect(row.last_active_at).toBe(at);
		expect(row.event_id_reserved).toBeGreaterThanOrEqual(520 + ID_RESERVATION / 2);
		const events = await store.readEvents("s", 0);
		expect(events.map((e) => [e.id, e.data])).toEqual(
			[513, 514, 515, 516, 517, 518, 519, 520].map((id) => [id, JSON.stringify({ i: id - 1 })]),
		);
	});

	it("leave no row a trim in the same commit covers, a batch kept from a failed commit included", async () => {
		const schema = schemas.next();
		const { store, errors } = await recordingStore(schema, 50);
		await store.createSession(newSession("s"));
		await store.sync();
		await pgQuery(`INSERT INTO ${schema}.event_batches (session_id, last_id, first_id, data) VALUES ('s', 3, 3, 'x')`);
		append(store, "s", 3);
		await store.sync();
		expect(errors[0]?.message).toMatch(/3 events stay queued/);
		// Before the next try: ids 4..23, whose floor (23 - 8) covers the kept batch of ids 1..3.
		append(store, "s", 20);
		await pgQuery(`DELETE FROM ${schema}.event_batches WHERE session_id = 's'`);
		await vi.waitFor(async () => expect(await batchRows(schema, "s")).toEqual([{ first: 4, last: 23 }]), {
			timeout: 10_000,
			interval: 50,
		});
		await store.flush();
		expect(await batchRows(schema, "s")).toEqual([{ first: 4, last: 23 }]);
		expect((await store.readEvents("s", 0)).map((e) => e.id)).toEqual([16, 17, 18, 19, 20, 21, 22, 23]);
	});
});

if (!ok) it.skip(`PostgreSQL commits of events only (${NO_POSTGRES})`, () => {});
