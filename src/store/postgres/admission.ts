/**
 * The PostgreSQL driver of the admission queue (`../sql/admission.ts`): the tables are shared by
 * every replica. Each write is a transaction of its own on the pool (not the group commit of the
 * session writes: it takes a table lock, and must not hold the other writes behind it). Admitting
 * and claiming lock the queue table (SHARE ROW EXCLUSIVE: one at a time, plain reads go on), so two
 * replicas never give the same free slot to two runs.
 */
import type pg from "pg";
import { SqlAdmission } from "../sql/admission.js";
import { runSteps } from "../sql/steps.js";
import { asUnavailable } from "./connection.js";
import { pgTx } from "./sql-tx.js";

/** `pool`: the pool, once the store is started. */
export function pgAdmission(pool: () => Promise<pg.Pool>, where: string): SqlAdmission {
	return new SqlAdmission({
		read: async (sql, params) => pgTx(await pool()).rows(sql, params),
		async write(body, locked) {
			let client: pg.PoolClient;
			try {
				client = await (await pool()).connect();
			} catch (error) {
				throw asUnavailable(error, "an admission write", where);
			}
			try {
				await client.query("BEGIN");
				if (locked) await client.query("LOCK TABLE admission_queue IN SHARE ROW EXCLUSIVE MODE");
				const result = await runSteps(body(pgTx(client)));
				await client.query("COMMIT");
				return result;
			} catch (error) {
				await client.query("ROLLBACK").catch(() => {});
				throw asUnavailable(error, "an admission write", where);
			} finally {
				client.release();
			}
		},
	});
}
