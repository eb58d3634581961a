/**
 * The admission queue of both SQL stores (`AdmissionStore` of ../admission-types.ts), written once
 * over a driver that answers with its statements and transactions. Admitting and claiming write
 * with the queue locked (PostgreSQL locks the table, SQLite's write holds the database), so two
 * processes never give the same free slot to two runs.
 */
import {
	type AdmissionEntry,
	type AdmissionLimits,
	type AdmissionStore,
	type AdmitOutcome,
	admissionGroup,
	admitOutcome,
	countSlots,
	type NewAdmission,
	pickNext,
	placeOf,
	slotFree,
} from "../admission-types.js";
import { type AdmissionRow, ADMISSION_SQL as Q, toAdmission, toHead } from "./admission-rows.js";
import type { Answer, SqlTx } from "./driver.js";
import { type Steps, wait } from "./steps.js";

/** What the admission queue asks of a SQL store. */
export interface AdmissionDriver {
	/** The rows of a read, once the store is open. */
	read<T>(sql: string, params?: readonly unknown[]): Answer<T[]>;
	/** A durable write: `body` in one transaction; `locked`: with the queue locked first. */
	write<T>(body: (tx: SqlTx) => Steps<T>, locked: boolean): Answer<T>;
}

/** The slots the running entries hold, read in `tx`. */
function* counts(tx: SqlTx) {
	const rows = yield* wait(tx.rows<{ tenant: string | null; owner_id: string | null }>(Q.running));
	return countSlots(rows.map((r) => ({ tenant: r.tenant, ownerId: r.owner_id })));
}

/** The one count a statement returns. */
function* count(tx: SqlTx, sql: string, params: readonly unknown[]): Steps<number> {
	const [row] = yield* wait(tx.rows<{ n: number | string }>(sql, params));
	return Number(row?.n ?? 0);
}

export class SqlAdmission implements AdmissionStore {
	constructor(private readonly driver: AdmissionDriver) {}

	async admit(run: NewAdmission, limits: AdmissionLimits, holder: string, now: number): Promise<AdmitOutcome> {
		return this.driver.write(function* (tx): Steps<AdmitOutcome> {
			const [waiting] = yield* wait(tx.rows<{ id: number }>(Q.sessionWaiting, [run.sessionId]));
			if (waiting) return { kind: "session_waiting", position: yield* count(tx, Q.positionOf, [waiting.id]) };
			const group = admissionGroup(run.tenant, run.ownerId);
			const ahead = yield* count(tx, Q.groupWaiting, [group]);
			const free = ahead === 0 && slotFree(yield* counts(tx), limits, run.tenant, run.ownerId);
			const place = placeOf(run, free, holder, now);
			const [row] = yield* wait(
				tx.rows<AdmissionRow>(Q.insert, [
					run.sessionId,
					run.ownerId,
					run.tenant,
					group,
					JSON.stringify(run.messages),
					place.state,
					place.holder,
					place.heartbeatAt,
					run.enqueuedAt,
				]),
			);
			if (free) yield* wait(tx.run(Q.turn, [group]));
			return admitOutcome(toAdmission(row as AdmissionRow), ahead);
		}, true);
	}

	async claimNext(limits: AdmissionLimits, holder: string, now: number): Promise<AdmissionEntry | undefined> {
		return this.driver.write(function* (tx) {
			const heads = (yield* wait(tx.rows<AdmissionRow>(Q.heads))).map(toHead);
			if (heads.length === 0) return undefined;
			const turns = yield* wait(tx.rows<{ grp: string; turn: number }>(Q.turns));
			const next = pickNext(heads, new Map(turns.map((t) => [t.grp, Number(t.turn)])), yield* counts(tx), limits);
			if (!next) return undefined;
			yield* wait(tx.run(Q.turn, [next.group]));
			const [row] = yield* wait(tx.rows<AdmissionRow>(Q.take, [holder, now, next.id]));
			return toAdmission(row as AdmissionRow);
		}, true);
	}

	async markStarted(id: number, runId: string): Promise<void> {
		await this.driver.write((tx) => wait(tx.run(Q.started, [runId, id])), false);
	}

	async release(id: number): Promise<void> {
		await this.driver.write(function* (tx) {
			yield* wait(tx.run(Q.release, [id]));
			yield* wait(tx.run(Q.dropTurns));
		}, true);
	}

	async requeue(id: number): Promise<void> {
		await this.driver.write((tx) => wait(tx.run(Q.requeue, [id])), false);
	}

	async heartbeat(holder: string, now: number): Promise<void> {
		await this.driver.write((tx) => wait(tx.run(Q.heartbeat, [now, holder])), false);
	}

	async recover(alive: string, staleBefore: number): Promise<number> {
		return this.driver.write(function* (tx) {
			const dropped = yield* wait(tx.run(Q.dropStalePlaces, [alive, staleBefore]));
			const released = yield* wait(tx.run(Q.releaseStale, [alive, staleBefore]));
			const requeued = yield* wait(tx.run(Q.requeueStale, [alive, staleBefore]));
			return dropped + released + requeued;
		}, true);
	}

	async position(id: number): Promise<number | undefined> {
		const [row] = await this.driver.read<{ n: number | string }>(Q.positionOf, [id]);
		const n = Number(row?.n ?? 0);
		return n > 0 ? n : undefined;
	}

	async entry(id: number): Promise<AdmissionEntry | undefined> {
		const [row] = await this.driver.read<AdmissionRow>(Q.entry, [id]);
		return row ? toAdmission(row) : undefined;
	}

	async list(): Promise<AdmissionEntry[]> {
		return (await this.driver.read<AdmissionRow>(Q.list)).map(toAdmission);
	}
}
