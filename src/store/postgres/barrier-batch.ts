/**
 * The PostgreSQL store's barrier writes of many sessions as multi-row statements: the run starts,
 * transcript appends and run ends that one commit carries go to the database as one statement per
 * kind (a few round trips per commit) instead of one to three statements per write.
 *
 * The commit (`commit.ts`) hands the writes over in call order; they are cut into *waves* in which
 * each session has at most one write, so a session's writes still run in call order (its run start
 * before its messages, its messages before its run end), and writes of different sessions, which
 * touch different rows, run side by side. Within a wave the run starts go first, then every
 * message append (a run start's prompt included), then the run ends.
 */
import { addUsage } from "../shared.js";
import type { EndOp, MessagesOp, RunOp, StartOp } from "../sql/run-writes.js";
import type { UsageTotals } from "../types.js";
import { usageEntriesOf } from "../usage.js";
import { named, type Queryable } from "./connection.js";

/**
 * Runs one wave (at most one op per session) in the caller's transaction; returns the runs it
 * ended. Throws when a session of a message append no longer exists, so the caller can run the
 * writes one by one and lose only the failing one.
 */
export async function runWave(tx: Queryable, ops: readonly RunOp[]): Promise<Set<string>> {
	const starts = ops.filter((o) => o.kind === "start");
	const appends: (MessagesOp | StartOp)[] = [];
	for (const op of ops) if (op.kind !== "end" && op.rows.length > 0) appends.push(op);
	const ends = ops.filter((o) => o.kind === "end");
	if (starts.length > 0) await startRuns(tx, starts);
	if (appends.length > 0) await appendMessages(tx, appends);
	return ends.length > 0 ? endRuns(tx, ends) : new Set();
}

async function startRuns(tx: Queryable, starts: StartOp[]): Promise<void> {
	// The runs' rows and their claims in one statement.
	await tx.query(
		named(
			`WITH t AS (SELECT * FROM unnest($1::text[], $2::text[], $3::bigint[], $4::text[]) AS t(run_id, session_id, started_at, usage)),
			 r AS (INSERT INTO runs (id, session_id, status, started_at, usage)
			 SELECT run_id, session_id, 'running', started_at, usage FROM t)
			 UPDATE sessions s SET status = 'running', current_run_id = t.run_id, interrupted_at = NULL,
			 last_active_at = greatest(s.last_active_at, t.started_at) FROM t WHERE s.id = t.session_id`,
			[
				starts.map((s) => s.runId),
				starts.map((s) => s.sessionId),
				starts.map((s) => s.startedAt),
				starts.map((s) => s.usageJson),
			],
		),
	);
}

/**
 * Appends each session's rows after its count on disk and adds their usage to the owners' usage
 * rows: one statement for every session of the wave.
 */
async function appendMessages(tx: Queryable, appends: (MessagesOp | StartOp)[]): Promise<void> {
	const messageSession: string[] = [];
	const messageIndex: number[] = [];
	const messageData: string[] = [];
	const usage = {
		session: [] as string[],
		day: [] as string[],
		provider: [] as string[],
		model: [] as string[],
		input: [] as number[],
		output: [] as number[],
		cacheRead: [] as number[],
		cacheWrite: [] as number[],
		totalTokens: [] as number[],
		cost: [] as number[],
		turns: [] as number[],
	};
	for (const a of appends) {
		a.rows.forEach((data, i) => {
			messageSession.push(a.sessionId);
			messageIndex.push(i + 1);
			messageData.push(data);
		});
		for (const e of usageEntriesOf(a.messages)) {
			usage.session.push(a.sessionId);
			usage.day.push(e.day);
			usage.provider.push(e.provider);
			usage.model.push(e.model);
			usage.input.push(e.usage.input);
			usage.output.push(e.usage.output);
			usage.cacheRead.push(e.usage.cacheRead);
			usage.cacheWrite.push(e.usage.cacheWrite);
			usage.totalTokens.push(e.usage.totalTokens);
			usage.cost.push(e.usage.cost.total);
			usage.turns.push(e.turns);
		}
	}
	const withUsage = usage.session.length > 0;
	const acc = withUsage
		? `, acc AS (
			INSERT INTO usage_daily AS u (owner_id, tenant, day, provider, model, input, output, cache_read, cache_write,
			 total_tokens, cost_usd, turns)
			SELECT c.owner, max(c.tenant), e.day, e.provider, e.model, sum(e.input), sum(e.output), sum(e.cache_read), sum(e.cache_write),
			 sum(e.total_tokens), sum(e.cost_usd), sum(e.turns)
			FROM c JOIN unnest($7::text[], $8::text[], $9::text[], $10::text[], $11::bigint[], $12::bigint[], $13::bigint[],
			 $14::bigint[], $15::bigint[], $16::float8[], $17::bigint[])
			 AS e(session_id, day, provider, model, input, output, cache_read, cache_write, total_tokens, cost_usd, turns)
			 ON e.session_id = c.id
			GROUP BY c.owner, e.day, e.provider, e.model
			ON CONFLICT (owner_id, day, provider, model) DO UPDATE SET tenant = excluded.tenant, input = u.input + excluded.input,
			 output = u.output + excluded.output, cache_read = u.cache_read + excluded.cache_read,
			 cache_write = u.cache_write + excluded.cache_write, total_tokens = u.total_tokens + excluded.total_tokens,
			 cost_usd = u.cost_usd + excluded.cost_usd, turns = u.turns + excluded.turns)`
		: "";
	const sql = `WITH t AS (SELECT * FROM unnest($1::text[], $2::text[], $3::int[]) AS t(session_id, run_id, n)),
		c AS (
			UPDATE sessions s SET message_count = s.message_count + t.n FROM t WHERE s.id = t.session_id
			RETURNING s.id, t.run_id, s.message_count - t.n AS first, coalesce(s.owner_id, '') AS owner,
			 coalesce(s.tenant, '') AS tenant),
		m AS (
			INSERT INTO messages (session_id, seq, run_id, data)
			SELECT c.id, c.first + d.k - 1, c.run_id, d.data
			FROM c JOIN unnest($4::text[], $5::int[], $6::text[]) AS d(session_id, k, data) ON d.session_id = c.id)${acc}
		SELECT count(*)::int AS found FROM c`;
	const params: unknown[] = [
		appends.map((a) => a.sessionId),
		appends.map((a) => a.runId),
		appends.map((a) => a.rows.length),
		messageSession,
		messageIndex,
		messageData,
	];
	if (withUsage) {
		params.push(
			usage.session,
			usage.day,
			usage.provider,
			usage.model,
			usage.input,
			usage.output,
			usage.cacheRead,
			usage.cacheWrite,
			usage.totalTokens,
			usage.cost,
			usage.turns,
		);
	}
	const found = (await tx.query<{ found: number }>(named(sql, params))).rows[0]?.found ?? 0;
	if (found !== appends.length) throw new Error("a session of these messages no longer exists");
}

/**
 * Ends the runs, then adds each run's usage to its session and frees the session if it is the
 * current run. Returns the runs ended (their session found).
 */
async function endRuns(tx: Queryable, ends: EndOp[]): Promise<Set<string>> {
	const updated = await tx.query<{ id: string }>(
		named(
			`UPDATE runs r SET status = t.status, ended_at = t.ended_at, usage = t.usage, error_message = t.error_message
			 FROM unnest($1::text[], $2::text[], $3::text[], $4::bigint[], $5::text[], $6::text[])
			 AS t(run_id, session_id, status, ended_at, usage, error_message)
			 WHERE r.id = t.run_id AND r.session_id = t.session_id RETURNING r.id`,
			[
				ends.map((e) => e.runId),
				ends.map((e) => e.sessionId),
				ends.map((e) => e.status),
				ends.map((e) => e.endedAt),
				ends.map((e) => e.usageJson),
				ends.map((e) => e.errorMessage),
			],
		),
	);
	const ended = new Set(updated.rows.map((r) => r.id));
	const done = ends.filter((e) => ended.has(e.runId));
	if (done.length === 0) return new Set();
	const rows = (
		await tx.query<{ id: string; usage: string }>(
			named("SELECT id, usage FROM sessions WHERE id = ANY($1::text[]) ORDER BY id FOR UPDATE", [
				done.map((e) => e.sessionId),
			]),
		)
	).rows;
	const usageOf = new Map(rows.map((r) => [r.id, r.usage]));
	const found = done.filter((e) => usageOf.has(e.sessionId));
	if (found.length === 0) return new Set();
	const totals = found.map((e) =>
		JSON.stringify(
			addUsage(JSON.parse(usageOf.get(e.sessionId) as string) as UsageTotals, JSON.parse(e.usageJson) as UsageTotals),
		),
	);
	await tx.query(
		named(
			`UPDATE sessions s SET usage = t.usage, last_active_at = greatest(s.last_active_at, t.ended_at),
			 status = CASE WHEN s.current_run_id = t.run_id THEN 'idle' ELSE s.status END,
			 interrupted_at = CASE WHEN s.current_run_id = t.run_id THEN NULL ELSE s.interrupted_at END,
			 current_run_id = CASE WHEN s.current_run_id = t.run_id THEN NULL ELSE s.current_run_id END
			 FROM unnest($1::text[], $2::text[], $3::bigint[], $4::text[]) AS t(id, usage, ended_at, run_id)
			 WHERE s.id = t.id`,
			[found.map((e) => e.sessionId), totals, found.map((e) => e.endedAt), found.map((e) => e.runId)],
		),
	);
	return new Set(found.map((e) => e.runId));
}
