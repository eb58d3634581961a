/**
 * The PostgreSQL driver of the schedules (`../sql/schedules.ts`): the tables are shared by every
 * replica. Recording fires locks the schedule's row (`FOR UPDATE`), and a fenced write reads the
 * lease row under a share lock in the same transaction, so a replica that lost the lease (it
 * stalled past the TTL) records nothing after another took over. Lease expiry is on the
 * database's clock.
 */
import { SCHEDULER_LEASE } from "../sql/schedule-rows.js";
import { SqlSchedules } from "../sql/schedules.js";
import { runSteps } from "../sql/steps.js";
import type { CommitQueue } from "./commit.js";
import type { Read } from "./connection.js";
import { DB_NOW_MS } from "./leases.js";
import { numbered, pgTx } from "./sql-tx.js";
import { putDeliveries } from "./webhook-outbox.js";

export function pgSchedules(commits: CommitQueue, read: Read, begin: () => Promise<void>): SqlSchedules {
	const lease = async (sql: string, params: unknown[]) =>
		(await commits.durable((tx) => tx.query<{ token: number }>(sql, [SCHEDULER_LEASE, ...params]))).rows;
	return new SqlSchedules({
		dialect: {
			lockRow: " FOR UPDATE",
			shareRow: " FOR SHARE",
			tickIn: "= ANY(?::bigint[])",
			tickList: (ticks) => ticks,
		},
		begin,
		read: <T>(sql: string, params: readonly unknown[]) => read(numbered(sql), [...params]) as Promise<T[]>,
		write: (body) =>
			commits.durable((tx) =>
				Promise.resolve(runSteps(body({ ...pgTx(tx), putWebhooks: (deliveries) => putDeliveries(tx, deliveries) }))),
			),
		async takeLease(holder, ttlMs) {
			const [row] = await lease(
				`INSERT INTO scheduler_lease (name, holder, token, expires) VALUES ($1, $2, 1, ${DB_NOW_MS} + $3)
				 ON CONFLICT (name) DO UPDATE SET
				   token = CASE WHEN scheduler_lease.holder = $2 THEN scheduler_lease.token ELSE scheduler_lease.token + 1 END,
				   holder = $2, expires = ${DB_NOW_MS} + $3
				 WHERE scheduler_lease.holder = $2 OR scheduler_lease.expires < ${DB_NOW_MS}
				 RETURNING token`,
				[holder, ttlMs],
			);
			return row === undefined ? undefined : Number(row.token);
		},
		async renewLease(fence, ttlMs) {
			const rows = await lease(
				`UPDATE scheduler_lease SET expires = ${DB_NOW_MS} + $4 WHERE name = $1 AND holder = $2 AND token = $3
				 RETURNING token`,
				[fence.holder, fence.token, ttlMs],
			);
			return rows.length > 0;
		},
		async releaseLease(fence) {
			await lease(
				"UPDATE scheduler_lease SET holder = '', expires = 0 WHERE name = $1 AND holder = $2 AND token = $3",
				[fence.holder, fence.token],
			);
		},
	});
}
