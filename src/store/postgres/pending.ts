/**
 * The PostgreSQL store's pending interactions (`PendingInteractionStore` of ../types.ts): the
 * `pending_interactions` table's statements, each write a durable one (`commit.ts`). A put's
 * webhook deliveries go into the same transaction, so the interaction and its announcement commit
 * together.
 */
import { toPendingInteraction } from "../sql/rows.js";
import type { NewWebhookDelivery, PendingInteraction } from "../types.js";
import type { CommitQueue } from "./commit.js";
import type { Read } from "./connection.js";
import { putDeliveries } from "./webhook-outbox.js";

export class PgPendingInteractions {
	constructor(
		private readonly commits: CommitQueue,
		private readonly read: Read,
	) {}

	async putPending(
		interaction: Omit<PendingInteraction, "resolvedAt" | "resolution">,
		webhooks?: (runId: string | null) => NewWebhookDelivery[],
	): Promise<boolean> {
		const i = interaction;
		return this.commits.durable(async (tx) => {
			const row = (
				await tx.query<{ current_run_id: string | null }>("SELECT current_run_id FROM sessions WHERE id = $1", [
					i.sessionId,
				])
			).rows[0];
			if (!row) return false;
			await tx.query(
				`INSERT INTO pending_interactions (session_id, tool_call_id, kind, payload, created_at) VALUES ($1, $2, $3, $4, $5)
				 ON CONFLICT (session_id, tool_call_id) DO UPDATE SET kind = excluded.kind, payload = excluded.payload,
				 created_at = excluded.created_at, resolved_at = NULL, resolution = NULL`,
				[i.sessionId, i.toolCallId, i.kind, i.payload, i.createdAt],
			);
			// The session's queued writes (its run start) ran first in this transaction: the row is current.
			if (webhooks) await putDeliveries(tx, webhooks(row.current_run_id));
			return true;
		});
	}

	async resolvePending(sessionId: string, toolCallId: string, resolution: string, at: number): Promise<boolean> {
		return this.commits.durable(async (tx) => {
			const r = await tx.query(
				`UPDATE pending_interactions SET resolved_at = $1, resolution = $2
				 WHERE session_id = $3 AND tool_call_id = $4 AND resolved_at IS NULL`,
				[at, resolution, sessionId, toolCallId],
			);
			return (r.rowCount ?? 0) > 0;
		});
	}

	async deletePending(sessionId: string, toolCallId: string): Promise<boolean> {
		return this.commits.durable(async (tx) => {
			const r = await tx.query("DELETE FROM pending_interactions WHERE session_id = $1 AND tool_call_id = $2", [
				sessionId,
				toolCallId,
			]);
			return (r.rowCount ?? 0) > 0;
		});
	}

	async listPending(sessionId: string, options: { includeResolved?: boolean } = {}): Promise<PendingInteraction[]> {
		const rows = await this.read(
			`SELECT * FROM pending_interactions WHERE session_id = $1 AND ($2 OR resolved_at IS NULL)
			 ORDER BY created_at, seq`,
			[sessionId, options.includeResolved === true],
		);
		return (rows as Parameters<typeof toPendingInteraction>[0][]).map(toPendingInteraction);
	}
}
