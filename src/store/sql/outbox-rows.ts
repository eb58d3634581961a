/**
 * A `webhook_outbox` row and its mapping to a delivery record: the table has the same columns in
 * both SQL stores, so both read it through this.
 */
import type { WebhookDelivery, WebhookStatus } from "../types.js";

/** A `webhook_outbox` row as both SQL stores read it (same columns). */
export interface OutboxRow {
	id: string;
	endpoint: string;
	event_type: string;
	payload: string;
	created_at: number;
	status: WebhookStatus;
	attempts: number;
	next_attempt_at: number;
	last_error: string | null;
	finished_at: number | null;
}

export function toDelivery(row: OutboxRow): WebhookDelivery {
	return {
		id: row.id,
		endpoint: row.endpoint,
		eventType: row.event_type,
		payload: row.payload,
		createdAt: row.created_at,
		status: row.status,
		attempts: row.attempts,
		nextAttemptAt: row.next_attempt_at,
		lastError: row.last_error,
		finishedAt: row.finished_at,
	};
}
