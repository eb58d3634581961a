/**
 * The PostgreSQL store's idempotency records (`IdempotencyStore` of ../types.ts): the
 * `idempotency_keys` table's statements. `writeIdempotencyKey` also runs inside another durable
 * write's transaction (an enqueue), so a request's effect and its record commit together.
 */
import { toIdempotencyRecord } from "../sql/rows.js";
import type { IdempotencyRecord } from "../types.js";
import type { CommitQueue } from "./commit.js";
import type { Queryable, Read } from "./connection.js";

/** The statements of `putIdempotencyKey`, inside a caller's transaction; keeps the session's newest `maxKeys`. */
export async function writeIdempotencyKey(tx: Queryable, r: IdempotencyRecord, maxKeys: number): Promise<void> {
	// Delete and insert (not an upsert): the new row's id puts it last in the session's put order.
	await tx.query("DELETE FROM idempotency_keys WHERE session_id = $1 AND key = $2", [r.sessionId, r.key]);
	await tx.query(
		`INSERT INTO idempotency_keys (session_id, key, operation, fingerprint, outcome, created_at)
			 VALUES ($1, $2, $3, $4, $5, $6)`,
		[r.sessionId, r.key, r.operation, r.fingerprint, r.outcome, r.createdAt],
	);
	await tx.query(
		`DELETE FROM idempotency_keys WHERE session_id = $1 AND id NOT IN
			 (SELECT id FROM idempotency_keys WHERE session_id = $1 ORDER BY id DESC LIMIT $2)`,
		[r.sessionId, maxKeys],
	);
}

export class PgIdempotencyKeys {
	constructor(
		private readonly commits: CommitQueue,
		private readonly read: Read,
		private readonly maxKeys: number,
	) {}

	async putIdempotencyKey(record: IdempotencyRecord): Promise<boolean> {
		// One commit with the session's queued writes: a run start and the key that started it.
		return this.commits.durable(async (tx) => {
			const exists = await tx.query("SELECT 1 FROM sessions WHERE id = $1", [record.sessionId]);
			if (exists.rowCount === 0) return false;
			await writeIdempotencyKey(tx, record, this.maxKeys);
			return true;
		});
	}

	async getIdempotencyKey(sessionId: string, key: string): Promise<IdempotencyRecord | undefined> {
		const rows = await this.read("SELECT * FROM idempotency_keys WHERE session_id = $1 AND key = $2", [sessionId, key]);
		return rows[0] ? toIdempotencyRecord(rows[0] as Parameters<typeof toIdempotencyRecord>[0]) : undefined;
	}

	async deleteIdempotencyKeys(cutoff: number): Promise<number> {
		return this.commits.durable(
			async (tx) => (await tx.query("DELETE FROM idempotency_keys WHERE created_at < $1", [cutoff])).rowCount ?? 0,
		);
	}
}
