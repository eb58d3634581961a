/**
 * Superseded branches in the SQL stores: a rewind moves the transcript's rows from a cut on into
 * `superseded_messages` (SQLite schema 14, PostgreSQL schema 6), numbered per session, so the
 * transcript keeps its dense seqs (`wh-<index>` and the compaction indexes stay valid) and what
 * followed the cut is never deleted. Both drivers write the move with their SQL; this file holds
 * the row shape and its mapping.
 */
import type { AgentMessage } from "../../agent/types.js";
import type { SupersededBranch } from "../types.js";

/** One row of `superseded_messages`. */
export interface SupersededRow {
	branch: number;
	seq: number;
	data: string;
	superseded_at: number;
}

/** A moved transcript row, as a rewind reads it before moving it. */
export interface MovedRow {
	seq: number;
	run_id: string | null;
	data: string;
}

/** The branches of `rows` (ordered by branch, then seq). */
export function toBranches(rows: readonly SupersededRow[]): SupersededBranch[] {
	const branches: SupersededBranch[] = [];
	let current: SupersededBranch | undefined;
	for (const row of rows) {
		const branch = Number(row.branch);
		if (current?.branch !== branch) {
			current = { branch, fromIndex: Number(row.seq), supersededAt: Number(row.superseded_at), messages: [] };
			branches.push(current);
		}
		current.messages.push(JSON.parse(row.data) as AgentMessage);
	}
	return branches;
}

/** What a rewind made: branch `branch` of `moved` (empty: nothing followed the cut, no branch made). */
export function toBranch(branch: number, keep: number, at: number, moved: readonly MovedRow[]): SupersededBranch {
	return {
		branch,
		fromIndex: keep,
		supersededAt: at,
		messages: moved.map((r) => JSON.parse(r.data) as AgentMessage),
	};
}
