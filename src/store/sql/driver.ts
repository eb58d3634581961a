/**
 * The driver interface of the SQL store engine (`engine.ts`): what the engine asks of a database
 * besides the event log's reads (`LogRows`, `event-buffer.ts`) and the run writes' SQL
 * (`RunDriver`, `run-writes.ts`). SQLite and PostgreSQL each answer it with their SQL, their
 * commit queue and their locking (`../sqlite`, `../postgres`).
 */

import type { SessionCursor } from "../shared.js";
import type {
	IdempotencyRecord,
	NewWebhookDelivery,
	PendingInteraction,
	QueuedMessage,
	QueueKind,
	SessionFilter,
	UsageEntry,
	UsageQuery,
} from "../types.js";
import type { IdempotencyRow, PendingRow, QueueRow, RunRow, SessionRow, UsageDailyRow } from "./rows.js";

/**
 * A value a driver answers at once (SQLite) or after a round trip (PostgreSQL). Callers await it
 * only when it is a promise, so an embedded driver's work is done within the call.
 */
export type Answer<T> = T | Promise<T>;

/** What the engine asks of a store's commit queue. */
export interface EngineCommits {
	/** True while writes wait for the commit barrier (`SessionStore.syncPending`). */
	readonly pending: boolean;
	commitObserver: ((ms: number) => void) | undefined;
	/** Records an activity time, written with the next commit. */
	touch(sessionId: string, at: number): void;
	/** The barrier (`SessionStore.sync`): never throws, never rejects. */
	sync(): Answer<void>;
	/** Commits everything waiting; throws (rejects) when that failed. */
	flush(): Answer<void>;
}

/** A pending interaction as put (not resolved yet). */
export type NewPending = Omit<PendingInteraction, "resolvedAt" | "resolution">;

/** The deliveries a recovery writes per interrupted session (`SessionStore.recoverInterrupted`). */
export type RecoveryWebhooks = (sessionId: string, runId: string | null) => NewWebhookDelivery[];

/**
 * The durable writes of queues, pending interactions and idempotency records a driver answers with
 * its SQL, each as `../types.ts` says of the method of the same name; each commits together with
 * the session's writes queued before it.
 */
export interface RecordWrites {
	enqueue(
		entry: Omit<QueuedMessage, "id">,
		withKey: ((queued: QueuedMessage) => IdempotencyRecord) | undefined,
	): Answer<QueuedMessage | undefined>;
	clearQueue(sessionId: string, kind: QueueKind | undefined): Answer<number>;
	putPending(
		interaction: NewPending,
		webhooks: ((runId: string | null) => NewWebhookDelivery[]) | undefined,
	): Answer<boolean>;
	resolvePending(sessionId: string, toolCallId: string, resolution: string, at: number): Answer<boolean>;
	deletePending(sessionId: string, toolCallId: string): Answer<boolean>;
	putIdempotencyKey(record: IdempotencyRecord): Answer<boolean>;
	deleteIdempotencyKeys(cutoff: number): Answer<number>;
	/** Adds usage entries to the rows of owner and tenant (`""`: none); `entries` is not empty. */
	recordUsage(owner: string, tenant: string, entries: readonly UsageEntry[]): Answer<void>;
}

/**
 * The rows a driver reads with its SQL for the engine's reads, each after every write called
 * before it (read-your-writes); the engine maps them to records.
 */
export interface RowReads<R extends SessionRow> {
	/** The session rows of a `listSessions` page, in creation order (ties by id). */
	sessions(query: SessionRowQuery): Answer<R[]>;
	/** The session's transcript length, undefined for an unknown session. */
	messageCount(sessionId: string): Answer<number | undefined>;
	/** The JSON of `limit` transcript messages from `offset` on. */
	messages(sessionId: string, offset: number, limit: number): Answer<string[]>;
	/** The newest `limit` runs of a session, oldest first. */
	runs(sessionId: string, limit: number): Answer<RunRow[]>;
	/**
	 * Whether a run with this id is on disk, and the session's `updated_at` (undefined for an
	 * unknown session), in one read: what a run's claim checks.
	 */
	claimCheck(runId: string, sessionId: string): Answer<{ runExists: boolean; updatedAt: number | undefined }>;
	/** The session's queue entries (of `kind`, when given) in id order. */
	queue(sessionId: string, kind: QueueKind | undefined): Answer<QueueRow[]>;
	/** The session's pending interactions (resolved ones too, when asked), in creation order. */
	pending(sessionId: string, includeResolved: boolean): Answer<PendingRow[]>;
	/** The idempotency record's row, or undefined. */
	idempotencyKey(sessionId: string, key: string): Answer<IdempotencyRow | undefined>;
	/** The usage rows of a checked query, in day, provider, model, owner order. */
	usage(query: UsageQuery): Answer<UsageDailyRow[]>;
	/** The sums of those rows (0 without any); PostgreSQL may answer them as numeric strings. */
	usageSum(query: UsageQuery): Answer<{ total_tokens: number | string; cost_usd: number | string }>;
}

/**
 * Which sessions a page of `listSessions` reads: after a cursor, `limit` rows, matching `filter`
 * (checked, with at least one condition) when given. With `ownerId`, what that caller may see:
 * its own sessions and, when `tenant` is not null, its tenant's sessions of visibility `"tenant"`
 * (`canSee` of `../visibility.ts`, in SQL).
 */
export interface SessionRowQuery {
	ownerId?: string | null;
	tenant?: string | null;
	after?: SessionCursor;
	filter?: SessionFilter;
	limit: number;
}

/**
 * The statements of one transaction body (`steps.ts`), `?` placeholders: what the shared
 * schedules and admission queue ask of a driver inside their writes.
 */
export interface SqlTx {
	/** The rows a statement returns. */
	rows<T>(sql: string, params?: readonly unknown[]): Answer<T[]>;
	/** Runs a write statement; the number of rows it changed. */
	run(sql: string, params?: readonly unknown[]): Answer<number>;
}
