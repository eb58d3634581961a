/**
 * The one store engine both SQL stores run on: the `SessionStore` methods whose logic is the same
 * over either database — the synchronous write surface (see "A synchronous working set" in
 * `../types.ts`), run starts and drains through the working set, the event log reads, and the
 * roles a driver answers with one object each (webhook outbox, facade records). A driver
 * (`../sqlite/store.ts`, `../postgres/store.ts`) supplies its working set, event log, run writes
 * and commit queue, and its SQL for the rest; how it reaches the database is its own.
 *
 * A driver answers synchronously (SQLite) or with a promise (PostgreSQL); the engine awaits only
 * promises, so an embedded driver's methods do their work within the call. What a driver answers
 * is `driver.ts`, plus the abstract members below.
 */
import type { AgentMessage } from "../../agent/types.js";
import { checkFilter, hasFilter } from "../session-filter.js";
import { checkLimit, closedError, cursorPage, decodeCursor, duplicateRunError, EventPage } from "../shared.js";
import type {
	FacadeRecord,
	FacadeRecordStore,
	IdempotencyRecord,
	MessagePage,
	NewSession,
	NewWebhookDelivery,
	PendingInteraction,
	QueuedMessage,
	QueueKind,
	RunClaim,
	RunEnd,
	RunRecord,
	SessionConfig,
	SessionListOptions,
	SessionPage,
	SessionRecord,
	StoredEvent,
	SupersededBranch,
	UsageEntry,
	UsageQuery,
	UsageRow,
	UsageSum,
	WebhookDelivery,
	WebhookOutbox,
	WebhookStatus,
} from "../types.js";
import { checkUsageQuery } from "../usage.js";
import type {
	Answer,
	EngineCommits,
	NewPending,
	RecordWrites,
	RecoveryWebhooks,
	RowReads,
	SessionRowQuery,
} from "./driver.js";
import { type BufferState, type EventBuffer, ID_RESERVATION } from "./event-buffer.js";
import {
	type NewSessionRow,
	newSessionRow,
	type SessionRow,
	toIdempotencyRecord,
	toPendingInteraction,
	toQueuedMessage,
	toRunRecord,
	toUsageRow,
} from "./rows.js";
import type { RunWrites } from "./run-writes.js";
import type { SessionStates } from "./working-set.js";

/** `map` of `answer`: at once when it is not a promise. */
function then<T, U>(answer: Answer<T>, map: (value: T) => U): Answer<U> {
	return answer instanceof Promise ? answer.then(map) : map(answer);
}

export abstract class SqlStoreEngine<S extends BufferState, R extends SessionRow> {
	readonly deltaRetention = "while-streaming" as const;
	protected closed = false;
	protected abstract readonly sessions: SessionStates<S>;
	protected abstract readonly log: EventBuffer<S>;
	protected abstract readonly runs: RunWrites<S>;
	protected abstract readonly commits: EngineCommits;
	protected abstract readonly outbox: WebhookOutbox;
	protected abstract readonly facade: FacadeRecordStore;
	protected abstract readonly records: RecordWrites;
	protected abstract readonly reads: RowReads<R>;

	/** Throws when the store is closed (the synchronous methods' check). */
	protected open(): void {
		if (this.closed) throw closedError();
	}

	/** Before an asynchronous method: throws when closed; a store that connects waits until it has. */
	protected abstract begin(): Answer<void>;

	/**
	 * Puts a session in the working set (loading its write state) after `begin`; undefined when it
	 * does not exist or is not this store's to write.
	 */
	protected abstract join(sessionId: string): Answer<S | undefined>;

	/**
	 * A durable write: inserts the session's row and its starting transcript, and puts the session
	 * in the working set. Throws `duplicateSessionError` if the id exists.
	 */
	protected abstract insertSession(row: NewSessionRow, messages: AgentMessage[]): Answer<SessionRecord>;

	/** The record of a session row (what the working set knows that the row does not yet, added). */
	protected abstract toRecord(row: R): SessionRecord;

	/** A durable write: applies `patch` to the session's config; the session after, or undefined. */
	protected abstract patchSession(
		sessionId: string,
		patch: Partial<SessionConfig>,
		at: number,
	): Answer<SessionRecord | undefined>;

	/**
	 * A durable write that marks running sessions (of `sessionIds`, when given) interrupted, with
	 * `webhooks`' deliveries, and leaves their tallies right; the ids of the sessions it changed.
	 */
	protected abstract interruptRuns(
		at: number,
		webhooks: RecoveryWebhooks | undefined,
		sessionIds: readonly string[] | undefined,
	): Answer<string[]>;

	/**
	 * Runs a read of the event log once the buffered events are committed (after `begin`); a
	 * driver turns its connection failures into `StoreUnavailableError`s here.
	 */
	protected abstract readLog<T>(read: () => Promise<T>): Promise<T>;

	abstract deleteSessions(sessionIds: string[]): Promise<number>;

	/**
	 * A durable write after every write of the session before it: moves the transcript rows from
	 * `keep` on into a new superseded branch (events that refer to them get them inlined first),
	 * sets the session's message count to `keep`. Undefined when the session is gone (or, on
	 * PostgreSQL, its lease was lost).
	 */
	protected abstract supersede(state: S, keep: number, at: number): Answer<SupersededBranch | undefined>;

	/** The session's superseded branches, oldest first; undefined for an unknown session. */
	protected abstract supersededRows(sessionId: string): Answer<SupersededBranch[] | undefined>;

	/** Calls waiting for an asynchronous `begin` (their writes are not in the commit queue yet). */
	private waitingToBegin = 0;

	/** `fn` once `begin` has passed: at once when it answered synchronously. */
	protected after<T>(fn: () => Answer<T>): Answer<T> {
		const ready = this.begin();
		if (!(ready instanceof Promise)) return fn();
		this.waitingToBegin++;
		return ready.then(
			() => {
				this.waitingToBegin--;
				return fn();
			},
			(error: unknown) => {
				this.waitingToBegin--;
				throw error;
			},
		);
	}

	// --- the synchronous write surface ----------------------------------------------------------

	appendEvent(sessionId: string, type: string, data: string, createdAt?: number): number | undefined {
		this.open();
		if (type === "") throw new RangeError("appendEvent: type must be a non-empty event name");
		const state = this.sessions.get(sessionId);
		return state && this.log.append(state, type, data, createdAt ?? Date.now());
	}

	lastEventId(sessionId: string): number | undefined {
		this.open();
		return this.sessions.get(sessionId)?.last;
	}

	appendMessages(sessionId: string, messages: AgentMessage[]): number | undefined {
		this.open();
		const state = this.sessions.get(sessionId);
		return state && this.runs.appendMessages(state, messages);
	}

	endRun(sessionId: string, runId: string, end: RunEnd, webhooks?: NewWebhookDelivery[]): boolean {
		this.open();
		const state = this.sessions.get(sessionId);
		return state !== undefined && this.runs.endRun(state, runId, end, webhooks);
	}

	touchSession(sessionId: string, at: number): boolean {
		this.open();
		if (!this.sessions.get(sessionId)) return false;
		this.commits.touch(sessionId, at);
		return true;
	}

	// --- the commit barrier ---------------------------------------------------------------------

	get syncPending(): boolean {
		// A write still waiting for `begin` counts: the barrier has to wait for it as well.
		return this.commits.pending || this.waitingToBegin > 0;
	}

	observeCommits(observer: ((ms: number) => void) | undefined): void {
		this.commits.commitObserver = observer;
	}

	async sync(): Promise<void> {
		// After `begin`, as every write goes: a write called before the barrier but still waiting for
		// `begin` (PostgreSQL's is asynchronous) is queued first, so the barrier waits for it too. A
		// store that is closed (or never opened) has nothing the barrier could wait for.
		try {
			const done = this.after(() => this.commits.sync());
			if (done instanceof Promise) await done;
		} catch {
			// Only `begin` throws here (closed); the commit queue's barrier never rejects.
		}
	}

	async flush(): Promise<void> {
		return this.after(() => this.commits.flush());
	}

	// --- sessions and queues --------------------------------------------------------------------

	async createSession(session: NewSession, messages: AgentMessage[] = []): Promise<SessionRecord> {
		return this.after(() => this.insertSession(newSessionRow(session, messages.length, ID_RESERVATION), messages));
	}

	async updateSession(
		sessionId: string,
		patch: Partial<SessionConfig>,
		at: number,
	): Promise<SessionRecord | undefined> {
		return this.after(() => this.patchSession(sessionId, patch, at));
	}

	async listSessions(options: SessionListOptions = {}): Promise<SessionPage> {
		const limit = checkLimit("limit", options.limit, 50, 1, 1000);
		const after = options.cursor === undefined ? undefined : decodeCursor(options.cursor);
		const query: SessionRowQuery = { limit: limit + 1 };
		if (options.ownerId !== undefined) {
			query.ownerId = options.ownerId;
			query.tenant = options.tenant ?? null;
		}
		if (after) query.after = after;
		if (hasFilter(options.filter)) {
			checkFilter(options.filter);
			query.filter = options.filter;
		}
		return then(
			this.after(() => this.reads.sessions(query)),
			(rows) => {
				const { page, ...next } = cursorPage(
					rows.map((r) => this.toRecord(r)),
					limit,
				);
				return { sessions: page, ...next };
			},
		);
	}

	async enqueue(
		sessionId: string,
		kind: QueueKind,
		message: AgentMessage,
		createdAt: number,
		withKey?: (queued: QueuedMessage) => IdempotencyRecord,
	): Promise<QueuedMessage | undefined> {
		return this.after(() => this.records.enqueue({ sessionId, kind, message, createdAt }, withKey));
	}

	async clearQueue(sessionId: string, kind?: QueueKind): Promise<number> {
		return this.after(() => this.records.clearQueue(sessionId, kind));
	}

	async putPending(
		interaction: NewPending,
		webhooks?: (runId: string | null) => NewWebhookDelivery[],
	): Promise<boolean> {
		return this.after(() => this.records.putPending(interaction, webhooks));
	}

	async resolvePending(sessionId: string, toolCallId: string, resolution: string, at: number): Promise<boolean> {
		return this.after(() => this.records.resolvePending(sessionId, toolCallId, resolution, at));
	}

	async deletePending(sessionId: string, toolCallId: string): Promise<boolean> {
		return this.after(() => this.records.deletePending(sessionId, toolCallId));
	}

	async putIdempotencyKey(record: IdempotencyRecord): Promise<boolean> {
		return this.after(() => this.records.putIdempotencyKey(record));
	}

	async deleteIdempotencyKeys(cutoff: number): Promise<number> {
		return this.after(() => this.records.deleteIdempotencyKeys(cutoff));
	}

	async listQueued(sessionId: string, kind?: QueueKind): Promise<QueuedMessage[]> {
		return then(
			this.after(() => this.reads.queue(sessionId, kind)),
			(rows) => rows.map(toQueuedMessage),
		);
	}

	async listPending(sessionId: string, options: { includeResolved?: boolean } = {}): Promise<PendingInteraction[]> {
		return then(
			this.after(() => this.reads.pending(sessionId, options.includeResolved === true)),
			(rows) => rows.map(toPendingInteraction),
		);
	}

	async getIdempotencyKey(sessionId: string, key: string): Promise<IdempotencyRecord | undefined> {
		return then(
			this.after(() => this.reads.idempotencyKey(sessionId, key)),
			(row) => row && toIdempotencyRecord(row),
		);
	}

	async sumUsage(query: UsageQuery): Promise<UsageSum> {
		checkUsageQuery(query);
		return then(
			this.after(() => this.reads.usageSum(query)),
			(row) => ({ totalTokens: Number(row.total_tokens), costUsd: Number(row.cost_usd) }),
		);
	}

	async readUsage(query: UsageQuery): Promise<UsageRow[]> {
		checkUsageQuery(query);
		return then(
			this.after(() => this.reads.usage(query)),
			(rows) => rows.map(toUsageRow),
		);
	}

	// --- the working set and runs ---------------------------------------------------------------

	async openSession(sessionId: string): Promise<boolean> {
		const joined = this.join(sessionId);
		return (joined instanceof Promise ? await joined : joined) !== undefined;
	}

	async startRun(
		sessionId: string,
		runId: string,
		startedAt: number,
		messages: AgentMessage[] = [],
	): Promise<RunClaim | false> {
		const joined = this.join(sessionId);
		const state = joined instanceof Promise ? await joined : joined;
		if (!state) return false;
		if (this.runs.queued(runId)) throw duplicateRunError(runId);
		// The row's `updated_at` comes with the run id's check: the claim's config version costs no read.
		const checked = this.reads.claimCheck(runId, sessionId);
		const { runExists, updatedAt } = checked instanceof Promise ? await checked : checked;
		if (runExists) throw duplicateRunError(runId);
		// The session may have left the working set while the check ran (its lease lost), or gone.
		if (!this.sessions.holds(state) || updatedAt === undefined) return false;
		return this.runs.startRun(state, runId, startedAt, messages) && { updatedAt };
	}

	async drainQueued(sessionId: string, ids: number[], messages: AgentMessage[]): Promise<number | undefined> {
		const joined = this.join(sessionId);
		const state = joined instanceof Promise ? await joined : joined;
		return state && this.runs.drainQueued(state, ids, messages);
	}

	async rewindTranscript(sessionId: string, keep: number, at: number): Promise<SupersededBranch | undefined> {
		if (!Number.isSafeInteger(keep) || keep < 0) throw new RangeError("rewindTranscript: keep must be an index >= 0");
		const joined = this.join(sessionId);
		const state = joined instanceof Promise ? await joined : joined;
		if (!state) return undefined;
		// Every queued write and buffered event on disk first: the move must see all of them.
		await this.flush();
		const answer = this.supersede(state, keep, at);
		const branch = answer instanceof Promise ? await answer : answer;
		if (branch) this.runs.rewound(state, keep);
		return branch;
	}

	async listSuperseded(sessionId: string): Promise<SupersededBranch[] | undefined> {
		return this.after(() => this.supersededRows(sessionId));
	}

	async listRuns(sessionId: string, limit?: number): Promise<RunRecord[]> {
		const max = checkLimit("limit", limit, 100, 1, 100_000);
		return then(
			this.after(() => this.reads.runs(sessionId, max)),
			(rows) => rows.map(toRunRecord),
		);
	}

	async recoverInterrupted(at: number, webhooks?: RecoveryWebhooks, sessionIds?: readonly string[]): Promise<string[]> {
		return this.after(() => this.interruptRuns(at, webhooks, sessionIds));
	}

	async recordUsage(
		ownerId: string | null,
		entries: readonly UsageEntry[],
		tenant: string | null = null,
	): Promise<void> {
		return this.after(() =>
			entries.length === 0 ? undefined : this.records.recordUsage(ownerId ?? "", tenant ?? "", entries),
		);
	}

	// --- sessions, transcripts and event log reads ----------------------------------------------

	async deleteSession(sessionId: string): Promise<boolean> {
		return (await this.deleteSessions([sessionId])) > 0;
	}

	async listMessages(
		sessionId: string,
		options: { offset?: number; limit?: number } = {},
	): Promise<MessagePage | undefined> {
		const offset = checkLimit("offset", options.offset, 0, 0, Number.MAX_SAFE_INTEGER);
		const limit = checkLimit("limit", options.limit, 100, 1, 1000);
		const total = await this.countMessages(sessionId);
		if (total === undefined) return undefined;
		const rows = await this.reads.messages(sessionId, offset, limit);
		return { messages: rows.map((d) => JSON.parse(d) as AgentMessage), offset, total };
	}

	async countMessages(sessionId: string): Promise<number | undefined> {
		return this.after(() => this.reads.messageCount(sessionId));
	}

	async readEvents(sessionId: string, afterId: number, limit?: number, maxBytes?: number): Promise<StoredEvent[]> {
		const page = new EventPage(checkLimit("limit", limit, 1000, 1, 100_000), maxBytes);
		return this.readLog(() => this.log.read(sessionId, afterId, page));
	}

	async oldestEventId(sessionId: string): Promise<number | undefined> {
		return this.readLog(() => this.log.oldest(sessionId));
	}

	// --- facade records -------------------------------------------------------------------------

	async putFacadeRecords(
		sessionId: string,
		records: readonly { kind: string; key: string; data: string }[],
		at: number,
	): Promise<boolean> {
		return this.after(() => this.facade.putFacadeRecords(sessionId, records, at));
	}

	async getFacadeRecord(sessionId: string, kind: string, key: string): Promise<FacadeRecord | undefined> {
		return this.after(() => this.facade.getFacadeRecord(sessionId, kind, key));
	}

	async findFacadeRecords(kind: string, key: string, ownerId: string | null, limit?: number): Promise<FacadeRecord[]> {
		return this.after(() => this.facade.findFacadeRecords(kind, key, ownerId, limit));
	}

	// --- webhook outbox -------------------------------------------------------------------------

	async enqueueWebhooks(deliveries: NewWebhookDelivery[]): Promise<void> {
		return this.after(() => this.outbox.enqueueWebhooks(deliveries));
	}

	async claimWebhooks(now: number, limit: number, claimUntil: number): Promise<WebhookDelivery[]> {
		return this.after(() => this.outbox.claimWebhooks(now, limit, claimUntil));
	}

	async settleWebhook(id: string, outcome: Parameters<WebhookOutbox["settleWebhook"]>[1]): Promise<boolean> {
		return this.after(() => this.outbox.settleWebhook(id, outcome));
	}

	async listWebhooks(options?: { status?: WebhookStatus; limit?: number }): Promise<WebhookDelivery[]> {
		return this.after(() => this.outbox.listWebhooks(options));
	}

	async pruneWebhooks(cutoff: number): Promise<number> {
		return this.after(() => this.outbox.pruneWebhooks(cutoff));
	}
}
