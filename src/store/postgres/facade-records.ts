/**
 * The PostgreSQL store's facade records (`FacadeRecordStore` of ../types.ts): the
 * `facade_records` table's statements, each write a durable one (`commit.ts`).
 */
import { findFacadeLimit, MAX_FACADE_RECORDS_PER_KIND } from "../shared.js";
import { type FacadeRecordRow, toFacadeRecord } from "../sql/rows.js";
import type { FacadeRecord } from "../types.js";
import type { CommitQueue } from "./commit.js";
import type { Read } from "./connection.js";

export class PgFacadeRecords {
	constructor(
		private readonly commits: CommitQueue,
		private readonly read: Read,
	) {}

	async putFacadeRecords(
		sessionId: string,
		records: readonly { kind: string; key: string; data: string }[],
		at: number,
	): Promise<boolean> {
		return this.commits.durable(async (tx) => {
			const exists = await tx.query("SELECT 1 FROM sessions WHERE id = $1", [sessionId]);
			if (exists.rowCount === 0) return false;
			const kinds = new Set<string>();
			for (const { kind, key, data } of records) {
				// Delete and insert (not an upsert): the new row's id puts it last in put order.
				await tx.query("DELETE FROM facade_records WHERE session_id = $1 AND kind = $2 AND key = $3", [
					sessionId,
					kind,
					key,
				]);
				await tx.query(
					"INSERT INTO facade_records (session_id, kind, key, data, created_at) VALUES ($1, $2, $3, $4, $5)",
					[sessionId, kind, key, data, at],
				);
				kinds.add(kind);
			}
			for (const kind of kinds) {
				await tx.query(
					`DELETE FROM facade_records WHERE session_id = $1 AND kind = $2 AND id NOT IN
					 (SELECT id FROM facade_records WHERE session_id = $1 AND kind = $2 ORDER BY id DESC LIMIT $3)`,
					[sessionId, kind, MAX_FACADE_RECORDS_PER_KIND],
				);
			}
			return true;
		});
	}

	async getFacadeRecord(sessionId: string, kind: string, key: string): Promise<FacadeRecord | undefined> {
		const rows = await this.read<FacadeRecordRow>(
			"SELECT session_id, kind, key, data, created_at FROM facade_records WHERE session_id = $1 AND kind = $2 AND key = $3",
			[sessionId, kind, key],
		);
		return rows[0] && toFacadeRecord(rows[0]);
	}

	async findFacadeRecords(kind: string, key: string, ownerId: string | null, limit?: number): Promise<FacadeRecord[]> {
		const rows = await this.read<FacadeRecordRow>(
			`SELECT f.session_id, f.kind, f.key, f.data, f.created_at FROM facade_records f
			 JOIN sessions s ON s.id = f.session_id
			 WHERE f.kind = $1 AND f.key = $2 AND s.owner_id IS NOT DISTINCT FROM $3 ORDER BY f.id DESC LIMIT $4`,
			[kind, key, ownerId, findFacadeLimit(limit)],
		);
		return rows.map(toFacadeRecord);
	}
}
