/**
 * The session leases of the PostgreSQL store, as SQL: a session's row carries its lease holder
 * (one id per open store), a fencing token incremented on every take, and an expiry on the
 * database's clock (so replicas with skewed clocks agree). A store takes a session's lease when
 * the session joins its working set, renews the leases it holds every third of the TTL, and
 * releases them when it closes. In cluster mode a lease held by another store is taken only once
 * it expired; a single-replica store (which holds the schema's instance-owner lock) takes any.
 */
import type { Queryable } from "./connection.js";

/** Epoch milliseconds on the database's clock. */
export const DB_NOW_MS = "(extract(epoch from clock_timestamp()) * 1000)::bigint";

/** What taking a lease reads of the session: its token and write state. */
export interface LeaseRow {
	lease_token: number;
	last_event_id: number;
	event_id_reserved: number;
	message_count: number;
	current_run_id: string | null;
	status: string;
	batch_last: number | null;
}

/**
 * Takes the lease of `sessionId` for `holder` (token + 1). Undefined when the session does not
 * exist, or (with `onlyIfFree`) another holder's lease has not expired.
 */
export async function takeLease(
	db: Queryable,
	sessionId: string,
	holder: string,
	ttlMs: number,
	onlyIfFree: boolean,
): Promise<LeaseRow | undefined> {
	const free = onlyIfFree
		? `AND (s.lease_holder IS NULL OR s.lease_holder = $2 OR s.lease_expires < ${DB_NOW_MS})`
		: "";
	const result = await db.query<LeaseRow>(
		`UPDATE sessions s SET lease_holder = $2, lease_token = s.lease_token + 1, lease_expires = ${DB_NOW_MS} + $3
		 WHERE s.id = $1 ${free}
		 RETURNING s.lease_token, s.last_event_id, s.event_id_reserved, s.message_count, s.current_run_id, s.status,
		 (SELECT max(b.last_id) FROM event_batches b WHERE b.session_id = s.id) AS batch_last`,
		[sessionId, holder, ttlMs],
	);
	return result.rows[0];
}

/** Extends the leases `(ids[i], tokens[i])` still held with those tokens; resolves to the ids renewed. */
export async function renewLeases(db: Queryable, ids: string[], tokens: number[], ttlMs: number): Promise<Set<string>> {
	if (ids.length === 0) return new Set();
	const result = await db.query<{ id: string }>(
		`UPDATE sessions s SET lease_expires = ${DB_NOW_MS} + $3
		 FROM unnest($1::text[], $2::bigint[]) AS t(id, token)
		 WHERE s.id = t.id AND s.lease_token = t.token RETURNING s.id`,
		[ids, tokens, ttlMs],
	);
	return new Set(result.rows.map((r) => r.id));
}

/**
 * Gives the leases up (the token stays, so a late write with it is still refused), and with them
 * the unused event id reservations: ids continue without a gap after a graceful stop.
 */
export async function releaseLeases(
	db: Queryable,
	leases: { id: string; token: number; last: number; written: number }[],
): Promise<void> {
	if (leases.length === 0) return;
	await db.query(
		`UPDATE sessions s SET lease_holder = NULL, lease_expires = 0,
		 event_id_reserved = t.last, last_event_id = greatest(s.last_event_id, t.written)
		 FROM unnest($1::text[], $2::bigint[], $3::bigint[], $4::bigint[]) AS t(id, token, last, written)
		 WHERE s.id = t.id AND s.lease_token = t.token`,
		[leases.map((l) => l.id), leases.map((l) => l.token), leases.map((l) => l.last), leases.map((l) => l.written)],
	);
}

/** Ids of running sessions whose lease expired (or that nobody holds), oldest expiry first. */
export async function expiredRuns(db: Queryable, limit: number): Promise<string[]> {
	const result = await db.query<{ id: string }>(
		`SELECT id FROM sessions WHERE status = 'running' AND (lease_holder IS NULL OR lease_expires < ${DB_NOW_MS})
		 ORDER BY lease_expires, id LIMIT $1`,
		[limit],
	);
	return result.rows.map((r) => r.id);
}
