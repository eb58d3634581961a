/**
 * The PostgreSQL side of superseded branches (`../sql/transcript-branches.ts`): a rewind's move of
 * the transcript's end into `superseded_messages`, fenced by the session's lease, and reading the
 * branches back. The PostgreSQL event log repeats messages instead of referring to them, so events
 * need no rewrite.
 */
import { type MovedRow, type SupersededRow, toBranch, toBranches } from "../sql/transcript-branches.js";
import type { SupersededBranch } from "../types.js";
import type { Queryable, Read } from "./connection.js";

/** The move, in the caller's transaction. */
export async function supersedeRows(
	tx: Queryable,
	sessionId: string,
	keep: number,
	at: number,
): Promise<SupersededBranch | undefined> {
	const exists = await tx.query("SELECT 1 FROM sessions WHERE id = $1 FOR UPDATE", [sessionId]);
	if (exists.rowCount === 0) return undefined;
	const next = await tx.query<{ branch: number }>(
		"SELECT coalesce(max(branch), 0) + 1 AS branch FROM superseded_messages WHERE session_id = $1",
		[sessionId],
	);
	const branch = Number(next.rows[0]?.branch ?? 1);
	const moved = (
		await tx.query<MovedRow>(
			"SELECT seq, run_id, data FROM messages WHERE session_id = $1 AND seq >= $2 ORDER BY seq",
			[sessionId, keep],
		)
	).rows;
	if (moved.length === 0) return toBranch(branch, keep, at, moved);
	await tx.query(
		`INSERT INTO superseded_messages (session_id, branch, seq, run_id, data, superseded_at)
		 SELECT session_id, $3, seq, run_id, data, $4 FROM messages WHERE session_id = $1 AND seq >= $2`,
		[sessionId, keep, branch, at],
	);
	await tx.query("DELETE FROM messages WHERE session_id = $1 AND seq >= $2", [sessionId, keep]);
	await tx.query("UPDATE sessions SET message_count = $2 WHERE id = $1", [sessionId, keep]);
	return toBranch(branch, keep, at, moved);
}

/** The session's branches; undefined for an unknown session. */
export async function readSuperseded(read: Read, sessionId: string): Promise<SupersededBranch[] | undefined> {
	const [exists, rows] = await Promise.all([
		read("SELECT 1 FROM sessions WHERE id = $1", [sessionId]),
		read<SupersededRow>(
			"SELECT branch, seq, data, superseded_at FROM superseded_messages WHERE session_id = $1 ORDER BY branch, seq",
			[sessionId],
		),
	]);
	return exists.length === 0 ? undefined : toBranches(rows);
}
