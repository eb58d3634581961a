/**
 * Helpers both store implementations share: argument checks (misuse throws with the fix), the
 * session-list cursor, usage arithmetic, and copying and patching a session's config. Kept here so both behave identically.
 */

import type { AgentMessage } from "../agent/types.js";
import { zeroUsage } from "../ai/usage.js";
import type { LeaseStore, NewSession, SessionConfig, SessionRecord, StoredEvent, UsageTotals } from "./types.js";

const DEFAULT_MAX_EVENTS_PER_SESSION = 10_000;

export const DEFAULT_MAX_IDEMPOTENCY_KEYS_PER_SESSION = 1000;

/** How many facade records of one kind a session keeps (`FacadeRecordStore`). */
export const MAX_FACADE_RECORDS_PER_KIND = 1000;

/** `limit` of `findFacadeRecords`, checked. */
export function findFacadeLimit(limit: number | undefined): number {
	return checkLimit("limit", limit, 10, 1, 100);
}

/** `maxEventsPerSession` of the store options, checked. */
export function maxEventsPerSession(value: number | undefined): number {
	return checkLimit("maxEventsPerSession", value, DEFAULT_MAX_EVENTS_PER_SESSION, 1, 10_000_000);
}

/** `maxIdempotencyKeysPerSession` of the store options, checked. */
export function maxIdempotencyKeys(value: number | undefined): number {
	return checkLimit("maxIdempotencyKeysPerSession", value, DEFAULT_MAX_IDEMPOTENCY_KEYS_PER_SESSION, 1, 1_000_000);
}

/** Returns `value ?? fallback` after checking it is an integer within [min, max]. */
export function checkLimit(
	name: string,
	value: number | undefined,
	fallback: number,
	min: number,
	max: number,
): number {
	const v = value ?? fallback;
	if (!Number.isInteger(v) || v < min || v > max) {
		throw new RangeError(`${name} must be an integer between ${min} and ${max}; got ${String(value)}`);
	}
	return v;
}

/**
 * A page of events being read, bounded by a count and by the sum of the events' `data.length`
 * (see `SessionStore.readEvents`): the first event always fits, so a page always makes progress.
 */
export class EventPage {
	readonly events: StoredEvent[] = [];
	private bytes = 0;
	private readonly maxBytes: number;

	constructor(
		private readonly limit: number,
		maxBytes: number | undefined,
	) {
		this.maxBytes = checkLimit("maxBytes", maxBytes, Number.MAX_SAFE_INTEGER, 1, Number.MAX_SAFE_INTEGER);
	}

	/** True while another event may be added. */
	get open(): boolean {
		return this.events.length < this.limit && this.bytes < this.maxBytes;
	}

	/** Adds `event` if it fits; returns whether the page takes more after it. */
	add(event: StoredEvent): boolean {
		if (!this.open) return false;
		if (this.events.length > 0 && this.bytes + event.data.length > this.maxBytes) {
			this.bytes = this.maxBytes; // full: the next event starts the next page
			return false;
		}
		this.events.push(event);
		this.bytes += event.data.length;
		return this.open;
	}
}

/** The position of a session in list order: `[createdAt, id]`. */
export type SessionCursor = [createdAt: number, id: string];

export function encodeCursor(createdAt: number, id: string): string {
	return Buffer.from(JSON.stringify([createdAt, id])).toString("base64url");
}

/**
 * A list page from `rows` read in list order with one row past `limit`: the first `limit`, and the
 * cursor after the last of them when there are more.
 */
export function cursorPage<T extends { createdAt: number; id: string }>(
	rows: readonly T[],
	limit: number,
): { page: T[]; nextCursor?: string } {
	const page = rows.slice(0, limit);
	const last = page.at(-1);
	return { page, ...(rows.length > limit && last ? { nextCursor: encodeCursor(last.createdAt, last.id) } : {}) };
}

/** Decodes a `nextCursor`; a cursor not produced by `encodeCursor` is caller misuse and throws. */
export function decodeCursor(cursor: string): SessionCursor {
	try {
		const v: unknown = JSON.parse(Buffer.from(cursor, "base64url").toString("utf8"));
		if (Array.isArray(v) && v.length === 2 && Number.isFinite(v[0]) && typeof v[1] === "string") {
			return [v[0], v[1]];
		}
	} catch {
		// fall through to the misuse error below: the cursor is not ours
	}
	throw new RangeError("invalid session list cursor: pass the nextCursor of a previous listSessions page unchanged");
}

/** `a + b`, field by field, as a new object. Missing fields of `b` count as 0 (usage from old data). */
export function addUsage(a: UsageTotals, b: Partial<UsageTotals> | undefined): UsageTotals {
	const bc: Partial<UsageTotals["cost"]> = b?.cost ?? {};
	return {
		input: a.input + (b?.input ?? 0),
		output: a.output + (b?.output ?? 0),
		cacheRead: a.cacheRead + (b?.cacheRead ?? 0),
		cacheWrite: a.cacheWrite + (b?.cacheWrite ?? 0),
		totalTokens: a.totalTokens + (b?.totalTokens ?? 0),
		cost: {
			input: a.cost.input + (bc.input ?? 0),
			output: a.cost.output + (bc.output ?? 0),
			cacheRead: a.cost.cacheRead + (bc.cacheRead ?? 0),
			cacheWrite: a.cost.cacheWrite + (bc.cacheWrite ?? 0),
			total: a.cost.total + (bc.total ?? 0),
		},
	};
}

/** Sum of the usage of the assistant messages among `messages` (used to account interrupted runs). */
export function sumAssistantUsage(messages: Iterable<AgentMessage>): UsageTotals {
	let total = zeroUsage();
	for (const m of messages) {
		if ((m as { role?: string }).role === "assistant") total = addUsage(total, (m as { usage?: UsageTotals }).usage);
	}
	return total;
}

export function closedError(): Error {
	return new Error("session store is closed: open a new store instead of reusing a closed one");
}

export function duplicateSessionError(id: string): Error {
	return new Error(`session "${id}" already exists: generate a unique id for each createSession call`);
}

export function duplicateRunError(id: string): Error {
	return new Error(`run "${id}" already exists: generate a unique id for each startRun call`);
}

/** The AI layer's zero usage, for the stores' callers of this module: one definition. */
export { zeroUsage };

/**
 * A store that cannot reach its database (PostgreSQL down or unreachable): the operation did not
 * happen and may be retried. The server answers 503 `STORE_UNAVAILABLE`.
 */
export class StoreUnavailableError extends Error {
	readonly code = "STORE_UNAVAILABLE";
	constructor(message: string, options?: { cause?: unknown }) {
		super(message, options);
		this.name = "StoreUnavailableError";
	}
}

/** True for a `StoreUnavailableError` (also across module copies: by code). */
export function isStoreUnavailable(error: unknown): boolean {
	return error instanceof StoreUnavailableError || (error as { code?: unknown } | null)?.code === "STORE_UNAVAILABLE";
}

/** True when `store` implements the optional `LeaseStore` role (a store several processes share). */
export function isLeaseStore(store: object): store is LeaseStore {
	return typeof (store as Partial<LeaseStore>).renewLeases === "function";
}

/** The fields of a session's config (`SessionConfig`). */
const CONFIG_KEYS = [
	"model",
	"systemPrompt",
	"thinkingLevel",
	"tools",
	"toolExecution",
	"steeringMode",
	"followUpMode",
	"metadata",
	"clientTools",
	"toolApprovals",
	"compaction",
	"budget",
	"onInterrupt",
] as const satisfies readonly (keyof SessionConfig)[];

/**
 * The keys of `T` whose values are (or may be) objects or arrays: a copy of a `T` must copy
 * these, not share them.
 */
type NestedKeys<T> = {
	[K in keyof T]-?: NonNullable<T[K]> extends string | number | boolean | bigint ? never : K;
}[keyof T];

/** The object-valued fields of `SessionRecord` that are not yet in {@link NESTED_RECORD_FIELDS}. */
type UnlistedNestedField = Exclude<NestedKeys<SessionRecord>, (typeof NESTED_FIELDS)[number]>;

const NESTED_FIELDS = [
	"tools",
	"metadata",
	"clientTools",
	"toolApprovals",
	"compaction",
	"budget",
	"usage",
] as const satisfies readonly NestedKeys<SessionRecord>[];

/**
 * The object-valued fields of a session record, each copied by {@link copyConfig} or
 * {@link copySessionRecord}. A field added to `SessionRecord` (or `SessionConfig`) whose value is
 * an object fails to compile here, naming it (`missing`), until it is listed and copied; the
 * record copy test then checks that each listed field is copied, not shared.
 */
export const NESTED_RECORD_FIELDS: readonly NestedKeys<SessionRecord>[] &
	([UnlistedNestedField] extends [never] ? unknown : { missing: UnlistedNestedField }) = NESTED_FIELDS;

/**
 * A deep copy of JSON data (objects, arrays, primitives): what a client declares and the SQL
 * stores keep as JSON text. Own keys named `__proto__` stay own data properties (spread defines
 * them instead of setting the prototype).
 */
function copyJson<T>(value: T): T {
	if (typeof value !== "object" || value === null) return value;
	if (Array.isArray(value)) return value.map(copyJson) as T;
	const out: Record<string, unknown> = { ...(value as Record<string, unknown>) };
	for (const key of Object.keys(out)) {
		const v = out[key];
		if (typeof v === "object" && v !== null) out[key] = copyJson(v);
	}
	return out as T;
}

/** A copy of a usage total (its `cost` included). */
export function copyUsage(u: UsageTotals): UsageTotals {
	return { ...u, cost: { ...u.cost } };
}

/** The config fields of `c`, copied: a memory record's, and what the SQL stores' `config` column holds. */
export function copyConfig(c: SessionConfig | NewSession): SessionConfig {
	return {
		model: c.model,
		systemPrompt: c.systemPrompt,
		thinkingLevel: c.thinkingLevel,
		tools: [...c.tools],
		toolExecution: c.toolExecution,
		steeringMode: c.steeringMode,
		followUpMode: c.followUpMode,
		metadata: { ...c.metadata },
		clientTools: c.clientTools ? copyJson(c.clientTools) : [],
		toolApprovals: { ...c.toolApprovals },
		...(c.compaction ? { compaction: { ...c.compaction } } : {}),
		...(c.budget ? { budget: { ...c.budget } } : {}),
		onInterrupt: c.onInterrupt ?? "continue",
	};
}

/**
 * A copy of `r` that shares no object with it: neither side's later changes show through the
 * other (what the memory store hands out and keeps).
 */
export function copySessionRecord(r: SessionRecord): SessionRecord {
	return {
		id: r.id,
		ownerId: r.ownerId,
		tenant: r.tenant,
		visibility: r.visibility,
		...copyConfig(r),
		createdAt: r.createdAt,
		updatedAt: r.updatedAt,
		lastActiveAt: r.lastActiveAt,
		status: r.status,
		interruptedAt: r.interruptedAt,
		currentRunId: r.currentRunId,
		usage: copyUsage(r.usage),
		messageCount: r.messageCount,
		lastEventId: r.lastEventId,
	};
}

/** `config` with the fields `patch` gives replaced (copied: the result shares nothing with either). */
export function patchConfig(config: SessionConfig, patch: Partial<SessionConfig>): SessionConfig {
	const next: Record<string, unknown> = {};
	for (const key of CONFIG_KEYS) next[key] = patch[key] !== undefined ? patch[key] : config[key];
	return copyConfig(next as unknown as SessionConfig);
}
