/**
 * The SQLite store's reads of rows for the engine (`RowReads` of `../sql/engine.ts`): their
 * statements (a filtered session list's in `session-search.ts`), after committing the queued
 * writes the read would miss (`CommitQueue.settle`).
 */
import type { RowReads } from "../sql/driver.js";
import type { IdempotencyRow, PendingRow, QueueRow, RunRow, SessionRow, UsageDailyRow } from "../sql/rows.js";
import type { CommitQueue } from "./commit-queue.js";
import type { SqliteSessionSearch } from "./session-search.js";
import type { Statements } from "./statements.js";

export function sqliteRowReads(s: Statements, commits: CommitQueue, search: SqliteSessionSearch): RowReads<SessionRow> {
	return {
		sessions({ ownerId, tenant, after, filter, limit }) {
			commits.settle();
			// A caller with a tenant sees two sets (its own, its tenant's shared ones): the search
			// merges them from their indexes; one OR would read every session in list order.
			if (filter || (ownerId !== undefined && tenant !== null && tenant !== undefined)) {
				return search.rows(ownerId, tenant, after, filter ?? {}, limit) as SessionRow[];
			}
			const byOwner = ownerId !== undefined;
			const args: unknown[] = [];
			if (byOwner) args.push(ownerId, tenant ?? null);
			if (after) args.push(after[0], after[0], after[1]);
			args.push(limit);
			const stmt = byOwner ? (after ? s.listOwnerAfter : s.listOwner) : after ? s.listAllAfter : s.listAll;
			return stmt.all(...args) as SessionRow[];
		},
		messageCount(sessionId) {
			commits.settle(sessionId);
			return (s.getCountAndRun.get(sessionId) as { message_count: number } | undefined)?.message_count;
		},
		messages: (sessionId, offset, limit) => s.listMessages.pluck().all(sessionId, offset, limit) as string[],
		runs(sessionId, limit) {
			commits.settle(sessionId);
			return (s.listRuns.all(sessionId, limit) as RunRow[]).reverse();
		},
		claimCheck: (runId, sessionId) => ({
			runExists: s.runExists.get(runId) !== undefined,
			updatedAt: s.getUpdatedAt.get(sessionId) as number | undefined,
		}),
		queue: (sessionId, kind) =>
			(kind === undefined ? s.listQueued.all(sessionId) : s.listQueuedKind.all(sessionId, kind)) as QueueRow[],
		pending: (sessionId, includeResolved) => s.listPending.all(sessionId, includeResolved ? 1 : 0) as PendingRow[],
		idempotencyKey: (sessionId, key) => s.getIdempotencyKey.get(sessionId, key) as IdempotencyRow | undefined,
		usage(query) {
			commits.settle();
			if (query.tenant !== undefined) {
				return s.readTenantUsage.all(query.tenant, query.fromDay, query.toDay) as UsageDailyRow[];
			}
			return s.readUsage.all(query.ownerId ?? "", query.fromDay, query.toDay) as UsageDailyRow[];
		},
		usageSum(query) {
			commits.settle();
			const statement = query.tenant !== undefined ? s.sumTenantUsage : s.sumUsage;
			return statement.get(query.tenant ?? query.ownerId ?? "", query.fromDay, query.toDay) as {
				total_tokens: number;
				cost_usd: number;
			};
		},
	};
}
