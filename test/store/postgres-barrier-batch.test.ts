/**
 * The PostgreSQL store's barrier writes of many sessions in one commit: run starts, messages and
 * run ends of every session go to the database as one multi-row statement per kind, so a commit
 * takes as many statements for 40 sessions as for 2; what lands on disk is what one write per
 * session would have written (transcripts in order, runs ended, usage added), and a write whose
 * session is gone loses only itself.
 */
import type pg from "pg";
import { afterEach, describe, expect, it, vi } from "vitest";
import { openPostgresStore, type PostgresSessionStore } from "../../src/store/postgres/index.js";
import { havePostgres, NO_POSTGRES, PG_URL, pgQuery, testSchemas } from "../helpers/postgres.js";
import { assistant, newSession, usage, user } from "./contract.js";

const schemas = testSchemas("barrier-batch");
const ok = await havePostgres();
const opened: PostgresSessionStore[] = [];
afterEach(async () => {
	vi.useRealTimers();
	for (const s of opened.splice(0)) await s.close();
});

/** A store whose connections count the statements they send (the pool's own clients, counted). */
async function countingStore(schema: string, errors: Error[] = []) {
	const store = await openPostgresStore({ url: PG_URL, schema, poolSize: 2, onFlushError: (e) => errors.push(e) });
	opened.push(store);
	const counter = { statements: 0 };
	const pool = (store as unknown as { pool: pg.Pool }).pool;
	const counted = new WeakSet<pg.PoolClient>();
	pool.on("acquire", (client) => {
		if (counted.has(client)) return;
		counted.add(client);
		const query = client.query.bind(client) as (...args: unknown[]) => unknown;
		(client as unknown as { query: (...args: unknown[]) => unknown }).query = (...args: unknown[]) => {
			counter.statements++;
			return query(...args);
		};
	});
	return { store, counter };
}

/** Statements one commit of `n` sessions' run start, answer and run end takes. */
async function statementsFor(n: number): Promise<{ statements: number; schema: string; store: PostgresSessionStore }> {
	const schema = schemas.next();
	const errors: Error[] = [];
	const { store, counter } = await countingStore(schema, errors);
	const ids = Array.from({ length: n }, (_, i) => `s${i}`);
	for (const id of ids) await store.createSession(newSession(id));
	await store.sync();
	for (const id of ids)
		expect(await store.startRun(id, `run-${id}`, 1, [user(`prompt ${id}`)])).toEqual({ updatedAt: expect.any(Number) });
	for (const id of ids) {
		expect(store.appendMessages(id, [assistant(`answer ${id}`, usage(10, 5, 0.5))])).toBe(2);
		expect(store.endRun(id, `run-${id}`, { status: "completed", endedAt: 2, usage: usage(10, 5, 0.5) })).toBe(true);
	}
	counter.statements = 0;
	await store.sync();
	expect(errors).toEqual([]);
	return { statements: counter.statements, schema, store };
}

describe.skipIf(!ok)("PostgreSQL barrier writes of many sessions", () => {
	it("take as many statements for 40 sessions as for 2, and store what one write per session would", async () => {
		const two = await statementsFor(2);
		const forty = await statementsFor(40);
		expect(forty.statements).toBe(two.statements);
		expect(forty.statements).toBeLessThan(40);
		const runs = await pgQuery<{ status: string; n: number }>(
			`SELECT status, count(*)::int AS n FROM ${forty.schema}.runs GROUP BY status`,
		);
		expect(runs).toEqual([{ status: "completed", n: 40 }]);
		for (const id of ["s0", "s17", "s39"]) {
			const page = await forty.store.listMessages(id);
			expect(page?.messages.map((m) => m.role)).toEqual(["user", "assistant"]);
			const session = await forty.store.getSession(id);
			expect(session?.status).toBe("idle");
			expect(session?.messageCount).toBe(2);
			expect(session?.usage.input).toBe(10);
		}
		const daily = await pgQuery<{ input: string; turns: string }>(
			`SELECT input::text, turns::text FROM ${forty.schema}.usage_daily WHERE owner_id = 'owner-a'`,
		);
		expect(daily).toEqual([{ input: "400", turns: "40" }]);
	});

	it("lose only the write of a session that is gone; the other sessions' writes in the commit land", async () => {
		const schema = schemas.next();
		const errors: Error[] = [];
		const { store } = await countingStore(schema, errors);
		for (const id of ["a", "b", "c"]) await store.createSession(newSession(id));
		for (const id of ["a", "b", "c"])
			expect(await store.startRun(id, `run-${id}`, 1, [user(`prompt ${id}`)])).toEqual({
				updatedAt: expect.any(Number),
			});
		await store.sync();
		// The session disappears under the store (another process deleted it): its append fails alone.
		await pgQuery(`DELETE FROM ${schema}.sessions WHERE id = 'b'`);
		for (const id of ["a", "b", "c"]) store.appendMessages(id, [assistant(`answer ${id}`)]);
		await store.sync();
		const counts = await pgQuery<{ session_id: string; n: number }>(
			`SELECT session_id, count(*)::int AS n FROM ${schema}.messages GROUP BY session_id ORDER BY session_id`,
		);
		expect(counts).toEqual([
			{ session_id: "a", n: 2 },
			{ session_id: "b", n: 1 },
			{ session_id: "c", n: 2 },
		]);
		expect(errors.map((e) => e.message).join("\n")).toMatch(/not on disk/);
	});
});

describe.skipIf(!ok)("a PostgreSQL barrier write with no sync() to wait for", () => {
	it("starts its commit at the end of the event-loop turn it was made in, not on a timer", async () => {
		const schema = schemas.next();
		const { store } = await countingStore(schema);
		await store.createSession(newSession("a"));
		expect(await store.startRun("a", "run-a", 1, [user("prompt")])).toEqual({ updatedAt: expect.any(Number) });
		await store.sync();
		// Timers never fire from here on: only the end of the turn can start the commit.
		vi.useFakeTimers({ toFake: ["setTimeout", "clearTimeout"] });
		store.appendMessages("a", [assistant("answer")]);
		expect(store.syncPending).toBe(true);
		// Turns, not timers, until the commit's round trip is back (a loaded machine may take seconds).
		for (const deadline = Date.now() + 15_000; Date.now() < deadline && store.syncPending; ) {
			await new Promise((resolve) => setImmediate(resolve));
		}
		expect(store.syncPending).toBe(false);
		vi.useRealTimers();
		const rows = await pgQuery<{ n: number }>(`SELECT count(*)::int AS n FROM ${schema}.messages`);
		expect(rows).toEqual([{ n: 2 }]);
	});
});

if (!ok) it.skip(`PostgreSQL barrier writes (${NO_POSTGRES})`, () => {});
