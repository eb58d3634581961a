/**
 * Session leases and fencing between two PostgreSQL stores on one schema (cluster mode, as two
 * replicas): once a session's lease expired, another store takes it over with a higher token; the
 * stalled store's late writes are refused (nothing of them reaches the database), it reports the
 * session lost and treats it as unknown from then on, and event ids never repeat.
 */
import { afterEach, describe, expect, it } from "vitest";
import { openPostgresStore, type PostgresSessionStore } from "../../src/store/postgres/index.js";
import { havePostgres, NO_POSTGRES, PG_URL, pgQuery, testSchemas } from "../helpers/postgres.js";
import { assistant, newSession, usage, user } from "./contract.js";

const schemas = testSchemas("fencing");
const ok = await havePostgres();
const opened: PostgresSessionStore[] = [];
afterEach(async () => {
	for (const s of opened.splice(0)) await s.close();
});

/** The fencing token of the session's lease, as the database holds it. */
async function leaseToken(schema: string, id: string): Promise<number> {
	const [row] = await pgQuery<{ lease_token: string }>(`SELECT lease_token FROM ${schema}.sessions WHERE id = $1`, [
		id,
	]);
	return Number(row.lease_token);
}

async function replica(schema: string, errors: Error[] = []): Promise<PostgresSessionStore> {
	const store = await openPostgresStore({
		url: PG_URL,
		schema,
		poolSize: 2,
		cluster: true,
		onFlushError: (e) => errors.push(e),
	});
	opened.push(store);
	return store;
}

describe.skipIf(!ok)("PostgreSQL session leases and fencing", () => {
	it("a claim on the store holding the lease answers the config version another store stored meanwhile", async () => {
		const schema = schemas.next();
		const a = await replica(schema);
		const b = await replica(schema);
		await a.createSession(newSession("s1"));
		expect(await a.startRun("s1", "r1", 1100)).toEqual({ updatedAt: 1000 });
		a.endRun("s1", "r1", { status: "completed", endedAt: 1200, usage: usage(0, 0, 0) });
		await a.sync();
		// The session stays in A's working set (A holds its lease); B stores a config change.
		await b.updateSession("s1", { systemPrompt: "changed on B" }, 9000);
		expect(await a.startRun("s1", "r2", 9100)).toEqual({ updatedAt: 9000 });
	});

	it("a store takes over an expired session; the stale store's writes are refused and it reports the loss", async () => {
		const schema = schemas.next();
		const errorsA: Error[] = [];
		const a = await replica(schema, errorsA);
		const b = await replica(schema);
		const lost: string[] = [];
		a.onSessionLost((id) => lost.push(id));

		await a.createSession(newSession("s1"));
		expect(await a.startRun("s1", "r1", 10, [user("go")])).toEqual({ updatedAt: expect.any(Number) });
		for (let i = 0; i < 3; i++) a.appendEvent("s1", "e", `{"i":${i}}`, i);
		await a.sync();
		await a.flush();
		const tokenA = await leaseToken(schema, "s1");

		// A live lease is not taken.
		expect(await b.openSession("s1")).toBe(false);
		expect(await leaseToken(schema, "s1")).toBe(tokenA);
		// A stalls past its lease (its renewals stop reaching the database): the lease expires.
		await pgQuery(`UPDATE ${schema}.sessions SET lease_expires = 0 WHERE id = 's1'`);
		expect(await b.listExpiredRuns()).toEqual(["s1"]);
		expect(await b.openSession("s1")).toBe(true);
		expect(await leaseToken(schema, "s1")).toBeGreaterThan(tokenA);
		expect(b.lastEventId("s1")).toBeGreaterThanOrEqual(3);

		// A does not know yet: its synchronous writes are accepted in memory...
		const staleId = a.appendEvent("s1", "e", '{"stale":true}', 5);
		expect(staleId).toBe(4);
		expect(a.appendMessages("s1", [assistant("stale answer")])).toBe(2);
		expect(a.endRun("s1", "r1", { status: "completed", endedAt: 20, usage: usage(1, 1, 0) })).toBe(true);
		// ...and refused at commit: the barrier does not reject, it reports the loss.
		await a.sync();
		await a.flush().catch(() => undefined);
		expect(lost).toEqual(["s1"]);
		expect(errorsA.map((e) => e.message).join("\n")).toMatch(/lease of session "s1" was taken over/);
		expect(a.appendEvent("s1", "e", "{}")).toBeUndefined();
		expect(a.lastEventId("s1")).toBeUndefined();
		expect(await a.drainQueued("s1", [], [user("late")])).toBeUndefined();

		// Nothing of A's late writes is on disk: the run still runs, the transcript has the prompt only.
		expect(await b.getSession("s1")).toMatchObject({ status: "running", currentRunId: "r1", messageCount: 1 });
		expect((await b.readEvents("s1", 0)).map((e) => e.data)).toEqual(['{"i":0}', '{"i":1}', '{"i":2}']);
		// B writes on; its ids come after every id A could have handed out.
		const next = b.appendEvent("s1", "e", '{"from":"b"}', 30) as number;
		expect(next).toBeGreaterThan(staleId as number);
		expect(b.appendMessages("s1", [assistant("b's answer")])).toBe(2);
		expect(b.endRun("s1", "r1", { status: "completed", endedAt: 40, usage: usage(1, 1, 0) })).toBe(true);
		await b.sync();
		expect(await a.getSession("s1")).toMatchObject({ status: "idle", messageCount: 2 });
		expect((await a.readEvents("s1", 3)).map((e) => e.data)).toEqual(['{"from":"b"}']);
	});

	it("renewals keep a lease live; a store that lost one learns it at its next renewal", async () => {
		const schema = schemas.next();
		const a = await replica(schema);
		const b = await replica(schema);
		await a.createSession(newSession("s1"));
		expect(await a.renewLeases()).toEqual([]);
		expect(await b.openSession("s1")).toBe(false);
		await pgQuery(`UPDATE ${schema}.sessions SET lease_expires = 0 WHERE id = 's1'`);
		expect(await b.openSession("s1")).toBe(true);
		expect(await a.renewLeases()).toEqual(["s1"]);
		expect(a.appendEvent("s1", "e", "{}")).toBeUndefined();
		// Releasing hands a session over at once.
		expect(await b.releaseSession("s1")).toBe(true);
		expect(await a.openSession("s1")).toBe(true);
		// Ids continue after the first holder's whole reservation: it could have handed any of them out.
		expect(a.appendEvent("s1", "e", "{}")).toBe(1025);
	});

	it("recovers only runs no live store runs", async () => {
		const schema = schemas.next();
		const a = await replica(schema);
		const b = await replica(schema);
		await a.createSession(newSession("live"));
		await a.createSession(newSession("dead"));
		await a.startRun("live", "r1", 1);
		await a.startRun("dead", "r2", 1);
		await a.sync();
		await pgQuery(`UPDATE ${schema}.sessions SET lease_expires = 0 WHERE id = 'dead'`);
		expect(await b.recoverInterrupted(100)).toEqual(["dead"]);
		expect((await b.getSession("live"))?.status).toBe("running");
		expect(await b.getSession("dead")).toMatchObject({ status: "interrupted", interruptedAt: 100 });
		// The interruption fenced the stale holder out: its writes to "dead" are refused.
		expect(a.appendMessages("dead", [assistant("late")])).toBe(1);
		await a.sync();
		expect(await b.countMessages("dead")).toBe(0);
		expect(a.lastEventId("dead")).toBeUndefined();
	});
});

it.skipIf(ok)(`PostgreSQL session leases and fencing: ${NO_POSTGRES}`, () => {});
