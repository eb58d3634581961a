/**
 * The PostgreSQL side of the transaction bodies both SQL stores share (`../sql/steps.ts`): their
 * statements, written with `?` placeholders, run on a transaction's connection (or the pool).
 */
import type { SqlTx } from "../sql/driver.js";
import type { Queryable } from "./connection.js";

/** `?` placeholders as `$1, $2, …`. */
export function numbered(sql: string): string {
	let n = 0;
	return sql.replace(/\?/g, () => `$${++n}`);
}

export function pgTx(db: Queryable): SqlTx {
	return {
		rows: async (sql, params = []) => (await db.query(numbered(sql), [...params])).rows,
		run: async (sql, params = []) => (await db.query(numbered(sql), [...params])).rowCount ?? 0,
	};
}
