/**
 * The SQLite driver of the schedules (`../sql/schedules.ts`): writes are durable writes of the
 * store's commit queue, so fires and the webhook deliveries that report them commit together. One
 * process owns an SQLite file, so the scheduler lease is only ever contended by two schedulers in
 * one process; it is kept anyway, with the same meaning as on PostgreSQL, on the process clock.
 */
import type Database from "better-sqlite3";
import { SCHEDULER_LEASE, type ScheduleDialect, scheduleSql } from "../sql/schedule-rows.js";
import { type ScheduleDriver, type ScheduleTx, SqlSchedules } from "../sql/schedules.js";
import { runNow } from "../sql/steps.js";
import type { SchedulerFence } from "../types.js";
import type { CommitQueue } from "./commit-queue.js";
import { sqliteTx, statementCache } from "./statement-cache.js";
import type { SqliteWebhookOutbox } from "./webhook-outbox.js";

const DIALECT: ScheduleDialect = {
	lockRow: "",
	shareRow: "",
	tickIn: "IN (SELECT value FROM json_each(?))",
	tickList: (ticks) => JSON.stringify(ticks),
};

export function sqliteSchedules(
	db: Database.Database,
	commits: CommitQueue,
	outbox: SqliteWebhookOutbox,
	open: () => void,
): SqlSchedules {
	const prepare = statementCache(db);
	const tx = { ...sqliteTx(prepare), putWebhooks: (deliveries) => outbox.put(deliveries) } satisfies ScheduleTx;
	const { holds: holdsSql } = scheduleSql(DIALECT);
	const holds = (fence: SchedulerFence) =>
		prepare(holdsSql).get(SCHEDULER_LEASE, fence.holder, fence.token) !== undefined;
	const putLease = (holder: string, token: number, expires: number) =>
		prepare(
			`INSERT INTO scheduler_lease (name, holder, token, expires) VALUES (?, ?, ?, ?)
			 ON CONFLICT (name) DO UPDATE SET holder = excluded.holder, token = excluded.token, expires = excluded.expires`,
		).run(SCHEDULER_LEASE, holder, token, expires);
	const driver: ScheduleDriver = {
		dialect: DIALECT,
		begin: open,
		read: (sql, params) => tx.rows(sql, params),
		write: (body) => commits.durable(() => runNow(body(tx)), []),
		takeLease: (holder, ttlMs) =>
			commits.durable(() => {
				const now = Date.now();
				const lease = prepare("SELECT * FROM scheduler_lease WHERE name = ?").get(SCHEDULER_LEASE) as
					| { holder: string; token: number; expires: number }
					| undefined;
				if (lease && lease.holder !== holder && lease.expires > now) return undefined;
				const token = lease?.holder === holder ? lease.token : (lease?.token ?? 0) + 1;
				putLease(holder, token, now + ttlMs);
				return token;
			}, []),
		renewLease: (fence, ttlMs) =>
			commits.durable(() => {
				if (!holds(fence)) return false;
				putLease(fence.holder, fence.token, Date.now() + ttlMs);
				return true;
			}, []),
		releaseLease: (fence) =>
			commits.durable(() => {
				if (holds(fence)) putLease("", fence.token, 0);
			}, []),
	};
	return new SqlSchedules(driver);
}
