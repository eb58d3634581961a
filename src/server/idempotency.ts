/**
 * Idempotency keys of the routes that start runs or queue messages (`prompt`, `continue`,
 * `steer`, `follow-up`): a client that sends a request again with the same `Idempotency-Key`
 * gets the outcome of the first one instead of a second run or a second queued message. Generic
 * SSE clients need this: they re-POST when a stream drops, and some after every normal end.
 *
 * Rules (Stripe's, which most HTTP APIs with such keys follow):
 *
 * 1. A key is 1–255 printable ASCII characters (400 `INVALID_IDEMPOTENCY_KEY` otherwise). It is
 *    scoped to its session, so to the session's owner.
 * 2. A request the server accepted (a run started, a message queued) is recorded with a
 *    fingerprint of its operation and body, before its response leaves the process; for a run,
 *    in the same commit as the run's start. A request the server refused (409 `AGENT_BUSY`, 422,
 *    429, ...) records nothing: the same key may be sent again once the cause is gone.
 * 3. A repeat with the same fingerprint gets the recorded outcome; with another fingerprint, 422
 *    `IDEMPOTENCY_KEY_REUSED`. A repeat while the first request has not been answered yet (a
 *    prompt that waits for an interrupted run to settle): 409 `IDEMPOTENCY_IN_PROGRESS`.
 * 4. Records are kept for {@link IDEMPOTENCY_RETENTION_MS} after the first request, at most the
 *    store's `maxIdempotencyKeysPerSession` per session, and go with their session.
 */
import { createHash } from "node:crypto";
import type { FastifyBaseLogger } from "fastify";
import type { IdempotencyRecord, SessionStore } from "../store/types.js";
import { apiError } from "./errors.js";
import type { LiveSession } from "./session/live-session.js";
import type { RunHandle } from "./session/runs.js";

/** How long a key is honoured after its first request. */
export const IDEMPOTENCY_RETENTION_MS = 24 * 60 * 60 * 1000;

/** How often expired records are deleted (at most; only while keyed requests come in). */
const PURGE_EVERY_MS = 60 * 60 * 1000;

const KEY_SYNTAX = /^[\x20-\x7e]{1,255}$/;

/** What a keyed request came to, as recorded (serialised into the store's `outcome`). */
export type IdempotentOutcome =
	/** A run started: a repeat re-attaches to its stream, or gets the same 202. */
	| { kind: "run"; runId: string; firstEventId: number }
	/** Any other accepted request (a queued message): a repeat gets this status and body. */
	| { kind: "response"; status: number; body: unknown };

/** A request with a key, as {@link IdempotencyKeys.begin} found it. */
export type KeyedRequest =
	| { kind: "repeat"; outcome: IdempotentOutcome }
	| {
			kind: "first";
			/** Records the outcome (durable on return). Contract: never throws; a store failure is logged. */
			record(outcome: IdempotentOutcome): void;
			/** Records a run that `launch` just started, before its first event. */
			recordRun(run: RunHandle): void;
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

/** The keyed requests of one server: what is recorded is in the store, what is in flight is here. */
export class IdempotencyKeys {
	/** `sessionId\0key` of first requests not answered yet. */
	private readonly inFlight = new Set<string>();
	private nextPurgeAt = 0;

	constructor(
		private readonly logger: FastifyBaseLogger,
		private readonly retentionMs = IDEMPOTENCY_RETENTION_MS,
	) {}

	/**
	 * Looks a request up by its key. Undefined when `key` is: the request is carried out as
	 * without keys. Throws 422 `IDEMPOTENCY_KEY_REUSED` or 409 `IDEMPOTENCY_IN_PROGRESS`.
	 */
	begin(session: LiveSession, key: string | undefined, operation: string, body: unknown): KeyedRequest | undefined {
		if (key === undefined) return undefined;
		const store = session.store;
		const fingerprint = requestFingerprint(operation, body);
		const now = Date.now();
		const found = store.getIdempotencyKey(session.id, key);
		if (found && found.createdAt >= now - this.retentionMs) {
			if (found.operation !== operation || found.fingerprint !== fingerprint) {
				throw apiError(
					"IDEMPOTENCY_KEY_REUSED",
					`Idempotency-Key ${JSON.stringify(key)} was used on session ${session.id} for a different request ` +
						`(${found.operation === operation ? "another body" : `POST .../${routeName(found.operation)}`}); ` +
						"send the same request to get its outcome again, or use a new key for a new request.",
				);
			}
			return { kind: "repeat", outcome: JSON.parse(found.outcome) as IdempotentOutcome };
		}
		const slot = `${session.id}\0${key}`;
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
			key,
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
			recordRun: (run) => record({ kind: "run", runId: run.id, firstEventId: session.lastEventId + 1 }),
			recordOf,
			release: () => this.inFlight.delete(slot),
		};
	}

	private put(store: SessionStore, record: IdempotencyRecord): void {
		try {
			store.putIdempotencyKey(record);
		} catch (err) {
			// The request was carried out; only its repeat is no longer recognised.
			this.logger.error(
				{ err, sessionId: record.sessionId, operation: record.operation },
				"failed to record an idempotency key",
			);
		}
	}

	/** Deletes expired records, at most every {@link PURGE_EVERY_MS}, as keyed requests come in. */
	private purgeExpired(store: SessionStore, now: number): void {
		if (now < this.nextPurgeAt) return;
		this.nextPurgeAt = now + PURGE_EVERY_MS;
		try {
			store.deleteIdempotencyKeys(now - this.retentionMs);
		} catch (err) {
			this.logger.error({ err }, "failed to delete expired idempotency keys");
		}
	}
}

function routeName(operation: string): string {
	return operation === "followUp" ? "follow-up" : operation;
}
