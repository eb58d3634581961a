/**
 * The filtered session list at 100,000 sessions of one owner: `listSessions` with a filter, 50 per
 * page, on SQLite and (when one answers at TEST_DATABASE_URL / 127.0.0.1:5432) PostgreSQL.
 *
 *   npx tsx bench/store/session-search.ts [--sessions=100000] [--tenant=t1]
 *
 * The sessions are made by the store (1,000 of them, so every column is as the store writes it),
 * then copied in SQL with new ids, creation times and metadata (`team`: one of 10 values, `n`:
 * unique); one in 20 is `running`. Queries, 200 of each, timed one by one:
 * - common: `metadata.team` (1 in 10) and `status: idle`, first page and a page deep in (by cursor);
 * - selective: `metadata.n` (1 in 100,000);
 * - status only: `status: running` (1 in 20).
 * Reported: p50 and p95 in ms per query.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import Database from "better-sqlite3";
import pg from "pg";
import { PostgresSessionStore } from "../../src/store/postgres/index.js";
import { openSqliteStore } from "../../src/store/sqlite/index.js";
import type { NewSession, SessionFilter, SessionStore } from "../../src/store/types.js";

const TOTAL = Number(process.argv.find((a) => a.startsWith("--sessions="))?.split("=")[1] ?? 100_000);
/** `--tenant=<t>`: list as a caller of that tenant (its shared sessions qualify too), not as a tenant-less key. */
const TENANT = process.argv.find((a) => a.startsWith("--tenant="))?.split("=")[1];
const CALLER = { ownerId: "owner", ...(TENANT ? { tenant: TENANT } : {}) };
const SEED = 1000;
const COPIES = Math.ceil(TOTAL / SEED) - 1;
const PG_URL = process.env.TEST_DATABASE_URL ?? "postgres://postgres@127.0.0.1:5432/test";

function session(i: number): NewSession {
	return {
		id: `s${String(i).padStart(7, "0")}`,
		ownerId: "owner",
		model: "faux/echo",
		systemPrompt: "",
		thinkingLevel: "off",
		tools: [],
		toolExecution: "parallel",
		steeringMode: "one-at-a-time",
		followUpMode: "one-at-a-time",
		metadata: { team: `t${i % 10}`, n: String(i) },
		createdAt: 1_000_000 + i * 1000,
	};
}

function quantile(sorted: number[], q: number): number {
	return sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))] ?? 0;
}

async function timeQueries(store: SessionStore, name: string): Promise<void> {
	const cases: [string, () => SessionFilter][] = [
		[
			"common (team + idle), page 1",
			() => ({ metadata: { team: `t${Math.floor(Math.random() * 10)}` }, status: "idle" }),
		],
		["selective (n)", () => ({ metadata: { n: String(Math.floor(Math.random() * TOTAL)) } })],
		["status running", () => ({ status: "running" })],
	];
	for (const [label, filter] of cases) {
		const ms: number[] = [];
		for (let i = 0; i < 200; i++) {
			const t = performance.now();
			const page = await store.listSessions({ ...CALLER, filter: filter(), limit: 50 });
			ms.push(performance.now() - t);
			if (label.startsWith("common") && page.sessions.length !== 50) throw new Error("expected a full page");
		}
		ms.sort((a, b) => a - b);
		console.log(`${name}\t${label}\tp50 ${quantile(ms, 0.5).toFixed(2)} ms\tp95 ${quantile(ms, 0.95).toFixed(2)} ms`);
	}
	// Deep pages: follow the cursor 40 pages into a common filter, timing each page.
	const deep: number[] = [];
	let cursor: string | undefined;
	for (let i = 0; i < 40; i++) {
		const t = performance.now();
		const page = await store.listSessions({
			...CALLER,
			filter: { metadata: { team: "t3" }, status: "idle" },
			limit: 50,
			...(cursor ? { cursor } : {}),
		});
		deep.push(performance.now() - t);
		cursor = page.nextCursor;
	}
	deep.sort((a, b) => a - b);
	console.log(
		`${name}\tcommon, pages 1-40 by cursor\tp50 ${quantile(deep, 0.5).toFixed(2)} ms\tp95 ${quantile(deep, 0.95).toFixed(2)} ms`,
	);
}

async function seed(store: SessionStore): Promise<void> {
	for (let i = 0; i < SEED; i++) await store.createSession(session(i));
}

async function sqlite(): Promise<void> {
	const dir = mkdtempSync(join(tmpdir(), "wh-bench-search-"));
	const path = join(dir, "db.sqlite");
	try {
		const first = openSqliteStore({ path });
		await seed(first);
		await first.close();
		const db = new Database(path);
		db.exec(`
			WITH RECURSIVE g(k) AS (SELECT 1 UNION ALL SELECT k + 1 FROM g WHERE k < ${COPIES})
			INSERT INTO sessions (id, owner_id, config, created_at, updated_at, last_active_at, status, interrupted_at,
			  current_run_id, usage, message_count, last_event_id)
			SELECT 's' || printf('%07d', k * ${SEED} + CAST(substr(id, 2) AS INTEGER)), owner_id,
			  json_set(config, '$.metadata.n', CAST(k * ${SEED} + CAST(substr(id, 2) AS INTEGER) AS TEXT)),
			  created_at + k * ${SEED} * 1000, updated_at, last_active_at,
			  CASE WHEN (k * ${SEED} + CAST(substr(id, 2) AS INTEGER)) % 20 = 0 THEN 'running' ELSE 'idle' END,
			  interrupted_at, current_run_id, usage, message_count, last_event_id
			FROM sessions, g;
			ANALYZE;
		`);
		db.close();
		const store = openSqliteStore({ path });
		console.log(
			`sqlite: ${(await store.listSessions({ ownerId: "owner", limit: 1 })).sessions.length && TOTAL} sessions`,
		);
		await timeQueries(store, "sqlite");
		// The running sessions were written behind the store's back: leave them as they are (no recovery run).
		await store.close();
	} finally {
		rmSync(dir, { recursive: true, force: true });
	}
}

async function postgres(): Promise<void> {
	const schema = `bench_search_${process.pid}`;
	const admin = new pg.Client({ connectionString: PG_URL });
	try {
		await admin.connect();
	} catch {
		console.log(`postgres: skipped (nothing at ${PG_URL})`);
		return;
	}
	try {
		const first = new PostgresSessionStore({ url: PG_URL, schema });
		await first.ready;
		await seed(first);
		await first.close();
		const columns = (
			await admin.query<{ column_name: string }>(
				"SELECT column_name FROM information_schema.columns WHERE table_schema = $1 AND table_name = 'sessions' ORDER BY ordinal_position",
				[schema],
			)
		).rows.map((r) => r.column_name);
		const n = `(k * ${SEED} + substr(id, 2)::int)`;
		const replaced: Record<string, string> = {
			id: `'s' || lpad(${n}::text, 7, '0')`,
			config: `jsonb_set(config::jsonb, '{metadata,n}', to_jsonb(${n}::text))::text`,
			created_at: `created_at + k * ${SEED} * 1000`,
			status: `CASE WHEN ${n} % 20 = 0 THEN 'running' ELSE 'idle' END`,
		};
		await admin.query(
			`INSERT INTO ${schema}.sessions (${columns.join(", ")})
			 SELECT ${columns.map((c) => replaced[c] ?? c).join(", ")} FROM ${schema}.sessions, generate_series(1, ${COPIES}) AS k`,
		);
		await admin.query(`ANALYZE ${schema}.sessions`);
		const store = new PostgresSessionStore({ url: PG_URL, schema });
		await store.ready;
		console.log(`postgres: ${TOTAL} sessions`);
		await timeQueries(store, "postgres");
		await store.close();
	} finally {
		await admin.query(`DROP SCHEMA IF EXISTS ${schema} CASCADE`);
		await admin.end();
	}
}

await sqlite();
await postgres();
