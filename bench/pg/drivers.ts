/**
 * bench/pg drivers: node-postgres (`pg`) against porsager's `postgres` on the PostgreSQL store's
 * own statements, to choose the store's driver:
 *
 * - `commit`: one group commit as the store makes it — BEGIN, a multi-row `INSERT ... SELECT FROM
 *   unnest(...)` of 100 sessions' event batches, a multi-row activity `UPDATE`, COMMIT;
 * - `update`: a single-row `UPDATE sessions ... WHERE id = $1` (autocommit);
 * - `read`: the store's session read (`SELECT s.*, (SELECT max(last_id) ...) FROM sessions s WHERE id = $1`),
 *   one at a time and 10 in flight on a pool of 10.
 *
 * Each figure is ops/s and client CPU µs per op (this process), the median of interleaved repeats
 * (the drivers alternate, so load drift on a shared machine hits both alike). `pg` runs as the
 * store uses it (unnamed statements) and with named prepared statements; `postgres` prepares by
 * default.
 *
 *   npx tsx bench/pg/drivers.ts        (BENCH_PG_URL, default postgres://postgres@127.0.0.1:5432/test)
 */
import { cpus, loadavg } from "node:os";
import pg from "pg";
import postgres from "postgres";

const URL = process.env.BENCH_PG_URL ?? "postgres://postgres@127.0.0.1:5432/test";
const SCHEMA = `bench_drivers_${process.pid}`;
const REPEATS = Number(process.env.BENCH_PG_REPEATS ?? 7);
const SESSIONS = 100;
const OPS = { commit: 200, update: 2000, read: 2000, readParallel: 4000 };

type Op = "commit" | "update" | "read" | "readParallel";

interface Driver {
	name: string;
	/** Runs `n` ops of `op`; resolves when all are done. */
	run(op: Op, n: number, round: number): Promise<void>;
	end(): Promise<void>;
}

const ids = Array.from({ length: SESSIONS }, (_, i) => `s${i}`);
const frame = (i: number) => `${1_700_000_000_000 + i},13,40:message_update{"type":"text_delta","delta":"word"}`;
const batch = Array.from({ length: 20 }, (_, i) => frame(i)).join("");

const INSERT = `INSERT INTO ${SCHEMA}.event_batches (session_id, last_id, first_id, data)
 SELECT * FROM unnest($1::text[], $2::bigint[], $3::bigint[], $4::text[])`;
const TOUCH = `UPDATE ${SCHEMA}.sessions s SET last_active_at = greatest(s.last_active_at, t.at)
 FROM unnest($1::text[], $2::bigint[]) AS t(id, at) WHERE s.id = t.id`;
const UPDATE = `UPDATE ${SCHEMA}.sessions SET last_active_at = greatest(last_active_at, $1) WHERE id = $2`;
const READ = `SELECT s.*, (SELECT max(b.last_id) FROM ${SCHEMA}.event_batches b WHERE b.session_id = s.id) AS batch_last
 FROM ${SCHEMA}.sessions s WHERE s.id = $1`;

/** Batch arguments of commit `k` (last ids grow so rows never collide). */
function commitArgs(round: number, k: number): unknown[] {
	const base = (round * 100_000 + k) * 20;
	return [ids, ids.map(() => base + 20), ids.map(() => base + 1), ids.map(() => batch)];
}

function pgDriver(named: boolean): Driver {
	const pool = new pg.Pool({ connectionString: URL, max: 10 });
	const q = (name: string, text: string, values: unknown[]) => (named ? { name, text, values } : { text, values });
	return {
		name: named ? "pg (named statements)" : "pg (as the store uses it)",
		async run(op, n, round) {
			if (op === "commit") {
				const client = await pool.connect();
				try {
					for (let k = 0; k < n; k++) {
						await client.query("BEGIN");
						await client.query(q("ins", INSERT, commitArgs(round * 2 + (named ? 1 : 0), k)));
						await client.query(q("touch", TOUCH, [ids, ids.map(() => k)]));
						await client.query("COMMIT");
					}
				} finally {
					client.release();
				}
			} else if (op === "update") {
				for (let k = 0; k < n; k++) await pool.query(q("upd", UPDATE, [k, ids[k % SESSIONS]]));
			} else if (op === "read") {
				for (let k = 0; k < n; k++) await pool.query(q("read", READ, [ids[k % SESSIONS]]));
			} else {
				let next = 0;
				const worker = async () => {
					while (next < n) await pool.query(q("read", READ, [ids[next++ % SESSIONS]]));
				};
				await Promise.all(Array.from({ length: 10 }, worker));
			}
		},
		end: () => pool.end(),
	};
}

function porsagerDriver(): Driver {
	const sql = postgres(URL, { max: 10, onnotice: () => undefined });
	return {
		name: "postgres (porsager)",
		async run(op, n, round) {
			if (op === "commit") {
				for (let k = 0; k < n; k++) {
					await sql.begin(async (tx) => {
						await tx.unsafe(INSERT, commitArgs(round * 2 + 1_000, k) as never[], { prepare: true });
						await tx.unsafe(TOUCH, [ids, ids.map(() => k)] as never[], { prepare: true });
					});
				}
			} else if (op === "update") {
				for (let k = 0; k < n; k++) await sql.unsafe(UPDATE, [k, ids[k % SESSIONS]] as never[], { prepare: true });
			} else if (op === "read") {
				for (let k = 0; k < n; k++) await sql.unsafe(READ, [ids[k % SESSIONS]] as never[], { prepare: true });
			} else {
				let next = 0;
				const worker = async () => {
					while (next < n) await sql.unsafe(READ, [ids[next++ % SESSIONS]] as never[], { prepare: true });
				};
				await Promise.all(Array.from({ length: 10 }, worker));
			}
		},
		end: () => sql.end(),
	};
}

async function setUp(): Promise<void> {
	const client = new pg.Client({ connectionString: URL });
	await client.connect();
	await client.query(`DROP SCHEMA IF EXISTS ${SCHEMA} CASCADE`);
	await client.query(`CREATE SCHEMA ${SCHEMA}`);
	await client.query(`CREATE TABLE ${SCHEMA}.sessions (id TEXT PRIMARY KEY, owner_id TEXT, config TEXT NOT NULL,
		last_active_at BIGINT NOT NULL, usage TEXT NOT NULL, message_count INT NOT NULL DEFAULT 0)`);
	await client.query(`CREATE TABLE ${SCHEMA}.event_batches (session_id TEXT NOT NULL, last_id BIGINT NOT NULL,
		first_id BIGINT NOT NULL, data TEXT NOT NULL, PRIMARY KEY (session_id, last_id))`);
	await client.query(
		`INSERT INTO ${SCHEMA}.sessions (id, config, last_active_at, usage) SELECT id, '{"model":"faux/echo"}', 0, '{}' FROM unnest($1::text[]) AS t(id)`,
		[ids],
	);
	await client.end();
}

async function tearDown(): Promise<void> {
	const client = new pg.Client({ connectionString: URL });
	await client.connect();
	await client.query(`DROP SCHEMA IF EXISTS ${SCHEMA} CASCADE`);
	await client.end();
}

const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)] as number;

async function main(): Promise<void> {
	await setUp();
	const drivers = [pgDriver(false), pgDriver(true), porsagerDriver()];
	const results = new Map<string, { opsPerSec: number[]; cpuUs: number[] }>();
	try {
		for (const d of drivers) for (const op of Object.keys(OPS) as Op[]) await d.run(op, 50, 999); // warm-up
		for (let round = 0; round < REPEATS; round++) {
			const order = round % 2 === 0 ? drivers : [...drivers].reverse();
			for (const op of Object.keys(OPS) as Op[]) {
				for (const d of order) {
					const n = OPS[op];
					const cpu0 = process.cpuUsage();
					const t0 = performance.now();
					await d.run(op, n, round);
					const wall = performance.now() - t0;
					const cpu = process.cpuUsage(cpu0);
					const key = `${op}\t${d.name}`;
					const r = results.get(key) ?? { opsPerSec: [], cpuUs: [] };
					r.opsPerSec.push((n / wall) * 1000);
					r.cpuUs.push((cpu.user + cpu.system) / n);
					results.set(key, r);
				}
			}
		}
	} finally {
		for (const d of drivers) await d.end();
		await tearDown();
	}
	console.log(
		`bench/pg drivers — node ${process.version}, ${cpus().length} cores, PostgreSQL on loopback, ${REPEATS} interleaved repeats (median)\n`,
	);
	console.log("| statement | driver | ops/s | client CPU µs/op | ops/s vs pg as used |");
	console.log("|---|---|---|---|---|");
	for (const op of Object.keys(OPS) as Op[]) {
		const baseline = median(results.get(`${op}\t${drivers[0]?.name}`)?.opsPerSec ?? [1]);
		for (const d of drivers) {
			const r = results.get(`${op}\t${d.name}`);
			if (!r) continue;
			const ops = median(r.opsPerSec);
			console.log(
				`| ${op} | ${d.name} | ${Math.round(ops).toLocaleString("en")} | ${median(r.cpuUs).toFixed(1)} | ${((ops / baseline) * 100).toFixed(1)}% |`,
			);
		}
	}
	console.log(
		`\nload average at the end: ${loadavg()
			.map((l) => l.toFixed(2))
			.join(", ")}`,
	);
}

await main();
