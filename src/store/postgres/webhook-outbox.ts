/**
 * The PostgreSQL store's webhook outbox (`WebhookOutbox` of ../types.ts): the `webhook_outbox`
 * table and its statements. `put` runs inside a transaction the store opens — the one of the fact
 * a delivery reports — so the delivery and the fact commit together. A claim locks the due rows
 * with `FOR UPDATE SKIP LOCKED`, so replicas claiming at once split the due deliveries between
 * them instead of waiting for each other or sending one twice.
 */
import { checkLimit } from "../shared.js";
import { type OutboxRow, toDelivery } from "../sql/outbox-rows.js";
import type { NewWebhookDelivery, WebhookDelivery, WebhookOutbox, WebhookStatus } from "../types.js";
import type { CommitQueue } from "./commit.js";
import type { Queryable } from "./connection.js";

/** Inserts deliveries in the caller's transaction (a duplicate id fails it). */
export async function putDeliveries(tx: Queryable, deliveries: readonly NewWebhookDelivery[]): Promise<void> {
	if (deliveries.length === 0) return;
	await tx.query(
		`INSERT INTO webhook_outbox (id, endpoint, event_type, payload, created_at, next_attempt_at)
		 SELECT id, endpoint, event_type, payload, created_at, created_at
		 FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::bigint[]) AS t(id, endpoint, event_type, payload, created_at)`,
		[
			deliveries.map((d) => d.id),
			deliveries.map((d) => d.endpoint),
			deliveries.map((d) => d.eventType),
			deliveries.map((d) => d.payload),
			deliveries.map((d) => d.createdAt),
		],
	);
}

export class PgWebhookOutbox implements WebhookOutbox {
	constructor(
		private readonly commits: CommitQueue,
		private readonly read: () => Promise<Queryable>,
	) {}

	async enqueueWebhooks(deliveries: NewWebhookDelivery[]): Promise<void> {
		if (deliveries.length === 0) return;
		await this.commits.durable((tx) => putDeliveries(tx, deliveries));
	}

	async claimWebhooks(now: number, limit: number, claimUntil: number): Promise<WebhookDelivery[]> {
		const max = checkLimit("limit", limit, 100, 1, 10_000);
		return this.commits.durable(async (tx) => {
			const rows = (
				await tx.query<OutboxRow & { due_at: number }>(
					`WITH due AS (
					   SELECT id, next_attempt_at AS due_at FROM webhook_outbox
					   WHERE status = 'pending' AND next_attempt_at <= $1
					   ORDER BY next_attempt_at, created_at, id LIMIT $2 FOR UPDATE SKIP LOCKED)
					 UPDATE webhook_outbox w SET next_attempt_at = $3 FROM due WHERE w.id = due.id
					 RETURNING w.*, due.due_at`,
					[now, max, claimUntil],
				)
			).rows;
			rows.sort(
				(a, b) => a.due_at - b.due_at || a.created_at - b.created_at || (a.id < b.id ? -1 : a.id > b.id ? 1 : 0),
			);
			return rows.map(toDelivery);
		});
	}

	async settleWebhook(id: string, outcome: Parameters<WebhookOutbox["settleWebhook"]>[1]): Promise<boolean> {
		return this.commits.durable(async (tx) => {
			if (outcome.status === "pending") {
				const r = await tx.query(
					`UPDATE webhook_outbox SET attempts = $1, next_attempt_at = $2, last_error = $3
					 WHERE id = $4 AND status = 'pending'`,
					[outcome.attempts, outcome.nextAttemptAt, outcome.error, id],
				);
				return (r.rowCount ?? 0) > 0;
			}
			const error = outcome.status === "failed" ? outcome.error : null;
			const r = await tx.query(
				`UPDATE webhook_outbox SET status = $1, attempts = $2, finished_at = $3, last_error = coalesce($4, last_error)
				 WHERE id = $5 AND status = 'pending'`,
				[outcome.status, outcome.attempts, outcome.at, error, id],
			);
			return (r.rowCount ?? 0) > 0;
		});
	}

	async listWebhooks(options: { status?: WebhookStatus; limit?: number } = {}): Promise<WebhookDelivery[]> {
		const max = checkLimit("limit", options.limit, 100, 1, 10_000);
		const db = await this.read();
		const rows =
			options.status === undefined
				? (await db.query<OutboxRow>("SELECT * FROM webhook_outbox ORDER BY created_at, id LIMIT $1", [max])).rows
				: (
						await db.query<OutboxRow>(
							"SELECT * FROM webhook_outbox WHERE status = $1 ORDER BY created_at, id LIMIT $2",
							[options.status, max],
						)
					).rows;
		return rows.map(toDelivery);
	}

	async pruneWebhooks(cutoff: number): Promise<number> {
		return this.commits.durable(
			async (tx) =>
				(await tx.query("DELETE FROM webhook_outbox WHERE finished_at IS NOT NULL AND finished_at < $1", [cutoff]))
					.rowCount ?? 0,
		);
	}
}
