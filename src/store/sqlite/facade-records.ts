/**
 * The SQLite store's facade records (`FacadeRecordStore` of ../types.ts): the `facade_records`
 * table and its statements. Every put is a durable write of its session (`commit-queue.ts`).
 */
import type Database from "better-sqlite3";
import { findFacadeLimit, MAX_FACADE_RECORDS_PER_KIND } from "../shared.js";
import { type FacadeRecordRow, toFacadeRecord } from "../sql/rows.js";
import type { FacadeRecord, FacadeRecordStore } from "../types.js";
import type { CommitQueue } from "./commit-queue.js";
import type { Statement } from "./statements.js";

/** A `facade_records` row as both SQL stores read it (same columns). */
export class SqliteFacadeRecords implements FacadeRecordStore {
	private readonly sessionExists: Statement;
	private readonly remove: Statement;
	private readonly insert: Statement;
	private readonly trim: Statement;
	private readonly get: Statement;
	private readonly find: Statement;

	constructor(
		db: Database.Database,
		private readonly commits: CommitQueue,
	) {
		const prepare = (sql: string) => db.prepare(sql) as Statement;
		this.sessionExists = prepare("SELECT 1 FROM sessions WHERE id = ?").pluck();
		this.remove = prepare("DELETE FROM facade_records WHERE session_id = ? AND kind = ? AND key = ?");
		this.insert = prepare(
			"INSERT INTO facade_records (session_id, kind, key, data, created_at) VALUES (?, ?, ?, ?, ?)",
		);
		this.trim = prepare(
			`DELETE FROM facade_records WHERE session_id = ? AND kind = ? AND id NOT IN
			 (SELECT id FROM facade_records WHERE session_id = ? AND kind = ? ORDER BY id DESC LIMIT ?)`,
		);
		this.get = prepare("SELECT * FROM facade_records WHERE session_id = ? AND kind = ? AND key = ?");
		this.find = prepare(
			`SELECT f.* FROM facade_records f JOIN sessions s ON s.id = f.session_id
			 WHERE f.kind = ? AND f.key = ? AND s.owner_id IS ? ORDER BY f.id DESC LIMIT ?`,
		);
	}

	async putFacadeRecords(
		sessionId: string,
		records: readonly { kind: string; key: string; data: string }[],
		at: number,
	): Promise<boolean> {
		return this.commits.durableFor(sessionId, () => {
			if (!this.sessionExists.get(sessionId)) return false;
			const kinds = new Set<string>();
			for (const { kind, key, data } of records) {
				// Delete and insert (not an upsert): the new row's id puts it last in put order.
				this.remove.run(sessionId, kind, key);
				this.insert.run(sessionId, kind, key, data, at);
				kinds.add(kind);
			}
			for (const kind of kinds) this.trim.run(sessionId, kind, sessionId, kind, MAX_FACADE_RECORDS_PER_KIND);
			return true;
		});
	}

	async getFacadeRecord(sessionId: string, kind: string, key: string): Promise<FacadeRecord | undefined> {
		const row = this.get.get(sessionId, kind, key) as FacadeRecordRow | undefined;
		return row && toFacadeRecord(row);
	}

	async findFacadeRecords(kind: string, key: string, ownerId: string | null, limit?: number): Promise<FacadeRecord[]> {
		const rows = this.find.all(kind, key, ownerId, findFacadeLimit(limit)) as FacadeRecordRow[];
		return rows.map(toFacadeRecord);
	}
}
