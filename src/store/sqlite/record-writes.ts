/**
 * The SQLite store's durable writes of queues, pending interactions and idempotency records
 * (`RecordWrites` of `../sql/engine.ts`): their statements, each in a durable write of the commit
 * queue scoped to the session, so it commits with the session's queued writes and buffered events.
 */
import type { AgentMessage } from "../../agent/types.js";
import type { RecordWrites } from "../sql/driver.js";
import type { IdempotencyRecord, QueuedMessage } from "../types.js";
import type { CommitQueue } from "./commit-queue.js";
import { addUsageRows } from "./run-writes.js";
import type { Statements } from "./statements.js";
import type { SqliteWebhookOutbox } from "./webhook-outbox.js";

export function sqliteRecordWrites(
	s: Statements,
	commits: CommitQueue,
	outbox: SqliteWebhookOutbox,
	maxIdempotencyKeys: number,
): RecordWrites {
	const exists = (sessionId: string) => s.getSession.get(sessionId) !== undefined;
	/** The statements of `putIdempotencyKey`, inside a caller's write. */
	const writeKey = (r: IdempotencyRecord) => {
		// Delete and insert (not an upsert): the new row's id puts it last in the session's put order.
		s.deleteIdempotencyKey.run(r.sessionId, r.key);
		s.insertIdempotencyKey.run(r.sessionId, r.key, r.operation, r.fingerprint, r.outcome, r.createdAt);
		s.trimIdempotencyKeys.run(r.sessionId, maxIdempotencyKeys);
	};
	return {
		enqueue: ({ sessionId, kind, message, createdAt }, withKey) =>
			commits.durableFor(sessionId, () => {
				if (!exists(sessionId)) return undefined;
				const json = JSON.stringify(message);
				const id = Number(s.insertQueued.run(sessionId, kind, json, createdAt).lastInsertRowid);
				s.bumpActivity.run(createdAt, sessionId);
				const queued: QueuedMessage = { id, sessionId, kind, message: JSON.parse(json) as AgentMessage, createdAt };
				if (withKey) writeKey(withKey(queued));
				return queued;
			}),
		clearQueue: (sessionId, kind) =>
			commits.durableFor(
				sessionId,
				() => (kind === undefined ? s.clearQueue.run(sessionId) : s.clearQueueKind.run(sessionId, kind)).changes,
			),
		putPending: (i, webhooks) =>
			commits.durableFor(i.sessionId, () => {
				const row = s.getSession.get(i.sessionId) as { current_run_id: string | null } | undefined;
				if (!row) return false;
				s.upsertPending.run(i.sessionId, i.toolCallId, i.kind, i.payload, i.createdAt);
				// The session's queued writes (its run start) committed first in this transaction: the row is current.
				if (webhooks) outbox.put(webhooks(row.current_run_id));
				return true;
			}),
		resolvePending: (sessionId, toolCallId, resolution, at) =>
			commits.durableFor(sessionId, () => s.resolvePending.run(at, resolution, sessionId, toolCallId).changes > 0),
		deletePending: (sessionId, toolCallId) =>
			commits.durableFor(sessionId, () => s.deletePending.run(sessionId, toolCallId).changes > 0),
		// One commit with the session's queued writes: a run start and the key that started it.
		putIdempotencyKey: (record) =>
			commits.durableFor(record.sessionId, () => {
				if (!exists(record.sessionId)) return false;
				writeKey(record);
				return true;
			}),
		deleteIdempotencyKeys: (cutoff) => commits.durable(() => s.expireIdempotencyKeys.run(cutoff).changes, []),
		recordUsage: (owner, tenant, entries) => commits.durable(() => addUsageRows(s, owner, tenant, entries), []),
	};
}
