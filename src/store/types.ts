/**
 * The durable session store: the one interface the server persists everything through, as a few
 * role interfaces (`SessionStore` is their intersection). `docs/store-contract.md` explains the
 * design and how a database across the network implements it.
 *
 * ## A synchronous working set, asynchronous everything else
 *
 * The sessions a process runs are its *working set*: the store keeps their write state in the
 * process (the next event id, the transcript length, the current run) so that what a run writes
 * on its hot path is a synchronous call that never waits for I/O — one `appendEvent` per SSE event,
 * `appendMessages` per completed message, `endRun`, `touchSession`. Their effect is visible to
 * every later call of this store at once; they become durable at the next commit barrier
 * (`sync()`) or sooner. A session joins the working set when this process creates it
 * (`createSession`), opens it (`openSession`) or starts a run on it (`startRun`), and leaves it when
 * it is deleted. A working-set call on a session that is not in it is answered as for an unknown
 * session (it writes nothing): callers open a session before they write to it.
 *
 * Everything else — reads, durable writes, the barrier itself — returns a Promise, so that an
 * implementation may be a database across a network. A durable write's promise resolves once it
 * is committed. Writes take effect in the order they are called, awaited or not, and reads see
 * every write called before them (read-your-writes). The embedded implementations (SQLite,
 * memory) do their work within the call and return settled promises; callers must not rely on
 * that.
 *
 * ## What is durable when
 *
 * "Durable" means committed: it survives a crash or SIGKILL of the process (on SQLite with the
 * default `synchronous: "normal"`, an OS crash or power loss may lose the last commits;
 * `synchronous: "full"` closes that gap at the price of an fsync per commit).
 *
 * - Durable when the promise resolves: `createSession`, `updateSession`, `deleteSession`,
 *   `deleteSessions`, `enqueue`, `drainQueued`, `clearQueue`, `putPending`,
 *   `resolvePending`, `deletePending`, `putIdempotencyKey`, `deleteIdempotencyKeys`,
 *   `putFacadeRecords`, `recoverInterrupted`, `flush`.
 * - Durable at the next barrier: `startRun` (its claim is decided when its promise resolves),
 *   `appendMessages` and `endRun`. They are committed by the next `sync()`, by any durable write of
 *   their session, by a read of their session, and otherwise by a timer: at the end of the event-loop
 *   turn they were made in (`syncDelayMs`, default 0; an engine may wait a few milliseconds more
 *   while its commits follow each other closely), many sessions' in one commit. The server awaits `sync()` before
 *   anything that depends on them leaves the process (an SSE write, the head of an SSE response,
 *   an HTTP response), so no client ever sees a run, a message or a run end that a crash could
 *   take back. They carry the buffered events of their session into the same commit, so a
 *   session's event log on disk is never behind a message, run or queue change the server
 *   acknowledged (a durable write leaves other sessions' events to the next `sync()` or flush;
 *   `flush`, `close` and `recoverInterrupted` write all of them).
 * - Buffered: `appendEvent` and `touchSession` (activity times are advisory; they ride along). An
 *   event's id is assigned, and visible to `readEvents`/`lastEventId`, at once; the event is
 *   committed by the next `sync()` (every buffered event of every session: the server awaits it
 *   before an SSE write, so no client is sent an event a crash could take back), with a barrier
 *   or durable write of its session, when the buffer is full, at `flush()`/`close()`, and
 *   otherwise after at most `flushIntervalMs` (SQLite default 50 ms). A crash can therefore lose
 *   only events no client was sent (up to the last 50 ms of them). The deltas of a message still
 *   streaming may not be written at all (see `deltaRetention`): they leave `sync()` nothing to
 *   commit. Ids stay monotonic anyway: they are reserved durably ahead of use, a restarted store
 *   continues after the last reserved id, and a lost id is never referenced by anything durable.
 *
 * `sync()` resolves once every write called before it is durable as its kind promises: the writes
 * waiting for the barrier and the buffered events are committed, and durable writes already
 * called have resolved. So a caller may start a durable write without awaiting it (best-effort
 * persistence of pending interactions) and still rely on the barrier before its consequences
 * leave the process.
 *
 * The memory implementation keeps everything in the process and loses it with the process; it
 * follows the same contract otherwise (including copies on read: callers never share objects with
 * the store).
 *
 * ## Unknown sessions and misuse
 *
 * A `sessionId` that does not exist (never created, or deleted) is a value, never a throw: reads
 * resolve to `undefined` or `[]`, writes write nothing and return `undefined`/`false`/`0`. This
 * makes the late writes of a run racing a `DELETE` harmless. Misuse (a closed store, a duplicate
 * session or run id, an invalid argument) throws from a synchronous method and rejects from an
 * asynchronous one, with the fix in the message.
 *
 * Timestamps are epoch milliseconds. Every timestamp is passed by the caller where a method takes
 * one, so tests and the server control time; the store never reads the clock except where noted.
 */

import type { AgentMessage } from "../agent/types.js";
import type { AdmissionHost } from "./admission-types.js";
import type {
	FacadeRecord,
	IdempotencyRecord,
	MessagePage,
	NewSession,
	PendingInteraction,
	QueuedMessage,
	QueueKind,
	RunEnd,
	RunRecord,
	SessionConfig,
	SessionFilter,
	SessionPage,
	SessionRecord,
	StoredEvent,
	UsageEntry,
	UsageQuery,
	UsageRow,
	UsageSum,
} from "./records.js";
import type { ScheduleStore } from "./schedule-types.js";
import type { NewWebhookDelivery, WebhookOutbox } from "./webhook-types.js";

export type * from "./admission-types.js";
export type * from "./records.js";
export type * from "./schedule-types.js";
export type * from "./webhook-types.js";

/** Options both implementations accept. */
export interface StoreOptions {
	/** Events retained per session; older ones are trimmed (ids are never reused). Default 10,000. */
	maxEventsPerSession?: number;
	/**
	 * Idempotency records kept per session; putting one more removes the least recently put.
	 * Default 1,000.
	 */
	maxIdempotencyKeysPerSession?: number;
}

/** What `listSessions` takes. */
export interface SessionListOptions {
	ownerId?: string | null;
	tenant?: string | null;
	cursor?: string;
	limit?: number;
	filter?: SessionFilter;
}

/** Creating, reading, configuring, listing and deleting sessions. */
export interface SessionCatalog {
	/**
	 * Creates a session, optionally with a starting transcript, in one transaction, and puts it in
	 * this process's working set. `updatedAt` and `lastActiveAt` start at `createdAt`; status `idle`;
	 * usage zero. Rejects if the id exists (caller misuse: generate unique ids). Durable on resolve.
	 */
	createSession(session: NewSession, messages?: AgentMessage[]): Promise<SessionRecord>;

	/** The session, or undefined. */
	getSession(sessionId: string): Promise<SessionRecord | undefined>;

	/**
	 * Applies a config patch (only the given fields change) and sets `updatedAt = at`.
	 * Resolves to the updated record, or undefined for an unknown session. Durable on resolve.
	 */
	updateSession(sessionId: string, patch: Partial<SessionConfig>, at: number): Promise<SessionRecord | undefined>;

	/**
	 * Lists sessions in creation order (oldest first, ties by id), `limit` per page (1..1000,
	 * default 50). `ownerId` filters to one owner (`null` = sessions created without auth); omit it
	 * for all. With `ownerId`, a non-null `tenant` adds the sessions of that tenant whose visibility
	 * is `"tenant"` (what that caller may see: see `SessionVisibility`). `cursor` is the `nextCursor`
	 * of the previous page; a malformed cursor rejects. `filter` keeps only the sessions that match it
	 * (see {@link SessionFilter}); pages and cursors work the same.
	 */
	listSessions(options?: SessionListOptions): Promise<SessionPage>;

	/**
	 * Deletes the session and everything of it: transcript, events (also buffered ones), queue,
	 * runs, pending interactions, idempotency records, facade records; it leaves the working set. Resolves to false
	 * if unknown. Durable on resolve.
	 */
	deleteSession(sessionId: string): Promise<boolean>;

	/** Deletes several sessions as `deleteSession` does, in one transaction. Resolves to how many existed. */
	deleteSessions(sessionIds: string[]): Promise<number>;

	/** Ids of sessions with `lastActiveAt < cutoff` and not `running`, least recently active first (at most `limit`, default 1,000). */
	listIdleSessions(cutoff: number, limit?: number): Promise<string[]>;
}

/**
 * The synchronous writes of the sessions this process runs (its working set; see the module
 * comment). Each returns at once, without I/O; `undefined`/`false` when the session is unknown,
 * deleted, or not in the working set. Misuse and a closed store throw.
 */
export interface SessionWriter {
	/**
	 * Puts the session in this process's working set (loading its write state), so that the other
	 * methods of this role apply to it. Resolves to false for an unknown session. Idempotent.
	 */
	openSession(sessionId: string): Promise<boolean>;

	/**
	 * Commits the session's writes, then takes it out of the working set (and gives its lease up,
	 * where the store has leases), so a process that runs many sessions over its life keeps write
	 * state only for those in memory. Resolves to false when it was not in the working set. The
	 * caller releases only a session with no active run (a store may refuse one: false) and writes
	 * nothing more to it until `openSession` again. A store that keeps every session in memory
	 * anyway may keep it and resolve true.
	 */
	releaseSession(sessionId: string): Promise<boolean>;

	/**
	 * Assigns the next event id of the session and appends the event. Buffered: NOT durable on
	 * return; committed by the next `sync()` at the latest, so before any client can be sent it
	 * (see the module comment); immediately visible to `readEvents` (see `deltaRetention` for
	 * deltas). `createdAt` defaults to `Date.now()`. Returns the id, or undefined (dropped).
	 * Throws on an empty `type` (misuse).
	 */
	appendEvent(sessionId: string, type: string, data: string, createdAt?: number): number | undefined;

	/**
	 * Highest id assigned (0 if none yet); undefined outside the working set. After a crash it may
	 * exceed the last id on disk: ids handed out before the crash are skipped, never reused.
	 */
	lastEventId(sessionId: string): number | undefined;

	/**
	 * Appends completed messages (`message_end` messages, tool results) to the transcript, in one
	 * transaction, tagged with the session's current run if any. Returns the new transcript length.
	 * Durable at the next barrier.
	 */
	appendMessages(sessionId: string, messages: AgentMessage[]): number | undefined;

	/**
	 * Records the end of a run: its status, end time, usage and error; adds the usage to the
	 * session's totals; session status back to `idle` when `runId` is the current run.
	 * Returns false for an unknown run (or session). Durable at the next barrier, with `webhooks`
	 * (the deliveries that report the run's end, `WebhookOutbox`) in the same commit.
	 */
	endRun(sessionId: string, runId: string, end: RunEnd, webhooks?: NewWebhookDelivery[]): boolean;

	/**
	 * Moves `lastActiveAt` forward to `at` (never back), e.g. on every request or SSE subscribe.
	 * Buffered (cheap enough per request); visible to reads at once.
	 */
	touchSession(sessionId: string, at: number): boolean;
}

/** The commit barrier the server awaits before anything leaves the process. */
export interface CommitBarrier {
	/**
	 * Resolves once every write called before it is durable as its kind promises (see the module
	 * comment): the writes that wait for the barrier are committed, and so is every event buffered
	 * before the call, of every session (what the server sends next may be any of them), in one
	 * commit; durable writes already called have resolved. The deltas of a streaming message that a
	 * store does not write (`deltaRetention`) leave it nothing to commit. The server awaits it
	 * before each SSE write pass and each HTTP response. Cheap when nothing waits. A failed commit
	 * is reported to the store's error handler and its writes and events stay queued: the SQLite
	 * store's barrier tries again until they are committed (what the server shows next must not
	 * claim a write or an event the disk does not have); the PostgreSQL store's resolves after a
	 * failed attempt while the database is unreachable (responses must still go out), and commits
	 * them once it is back. Never rejects; resolves when the store closes (closing reports what it
	 * could not write).
	 */
	sync(): Promise<void>;

	/**
	 * True while `sync()` has anything to wait for: writes waiting for the barrier, buffered events
	 * not yet committed, or durable writes not yet resolved. While it is false the server writes
	 * without calling `sync()`; while it is true it spaces its write passes to let more writes
	 * share a commit.
	 */
	readonly syncPending: boolean;

	/**
	 * Optional (stores that commit transactions): `observer` is called after each commit with its
	 * duration in milliseconds; `undefined` removes it. One observer at a time (the server's metrics).
	 * Contract: the observer must not throw, and runs on the committing call's stack.
	 */
	observeCommits?(observer: ((ms: number) => void) | undefined): void;
}

/** Reading a session's transcript (writing it is the working set's, `SessionWriter`). */
export interface TranscriptReader {
	/**
	 * A page of the transcript in order: `offset` (default 0) is the index of the first message,
	 * `limit` 1..1000 (default 100). Undefined for an unknown session.
	 */
	listMessages(sessionId: string, options?: { offset?: number; limit?: number }): Promise<MessagePage | undefined>;

	/** Transcript length; undefined for an unknown session. */
	countMessages(sessionId: string): Promise<number | undefined>;
}

/**
 * Messages a rewind took off the end of a session's transcript, kept in the store as one branch
 * (docs/branching.md, "Rewind").
 */
export interface SupersededBranch {
	/** The session's rewinds in order: 1 for its first, then 2, and so on. */
	branch: number;
	/** The transcript index the branch's first message had (the transcript was cut before it). */
	fromIndex: number;
	/** When the rewind was stored. */
	supersededAt: number;
	/** The messages, in their former order (`fromIndex` on). */
	messages: AgentMessage[];
}

/** Rewinding a session's transcript without losing what followed the cut. */
export interface TranscriptBranches {
	/**
	 * Durable when it resolves. Moves the messages from index `keep` on out of the transcript into
	 * a new superseded branch (the session's length becomes `keep`), after every write of the
	 * session called before it. Events already logged keep their data exactly (a store that writes
	 * message references inlines the moved messages into them first). Resolves to the branch (no
	 * branch is made, and `messages` is empty, when nothing follows `keep`); undefined for an
	 * unknown session or one that is not this store's to write. Contract: call it only while the
	 * session is claimed by a run of this process (nothing else appends meanwhile).
	 */
	rewindTranscript(sessionId: string, keep: number, at: number): Promise<SupersededBranch | undefined>;

	/** The session's superseded branches, oldest first; undefined for an unknown session. */
	listSuperseded(sessionId: string): Promise<SupersededBranch[] | undefined>;
}

/** Reading the SSE event log (resuming a stream); appending is the working set's, `SessionWriter`. */
export interface EventLogReader {
	/**
	 * Retained events with `id > afterId`, in id order, at most `limit` (1..100,000, default 1,000)
	 * and, when `maxBytes` is given, no more than fit in it: the page stops before the event whose
	 * `data` would bring the sum of the page's `data.length` above `maxBytes`, except that the first
	 * event is always included however large (a page always makes progress). Readers that pace
	 * themselves by a memory budget (an SSE replay) size pages this way; a count alone says nothing
	 * about bytes. `[]` for an unknown session. Sees every event appended before the call (it may
	 * commit the buffer first): it is for resuming a stream, not for the per-event path.
	 */
	readEvents(sessionId: string, afterId: number, limit?: number, maxBytes?: number): Promise<StoredEvent[]>;

	/**
	 * Lowest retained id, or undefined when none is retained (or unknown session). A client whose
	 * `Last-Event-ID` is below `oldestEventId - 1` has missed trimmed events (send a reset snapshot).
	 */
	oldestEventId(sessionId: string): Promise<number | undefined>;

	/** The per-session cap in force (`maxEventsPerSession`). */
	readonly maxEventsPerSession: number;

	/**
	 * What the log keeps of the `message_update` events (deltas) between a `message_start` and its
	 * `message_end`. `"all"` (memory): like any other event. `"while-streaming"` (SQLite): they are
	 * kept in memory, and read back, only while their message streams; after its `message_end`, and
	 * after a restart, the log has the message's `message_start` and `message_end` (which carries
	 * the whole message) but not its deltas. A client resuming from inside such a message gets the
	 * `message_end`. Ids of dropped deltas are never reused. (Deltas outside a message are kept.)
	 */
	readonly deltaRetention: "all" | "while-streaming";
}

/**
 * A run's claim that succeeded. `updatedAt`: the session's `updatedAt` (its config's last change)
 * as the claim read it, at the earliest once `startRun` was called. A caller that loaded the
 * session's config before claiming compares it with its own: a config another process stored in
 * between is newer, and the run must take it in before it starts (one stored after this read is
 * the caller's to hear of while it runs).
 */
export interface RunClaim {
	updatedAt: number;
}

/** Runs: the claim that starts one, their records, and recovery after a crash. */
export interface RunStore {
	/**
	 * Claims the session for a run, only if no run is active on it (status not `running`): status
	 * `running`, `currentRunId = runId`, `interruptedAt = null`, `lastActiveAt = startedAt`; then
	 * appends `messages` (the prompt that starts it, if any) to the transcript, as `appendMessages`
	 * would, in the same write; the session joins the working set. Resolves to the claim (the
	 * session's `updatedAt` as the claim read it: see {@link RunClaim}), or to false for an unknown
	 * session or one with an active run (the claim failed: nothing is written). Rejects if the run
	 * id exists (misuse). Durable at the next barrier.
	 */
	startRun(sessionId: string, runId: string, startedAt: number, messages?: AgentMessage[]): Promise<RunClaim | false>;

	/** The session's runs, oldest first (at most `limit`, default 100, the most recent ones). */
	listRuns(sessionId: string, limit?: number): Promise<RunRecord[]>;

	/**
	 * Startup recovery: every session whose status is `running` becomes `interrupted` with
	 * `interruptedAt = at`; its current run gets status `interrupted`, `endedAt = at` and the usage
	 * of its persisted assistant messages (also added to the session's totals). Resolves to the ids
	 * of the sessions it changed. Call once after opening, before serving. Durable on resolve.
	 * `webhooks` is called for each session changed, with its interrupted run (null if it had
	 * none), and its deliveries (`WebhookOutbox`) are put in the same commit. With `sessionIds`,
	 * only those sessions are looked at (a process that took over the sessions of a dead one).
	 */
	recoverInterrupted(
		at: number,
		webhooks?: (sessionId: string, runId: string | null) => NewWebhookDelivery[],
		sessionIds?: readonly string[],
	): Promise<string[]>;
}

/** The steering and follow-up queues. */
export interface QueueStore {
	/**
	 * Queues a message. Resolves to the stored entry, or undefined for an unknown session. Durable
	 * on resolve (a 202 may be sent). With `withKey`, the idempotency record it builds from the
	 * stored entry is put as `putIdempotencyKey` does, in the same commit: an acknowledged message
	 * and the key of the request that queued it are durable together or not at all, so a retry
	 * after a crash can neither lose the message nor queue it twice.
	 */
	enqueue(
		sessionId: string,
		kind: QueueKind,
		message: AgentMessage,
		createdAt: number,
		withKey?: (queued: QueuedMessage) => IdempotencyRecord,
	): Promise<QueuedMessage | undefined>;

	/** Queued messages in enqueue order, of one kind or both. `[]` for an unknown session. */
	listQueued(sessionId: string, kind?: QueueKind): Promise<QueuedMessage[]>;

	/**
	 * Moves messages the loop drained from the queue into the transcript: removes the entries `ids`
	 * and appends `messages` (what the loop delivered for them, in order) to the transcript, tagged
	 * with the session's current run as `appendMessages` does, after every message appended before,
	 * in one transaction; the session joins the working set. A crash therefore leaves a queued
	 * message either still queued or in the transcript, never in neither and never in both: an
	 * acknowledged `enqueue` is never lost, and a restart never delivers a message that is already
	 * in the transcript. The messages are appended even if an id is no longer queued. Resolves to
	 * the new transcript length, or undefined for an unknown session. Durable on resolve.
	 */
	drainQueued(sessionId: string, ids: number[], messages: AgentMessage[]): Promise<number | undefined>;

	/** Removes every queued message of one kind or both. Resolves to how many were removed. Durable on resolve. */
	clearQueue(sessionId: string, kind?: QueueKind): Promise<number>;
}

/** Pending interactions (approvals, client-side tools). */
export interface PendingInteractionStore {
	/**
	 * Stores (or replaces) the pending interaction of `(sessionId, toolCallId)`. Resolves to false
	 * for an unknown session. Durable on resolve. `webhooks` is called with the session's current
	 * run (null if none) and its deliveries (`WebhookOutbox`) are put in the same commit.
	 */
	putPending(
		interaction: Omit<PendingInteraction, "resolvedAt" | "resolution">,
		webhooks?: (runId: string | null) => NewWebhookDelivery[],
	): Promise<boolean>;

	/** Records the client's answer. Resolves to false if there is no such unresolved interaction. Durable on resolve. */
	resolvePending(sessionId: string, toolCallId: string, resolution: string, at: number): Promise<boolean>;

	/** Removes one interaction (once the tool call consumed it). Resolves to false if unknown. Durable on resolve. */
	deletePending(sessionId: string, toolCallId: string): Promise<boolean>;

	/** The session's interactions in creation order; unresolved only unless `includeResolved`. */
	listPending(sessionId: string, options?: { includeResolved?: boolean }): Promise<PendingInteraction[]>;
}

/** Idempotency records of the requests that start runs or queue messages. */
export interface IdempotencyStore {
	/**
	 * Stores the record of `(sessionId, key)`, replacing an earlier one of that key, then removes
	 * the session's least recently put records beyond `maxIdempotencyKeysPerSession`. Resolves to
	 * false for an unknown session. Durable on resolve; with its session's writes that wait for the
	 * next barrier (a run start) in the same commit, so a run and the key that started it are
	 * durable together or not at all.
	 */
	putIdempotencyKey(record: IdempotencyRecord): Promise<boolean>;

	/** The record of `(sessionId, key)`, or undefined (also for an unknown session). */
	getIdempotencyKey(sessionId: string, key: string): Promise<IdempotencyRecord | undefined>;

	/** Deletes every session's records with `createdAt < cutoff`. Resolves to how many. Durable on resolve. */
	deleteIdempotencyKeys(cutoff: number): Promise<number>;
}

/**
 * What the protocol facades must find again on a later request, whichever process serves it: a
 * record per `(sessionId, kind, key)` (see {@link FacadeRecord}), deleted with its session. A
 * session keeps at most 1,000 records of each kind (`MAX_FACADE_RECORDS_PER_KIND`); putting one
 * more removes the least recently put.
 */
export interface FacadeRecordStore {
	/**
	 * Stores (or replaces) records of one session, in one transaction, each as the most recently
	 * put of its kind, then trims the session's records of those kinds. Resolves to false for an
	 * unknown session (nothing is written). Durable on resolve.
	 */
	putFacadeRecords(
		sessionId: string,
		records: readonly { kind: string; key: string; data: string }[],
		at: number,
	): Promise<boolean>;

	/** The record of `(sessionId, kind, key)`, or undefined (also for an unknown session). */
	getFacadeRecord(sessionId: string, kind: string, key: string): Promise<FacadeRecord | undefined>;

	/**
	 * The records of `kind` and `key` in the sessions of `ownerId` (`null`: sessions created
	 * without auth; another owner's records are never returned), most recently put first, at most
	 * `limit` (1..100, default 10). This is how a facade finds the session a key (a tool call id)
	 * belongs to when the request does not name it.
	 */
	findFacadeRecords(kind: string, key: string, ownerId: string | null, limit?: number): Promise<FacadeRecord[]>;
}

/**
 * Usage accounting by owner, UTC day and model, each row marked with the tenant its owner spent it
 * for (the session's tenant; the last one written wins, so an API key moved to another tenant takes
 * that day's row along). The rows are written by the transcript writes
 * themselves — `appendMessages`, `startRun` and `drainQueued` add the usage of each message they
 * append (an assistant message: its usage and one turn; a compaction message: the usage of its
 * summary call) in the same write, so the rows always equal the sum over the stored messages, also
 * after a crash, and accounting never reads the transcript. The history given to `createSession`
 * is not accounted (it was not spent through this store). Deleting a session keeps its usage.
 * Model calls made outside any session (pi's streamProxy) are added with `recordUsage`.
 */
export interface UsageStore {
	/**
	 * Adds `entries` (model calls that belong to no session) to `ownerId`'s rows of `tenant` (null:
	 * none), each with its own day, model and turns. Durable on resolve.
	 */
	recordUsage(ownerId: string | null, entries: readonly UsageEntry[], tenant?: string | null): Promise<void>;

	/**
	 * The owner's rows (or the tenant's, see `UsageQuery`) in the range, one per owner, day, provider
	 * and model, ordered by day, provider, model, then owner. Sees every write called before it.
	 * Rejects on a malformed day, `fromDay > toDay` or an empty tenant (misuse).
	 */
	readUsage(query: UsageQuery): Promise<UsageRow[]>;

	/**
	 * The sums of the rows `readUsage(query)` would answer, summed by the store (a tenant's month is
	 * one indexed range however many owners and models it holds). Same visibility and checks.
	 */
	sumUsage(query: UsageQuery): Promise<UsageSum>;
}

/** Opening is the implementation's own (a factory); this is the rest of a store's life. */
export interface StoreLifecycle {
	/** `"memory"`, `"sqlite"` or `"postgres"`. */
	readonly kind: "memory" | "sqlite" | "postgres";

	/** Writes every buffered event, and every write that waits for the barrier, now. */
	flush(): Promise<void>;

	/** Flushes and releases the store; later calls throw (or reject). Idempotent. */
	close(): Promise<void>;
}

/**
 * Optional role of a store that several processes can share (PostgreSQL): the *session lease*
 * behind the working set. A session's lease names the store holding it, expires unless renewed,
 * and carries a fencing token that grows on every take.
 *
 * - The working set takes a session's lease when the session joins it (`createSession`,
 *   `openSession`, `startRun`, `drainQueued`); a session whose lease another live store holds does
 *   not join (`openSession` resolves false) until that lease expires. The store renews the leases
 *   it holds on its own timer (every third of `leaseTtlMs`) and releases them on `close()`.
 * - Every write of a session is made under the token of the lease it was called under; a write
 *   whose token is stale when it commits (another store took the session over) writes nothing,
 *   and the session leaves this store's working set: its synchronous writes then answer as for an
 *   unknown session, and the `onSessionLost` listeners are told (the server ends its streams).
 * - A store without a cluster around it (one replica) owns the whole schema through an
 *   instance-owner lock and takes any lease; the fencing read is then left out of its commits.
 */
export interface LeaseStore {
	/** This store's holder id, as written in the lease rows it holds. */
	readonly holderId: string;
	/** How long a lease lasts without renewal (ms). */
	readonly leaseTtlMs: number;
	/** The token of this store's lease on a session in its working set; undefined otherwise. */
	leaseToken(sessionId: string): number | undefined;
	/**
	 * Renews every lease this store holds now (the store's timer does this on its own); resolves to
	 * the sessions found lost (taken over or deleted), which left the working set. Rejects with a
	 * `StoreUnavailableError` when the database cannot be reached.
	 */
	renewLeases(): Promise<string[]>;
	/** Running sessions whose lease expired or that nobody holds (their process died), at most `limit` (default 100). */
	listExpiredRuns(limit?: number): Promise<string[]>;
	/** Calls `listener` for each session whose lease this store lost; returns the unsubscribe function. */
	onSessionLost(listener: (sessionId: string, error: Error) => void): () => void;
}

/** Schedules, their fires and the scheduler lease (see schedule-types.ts), beside the sessions. */
export interface ScheduleHost {
	readonly schedules: ScheduleStore;
}

/** The store: every role. See the module comment for the working set, durability and unknown-session rules. */
export interface SessionStore
	extends SessionCatalog,
		SessionWriter,
		CommitBarrier,
		TranscriptReader,
		TranscriptBranches,
		EventLogReader,
		RunStore,
		QueueStore,
		PendingInteractionStore,
		IdempotencyStore,
		FacadeRecordStore,
		UsageStore,
		WebhookOutbox,
		ScheduleHost,
		AdmissionHost,
		StoreLifecycle {}
