/**
 * The SQLite side of superseded branches (`../sql/transcript-branches.ts`): a rewind's move of the
 * transcript's end into `superseded_messages`, and reading the branches back. Event batches may
 * refer to transcript messages by seq (`../sql/event-batch.ts`); a seq the rewind frees will hold
 * another message, so before the move the batches that refer to a moved message get it inlined:
 * every event keeps the data it was appended with, byte for byte.
 */
import type Database from "better-sqlite3";
import { inlineRefs } from "../sql/event-batch.js";
import { type MovedRow, type SupersededRow, toBranch, toBranches } from "../sql/transcript-branches.js";
import type { SupersededBranch } from "../types.js";
import type { Statement } from "./statements.js";

/** The message reference marker of a ref frame (`event-batch.ts`): batches without it refer to nothing. */
const REF_MARKER = "\u0001";

export class SqliteSuperseded {
	private readonly s: Record<
		"exists" | "nextBranch" | "moved" | "insert" | "batches" | "updateBatch" | "deleteMoved" | "setCount" | "list",
		Statement
	>;

	constructor(db: Database.Database) {
		const prepare = (sql: string) => db.prepare(sql) as Statement;
		this.s = {
			exists: prepare("SELECT 1 FROM sessions WHERE id = ?").pluck(),
			nextBranch: prepare("SELECT coalesce(max(branch), 0) + 1 FROM superseded_messages WHERE session_id = ?").pluck(),
			moved: prepare("SELECT seq, run_id, data FROM messages WHERE session_id = ? AND seq >= ? ORDER BY seq"),
			insert: prepare(
				`INSERT INTO superseded_messages (session_id, branch, seq, run_id, data, superseded_at)
				 VALUES (?, ?, ?, ?, ?, ?)`,
			),
			batches: prepare("SELECT last_id, data FROM event_batches WHERE session_id = ? AND instr(data, ?) > 0"),
			updateBatch: prepare("UPDATE event_batches SET data = ? WHERE session_id = ? AND last_id = ?"),
			deleteMoved: prepare("DELETE FROM messages WHERE session_id = ? AND seq >= ?"),
			setCount: prepare("UPDATE sessions SET message_count = ? WHERE id = ?"),
			list: prepare(
				"SELECT branch, seq, data, superseded_at FROM superseded_messages WHERE session_id = ? ORDER BY branch, seq",
			),
		};
	}

	/** The move, in the caller's transaction (see `SqlStoreEngine.supersede`). */
	supersede(sessionId: string, keep: number, at: number): SupersededBranch | undefined {
		if (this.s.exists.get(sessionId) === undefined) return undefined;
		const branch = this.s.nextBranch.get(sessionId) as number;
		const moved = this.s.moved.all(sessionId, keep) as MovedRow[];
		if (moved.length === 0) return toBranch(branch, keep, at, moved);
		const bySeq = new Map(moved.map((r) => [r.seq, r.data]));
		for (const batch of this.s.batches.all(sessionId, REF_MARKER) as { last_id: number; data: string }[]) {
			const data = inlineRefs(batch.data, (seq) => bySeq.get(seq));
			if (data !== batch.data) this.s.updateBatch.run(data, sessionId, batch.last_id);
		}
		for (const row of moved) this.s.insert.run(sessionId, branch, row.seq, row.run_id, row.data, at);
		this.s.deleteMoved.run(sessionId, keep);
		this.s.setCount.run(keep, sessionId);
		return toBranch(branch, keep, at, moved);
	}

	/** The session's branches; undefined for an unknown session. */
	list(sessionId: string): SupersededBranch[] | undefined {
		if (this.s.exists.get(sessionId) === undefined) return undefined;
		return toBranches(this.s.list.all(sessionId) as SupersededRow[]);
	}
}
