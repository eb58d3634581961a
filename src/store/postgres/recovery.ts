/**
 * The PostgreSQL store's recovery after a crash (`RunStore.recoverInterrupted` of ../types.ts), as
 * SQL inside one durable transaction: the sessions left `running` become `interrupted`, their runs
 * are closed with the usage of their stored assistant messages, and the webhook deliveries that
 * report it are put in the same transaction.
 */
import type { AgentMessage } from "../../agent/types.js";
import { addUsage, sumAssistantUsage } from "../shared.js";
import type { SessionRow } from "../sql/rows.js";
import type { NewWebhookDelivery, UsageTotals } from "../types.js";
import type { Queryable } from "./connection.js";
import { DB_NOW_MS } from "./leases.js";
import { putDeliveries } from "./webhook-outbox.js";

/** Who recovers: this store's holder id, and whether it is one of several replicas. */
export interface Recoverer {
	holderId: string;
	cluster: boolean;
}

/**
 * Marks the running sessions (all, or those of `sessionIds`) interrupted at `at`, in the caller's
 * transaction; resolves to their ids. In cluster mode only sessions no live store runs are taken.
 */
export async function interruptRuns(
	tx: Queryable,
	at: number,
	by: Recoverer,
	webhooks: ((sessionId: string, runId: string | null) => NewWebhookDelivery[]) | undefined,
	sessionIds: readonly string[] | undefined,
): Promise<string[]> {
	const only = sessionIds === undefined ? "AND $2::text[] IS NULL" : "AND id = ANY($2::text[])";
	// Cluster mode: only runs no live store runs — the holder stopped renewing, nobody holds it, or it is this store.
	const expired = by.cluster
		? `AND (lease_holder IS NULL OR lease_expires < ${DB_NOW_MS} OR lease_holder = $1)`
		: "AND $1::text IS NOT NULL";
	const rows = (
		await tx.query<SessionRow>(
			`SELECT * FROM sessions WHERE status = 'running' ${expired} ${only} ORDER BY id FOR UPDATE`,
			[by.holderId, sessionIds === undefined ? null : [...sessionIds]],
		)
	).rows;
	for (const row of rows) {
		const runId = row.current_run_id;
		const hasRun = runId !== null && (await tx.query("SELECT 1 FROM runs WHERE id = $1", [runId])).rowCount !== 0;
		if (webhooks) await putDeliveries(tx, webhooks(row.id, hasRun ? runId : null));
		if (runId !== null && hasRun) {
			const messages = (
				await tx.query<{ data: string }>(
					"SELECT data FROM messages WHERE session_id = $1 AND run_id = $2 ORDER BY seq",
					[row.id, runId],
				)
			).rows.map((r) => JSON.parse(r.data) as AgentMessage);
			const usage = sumAssistantUsage(messages);
			await tx.query("UPDATE runs SET status = 'interrupted', ended_at = $1, usage = $2 WHERE id = $3", [
				at,
				JSON.stringify(usage),
				runId,
			]);
			const total = addUsage(JSON.parse(row.usage) as UsageTotals, usage);
			await tx.query("UPDATE sessions SET usage = $1 WHERE id = $2", [JSON.stringify(total), row.id]);
		}
		// Cluster mode: another holder's token moves on, so a stalled holder's late writes are refused.
		const fence = by.cluster
			? `, lease_token = CASE WHEN lease_holder = $3 THEN lease_token ELSE lease_token + 1 END,
					   lease_holder = CASE WHEN lease_holder = $3 THEN lease_holder END`
			: "";
		await tx.query(
			`UPDATE sessions SET status = 'interrupted', interrupted_at = $1 ${fence} WHERE id = $2`,
			by.cluster ? [at, row.id, by.holderId] : [at, row.id],
		);
	}
	return rows.map((r) => r.id);
}
