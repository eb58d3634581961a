/**
 * The admission queue's rows (`admission_queue`, `admission_turns`) and their mapping, shared by
 * the SQLite and PostgreSQL stores: the same columns, the same meaning.
 */
import type { AdmissionEntry, AdmissionState } from "../admission-types.js";

export interface AdmissionRow {
	id: number;
	session_id: string;
	owner_id: string | null;
	tenant: string | null;
	grp: string;
	messages: string;
	state: string;
	holder: string | null;
	run_id: string | null;
	heartbeat_at: number | null;
	enqueued_at: number;
}

export function toAdmission(row: AdmissionRow): AdmissionEntry {
	return {
		id: Number(row.id),
		sessionId: row.session_id,
		ownerId: row.owner_id,
		tenant: row.tenant,
		messages: JSON.parse(row.messages),
		state: row.state as AdmissionState,
		holder: row.holder,
		runId: row.run_id,
		enqueuedAt: Number(row.enqueued_at),
	};
}

/** A group's head as `pickNext` reads it. */
export function toHead(row: AdmissionRow): AdmissionEntry & { group: string } {
	return { ...toAdmission(row), group: row.grp };
}

/** The SQL of both stores (`?` placeholders; the PostgreSQL driver numbers them). */
export const ADMISSION_SQL = {
	running: "SELECT tenant, owner_id FROM admission_queue WHERE state = 'running'",
	/** Each group's oldest waiting run; none for a group with a start in flight (FIFO even across a crash). */
	heads: `SELECT q.* FROM admission_queue q WHERE q.state = 'queued'
		AND q.id = (SELECT min(h.id) FROM admission_queue h WHERE h.grp = q.grp AND h.state = 'queued')
		AND NOT EXISTS (SELECT 1 FROM admission_queue s WHERE s.grp = q.grp AND s.state = 'running' AND s.run_id IS NULL)`,
	turns: "SELECT grp, turn FROM admission_turns",
	sessionWaiting: "SELECT id FROM admission_queue WHERE session_id = ? AND state = 'queued' ORDER BY id LIMIT 1",
	groupWaiting: "SELECT count(*) AS n FROM admission_queue WHERE grp = ? AND state = 'queued'",
	positionOf: `SELECT count(*) AS n FROM admission_queue q, admission_queue me
		WHERE me.id = ? AND me.state = 'queued' AND q.grp = me.grp AND q.state = 'queued' AND q.id <= me.id`,
	insert: `INSERT INTO admission_queue (session_id, owner_id, tenant, grp, messages, state, holder, heartbeat_at, enqueued_at)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?) RETURNING *`,
	/** A request's place keeps its waiter as the holder (coalesce): that process starts its run. */
	take: "UPDATE admission_queue SET state = 'running', holder = coalesce(holder, ?), heartbeat_at = ? WHERE id = ? RETURNING *",
	turn: `INSERT INTO admission_turns (grp, turn) VALUES (?, (SELECT coalesce(max(turn), 0) + 1 FROM admission_turns))
		ON CONFLICT (grp) DO UPDATE SET turn = excluded.turn`,
	started: "UPDATE admission_queue SET run_id = ? WHERE id = ?",
	release: "DELETE FROM admission_queue WHERE id = ?",
	requeue: "UPDATE admission_queue SET state = 'queued', holder = NULL, heartbeat_at = NULL WHERE id = ?",
	heartbeat: "UPDATE admission_queue SET heartbeat_at = ? WHERE holder = ?",
	/** Requests' places (no messages) of dead holders: their requests died with them. */
	dropStalePlaces: "DELETE FROM admission_queue WHERE messages = '[]' AND holder <> ? AND heartbeat_at < ?",
	releaseStale: `DELETE FROM admission_queue WHERE state = 'running' AND holder <> ? AND heartbeat_at < ?
		AND run_id IS NOT NULL`,
	requeueStale: `UPDATE admission_queue SET state = 'queued', holder = NULL, heartbeat_at = NULL
		WHERE state = 'running' AND holder <> ? AND heartbeat_at < ? AND run_id IS NULL`,
	list: "SELECT * FROM admission_queue ORDER BY id",
	entry: "SELECT * FROM admission_queue WHERE id = ?",
	/** Turns of groups with nothing left: dropped, so the table stays as small as the queue. */
	dropTurns: "DELETE FROM admission_turns WHERE grp NOT IN (SELECT grp FROM admission_queue)",
} as const;
