/**
 * The records the store keeps and returns — sessions and their config, events, queued messages,
 * runs, pending interactions, idempotency records, facade records, pages, usage rows — as plain
 * data. What a store does with them, and when they are durable, is the contract in types.ts, which
 * re-exports them.
 */

import type { QueueMode } from "../agent/queue.js";
import type { AgentMessage, ThinkingLevel, ToolExecutionMode } from "../agent/types.js";
import type { Usage } from "../ai/types.js";

/**
 * The run status of a session as persisted.
 * - `idle`: no run active.
 * - `running`: a run was started (`startRun`) and has not ended (`endRun`).
 * - `interrupted`: the process died while the run was active; set by `recoverInterrupted` at
 *   startup, with `interruptedAt`. The next `startRun` clears it.
 */
export type SessionRunStatus = "idle" | "running" | "interrupted";

/** A tool's approval policy: `"always"` waits for a human decision before each call; `"never"` does not. */
export type ToolApprovalPolicy = "always" | "never";

/**
 * A tool the session's client executes (a browser, a desktop app): declared with the session,
 * called by the model like any tool, answered by the client. Stored as given.
 */
export interface ClientToolDeclaration {
	name: string;
	description: string;
	/** JSON Schema of the arguments (an object schema); absent: no arguments. */
	parameters?: Record<string, unknown>;
	/** This tool's approval policy (the session's `toolApprovals` win over it). */
	approval?: ToolApprovalPolicy;
}

/** The configurable part of a session: what `POST /v1/sessions` and `PATCH` set. */
export interface SessionConfig {
	/** `"provider/id"`, e.g. `"faux/echo"`. */
	model: string;
	systemPrompt: string;
	thinkingLevel: ThinkingLevel;
	/** Names of the enabled server tools. */
	tools: string[];
	toolExecution: ToolExecutionMode;
	/** How many queued messages one poll of a queue drains: the Agent's own setting, stored per session. */
	steeringMode: QueueMode;
	followUpMode: QueueMode;
	/** Free-form string map from the client. */
	metadata: Record<string, string>;
	/** Tools the session's client executes; `[]` when none. */
	clientTools: ClientToolDeclaration[];
	/** Approval policy per tool name or `prefix*` pattern for this session; `{}` when none. */
	toolApprovals: Record<string, ToolApprovalPolicy>;
	/** Context compaction settings of this session; absent: the server's defaults. Stored as given. */
	compaction?: { enabled?: boolean; reserveTokens?: number; keepRecentTokens?: number };
	/** Spending limits of this session; absent: none. Stored as given. */
	budget?: { maxTokens?: number; maxCostUsd?: number; maxTurnsPerRun?: number };
	/** What happens to a run its process died during (see {@link OnInterruptPolicy}). */
	onInterrupt: OnInterruptPolicy;
}

/**
 * What the server does with a run cut short by the death of its process, once another process
 * (the restarted one, or in a cluster another replica) finds it: `"continue"` starts a new run
 * from the last stored message by itself; `"stop"` leaves the session `interrupted` until a
 * client continues it.
 */
export type OnInterruptPolicy = "continue" | "stop";

/** Config fields a new session may leave out (`clientTools`, `toolApprovals`: none; `onInterrupt`: `"continue"`). */
export type OptionalConfigKey = "clientTools" | "toolApprovals" | "onInterrupt";

/** Accumulated token usage and cost (USD) of a session or a run; same shape as a message's `Usage`. */
export type UsageTotals = Usage;

/** What `createSession` takes; `clientTools` and `toolApprovals` default to none, `onInterrupt` to `"continue"`. */
export interface NewSession
	extends Omit<SessionConfig, OptionalConfigKey>,
		Partial<Pick<SessionConfig, OptionalConfigKey>> {
	/** Unique, chosen by the caller (the server generates it). */
	id: string;
	/** Who owns the session: an id or hash of the API key that created it; `null` when auth is off. */
	ownerId: string | null;
	/** The owner's tenant when it has one; default `null`. */
	tenant?: string | null;
	/** Who besides its owner may see the session (see {@link SessionVisibility}); default `"owner"`. */
	visibility?: SessionVisibility;
	createdAt: number;
}

/**
 * Who may see a session: `"owner"` its owner only; `"tenant"` also every caller of its `tenant`
 * (never anyone when `tenant` is `null`). Set at creation and stored with the session.
 */
export type SessionVisibility = "owner" | "tenant";

/** A session as stored. */
export interface SessionRecord extends SessionConfig {
	id: string;
	ownerId: string | null;
	/** The owner's tenant at creation; `null` when it had none. */
	tenant: string | null;
	visibility: SessionVisibility;
	createdAt: number;
	/** Last config change (`updateSession`), or `createdAt`. */
	updatedAt: number;
	/** Last activity (`touchSession`, `startRun`, `endRun`, `enqueue`); drives retention. */
	lastActiveAt: number;
	status: SessionRunStatus;
	/** Set with `status: "interrupted"`; `null` otherwise. */
	interruptedAt: number | null;
	/** Id of the active (or interrupted) run; `null` when idle. */
	currentRunId: string | null;
	/** Sum of the `usage` of every ended run (and every interrupted run, from its persisted assistant messages). */
	usage: UsageTotals;
	/** Number of messages in the transcript. */
	messageCount: number;
	/** Highest event id ever assigned to this session (0 before the first event); never decreases. */
	lastEventId: number;
}

/** One entry of the SSE event log. */
export interface StoredEvent {
	/** Per-session, strictly increasing, never reused (also across restarts and log trimming). */
	id: number;
	/** The SSE `event:` name (an AgentEvent type or a server-level name). */
	type: string;
	/** The SSE `data:` payload, already serialised JSON; stored and returned verbatim. */
	data: string;
	createdAt: number;
}

/** Which queue a queued message belongs to. */
export type QueueKind = "steer" | "followUp";

/** A steering or follow-up message waiting for the loop to poll it. */
export interface QueuedMessage {
	/** Store-assigned, increasing in enqueue order (global, not per session). */
	id: number;
	sessionId: string;
	kind: QueueKind;
	message: AgentMessage;
	createdAt: number;
}

/** How a run ended (`interrupted` is only ever set by `recoverInterrupted`). */
export type RunStatus = "running" | "completed" | "aborted" | "error" | "interrupted";

/** One run (one `prompt`/`continue` from `agent_start` to `agent_end`). */
export interface RunRecord {
	id: string;
	sessionId: string;
	status: RunStatus;
	startedAt: number;
	/** `null` while running; the recovery time for an interrupted run. */
	endedAt: number | null;
	usage: UsageTotals;
	errorMessage: string | null;
}

/** What `endRun` records. */
export interface RunEnd {
	status: Exclude<RunStatus, "running" | "interrupted">;
	endedAt: number;
	/** The run's summed usage and cost; added to the session's totals. */
	usage: UsageTotals;
	errorMessage?: string;
}

/**
 * Something a tool call is waiting for from a client: an approval decision, the result of a
 * client-side tool, or the answer to an MCP server's elicitation (keyed by the elicitation's id). Persisted so it can be listed and re-announced after a reconnect
 * or a restart.
 */
export interface PendingInteraction {
	sessionId: string;
	toolCallId: string;
	kind: "approval" | "client_tool" | "elicitation";
	/** Serialised JSON describing the request (tool name, arguments, ...); stored verbatim. */
	payload: string;
	createdAt: number;
	/** `null` until `resolvePending`. */
	resolvedAt: number | null;
	/** Serialised JSON of the client's answer; `null` until resolved. */
	resolution: string | null;
}

/**
 * A request made with an `Idempotency-Key`, and what it came to: a repeat of the request with the
 * same key is answered from this record instead of being carried out again.
 */
export interface IdempotencyRecord {
	sessionId: string;
	/** The client's key, unique per session. */
	key: string;
	/** Which operation the key was used for (e.g. `"prompt"`); stored verbatim. */
	operation: string;
	/** A digest of the request (operation and body): a repeat with another digest is another request. */
	fingerprint: string;
	/** Serialised JSON of the outcome (the server's business); stored and returned verbatim. */
	outcome: string;
	createdAt: number;
}

/**
 * What a protocol facade (the OpenAI-compatible API, AG-UI) must find again on a later request —
 * which session a tool call or a response belongs to, a response object — kept with the session
 * it belongs to, so any process sharing the store (a restarted one, another replica) finds it.
 */
export interface FacadeRecord {
	sessionId: string;
	/** What the record is, named by the facade that keeps it (e.g. `"openai.response"`). */
	kind: string;
	/** Its id within the kind (a response id, a tool call id). */
	key: string;
	/** The facade's data; stored and returned verbatim. */
	data: string;
	/** When it was last put. */
	createdAt: number;
}

/**
 * What `listSessions` may filter by besides the owner; every given condition must hold. Metadata
 * keys and values match exactly (`profile` is the metadata key a profile's sessions carry).
 */
export interface SessionFilter {
	status?: SessionRunStatus;
	/** Every pair must be in the session's metadata. At most 8 pairs. */
	metadata?: Record<string, string>;
	/** `updatedAt > updatedAfter` (epoch ms). */
	updatedAfter?: number;
	/** `updatedAt < updatedBefore` (epoch ms). */
	updatedBefore?: number;
}

/** A page of `listSessions`. */
export interface SessionPage {
	sessions: SessionRecord[];
	/** Pass as `cursor` to get the next page; absent on the last page. */
	nextCursor?: string;
}

/** A page of `listMessages`. */
export interface MessagePage {
	messages: AgentMessage[];
	/** Index (0-based position in the transcript) of the first returned message. */
	offset: number;
	/** Transcript length. */
	total: number;
}

/** What one message (or one model call of no session) adds to one usage row. */
export interface UsageEntry {
	day: string;
	provider: string;
	model: string;
	usage: Usage;
	turns: number;
}

/** The usage of one owner on one UTC day with one model: the sum of its messages' usage. */
export interface UsageRow {
	/** The API key's owner id; null for sessions created with auth off. */
	ownerId: string | null;
	/**
	 * The tenant the usage was spent for: the session's tenant (its owner's when it was created), or
	 * the caller's for a call of no session, as last written; null for none, and for rows written
	 * before the usage rows carried a tenant (SQLite 15, PostgreSQL 7) and not added to since.
	 */
	tenant: string | null;
	/** `YYYY-MM-DD`, UTC, of the messages' timestamps. */
	day: string;
	provider: string;
	model: string;
	input: number;
	output: number;
	cacheRead: number;
	cacheWrite: number;
	totalTokens: number;
	/** USD, from the model's prices as the messages report them. */
	costUsd: number;
	/** Model calls of runs (assistant messages); a compaction's summary call adds usage, not a turn. */
	turns: number;
}

/** The sums of usage rows: what a budget compares with its limits. */
export interface UsageSum {
	totalTokens: number;
	costUsd: number;
}

/**
 * Which usage rows to read, of the days `fromDay..toDay` inclusive (`YYYY-MM-DD`, UTC): with
 * `tenant`, the rows of every owner spent for that tenant; otherwise the rows of `ownerId` (in
 * whichever tenant it spent them).
 */
export interface UsageQuery {
	ownerId: string | null;
	/** A tenant (not empty): its rows, whoever's; `ownerId` is then not looked at. */
	tenant?: string;
	fromDay: string;
	toDay: string;
}
