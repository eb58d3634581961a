/**
 * The PostgreSQL store's admission queue (`AdmissionStore` of ../admission-types.ts): the
 * `admission_queue` and `admission_turns` tables, shared by every replica. Each write is a
 * transaction of its own on the pool (not the group commit of the session writes: it takes a
 * table lock, and must not hold the other writes behind it). Admitting and claiming lock the
 * queue table (SHARE ROW EXCLUSIVE: one at a time, plain reads go on), so two replicas never give
 * the same free slot to two runs.
 */
import type pg from "pg";
import {
	type AdmissionEntry,
	type AdmissionLimits,
	type AdmissionStore,
	type AdmitOutcome,
	admissionGroup,
	countSlots,
	type NewAdmission,
	pickNext,
	slotFree,
} from "../admission-types.js";
import { ADMISSION_SQL, type AdmissionRow, numbered, toAdmission, toHead } from "../sql/admission-rows.js";
import { asUnavailable, type Queryable } from "./connection.js";

const Q = Object.fromEntries(Object.entries(ADMISSION_SQL).map(([name, sql]) => [name, numbered(sql)])) as Record<
	keyof typeof ADMISSION_SQL,
	string
>;

export class PgAdmission implements AdmissionStore {
	constructor(
		/** The pool, once the store is started. */
		private readonly pool: () => Promise<pg.Pool>,
		private readonly where: string,
	) {}

	/** Runs `fn` in a transaction of its own; `locked`: with the queue table locked first. */
	private async tx<T>(fn: (tx: Queryable) => Promise<T>, locked = false): Promise<T> {
		const pool = await this.pool();
		let client: pg.PoolClient;
		try {
			client = await pool.connect();
		} catch (error) {
			throw asUnavailable(error, "an admission write", this.where);
		}
		try {
			await client.query("BEGIN");
			if (locked) await client.query("LOCK TABLE admission_queue IN SHARE ROW EXCLUSIVE MODE");
			const result = await fn(client);
			await client.query("COMMIT");
			return result;
		} catch (error) {
			await client.query("ROLLBACK").catch(() => {});
			throw asUnavailable(error, "an admission write", this.where);
		} finally {
			client.release();
		}
	}

	private async counts(tx: Queryable) {
		const { rows } = await tx.query<{ tenant: string | null; owner_id: string | null }>(Q.running);
		return countSlots(rows.map((r) => ({ tenant: r.tenant, ownerId: r.owner_id })));
	}

	admit(run: NewAdmission, limits: AdmissionLimits, holder: string, now: number): Promise<AdmitOutcome> {
		return this.tx(async (tx): Promise<AdmitOutcome> => {
			const waiting = (await tx.query<{ id: number }>(Q.sessionWaiting, [run.sessionId])).rows[0];
			if (waiting) {
				const { n } = (await tx.query<{ n: number }>(Q.positionOf, [waiting.id])).rows[0]!;
				return { kind: "session_waiting", position: Number(n) };
			}
			const group = admissionGroup(run.tenant, run.ownerId);
			const ahead = Number((await tx.query<{ n: number }>(Q.groupWaiting, [group])).rows[0]!.n);
			const free = ahead === 0 && slotFree(await this.counts(tx), limits, run.tenant, run.ownerId);
			const row = (
				await tx.query<AdmissionRow>(Q.insert, [
					run.sessionId,
					run.ownerId,
					run.tenant,
					group,
					JSON.stringify(run.messages),
					free ? "running" : "queued",
					free ? holder : (run.waiter ?? null),
					free || run.waiter ? now : null,
					run.enqueuedAt,
				])
			).rows[0]!;
			if (free) {
				await tx.query(Q.turn, [group]);
				return { kind: "admitted", entry: toAdmission(row) };
			}
			return { kind: "queued", entry: toAdmission(row), position: ahead + 1 };
		}, true);
	}

	claimNext(limits: AdmissionLimits, holder: string, now: number): Promise<AdmissionEntry | undefined> {
		return this.tx(async (tx) => {
			const heads = (await tx.query<AdmissionRow>(Q.heads)).rows.map(toHead);
			if (heads.length === 0) return undefined;
			const turns = new Map(
				(await tx.query<{ grp: string; turn: number }>(Q.turns)).rows.map((t) => [t.grp, Number(t.turn)]),
			);
			const next = pickNext(heads, turns, await this.counts(tx), limits);
			if (!next) return undefined;
			await tx.query(Q.turn, [next.group]);
			return toAdmission((await tx.query<AdmissionRow>(Q.take, [holder, now, next.id])).rows[0]!);
		}, true);
	}

	async markStarted(id: number, runId: string): Promise<void> {
		await this.tx((tx) => tx.query(Q.started, [runId, id]));
	}

	async release(id: number): Promise<void> {
		await this.tx(async (tx) => {
			await tx.query(Q.release, [id]);
			await tx.query(Q.dropTurns);
		}, true);
	}

	async requeue(id: number): Promise<void> {
		await this.tx((tx) => tx.query(Q.requeue, [id]));
	}

	async heartbeat(holder: string, now: number): Promise<void> {
		await this.tx((tx) => tx.query(Q.heartbeat, [now, holder]));
	}

	recover(alive: string, staleBefore: number): Promise<number> {
		return this.tx(async (tx) => {
			const dropped = await tx.query(Q.dropStalePlaces, [alive, staleBefore]);
			const released = await tx.query(Q.releaseStale, [alive, staleBefore]);
			const requeued = await tx.query(Q.requeueStale, [alive, staleBefore]);
			return (dropped.rowCount ?? 0) + (released.rowCount ?? 0) + (requeued.rowCount ?? 0);
		}, true);
	}

	async position(id: number): Promise<number | undefined> {
		const pool = await this.pool();
		const n = Number((await pool.query<{ n: number }>(Q.positionOf, [id])).rows[0]?.n ?? 0);
		return n > 0 ? n : undefined;
	}

	async entry(id: number): Promise<AdmissionEntry | undefined> {
		const pool = await this.pool();
		const row = (await pool.query<AdmissionRow>(Q.entry, [id])).rows[0];
		return row ? toAdmission(row) : undefined;
	}

	async list(): Promise<AdmissionEntry[]> {
		const pool = await this.pool();
		return (await pool.query<AdmissionRow>(Q.list)).rows.map(toAdmission);
	}
}
