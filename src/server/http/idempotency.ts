/**
 * Idempotency keys of the routes that start runs or queue messages (`prompt`, `continue`,
 * `steer`, `follow-up`) and of the branching routes (`fork`, `rewind`, `regenerate`, the edit of a
 * user message): a client that sends a request again with the same `Idempotency-Key`
 * gets the outcome of the first one instead of a second run or a second queued message. Generic
 * SSE clients need this: they re-POST when a stream drops, and some after every normal end.
 *
 * Rules (Stripe's, which most HTTP APIs with such keys follow):
 *
 * 1. A key is 1–255 printable ASCII characters (400 `INVALID_IDEMPOTENCY_KEY` otherwise). It is
 *    scoped to its session and to its caller: on a session shared with a tenant, another caller's
 *    request with the same key is a request of its own (its own run), never a repeat of the
 *    owner's, and the other way round.
 * 2. A request the server accepted (a run started, a message queued, a fork made, a transcript
 *    rewound) is recorded with a fingerprint of its operation and body, before its response leaves
 *    the process; for a run (a regenerate's and an edit's too), in the same commit as the run's
 *    start. A fork and a rewind are recorded in the commit after theirs: a crash between the two
 *    leaves a repeat to be carried out again (a second fork; a rewind to what is now the last
 *    message, which cuts nothing). A request the server refused (409 `AGENT_BUSY`, 422,
 *    429, ...) records nothing: the same key may be sent again once the cause is gone.
 * 3. A repeat with the same fingerprint gets the recorded outcome; with another fingerprint, 422
 *    `IDEMPOTENCY_KEY_REUSED`. A repeat while the first request has not been answered yet (a
 *    prompt that waits for an interrupted run to settle): 409 `IDEMPOTENCY_IN_PROGRESS`.
 * 4. Records are kept for {@link IDEMPOTENCY_RETENTION_MS} after the first request, at most the
 *    store's `maxIdempotencyKeysPerSession` per session, and go with their session.
 */
import { createHash } from "node:crypto";
import type { FastifyBaseLogger } from "fastify";
import type { IdempotencyRecord, IdempotencyStore } from "../../store/types.js";
import type { RunHandle } from "../runtime/session/runs.js";
import { apiError } from "./errors.js";

/** How long a key is honoured after its first request. */
export const IDEMPOTENCY_RETENTION_MS = 24 * 60 * 60 * 1000;

/** How often expired records are deleted (at most; only while keyed requests come in). */
const PURGE_EVERY_MS = 60 * 60 * 1000;

const KEY_SYNTAX = /^[\x20-\x7e]{1,255}$/;

/** What a keyed request came to, as recorded (serialised into the store's `outcome`). */
export type IdempotentOutcome =
	/** A run started: a repeat re-attaches to its stream, or gets the same 202. */
	| {
			kind: "run";
			runId: string;
			firstEventId: number;
			/** The run began with a cut (a regenerate, an edit): its `agent_start` follows its first event. */
			afterCut?: boolean;
	  }
	/** Any other accepted request (a queued message, a fork): a repeat gets this status and body. */
	| { kind: "response"; status: number; body: unknown }
	/**
	 * A rewind: its run, the transcript's new length and the superseded branch it made (0: none, the
	 * cut changed nothing). A repeat reads the branch's messages from the store again rather than
	 * keeping a second copy of them here.
	 */
	| { kind: "rewound"; runId: string; messageCount: number; branch: number; fromIndex: number; supersededAt: number };

/** A request with a key, as {@link IdempotencyKeys.begin} found it. */
export type KeyedRequest =
	| { kind: "repeat"; outcome: IdempotentOutcome }
	| {
			kind: "first";
			/**
			 * Records the outcome. A run's needs no await: the store's commit barrier, which the server
			 * awaits before the response, waits for it with the run's start. A request that wrote in a
			 * commit of its own before (a fork, a rewind) awaits it, so the record is durable before the
			 * response. Contract: never rejects; a store failure is logged.
			 */
			record(outcome: IdempotentOutcome): Promise<void>;
			/**
			 * Records a run that `launch` just started, before its first event (whose id is
			 * `firstEventId`); `afterCut` when that event is the run's `transcript_rewound`.
			 */
			recordRun(run: RunHandle, firstEventId: number, afterCut?: boolean): void;
			/**
			 * The record of `outcome`, not written: for a store write that puts it in its own commit
			 * (`SessionStore.enqueue`). Contract: pure.
			 */
			recordOf(outcome: IdempotentOutcome): IdempotencyRecord;
			/** Ends the first request's processing (call in `finally`, recorded or not). */
			release(): void;
	  };

/** Validates the `Idempotency-Key` header: undefined when absent, else the key (400 when malformed). */
export function parseIdempotencyKey(header: string | string[] | undefined): string | undefined {
	if (header === undefined) return undefined;
	const key = Array.isArray(header) ? header.join(", ") : header;
	if (!KEY_SYNTAX.test(key)) {
		throw apiError(
			"INVALID_IDEMPOTENCY_KEY",
			`Idempotency-Key must be 1 to 255 printable ASCII characters (space to "~"); got ${key.length} characters` +
				`${key.length > 0 && key.length <= 255 ? " with one outside that range" : ""}. A UUID is a good key.`,
		);
	}
	return key;
}

/** The same JSON for the same value, whatever the order of its object keys. */
function canonicalJson(value: unknown): string {
	if (Array.isArray(value)) return `[${value.map(canonicalJson).join(",")}]`;
	if (value !== null && typeof value === "object") {
		const entries = Object.entries(value as Record<string, unknown>)
			.filter(([, v]) => v !== undefined)
			.sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
		return `{${entries.map(([k, v]) => `${JSON.stringify(k)}:${canonicalJson(v)}`).join(",")}}`;
	}
	return JSON.stringify(value) ?? "null";
}

/** Digest of a request: its operation and its body (parsed, so spacing and key order do not count). */
export function requestFingerprint(operation: string, body: unknown): string {
	return createHash("sha256").update(operation).update("\n").update(canonicalJson(body)).digest("hex");
}

/** The session a keyed request is for: its id, and its owner (a key is scoped to its caller). */
export interface KeyedSession {
	readonly id: string;
	readonly ownerId: string | null;
}

/** The keyed requests of one server: what is recorded is in the store, what is in flight is here. */
export class IdempotencyKeys {
	/** `sessionId\0key` of first requests not answered yet. */
	private readonly inFlight = new Set<string>();
	private nextPurgeAt = 0;

	constructor(
		private readonly logger: FastifyBaseLogger,
		/** Where the records are kept (the sessions' store). */
		private readonly store: IdempotencyStore,
		private readonly retentionMs = IDEMPOTENCY_RETENTION_MS,
	) {}

	/**
	 * Looks a request up by its key. Undefined when `key` is: the request is carried out as
	 * without keys. Rejects with 422 `IDEMPOTENCY_KEY_REUSED` or 409 `IDEMPOTENCY_IN_PROGRESS`.
	 */
	async begin(
		session: KeyedSession,
		key: string | undefined,
		operation: string,
		body: unknown,
		callerOwnerId: string | null = session.ownerId,
	): Promise<KeyedRequest | undefined> {
		if (key === undefined) return undefined;
		const store = this.store;
		const fingerprint = requestFingerprint(operation, body);
		const now = Date.now();
		const stored = scopedKey(key, callerOwnerId, session.ownerId);
		const found = await store.getIdempotencyKey(session.id, stored);
		if (found && found.createdAt >= now - this.retentionMs) {
			if (found.operation !== operation || found.fingerprint !== fingerprint) {
				throw apiError(
					"IDEMPOTENCY_KEY_REUSED",
					`Idempotency-Key ${JSON.stringify(key)} was used on session ${session.id} for a different request ` +
						`(${found.operation === operation ? "another body" : routeName(found.operation)}); ` +
						"send the same request to get its outcome again, or use a new key for a new request.",
				);
			}
			return { kind: "repeat", outcome: JSON.parse(found.outcome) as IdempotentOutcome };
		}
		const slot = `${session.id}\0${stored}`;
		if (this.inFlight.has(slot)) {
			throw apiError(
				"IDEMPOTENCY_IN_PROGRESS",
				`A request with Idempotency-Key ${JSON.stringify(key)} is still being processed on session ${session.id}; ` +
					"repeat it once that one was answered.",
			);
		}
		this.inFlight.add(slot);
		this.purgeExpired(store, now);
		const recordOf = (outcome: IdempotentOutcome): IdempotencyRecord => ({
			sessionId: session.id,
			key: stored,
			operation,
			fingerprint,
			outcome: JSON.stringify(outcome),
			createdAt: Date.now(),
		});
		const record = (outcome: IdempotentOutcome) => this.put(store, recordOf(outcome));
		return {
			kind: "first",
			record,
			// The next event id is the run's first (its agent_start): nothing of it is logged yet.
			recordRun: (run, firstEventId, afterCut) =>
				record({ kind: "run", runId: run.id, firstEventId, ...(afterCut ? { afterCut } : {}) }),
			recordOf,
			release: () => this.inFlight.delete(slot),
		};
	}

	private put(store: IdempotencyStore, record: IdempotencyRecord): Promise<void> {
		// The request was carried out; a failure only means its repeat is no longer recognised.
		const failed = (err: unknown) =>
			this.logger.error(
				{ err, sessionId: record.sessionId, operation: record.operation },
				"failed to record an idempotency key",
			);
		try {
			return store.putIdempotencyKey(record).then(() => undefined, failed);
		} catch (err) {
			failed(err);
			return Promise.resolve();
		}
	}

	/** Deletes expired records, at most every {@link PURGE_EVERY_MS}, as keyed requests come in. */
	private purgeExpired(store: IdempotencyStore, now: number): void {
		if (now < this.nextPurgeAt) return;
		this.nextPurgeAt = now + PURGE_EVERY_MS;
		const failed = (err: unknown) => this.logger.error({ err }, "failed to delete expired idempotency keys");
		try {
			store.deleteIdempotencyKeys(now - this.retentionMs).catch(failed);
		} catch (err) {
			failed(err);
		}
	}
}

/**
 * The key as stored: the owner's own as sent (so records made before keys were scoped to callers
 * still match), anyone else's prefixed with its owner id and a unit separator (a character no key
 * may hold), so no two callers ever share a record.
 */
function scopedKey(key: string, caller: string | null, owner: string | null): string {
	return caller === owner || caller === null ? key : `${caller}\x1f${key}`;
}

function routeName(operation: string): string {
	if (operation === "edit") return "PATCH .../messages/:messageId";
	return `POST .../${operation === "followUp" ? "follow-up" : operation}`;
}
