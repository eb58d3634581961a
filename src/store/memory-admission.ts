/**
 * The memory store's admission queue (`AdmissionStore` of ./admission-types.ts): the same rules
 * as the SQL stores over a map, for a single process (nothing survives it, as with every memory
 * store's data).
 */
import {
	type AdmissionEntry,
	type AdmissionLimits,
	type AdmissionStore,
	type AdmitOutcome,
	admissionGroup,
	admitOutcome,
	countSlots,
	isRequestPlace,
	type NewAdmission,
	pickNext,
	placeOf,
	slotFree,
} from "./admission-types.js";

type Row = AdmissionEntry & { group: string; heartbeatAt: number | null };

export class MemoryAdmission implements AdmissionStore {
	private readonly rows = new Map<number, Row>();
	private readonly turns = new Map<string, number>();
	private nextId = 1;
	private nextTurn = 1;

	private waiting(group: string): Row[] {
		return [...this.rows.values()].filter((r) => r.group === group && r.state === "queued");
	}

	private counts() {
		return countSlots([...this.rows.values()].filter((r) => r.state === "running"));
	}

	private copy(row: Row): AdmissionEntry {
		const { group: _group, heartbeatAt: _at, ...entry } = row;
		return structuredClone(entry);
	}

	async admit(run: NewAdmission, limits: AdmissionLimits, holder: string, now: number): Promise<AdmitOutcome> {
		const waiting = [...this.rows.values()].find((r) => r.sessionId === run.sessionId && r.state === "queued");
		if (waiting) return { kind: "session_waiting", position: (await this.position(waiting.id)) ?? 1 };
		const group = admissionGroup(run.tenant, run.ownerId);
		const ahead = this.waiting(group).length;
		const free = ahead === 0 && slotFree(this.counts(), limits, run.tenant, run.ownerId);
		const row: Row = {
			id: this.nextId++,
			sessionId: run.sessionId,
			ownerId: run.ownerId,
			tenant: run.tenant,
			messages: structuredClone(run.messages),
			...placeOf(run, free, holder, now),
			runId: null,
			enqueuedAt: run.enqueuedAt,
			group,
		};
		this.rows.set(row.id, row);
		if (free) this.turns.set(group, this.nextTurn++);
		return admitOutcome(this.copy(row), ahead);
	}

	async claimNext(limits: AdmissionLimits, holder: string, now: number): Promise<AdmissionEntry | undefined> {
		const heads = new Map<string, Row>();
		const starting = new Set<string>();
		for (const row of this.rows.values()) if (row.state === "running" && row.runId === null) starting.add(row.group);
		for (const row of this.rows.values()) {
			if (row.state !== "queued" || starting.has(row.group)) continue;
			const head = heads.get(row.group);
			if (!head || row.id < head.id) heads.set(row.group, row);
		}
		const next = pickNext([...heads.values()], this.turns, this.counts(), limits);
		if (!next) return undefined;
		this.turns.set(next.group, this.nextTurn++);
		// A request's place stays under its waiter: that process starts its run.
		Object.assign(next, { state: "running", holder: next.holder ?? holder, heartbeatAt: now });
		return this.copy(next);
	}

	async markStarted(id: number, runId: string): Promise<void> {
		const row = this.rows.get(id);
		if (row) row.runId = runId;
	}

	async release(id: number): Promise<void> {
		const row = this.rows.get(id);
		this.rows.delete(id);
		if (row && !this.waiting(row.group).length && ![...this.rows.values()].some((r) => r.group === row.group)) {
			this.turns.delete(row.group);
		}
	}

	async requeue(id: number): Promise<void> {
		const row = this.rows.get(id);
		if (row) Object.assign(row, { state: "queued", holder: null, heartbeatAt: null });
	}

	async heartbeat(holder: string, now: number): Promise<void> {
		for (const row of this.rows.values()) if (row.holder === holder) row.heartbeatAt = now;
	}

	async recover(alive: string, staleBefore: number): Promise<number> {
		let n = 0;
		for (const row of [...this.rows.values()]) {
			if (row.holder === null || row.holder === alive || (row.heartbeatAt ?? 0) >= staleBefore) continue;
			if (row.state !== "running" && !isRequestPlace(row)) continue;
			n++;
			if (row.runId !== null || isRequestPlace(row)) await this.release(row.id);
			else await this.requeue(row.id);
		}
		return n;
	}

	async position(id: number): Promise<number | undefined> {
		const row = this.rows.get(id);
		if (row?.state !== "queued") return undefined;
		return this.waiting(row.group).filter((r) => r.id <= id).length;
	}

	async entry(id: number): Promise<AdmissionEntry | undefined> {
		const row = this.rows.get(id);
		return row ? this.copy(row) : undefined;
	}

	async list(): Promise<AdmissionEntry[]> {
		return [...this.rows.values()].sort((a, b) => a.id - b.id).map((r) => this.copy(r));
	}
}
