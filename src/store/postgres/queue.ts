/**
 * The PostgreSQL store's steering and follow-up queues (`QueueStore` of ../types.ts): the `queue`
 * table's statements, each write a durable one (`commit.ts`). Draining entries into the transcript
 * is a run write (`run-writes.ts`); an enqueue's idempotency record commits with it.
 */
import type { AgentMessage } from "../../agent/types.js";
import { toQueuedMessage } from "../sql/rows.js";
import type { IdempotencyRecord, QueuedMessage, QueueKind } from "../types.js";
import type { CommitQueue } from "./commit.js";
import type { Read } from "./connection.js";
import { writeIdempotencyKey } from "./idempotency-keys.js";

export class PgQueue {
	constructor(
		private readonly commits: CommitQueue,
		private readonly read: Read,
		private readonly maxIdempotencyKeys: number,
	) {}

	async enqueue(
		sessionId: string,
		kind: QueueKind,
		message: AgentMessage,
		createdAt: number,
		withKey?: (queued: QueuedMessage) => IdempotencyRecord,
	): Promise<QueuedMessage | undefined> {
		return this.commits.durable(async (tx) => {
			const bumped = await tx.query("UPDATE sessions SET last_active_at = greatest(last_active_at, $1) WHERE id = $2", [
				createdAt,
				sessionId,
			]);
			if (bumped.rowCount === 0) return undefined;
			const json = JSON.stringify(message);
			const id = (
				await tx.query<{ id: number }>(
					"INSERT INTO queue (session_id, kind, data, created_at) VALUES ($1, $2, $3, $4) RETURNING id",
					[sessionId, kind, json, createdAt],
				)
			).rows[0]?.id as number;
			const queued: QueuedMessage = { id, sessionId, kind, message: JSON.parse(json) as AgentMessage, createdAt };
			if (withKey) await writeIdempotencyKey(tx, withKey(queued), this.maxIdempotencyKeys);
			return queued;
		});
	}

	async listQueued(sessionId: string, kind?: QueueKind): Promise<QueuedMessage[]> {
		const rows =
			kind === undefined
				? await this.read("SELECT * FROM queue WHERE session_id = $1 ORDER BY id", [sessionId])
				: await this.read("SELECT * FROM queue WHERE session_id = $1 AND kind = $2 ORDER BY id", [sessionId, kind]);
		return (rows as Parameters<typeof toQueuedMessage>[0][]).map(toQueuedMessage);
	}

	async clearQueue(sessionId: string, kind?: QueueKind): Promise<number> {
		return this.commits.durable(async (tx) => {
			const r =
				kind === undefined
					? await tx.query("DELETE FROM queue WHERE session_id = $1", [sessionId])
					: await tx.query("DELETE FROM queue WHERE session_id = $1 AND kind = $2", [sessionId, kind]);
			return r.rowCount ?? 0;
		});
	}
}
