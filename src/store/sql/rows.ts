/**
 * The rows of both SQL stores (same tables, same columns) and their mapping to the store's records: column names to fields, JSON
 * columns parsed, copies returned (callers never share objects with the store).
 */
import type { AgentMessage } from "../../agent/types.js";
import { addUsage, copyConfig, zeroUsage } from "../shared.js";
import type {
	FacadeRecord,
	IdempotencyRecord,
	NewSession,
	PendingInteraction,
	QueuedMessage,
	QueueKind,
	RunRecord,
	SessionConfig,
	SessionRecord,
	SessionRunStatus,
	SessionVisibility,
	UsageRow,
	UsageTotals,
} from "../types.js";

export interface SessionRow {
	id: string;
	owner_id: string | null;
	tenant: string | null;
	visibility: string;
	config: string;
	created_at: number;
	updated_at: number;
	last_active_at: number;
	status: SessionRunStatus;
	interrupted_at: number | null;
	current_run_id: string | null;
	usage: string;
	message_count: number;
	last_event_id: number;
	event_id_reserved: number;
}

export interface RunRow {
	id: string;
	session_id: string;
	status: RunRecord["status"];
	started_at: number;
	ended_at: number | null;
	usage: string;
	error_message: string | null;
}

export interface PendingRow {
	session_id: string;
	tool_call_id: string;
	kind: PendingInteraction["kind"];
	payload: string;
	created_at: number;
	resolved_at: number | null;
	resolution: string | null;
}

export interface IdempotencyRow {
	session_id: string;
	key: string;
	operation: string;
	fingerprint: string;
	outcome: string;
	created_at: number;
}

export interface QueueRow {
	id: number;
	session_id: string;
	kind: QueueKind;
	data: string;
	created_at: number;
}

export const ZERO_USAGE_JSON = JSON.stringify(zeroUsage());

/**
 * The columns a new session's row starts with: created, updated and active at `at`, zero usage,
 * the starting transcript's length, and the first block of event ids reserved (`reserved`), so a
 * new session's first events need no extra write.
 */
export interface NewSessionRow {
	id: string;
	ownerId: string | null;
	/** The owner's tenant, `null` when it has none. */
	tenant: string | null;
	/** Who besides its owner may see the session (`"owner"` unless the new session says otherwise). */
	visibility: SessionVisibility;
	config: string;
	at: number;
	usage: string;
	messageCount: number;
	reserved: number;
}

/** The row of `session` with a starting transcript of `messageCount` messages. */
export function newSessionRow(session: NewSession, messageCount: number, reserved: number): NewSessionRow {
	return {
		id: session.id,
		ownerId: session.ownerId,
		tenant: session.tenant ?? null,
		visibility: session.visibility ?? "owner",
		config: JSON.stringify(copyConfig(session)),
		at: session.createdAt,
		usage: ZERO_USAGE_JSON,
		messageCount,
		reserved,
	};
}

/**
 * A session row as a record. `touchedAt` is an activity time not yet written; `lastEventId` the
 * highest id handed out (the working set knows more than the row).
 */
export function toSessionRecord(row: SessionRow, touchedAt: number | undefined, lastEventId: number): SessionRecord {
	const config = JSON.parse(row.config) as SessionConfig;
	return {
		id: row.id,
		ownerId: row.owner_id,
		tenant: row.tenant ?? null,
		visibility: row.visibility === "tenant" ? "tenant" : "owner",
		...copyConfig(config),
		createdAt: row.created_at,
		updatedAt: row.updated_at,
		lastActiveAt: Math.max(row.last_active_at, touchedAt ?? 0),
		status: row.status,
		interruptedAt: row.interrupted_at,
		currentRunId: row.current_run_id,
		usage: addUsage(zeroUsage(), JSON.parse(row.usage) as UsageTotals),
		messageCount: row.message_count,
		lastEventId,
	};
}

export function toRunRecord(r: RunRow): RunRecord {
	return {
		id: r.id,
		sessionId: r.session_id,
		status: r.status,
		startedAt: r.started_at,
		endedAt: r.ended_at,
		usage: JSON.parse(r.usage) as UsageTotals,
		errorMessage: r.error_message,
	};
}

export function toPendingInteraction(r: PendingRow): PendingInteraction {
	return {
		sessionId: r.session_id,
		toolCallId: r.tool_call_id,
		kind: r.kind,
		payload: r.payload,
		createdAt: r.created_at,
		resolvedAt: r.resolved_at,
		resolution: r.resolution,
	};
}

export function toIdempotencyRecord(row: IdempotencyRow): IdempotencyRecord {
	return {
		sessionId: row.session_id,
		key: row.key,
		operation: row.operation,
		fingerprint: row.fingerprint,
		outcome: row.outcome,
		createdAt: row.created_at,
	};
}

export function toQueuedMessage(r: QueueRow): QueuedMessage {
	return {
		id: r.id,
		sessionId: r.session_id,
		kind: r.kind,
		message: JSON.parse(r.data) as AgentMessage,
		createdAt: r.created_at,
	};
}

/** A row of `usage_daily` (the owner `""` and the tenant `""` stand for none). */
export interface UsageDailyRow {
	owner_id: string;
	tenant: string;
	day: string;
	provider: string;
	model: string;
	input: number;
	output: number;
	cache_read: number;
	cache_write: number;
	total_tokens: number;
	cost_usd: number;
	turns: number;
}

export function toUsageRow(r: UsageDailyRow): UsageRow {
	return {
		ownerId: r.owner_id === "" ? null : r.owner_id,
		tenant: r.tenant === "" ? null : r.tenant,
		day: r.day,
		provider: r.provider,
		model: r.model,
		input: r.input,
		output: r.output,
		cacheRead: r.cache_read,
		cacheWrite: r.cache_write,
		totalTokens: r.total_tokens,
		costUsd: r.cost_usd,
		turns: r.turns,
	};
}

/** A row of `facade_records` (both engines). */
export interface FacadeRecordRow {
	session_id: string;
	kind: string;
	key: string;
	data: string;
	created_at: number | string;
}

export function toFacadeRecord(row: FacadeRecordRow): FacadeRecord {
	return {
		sessionId: row.session_id,
		kind: row.kind,
		key: row.key,
		data: row.data,
		createdAt: Number(row.created_at),
	};
}
