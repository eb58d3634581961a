/**
 * The admission queue's part of the store contract (`AdmissionStore`, reached as
 * `store.admission`): the runs that wait for a concurrent-run slot of their tenant or API key
 * (`auth.admission: "queue"`), and the runs that hold one. The store keeps the facts and makes
 * the one decision that must be atomic across replicas: which waiting run takes a free slot.
 * When runs start and what a run is is the server's (src/server/runtime/session/admission.ts).
 *
 * Order: round-robin between groups (a tenant; an owner without one), FIFO within a group. A
 * group's head waits while its tenant or its owner has every slot taken, and while a run of the
 * group that took a slot has not started yet (`markStarted`): a start cut short by a crash goes
 * back to the head, so no later run of the group passes it. The next group's head may go meanwhile. Durability: every method resolves once its change is committed.
 */
import type { AgentMessage } from "../agent/types.js";

/** `queued`: waits for a slot. `running`: holds a slot (its run starts, runs, or is about to end). */
export type AdmissionState = "queued" | "running";

/** A run waiting for a slot, or holding one. */
export interface AdmissionEntry {
	/** Increasing: the FIFO order within a group. */
	id: number;
	sessionId: string;
	ownerId: string | null;
	tenant: string | null;
	/** The prompt the run starts with; empty for a request's place ({@link isRequestPlace}). */
	messages: AgentMessage[];
	state: AdmissionState;
	/** The process holding the slot (`running`); while queued, null, or the process a request's place waits in. */
	holder: string | null;
	/** The run started with the slot, once it did (`markStarted`). */
	runId: string | null;
	enqueuedAt: number;
}

/** The concurrent-run limits admission enforces; 0: none. */
export interface AdmissionLimits {
	perTenant: number;
	perKey: number;
}

/** What {@link AdmissionStore.admit} came to. */
export type AdmitOutcome =
	/** A slot was free and nobody of the group waits: the entry holds it now, start the run. */
	| { kind: "admitted"; entry: AdmissionEntry }
	/** Stored as waiting; `position`: 1 + the group's runs waiting ahead of it. */
	| { kind: "queued"; entry: AdmissionEntry; position: number }
	/** The session has a run waiting already (a session runs one run at a time). */
	| { kind: "session_waiting"; position: number };

export interface NewAdmission {
	sessionId: string;
	ownerId: string | null;
	tenant: string | null;
	/** The prompt a waiting run starts with; `[]` with `waiter`. */
	messages: AgentMessage[];
	enqueuedAt: number;
	/**
	 * A request's place: the process whose request waits for the slot and starts the run itself
	 * (a facade's, a continue's). Stored with no messages, held by `waiter` from the start and kept
	 * alive by its heartbeat; when the slot comes, the entry is `running` under `waiter` whoever
	 * claimed it, and when `waiter` dies the place is dropped (its request died with it), never
	 * started by another process.
	 */
	waiter?: string;
}

/**
 * True for a request's place ({@link NewAdmission.waiter}): its run is started by the request
 * that waits for it, not by whoever claims it. A stored prompt is never empty, so no messages
 * marks it.
 */
export function isRequestPlace(entry: Pick<AdmissionEntry, "messages">): boolean {
	return entry.messages.length === 0;
}

export interface AdmissionStore {
	/**
	 * Takes a slot for a new run, or stores it as waiting (durable on resolve): waiting when its
	 * group has runs waiting already (FIFO), or when its tenant or owner has `limits` runs holding
	 * slots. `holder` holds the slot when admitted.
	 */
	admit(run: NewAdmission, limits: AdmissionLimits, holder: string, now: number): Promise<AdmitOutcome>;

	/**
	 * Gives the next waiting run a free slot (round-robin between groups, FIFO within one) and
	 * marks it `running` under `holder` (a request's place stays under its waiter); undefined when
	 * none may go now. Atomic across processes.
	 */
	claimNext(limits: AdmissionLimits, holder: string, now: number): Promise<AdmissionEntry | undefined>;

	/** Records the run started with the slot of entry `id`. */
	markStarted(id: number, runId: string): Promise<void>;

	/** Gives the slot back (the run ended, or could not start): the entry is gone. */
	release(id: number): Promise<void>;

	/** Puts a `running` entry back to waiting, at its place (its run could not start yet). */
	requeue(id: number): Promise<void>;

	/** The holder is alive: refreshes the heartbeat of its entries (`running` ones and its requests' places). */
	heartbeat(holder: string, now: number): Promise<void>;

	/**
	 * Entries of dead holders (not `alive`, heartbeat before `staleBefore`): a request's place is
	 * dropped, whatever its state (its request died with the holder); an entry whose run had
	 * started is released (startup recovery deals with the run), one whose run had not is queued
	 * again at its place. Returns how many entries were recovered.
	 */
	recover(alive: string, staleBefore: number): Promise<number>;

	/** Position (1-based, within its group) of a waiting entry; undefined when it is not waiting. */
	position(id: number): Promise<number | undefined>;

	/** The entry `id`; undefined once it is gone (released, or dropped as a dead holder's place). */
	entry(id: number): Promise<AdmissionEntry | undefined>;

	/** Every entry, oldest first (diagnostics, tests, and the positions announced again after a slot is taken). */
	list(): Promise<AdmissionEntry[]>;
}

/** The store role that holds the admission queue (absent on stores without one). */
export interface AdmissionHost {
	readonly admission?: AdmissionStore;
}

/** The round-robin group of a run: its tenant, or its owner without one. */
export function admissionGroup(tenant: string | null, ownerId: string | null): string {
	return tenant !== null ? `t:${tenant}` : `o:${ownerId ?? ""}`;
}

/** Slot counts of the running entries, by tenant and by owner. */
export interface SlotCounts {
	byTenant: Map<string, number>;
	byOwner: Map<string | null, number>;
}

/** True when a run of `tenant` / `ownerId` may take a slot under `limits` given `counts`. */
export function slotFree(
	counts: SlotCounts,
	limits: AdmissionLimits,
	tenant: string | null,
	ownerId: string | null,
): boolean {
	if (limits.perTenant > 0 && tenant !== null && (counts.byTenant.get(tenant) ?? 0) >= limits.perTenant) return false;
	if (limits.perKey > 0 && (counts.byOwner.get(ownerId) ?? 0) >= limits.perKey) return false;
	return true;
}

/** Counts `running` entries. */
export function countSlots(running: Iterable<{ tenant: string | null; ownerId: string | null }>): SlotCounts {
	const counts: SlotCounts = { byTenant: new Map(), byOwner: new Map() };
	for (const r of running) {
		if (r.tenant !== null) counts.byTenant.set(r.tenant, (counts.byTenant.get(r.tenant) ?? 0) + 1);
		counts.byOwner.set(r.ownerId, (counts.byOwner.get(r.ownerId) ?? 0) + 1);
	}
	return counts;
}

/**
 * Where `admit` puts a new run: holding a slot under `holder` when one is `free` (nobody of its
 * group waits, and its tenant and owner have a slot left); waiting otherwise, a request's place
 * held by its waiter from the start.
 */
export function placeOf(
	run: NewAdmission,
	free: boolean,
	holder: string,
	now: number,
): { state: AdmissionState; holder: string | null; heartbeatAt: number | null } {
	return {
		state: free ? "running" : "queued",
		holder: free ? holder : (run.waiter ?? null),
		heartbeatAt: free || run.waiter ? now : null,
	};
}

/** What `admit` answers for the stored `entry`, with `ahead` runs of its group waiting before it. */
export function admitOutcome(entry: AdmissionEntry, ahead: number): AdmitOutcome {
	return entry.state === "running" ? { kind: "admitted", entry } : { kind: "queued", entry, position: ahead + 1 };
}

/**
 * The waiting run that goes next: among the heads of the groups (each group's oldest waiting
 * run), the one whose group was admitted least recently (`turns`: a group's last turn; never:
 * first), whose slot is free.
 */
export function pickNext<H extends { id: number; tenant: string | null; ownerId: string | null; group: string }>(
	heads: H[],
	turns: Map<string, number>,
	counts: SlotCounts,
	limits: AdmissionLimits,
): H | undefined {
	const ordered = [...heads].sort((a, b) => (turns.get(a.group) ?? -1) - (turns.get(b.group) ?? -1) || a.id - b.id);
	return ordered.find((h) => slotFree(counts, limits, h.tenant, h.ownerId));
}
