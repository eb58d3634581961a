/**
 * The in-memory `SessionStore`: for tests and `WHEELHOUSE_STORE=memory`. Same contract as the
 * SQLite store (one contract suite runs against both), minus durability: everything is lost with
 * the process. Messages are kept serialised so callers never share objects with the store.
 *
 * Everything happens within the call; the asynchronous methods return settled promises. Every
 * session is in the working set (this store created it: there is no other process to share with).
 */
import type { AgentMessage } from "../agent/types.js";
import { MemoryAdmission } from "./memory-admission.js";
import { MemoryFacadeRecords } from "./memory-facade-records.js";
import { MemoryWebhookOutbox } from "./memory-outbox.js";
import { MemorySchedules } from "./memory-schedules.js";
import { checkFilter, hasFilter, matchesFilter } from "./session-filter.js";
import {
	addUsage,
	checkLimit,
	closedError,
	copyConfig,
	copySessionRecord,
	copyUsage,
	cursorPage,
	decodeCursor,
	duplicateRunError,
	duplicateSessionError,
	EventPage,
	maxEventsPerSession,
	maxIdempotencyKeys,
	patchConfig,
	sumAssistantUsage,
	zeroUsage,
} from "./shared.js";
import type {
	FacadeRecord,
	IdempotencyRecord,
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
	SessionStore,
	StoredEvent,
	StoreOptions,
	SupersededBranch,
	UsageQuery,
	UsageRow,
	UsageSum,
	WebhookDelivery,
	WebhookOutbox,
	WebhookStatus,
} from "./types.js";
import { addEntry, checkUsageQuery, compareRows, type UsageEntry, usageEntriesOf, zeroRow } from "./usage.js";
import { canSee } from "./visibility.js";

interface StoredMessage {
	json: string;
	runId: string | null;
}

interface QueueEntry {
	id: number;
	kind: QueueKind;
	json: string;
	createdAt: number;
}

interface MemorySession {
	record: SessionRecord;
	messages: StoredMessage[];
	/** What rewinds took off the transcript's end, oldest first (`TranscriptBranches`). */
	superseded: { branch: number; fromIndex: number; supersededAt: number; messages: StoredMessage[] }[];
	/** Retained events from index `eventStart` on; the prefix is trimmed lazily to keep appends O(1). */
	events: StoredEvent[];
	eventStart: number;
	queue: QueueEntry[];
	runs: Map<string, RunRecord>;
	pending: Map<string, PendingInteraction>;
	/** By key, least recently put first (Map order). */
	idempotency: Map<string, IdempotencyRecord>;
}

export class MemorySessionStore implements SessionStore {
	readonly kind = "memory" as const;
	readonly maxEventsPerSession: number;
	readonly deltaRetention = "all" as const;
	/** Nothing waits for a commit in memory. */
	readonly syncPending = false;
	private readonly maxIdempotencyKeys: number;
	private readonly sessions = new Map<string, MemorySession>();
	/** Every run id of every stored session (run ids are unique store-wide; checked in O(1)). */
	private readonly runIds = new Set<string>();
	private nextQueueId = 1;
	/** Usage rows by `JSON.stringify([ownerId, day, provider, model])`; kept when a session is deleted. */
	private readonly usage = new Map<string, UsageRow>();
	private closed = false;
	private readonly outbox = new MemoryWebhookOutbox(() => this.closed);
	private readonly facade = new MemoryFacadeRecords();
	readonly schedules = new MemorySchedules(
		() => this.open(),
		(deliveries) => this.outbox.put(deliveries),
	);

	readonly admission = new MemoryAdmission();

	constructor(options: StoreOptions = {}) {
		this.maxEventsPerSession = maxEventsPerSession(options.maxEventsPerSession);
		this.maxIdempotencyKeys = maxIdempotencyKeys(options.maxIdempotencyKeysPerSession);
	}

	private open(): void {
		if (this.closed) throw closedError();
	}

	private get(sessionId: string): MemorySession | undefined {
		this.open();
		return this.sessions.get(sessionId);
	}

	// --- sessions -------------------------------------------------------------------------------

	async createSession(session: NewSession, messages: AgentMessage[] = []): Promise<SessionRecord> {
		this.open();
		if (this.sessions.has(session.id)) throw duplicateSessionError(session.id);
		const record: SessionRecord = {
			id: session.id,
			ownerId: session.ownerId,
			tenant: session.tenant ?? null,
			visibility: session.visibility ?? "owner",
			...copyConfig(session),
			createdAt: session.createdAt,
			updatedAt: session.createdAt,
			lastActiveAt: session.createdAt,
			status: "idle",
			interruptedAt: null,
			currentRunId: null,
			usage: zeroUsage(),
			messageCount: messages.length,
			lastEventId: 0,
		};
		this.sessions.set(session.id, {
			record,
			messages: messages.map((m) => ({ json: JSON.stringify(m), runId: null })),
			superseded: [],
			events: [],
			eventStart: 0,
			queue: [],
			runs: new Map(),
			pending: new Map(),
			idempotency: new Map(),
		});
		return copySessionRecord(record);
	}

	async getSession(sessionId: string): Promise<SessionRecord | undefined> {
		const s = this.get(sessionId);
		return s && copySessionRecord(s.record);
	}

	async updateSession(
		sessionId: string,
		patch: Partial<SessionConfig>,
		at: number,
	): Promise<SessionRecord | undefined> {
		const s = this.get(sessionId);
		if (!s) return undefined;
		const r = s.record;
		Object.assign(r, patchConfig(r, patch));
		r.updatedAt = at;
		return copySessionRecord(r);
	}

	async listSessions(options: SessionListOptions = {}): Promise<SessionPage> {
		this.open();
		const limit = checkLimit("limit", options.limit, 50, 1, 1000);
		const after = options.cursor === undefined ? undefined : decodeCursor(options.cursor);
		const { ownerId, tenant } = options;
		const filter = hasFilter(options.filter) ? options.filter : undefined;
		if (filter) checkFilter(filter);
		const all = [...this.sessions.values()]
			.map((s) => s.record)
			.filter(
				(r) =>
					ownerId === undefined ||
					r.ownerId === ownerId ||
					(ownerId !== null && canSee({ ownerId, tenant: tenant ?? null }, r)),
			)
			.filter((r) => !filter || matchesFilter(r, filter))
			.filter((r) => !after || r.createdAt > after[0] || (r.createdAt === after[0] && r.id > after[1]))
			.sort((a, b) => a.createdAt - b.createdAt || (a.id < b.id ? -1 : a.id > b.id ? 1 : 0));
		const { page, ...next } = cursorPage(all, limit);
		return { sessions: page.map(copySessionRecord), ...next };
	}

	async deleteSession(sessionId: string): Promise<boolean> {
		this.open();
		return this.remove(sessionId);
	}

	async deleteSessions(sessionIds: string[]): Promise<number> {
		this.open();
		let n = 0;
		for (const id of sessionIds) if (this.remove(id)) n++;
		return n;
	}

	private remove(sessionId: string): boolean {
		const s = this.sessions.get(sessionId);
		if (!s) return false;
		for (const runId of s.runs.keys()) this.runIds.delete(runId);
		this.facade.drop(sessionId);
		return this.sessions.delete(sessionId);
	}

	async listIdleSessions(cutoff: number, limit?: number): Promise<string[]> {
		this.open();
		const max = checkLimit("limit", limit, 1000, 1, 1_000_000);
		return [...this.sessions.values()]
			.map((s) => s.record)
			.filter((r) => r.lastActiveAt < cutoff && r.status !== "running")
			.sort((a, b) => a.lastActiveAt - b.lastActiveAt || (a.id < b.id ? -1 : 1))
			.slice(0, max)
			.map((r) => r.id);
	}

	// --- working set ----------------------------------------------------------------------------

	async openSession(sessionId: string): Promise<boolean> {
		return this.get(sessionId) !== undefined;
	}

	/** Every session stays: this store keeps them all in memory anyway (see the module comment). */
	async releaseSession(sessionId: string): Promise<boolean> {
		return this.get(sessionId) !== undefined;
	}

	appendEvent(sessionId: string, type: string, data: string, createdAt?: number): number | undefined {
		if (type === "") throw new RangeError("appendEvent: type must be a non-empty event name");
		const s = this.get(sessionId);
		if (!s) return undefined;
		const id = ++s.record.lastEventId;
		s.events.push({ id, type, data, createdAt: createdAt ?? Date.now() });
		// Trim by moving a start index; compact the array only once the dead prefix is as long as the cap.
		if (s.events.length - s.eventStart > this.maxEventsPerSession) {
			s.eventStart++;
			if (s.eventStart >= this.maxEventsPerSession) {
				s.events = s.events.slice(s.eventStart);
				s.eventStart = 0;
			}
		}
		return id;
	}

	lastEventId(sessionId: string): number | undefined {
		return this.get(sessionId)?.record.lastEventId;
	}

	appendMessages(sessionId: string, messages: AgentMessage[]): number | undefined {
		const s = this.get(sessionId);
		return s && this.addMessages(s, messages);
	}

	private addMessages(s: MemorySession, messages: AgentMessage[]): number {
		for (const m of messages) s.messages.push({ json: JSON.stringify(m), runId: s.record.currentRunId });
		this.addUsage(s.record.ownerId, s.record.tenant ?? null, usageEntriesOf(messages));
		s.record.messageCount = s.messages.length;
		return s.messages.length;
	}

	private addUsage(owner: string | null, tenant: string | null, entries: readonly UsageEntry[]): void {
		for (const entry of entries) {
			const key = JSON.stringify([owner, entry.day, entry.provider, entry.model]);
			const row = this.usage.get(key) ?? zeroRow(owner, tenant, entry.day, entry.provider, entry.model);
			// As the SQL stores' upsert: the row is the tenant's its owner last spent for.
			row.tenant = tenant;
			this.usage.set(key, row);
			addEntry(row, entry);
		}
	}

	async recordUsage(
		ownerId: string | null,
		entries: readonly UsageEntry[],
		tenant: string | null = null,
	): Promise<void> {
		this.open();
		this.addUsage(ownerId, tenant || null, entries);
	}

	endRun(sessionId: string, runId: string, end: RunEnd, webhooks?: NewWebhookDelivery[]): boolean {
		const s = this.get(sessionId);
		const run = s?.runs.get(runId);
		if (!s || !run) return false;
		if (webhooks) this.outbox.put(webhooks);
		Object.assign(run, {
			status: end.status,
			endedAt: end.endedAt,
			usage: addUsage(zeroUsage(), end.usage),
			errorMessage: end.errorMessage ?? null,
		});
		s.record.usage = addUsage(s.record.usage, end.usage);
		if (s.record.currentRunId === runId) {
			Object.assign(s.record, { status: "idle", currentRunId: null, interruptedAt: null });
		}
		s.record.lastActiveAt = Math.max(s.record.lastActiveAt, end.endedAt);
		return true;
	}

	touchSession(sessionId: string, at: number): boolean {
		const s = this.get(sessionId);
		if (!s) return false;
		s.record.lastActiveAt = Math.max(s.record.lastActiveAt, at);
		return true;
	}

	async sumUsage(query: UsageQuery): Promise<UsageSum> {
		const sum: UsageSum = { totalTokens: 0, costUsd: 0 };
		for (const row of await this.readUsage(query)) {
			sum.totalTokens += row.totalTokens;
			sum.costUsd += row.costUsd;
		}
		return sum;
	}

	async readUsage(query: UsageQuery): Promise<UsageRow[]> {
		this.open();
		checkUsageQuery(query);
		return [...this.usage.values()]
			.filter(
				(r) =>
					(query.tenant === undefined ? r.ownerId === query.ownerId : r.tenant === query.tenant) &&
					r.day >= query.fromDay &&
					r.day <= query.toDay,
			)
			.map((r) => ({ ...r }))
			.sort(compareRows);
	}

	/** Nothing waits for a commit in memory. */
	async sync(): Promise<void> {}

	// --- transcript and event log reads ---------------------------------------------------------

	async listMessages(sessionId: string, options: { offset?: number; limit?: number } = {}) {
		const offset = checkLimit("offset", options.offset, 0, 0, Number.MAX_SAFE_INTEGER);
		const limit = checkLimit("limit", options.limit, 100, 1, 1000);
		const s = this.get(sessionId);
		if (!s) return undefined;
		return {
			messages: s.messages.slice(offset, offset + limit).map((m) => JSON.parse(m.json) as AgentMessage),
			offset,
			total: s.messages.length,
		};
	}

	async countMessages(sessionId: string): Promise<number | undefined> {
		return this.get(sessionId)?.messages.length;
	}

	async rewindTranscript(sessionId: string, keep: number, at: number): Promise<SupersededBranch | undefined> {
		const s = this.get(sessionId);
		if (!s) return undefined;
		const moved = s.messages.splice(Math.max(0, keep));
		s.record.messageCount = s.messages.length;
		const branch = { branch: s.superseded.length + 1, fromIndex: s.messages.length, supersededAt: at, messages: moved };
		if (moved.length > 0) s.superseded.push(branch);
		return { ...branch, messages: moved.map((m) => JSON.parse(m.json) as AgentMessage) };
	}

	async listSuperseded(sessionId: string): Promise<SupersededBranch[] | undefined> {
		const s = this.get(sessionId);
		return s?.superseded.map((b) => ({ ...b, messages: b.messages.map((m) => JSON.parse(m.json) as AgentMessage) }));
	}

	async readEvents(sessionId: string, afterId: number, limit?: number, maxBytes?: number): Promise<StoredEvent[]> {
		const max = checkLimit("limit", limit, 1000, 1, 100_000);
		const page = new EventPage(max, maxBytes);
		const s = this.get(sessionId);
		if (!s) return [];
		// Ids are strictly increasing: binary-search the first one after `afterId`.
		let lo = s.eventStart;
		let hi = s.events.length;
		while (lo < hi) {
			const mid = (lo + hi) >>> 1;
			if ((s.events[mid] as StoredEvent).id <= afterId) lo = mid + 1;
			else hi = mid;
		}
		for (let i = lo; i < s.events.length; i++) {
			if (!page.add({ ...(s.events[i] as StoredEvent) })) break;
		}
		return page.events;
	}

	async oldestEventId(sessionId: string): Promise<number | undefined> {
		const s = this.get(sessionId);
		return s?.events[s.eventStart]?.id;
	}

	// --- queue ----------------------------------------------------------------------------------

	async enqueue(
		sessionId: string,
		kind: QueueKind,
		message: AgentMessage,
		createdAt: number,
		withKey?: (queued: QueuedMessage) => IdempotencyRecord,
	): Promise<QueuedMessage | undefined> {
		const s = this.get(sessionId);
		if (!s) return undefined;
		const entry: QueueEntry = { id: this.nextQueueId++, kind, json: JSON.stringify(message), createdAt };
		s.queue.push(entry);
		s.record.lastActiveAt = Math.max(s.record.lastActiveAt, createdAt);
		const queued: QueuedMessage = { id: entry.id, sessionId, kind, message: JSON.parse(entry.json), createdAt };
		if (withKey) this.putKey(s, withKey(queued));
		return queued;
	}

	async listQueued(sessionId: string, kind?: QueueKind): Promise<QueuedMessage[]> {
		const s = this.get(sessionId);
		if (!s) return [];
		return s.queue
			.filter((e) => kind === undefined || e.kind === kind)
			.map((e) => ({ id: e.id, sessionId, kind: e.kind, message: JSON.parse(e.json), createdAt: e.createdAt }));
	}

	private dequeue(s: MemorySession, ids: number[]): number {
		const drop = new Set(ids);
		const before = s.queue.length;
		s.queue = s.queue.filter((e) => !drop.has(e.id));
		return before - s.queue.length;
	}

	async drainQueued(sessionId: string, ids: number[], messages: AgentMessage[]): Promise<number | undefined> {
		const s = this.get(sessionId);
		if (!s) return undefined;
		this.dequeue(s, ids);
		return this.addMessages(s, messages);
	}

	async clearQueue(sessionId: string, kind?: QueueKind): Promise<number> {
		const s = this.get(sessionId);
		if (!s) return 0;
		const before = s.queue.length;
		s.queue = kind === undefined ? [] : s.queue.filter((e) => e.kind !== kind);
		return before - s.queue.length;
	}

	// --- runs -----------------------------------------------------------------------------------

	async startRun(
		sessionId: string,
		runId: string,
		startedAt: number,
		messages: AgentMessage[] = [],
	): Promise<RunClaim | false> {
		const s = this.get(sessionId);
		if (!s) return false;
		if (this.runIds.has(runId)) throw duplicateRunError(runId);
		if (s.record.status === "running") return false;
		this.runIds.add(runId);
		s.runs.set(runId, {
			id: runId,
			sessionId,
			status: "running",
			startedAt,
			endedAt: null,
			usage: zeroUsage(),
			errorMessage: null,
		});
		Object.assign(s.record, { status: "running", currentRunId: runId, interruptedAt: null });
		s.record.lastActiveAt = Math.max(s.record.lastActiveAt, startedAt);
		if (messages.length > 0) this.addMessages(s, messages);
		return { updatedAt: s.record.updatedAt };
	}

	async listRuns(sessionId: string, limit?: number): Promise<RunRecord[]> {
		const max = checkLimit("limit", limit, 100, 1, 100_000);
		const s = this.get(sessionId);
		if (!s) return [];
		return [...s.runs.values()]
			.sort((a, b) => a.startedAt - b.startedAt)
			.slice(-max)
			.map((r) => ({ ...r, usage: copyUsage(r.usage) }));
	}

	async recoverInterrupted(
		at: number,
		webhooks?: (sessionId: string, runId: string | null) => NewWebhookDelivery[],
		sessionIds?: readonly string[],
	): Promise<string[]> {
		this.open();
		const changed: string[] = [];
		const only = sessionIds && new Set(sessionIds);
		for (const s of this.sessions.values()) {
			if (s.record.status !== "running" || (only && !only.has(s.record.id))) continue;
			const runId = s.record.currentRunId;
			const run = runId === null ? undefined : s.runs.get(runId);
			if (webhooks) this.outbox.put(webhooks(s.record.id, run ? runId : null));
			if (run) {
				const usage = sumAssistantUsage(
					s.messages.filter((m) => m.runId === runId).map((m) => JSON.parse(m.json) as AgentMessage),
				);
				Object.assign(run, { status: "interrupted", endedAt: at, usage });
				s.record.usage = addUsage(s.record.usage, usage);
			}
			Object.assign(s.record, { status: "interrupted", interruptedAt: at });
			changed.push(s.record.id);
		}
		return changed;
	}

	// --- pending interactions -------------------------------------------------------------------

	async putPending(
		interaction: Omit<PendingInteraction, "resolvedAt" | "resolution">,
		webhooks?: (runId: string | null) => NewWebhookDelivery[],
	): Promise<boolean> {
		const s = this.get(interaction.sessionId);
		if (!s) return false;
		if (webhooks) this.outbox.put(webhooks(s.record.currentRunId));
		// Replacing keeps the original position (Map order) as SQLite's upsert keeps the row.
		s.pending.set(interaction.toolCallId, {
			sessionId: interaction.sessionId,
			toolCallId: interaction.toolCallId,
			kind: interaction.kind,
			payload: interaction.payload,
			createdAt: interaction.createdAt,
			resolvedAt: null,
			resolution: null,
		});
		return true;
	}

	async resolvePending(sessionId: string, toolCallId: string, resolution: string, at: number): Promise<boolean> {
		const p = this.get(sessionId)?.pending.get(toolCallId);
		if (!p || p.resolvedAt !== null) return false;
		p.resolvedAt = at;
		p.resolution = resolution;
		return true;
	}

	async deletePending(sessionId: string, toolCallId: string): Promise<boolean> {
		return this.get(sessionId)?.pending.delete(toolCallId) ?? false;
	}

	async listPending(sessionId: string, options: { includeResolved?: boolean } = {}): Promise<PendingInteraction[]> {
		const s = this.get(sessionId);
		if (!s) return [];
		return [...s.pending.values()]
			.filter((p) => options.includeResolved || p.resolvedAt === null)
			.sort((a, b) => a.createdAt - b.createdAt)
			.map((p) => ({ ...p }));
	}

	// --- facade records -------------------------------------------------------------------------

	async putFacadeRecords(
		sessionId: string,
		records: readonly { kind: string; key: string; data: string }[],
		at: number,
	): Promise<boolean> {
		if (!this.get(sessionId)) return false;
		this.facade.put(sessionId, records, at);
		return true;
	}

	async getFacadeRecord(sessionId: string, kind: string, key: string): Promise<FacadeRecord | undefined> {
		this.open();
		return this.facade.get(sessionId, kind, key);
	}

	async findFacadeRecords(kind: string, key: string, ownerId: string | null, limit?: number): Promise<FacadeRecord[]> {
		this.open();
		return this.facade.find(kind, key, (id) => this.sessions.get(id)?.record.ownerId === ownerId, limit);
	}

	// --- idempotency keys -----------------------------------------------------------------------

	async putIdempotencyKey(record: IdempotencyRecord): Promise<boolean> {
		const s = this.get(record.sessionId);
		if (!s) return false;
		this.putKey(s, record);
		return true;
	}

	private putKey(s: MemorySession, record: IdempotencyRecord): void {
		// Replacing moves the key to the most recent end, as SQLite's replacement gets a new row.
		s.idempotency.delete(record.key);
		s.idempotency.set(record.key, { ...record });
		for (const key of s.idempotency.keys()) {
			if (s.idempotency.size <= this.maxIdempotencyKeys) break;
			s.idempotency.delete(key);
		}
	}

	async getIdempotencyKey(sessionId: string, key: string): Promise<IdempotencyRecord | undefined> {
		const record = this.get(sessionId)?.idempotency.get(key);
		return record && { ...record };
	}

	async deleteIdempotencyKeys(cutoff: number): Promise<number> {
		this.open();
		let n = 0;
		for (const s of this.sessions.values()) {
			for (const [key, record] of s.idempotency) {
				if (record.createdAt < cutoff && s.idempotency.delete(key)) n++;
			}
		}
		return n;
	}

	// --- webhook outbox -------------------------------------------------------------------------

	enqueueWebhooks(deliveries: NewWebhookDelivery[]): Promise<void> {
		return this.outbox.enqueueWebhooks(deliveries);
	}

	claimWebhooks(now: number, limit: number, claimUntil: number): Promise<WebhookDelivery[]> {
		return this.outbox.claimWebhooks(now, limit, claimUntil);
	}

	settleWebhook(id: string, outcome: Parameters<WebhookOutbox["settleWebhook"]>[1]): Promise<boolean> {
		return this.outbox.settleWebhook(id, outcome);
	}

	listWebhooks(options?: { status?: WebhookStatus; limit?: number }): Promise<WebhookDelivery[]> {
		return this.outbox.listWebhooks(options);
	}

	pruneWebhooks(cutoff: number): Promise<number> {
		return this.outbox.pruneWebhooks(cutoff);
	}

	// --- lifecycle ------------------------------------------------------------------------------

	async flush(): Promise<void> {
		this.open();
	}

	async close(): Promise<void> {
		this.closed = true;
	}
}

/** Creates an in-memory store. */
export function createMemoryStore(options: StoreOptions = {}): MemorySessionStore {
	return new MemorySessionStore(options);
}
