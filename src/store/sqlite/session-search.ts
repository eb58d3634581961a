/**
 * The SQLite store's filtered session list (`listSessions` with a `filter`): one statement per
 * shape of filter (which conditions, how many metadata pairs), prepared on first use and kept.
 *
 * With a metadata pair, the scan starts from `session_metadata` (one row per pair, kept by the
 * triggers of migration 11), whose `(key, value, owner_id, created_at, session_id)` index yields
 * exactly the sessions with that pair, already in list order: a page costs its 50 rows whether
 * the pair is common or rare. Further pairs, the status and update times are then checked on
 * those rows. Without a pair, the `(owner_id, status, created_at, id)` index serves the status.
 *
 * A caller with a tenant also sees its tenant's shared sessions: the sessions shared with a tenant
 * have their pairs in the partial `(key, value, shared_tenant, created_at, session_id)` index
 * (schema 16) and their rows in the partial `(tenant, created_at, id)` index, so that half is
 * read from an index in list order as the owner's half is, and the two are merged.
 */
import type Database from "better-sqlite3";
import type { SessionFilter } from "../types.js";
import type { Statement } from "./statements.js";

export class SqliteSessionSearch {
	private readonly statements = new Map<string, Statement>();

	constructor(private readonly db: Database.Database) {}

	/**
	 * Up to `limit` rows matching, in list order, after `after` (a decoded cursor). With `ownerId`,
	 * what that caller may see: its own sessions and, with a tenant, its tenant's shared ones.
	 */
	rows(
		ownerId: string | null | undefined,
		tenant: string | null | undefined,
		after: [number, string] | undefined,
		filter: SessionFilter,
		limit: number,
	): unknown[] {
		const [first, ...rest] = Object.entries(filter.metadata ?? {});
		// `k`: the table the order and the cursor come from (the pair's rows, or the sessions).
		const k = first
			? { created: "m.created_at", id: "m.session_id", owner: "m.owner_id" }
			: { created: "s.created_at", id: "s.id", owner: "s.owner_id" };
		const from = first ? "session_metadata m JOIN sessions s ON s.id = m.session_id" : "sessions s";
		/** The conditions besides the caller's, in the order of `args`. */
		const conditions = (): { where: string[]; args: unknown[] } => {
			const where: string[] = [];
			const args: unknown[] = [];
			if (first) {
				where.push("m.key = ? AND m.value = ?");
				args.push(first[0], first[1]);
			}
			if (after) {
				// A row value: the index's range starts at the cursor (an OR of two conditions would not).
				where.push(`(${k.created}, ${k.id}) > (?, ?)`);
				args.push(after[0], after[1]);
			}
			if (filter.status !== undefined) {
				where.push("s.status = ?");
				args.push(filter.status);
			}
			if (filter.updatedAfter !== undefined) {
				where.push("s.updated_at > ?");
				args.push(filter.updatedAfter);
			}
			if (filter.updatedBefore !== undefined) {
				where.push("s.updated_at < ?");
				args.push(filter.updatedBefore);
			}
			for (const [key, value] of rest) {
				// The key is a bound JSON path: `$.metadata."<key>"` (keys with quotes are refused first).
				where.push("json_extract(s.config, ?) = ?");
				args.push(`$.metadata."${key}"`, value);
			}
			return { where, args };
		};
		const select = (fields: string, caller: { where: string; args: unknown[] } | undefined) => {
			const { where, args } = conditions();
			if (caller) {
				where.unshift(caller.where);
				args.unshift(...caller.args);
			}
			return { sql: `SELECT ${fields} FROM ${from} WHERE ${where.join(" AND ") || "1"}`, args };
		};

		let sql: string;
		let args: unknown[];
		if (ownerId !== undefined && tenant !== null && tenant !== undefined) {
			// Two halves, each served by an index in list order — the owner's rows, and the rows of
			// sessions shared with the tenant (session_metadata's `shared_tenant`, or the sessions'
			// partial tenant index) that are not the owner's — merged by SQLite's compound ORDER BY
			// without a sort, so a page reads about its own rows. One OR would read and sort every row
			// with the pair.
			const own = select(`${k.created} AS c, ${k.id} AS i`, { where: `${k.owner} IS ?`, args: [ownerId] });
			const shared = select(`${k.created} AS c, ${k.id} AS i`, {
				where: first
					? "m.shared_tenant = ? AND m.owner_id IS NOT ?"
					: "s.visibility = 'tenant' AND s.tenant = ? AND s.owner_id IS NOT ?",
				args: [tenant, ownerId],
			});
			sql =
				`SELECT s.* FROM (${own.sql} UNION ALL ${shared.sql} ORDER BY c, i LIMIT ?) p ` +
				"JOIN sessions s ON s.id = p.i ORDER BY p.c, p.i";
			args = [...own.args, ...shared.args, limit];
		} else {
			// Without a tenant only the owner's own rows qualify: the plain condition keeps the index's order.
			const one = select("s.*", ownerId === undefined ? undefined : { where: `${k.owner} IS ?`, args: [ownerId] });
			sql = `${one.sql} ORDER BY ${k.created}, ${k.id} LIMIT ?`;
			args = [...one.args, limit];
		}
		let statement = this.statements.get(sql);
		if (!statement) {
			statement = this.db.prepare(sql) as Statement;
			this.statements.set(sql, statement);
		}
		return statement.all(...args);
	}
}
