/**
 * The SQLite store's admission queue (`AdmissionStore` of ../admission-types.ts): the
 * `admission_queue` and `admission_turns` tables. Writes are durable writes of the store's commit
 * queue; one process owns the file, so its transactions alone decide who takes a slot.
 */
import type Database from "better-sqlite3";
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
import { ADMISSION_SQL, type AdmissionRow, toAdmission, toHead } from "../sql/admission-rows.js";
import type { CommitQueue } from "./commit-queue.js";
import type { Statement } from "./statements.js";

type Statements = Record<keyof typeof ADMISSION_SQL, Statement>;

export class SqliteAdmission implements AdmissionStore {
	private statements: Statements | undefined;

	constructor(
		private readonly db: Database.Database,
		private readonly commits: CommitQueue,
		private readonly open: () => void,
	) {}

	/** Prepared on first use: the tables exist once the store is open (migrated). */
	private get s(): Statements {
		this.open();
		if (!this.statements) {
			this.statements = Object.fromEntries(
				Object.entries(ADMISSION_SQL).map(([name, sql]) => [name, this.db.prepare(sql) as Statement]),
			) as Statements;
		}
		return this.statements;
	}

	private counts() {
		const rows = this.s.running.all() as { tenant: string | null; owner_id: string | null }[];
		return countSlots(rows.map((r) => ({ tenant: r.tenant, ownerId: r.owner_id })));
	}

	async admit(run: NewAdmission, limits: AdmissionLimits, holder: string, now: number): Promise<AdmitOutcome> {
		const s = this.s;
		return this.commits.durable((): AdmitOutcome => {
			const waiting = s.sessionWaiting.get(run.sessionId) as { id: number } | undefined;
			if (waiting) {
				const { n } = s.positionOf.get(waiting.id) as { n: number };
				return { kind: "session_waiting", position: Number(n) };
			}
			const group = admissionGroup(run.tenant, run.ownerId);
			const { n: ahead } = s.groupWaiting.get(group) as { n: number };
			const free = Number(ahead) === 0 && slotFree(this.counts(), limits, run.tenant, run.ownerId);
			const row = s.insert.get(
				run.sessionId,
				run.ownerId,
				run.tenant,
				group,
				JSON.stringify(run.messages),
				free ? "running" : "queued",
				free ? holder : (run.waiter ?? null),
				free || run.waiter ? now : null,
				run.enqueuedAt,
			) as AdmissionRow;
			if (free) {
				s.turn.run(group);
				return { kind: "admitted", entry: toAdmission(row) };
			}
			return { kind: "queued", entry: toAdmission(row), position: Number(ahead) + 1 };
		});
	}

	async claimNext(limits: AdmissionLimits, holder: string, now: number): Promise<AdmissionEntry | undefined> {
		const s = this.s;
		return this.commits.durable(() => {
			const heads = (s.heads.all() as AdmissionRow[]).map(toHead);
			if (heads.length === 0) return undefined;
			const turns = new Map((s.turns.all() as { grp: string; turn: number }[]).map((t) => [t.grp, Number(t.turn)]));
			const next = pickNext(heads, turns, this.counts(), limits);
			if (!next) return undefined;
			s.turn.run(next.group);
			return toAdmission(s.take.get(holder, now, next.id) as AdmissionRow);
		});
	}

	async markStarted(id: number, runId: string): Promise<void> {
		const s = this.s;
		this.commits.durable(() => s.started.run(runId, id));
	}

	async release(id: number): Promise<void> {
		const s = this.s;
		this.commits.durable(() => {
			s.release.run(id);
			s.dropTurns.run();
		});
	}

	async requeue(id: number): Promise<void> {
		const s = this.s;
		this.commits.durable(() => s.requeue.run(id));
	}

	async heartbeat(holder: string, now: number): Promise<void> {
		const s = this.s;
		this.commits.durable(() => s.heartbeat.run(now, holder));
	}

	async recover(alive: string, staleBefore: number): Promise<number> {
		const s = this.s;
		return this.commits.durable(
			() =>
				s.dropStalePlaces.run(alive, staleBefore).changes +
				s.releaseStale.run(alive, staleBefore).changes +
				s.requeueStale.run(alive, staleBefore).changes,
		);
	}

	async position(id: number): Promise<number | undefined> {
		const { n } = this.s.positionOf.get(id) as { n: number };
		return Number(n) > 0 ? Number(n) : undefined;
	}

	async entry(id: number): Promise<AdmissionEntry | undefined> {
		const row = this.s.entry.get(id) as AdmissionRow | undefined;
		return row ? toAdmission(row) : undefined;
	}

	async list(): Promise<AdmissionEntry[]> {
		return (this.s.list.all() as AdmissionRow[]).map(toAdmission);
	}
}
