/**
 * The SQLite side of the transaction bodies both SQL stores share (`../sql/steps.ts`): their
 * statements, prepared on first use (the tables exist once the store is open, and better-sqlite3
 * statements are reusable), answering within the call.
 */
import type Database from "better-sqlite3";
import type { SqlTx } from "../sql/driver.js";
import type { Statement } from "./statements.js";

/** A statement by its text, prepared once per database. */
export type Prepare = (sql: string) => Statement;

export function statementCache(db: Database.Database): Prepare {
	const prepared = new Map<string, Statement>();
	return (sql) => {
		let statement = prepared.get(sql);
		if (!statement) {
			statement = db.prepare(sql) as Statement;
			prepared.set(sql, statement);
		}
		return statement;
	};
}

/** The statements of a body, run on `prepare`'s database (in the caller's transaction for writes). */
export function sqliteTx(prepare: Prepare): SqlTx {
	return {
		rows: <T>(sql: string, params: readonly unknown[] = []) => prepare(sql).all(...params) as T[],
		run: (sql, params = []) => prepare(sql).run(...params).changes,
	};
}
