/**
 * The SQLite store's webhook outbox (`WebhookOutbox` of ../types.ts): the `webhook_outbox` table
 * and its statements (rows map to records in ../sql/outbox-rows.ts). `put` runs inside a
 * transaction the store opens — the one of the fact a delivery reports (a run end, a pending
 * interaction, a recovery) — so the delivery and the fact commit together.
 */
import type Database from "better-sqlite3";
import { checkLimit } from "../shared.js";
import { type OutboxRow, toDelivery } from "../sql/outbox-rows.js";
import type { NewWebhookDelivery, WebhookDelivery, WebhookOutbox, WebhookStatus } from "../types.js";
import type { CommitQueue } from "./commit-queue.js";
import type { Statement } from "./statements.js";

export class SqliteWebhookOutbox implements WebhookOutbox {
	private readonly insert: Statement;
	private readonly due: Statement;
	private readonly claim: Statement;
	private readonly reschedule: Statement;
	private readonly finish: Statement;
	private readonly listAll: Statement;
	private readonly listStatus: Statement;
	private readonly prune: Statement;

	constructor(
		db: Database.Database,
		private readonly commits: CommitQueue,
	) {
		const prepare = (sql: string) => db.prepare(sql) as Statement;
		this.insert = prepare(
			`INSERT INTO webhook_outbox (id, endpoint, event_type, payload, created_at, next_attempt_at)
			 VALUES (?, ?, ?, ?, ?, ?)`,
		);
		this.due = prepare(
			`SELECT * FROM webhook_outbox WHERE status = 'pending' AND next_attempt_at <= ?
			 ORDER BY next_attempt_at, created_at, id LIMIT ?`,
		);
		this.claim = prepare("UPDATE webhook_outbox SET next_attempt_at = ? WHERE id = ?");
		this.reschedule = prepare(
			`UPDATE webhook_outbox SET attempts = ?, next_attempt_at = ?, last_error = ?
			 WHERE id = ? AND status = 'pending'`,
		);
		this.finish = prepare(
			`UPDATE webhook_outbox SET status = ?, attempts = ?, finished_at = ?, last_error = coalesce(?, last_error)
			 WHERE id = ? AND status = 'pending'`,
		);
		this.listAll = prepare("SELECT * FROM webhook_outbox ORDER BY created_at, id LIMIT ?");
		this.listStatus = prepare("SELECT * FROM webhook_outbox WHERE status = ? ORDER BY created_at, id LIMIT ?");
		this.prune = prepare("DELETE FROM webhook_outbox WHERE finished_at IS NOT NULL AND finished_at < ?");
	}

	/** Inserts deliveries; call within a transaction (a duplicate id throws, failing it). */
	put(deliveries: readonly NewWebhookDelivery[]): void {
		for (const d of deliveries) this.insert.run(d.id, d.endpoint, d.eventType, d.payload, d.createdAt, d.createdAt);
	}

	async enqueueWebhooks(deliveries: NewWebhookDelivery[]): Promise<void> {
		if (deliveries.length === 0) return;
		this.commits.durable(() => this.put(deliveries), []);
	}

	async claimWebhooks(now: number, limit: number, claimUntil: number): Promise<WebhookDelivery[]> {
		const max = checkLimit("limit", limit, 100, 1, 10_000);
		return this.commits.durable(() => {
			const rows = this.due.all(now, max) as OutboxRow[];
			for (const row of rows) this.claim.run(claimUntil, row.id);
			return rows.map((row) => ({ ...toDelivery(row), nextAttemptAt: claimUntil }));
		}, []);
	}

	async settleWebhook(id: string, outcome: Parameters<WebhookOutbox["settleWebhook"]>[1]): Promise<boolean> {
		return this.commits.durable(() => {
			if (outcome.status === "pending")
				return this.reschedule.run(outcome.attempts, outcome.nextAttemptAt, outcome.error, id).changes > 0;
			const error = outcome.status === "failed" ? outcome.error : null;
			return this.finish.run(outcome.status, outcome.attempts, outcome.at, error, id).changes > 0;
		}, []);
	}

	async listWebhooks(options: { status?: WebhookStatus; limit?: number } = {}): Promise<WebhookDelivery[]> {
		const max = checkLimit("limit", options.limit, 100, 1, 10_000);
		// Deliveries put with a run end wait for the barrier: a read sees every write called before it.
		this.commits.settle();
		const rows = (
			options.status === undefined ? this.listAll.all(max) : this.listStatus.all(options.status, max)
		) as OutboxRow[];
		return rows.map(toDelivery);
	}

	async pruneWebhooks(cutoff: number): Promise<number> {
		return this.commits.durable(() => this.prune.run(cutoff).changes, []);
	}
}
