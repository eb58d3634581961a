/**
 * The webhook outbox's part of the store contract (`WebhookOutbox`, one of the roles `SessionStore`
 * in types.ts is made of) and the deliveries it keeps.
 */

/**
 * A webhook delivery the outbox keeps until it is delivered or given up: one event for one
 * endpoint. Its `id` is the `webhook-id` of every attempt (receivers deduplicate by it), and
 * `payload` is the exact body every attempt sends (the signature covers it).
 */
export interface NewWebhookDelivery {
	/** Unique; the `webhook-id` header (`msg_...`). */
	id: string;
	/** The endpoint's URL, as configured (the dispatcher finds its secret by it). */
	endpoint: string;
	/** `run.completed`, `approval.requested`, ...; stored verbatim. */
	eventType: string;
	/** Serialised JSON body; stored and sent verbatim. */
	payload: string;
	createdAt: number;
}

/** Where a delivery stands. */
export type WebhookStatus = "pending" | "delivered" | "failed";

/** A delivery as the outbox keeps it. */
export interface WebhookDelivery extends NewWebhookDelivery {
	status: WebhookStatus;
	/** Attempts made so far. */
	attempts: number;
	/** When a `pending` delivery is next due (also moved forward by a claim). */
	nextAttemptAt: number;
	/** What the last failed attempt came to (`"HTTP 503"`, `"timeout"`...); null if none failed. */
	lastError: string | null;
	/** When it was delivered or given up; null while pending. */
	finishedAt: number | null;
}

/**
 * The durable outbox of webhook deliveries. A delivery is put in the same commit as the fact it
 * reports where one exists (`endRun`, `putPending` and `recoverInterrupted` take the deliveries to
 * put with them), so a crash can neither lose a delivery of a fact that is on disk nor leave one of
 * a fact that is not. Delivery is at least once: a claimed delivery that is never settled (the
 * process died mid-attempt) is due again when its claim runs out.
 */
export interface WebhookOutbox {
	/** Puts deliveries (status `pending`, due at `createdAt`, no attempt yet). Ids must be new (misuse). Durable on resolve. */
	enqueueWebhooks(deliveries: NewWebhookDelivery[]): Promise<void>;

	/**
	 * Claims up to `limit` pending deliveries due at `now` (oldest due first) by moving their
	 * `nextAttemptAt` to `claimUntil`: no other claim returns them before then, and they are due
	 * again then if not settled. Durable on resolve.
	 */
	claimWebhooks(now: number, limit: number, claimUntil: number): Promise<WebhookDelivery[]>;

	/**
	 * Settles one attempt of a pending delivery: `delivered` and `failed` (given up) finish it at
	 * `at`; `pending` makes it due again at `nextAttemptAt`. `attempts` is the count including this
	 * attempt; `error` what the attempt came to (kept as `lastError`). Resolves to false for an
	 * unknown or already finished delivery. Durable on resolve.
	 */
	settleWebhook(
		id: string,
		outcome:
			| { status: "delivered"; attempts: number; at: number }
			| { status: "failed"; attempts: number; at: number; error: string }
			| { status: "pending"; attempts: number; nextAttemptAt: number; error: string },
	): Promise<boolean>;

	/** Deliveries in creation order (ties by id), of one status or all, at most `limit` (1..10,000, default 100) from the oldest. */
	listWebhooks(options?: { status?: WebhookStatus; limit?: number }): Promise<WebhookDelivery[]>;

	/** Deletes delivered and failed deliveries finished before `cutoff`. Resolves to how many. Durable on resolve. */
	pruneWebhooks(cutoff: number): Promise<number>;
}
