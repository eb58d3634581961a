/**
 * The SQLite driver of the admission queue (`../sql/admission.ts`): writes are durable writes of
 * the store's commit queue; one process owns the file, so its transactions alone decide who
 * takes a slot (a write holds the whole database: no lock to take).
 */
import type Database from "better-sqlite3";
import { SqlAdmission } from "../sql/admission.js";
import { runNow } from "../sql/steps.js";
import type { CommitQueue } from "./commit-queue.js";
import { sqliteTx, statementCache } from "./statement-cache.js";

export function sqliteAdmission(db: Database.Database, commits: CommitQueue, open: () => void): SqlAdmission {
	const tx = sqliteTx(statementCache(db));
	return new SqlAdmission({
		read: (sql, params) => {
			open();
			return tx.rows(sql, params);
		},
		write: (body) => {
			open();
			return commits.durable(() => runNow(body(tx)));
		},
	});
}
