/**
 * bench/store/contract-shapes.ts: what the shape of the store contract costs on the hot path, one
 * event append per SSE event. The contract's design (docs/store-contract.md): appends are
 * synchronous calls into an in-process working set and reach the database in batches. The
 * alternative: a fully asynchronous contract, where every append is awaited before the event may
 * be published (its id comes back from the database).
 *
 *   npx tsx bench/store/contract-shapes.ts [--quick]
 *   (PostgreSQL at BENCH_PG_URL, default postgres://postgres@127.0.0.1:5432/test; skipped when unreachable)
 *
 * 1. In-process stores, 100 sessions x 200 events interleaved one per event-loop turn (as the
 *    server sees them): each append a synchronous call, against each append awaited. This is the
 *    least a fully asynchronous contract adds (a promise and a microtask per event).
 * 2. PostgreSQL on loopback, 100 sessions x 200 events, the same interleaving: each event an
 *    awaited INSERT (a fully asynchronous contract: one round trip per event, a pool of 10
 *    connections), against events buffered in the process and written as one multi-row INSERT per
 *    session per 50 ms window (the working set). Also the round trip of one awaited INSERT.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import pg from "pg";
import { createMemoryStore } from "../../src/store/memory.js";
import { openSqliteStore } from "../../src/store/sqlite/index.js";
import type { NewSession, SessionStore } from "../../src/store/types.js";

const quick = process.argv.includes("--quick");
const SESSIONS = 100;
const EVENTS = quick ? 50 : 200;
const ROUNDS = quick ? 1 : 3;
const DATA = JSON.stringify({
	type: "message_update",
	assistantMessageEvent: { type: "text_delta", contentIndex: 0, delta: "word " },
}).padEnd(100, " ");
const PG_URL = process.env.BENCH_PG_URL ?? "postgres://postgres@127.0.0.1:5432/test";

interface Result {
	events: number;
	ms: number;
	cpuUs: number;
}

const turn = () => new Promise<void>((resolve) => setImmediate(resolve));

/** Runs `sessions` streams of `events` appends, one per session per event-loop turn. */
async function interleaved(sessions: number, events: number, append: (s: number) => unknown): Promise<Result> {
	const t0 = performance.now();
	const cpu0 = process.cpuUsage();
	await Promise.all(
		Array.from({ length: sessions }, async (_, s) => {
			for (let i = 0; i < events; i++) {
				const appended = append(s);
				if (appended instanceof Promise) await appended;
				await turn();
			}
		}),
	);
	const cpu = process.cpuUsage(cpu0);
	return {
		events: sessions * events,
		ms: performance.now() - t0,
		cpuUs: (cpu.user + cpu.system) / (sessions * events),
	};
}

function session(id: string): NewSession {
	return {
		id,
		ownerId: null,
		model: "faux/echo",
		systemPrompt: "",
		thinkingLevel: "off",
		tools: [],
		toolExecution: "parallel",
		steeringMode: "one-at-a-time",
		followUpMode: "one-at-a-time",
		metadata: {},
		createdAt: Date.now(),
	};
}

async function inProcess(kind: "memory" | "sqlite", awaited: boolean, dir: string, n: number): Promise<Result> {
	const store: SessionStore =
		kind === "memory"
			? createMemoryStore()
			: openSqliteStore({ path: join(dir, `shape-${n}.db`), checkIntegrity: false });
	for (let s = 0; s < SESSIONS; s++) await store.createSession(session(`s${s}`));
	const asyncAppend = async (s: number) => store.appendEvent(`s${s}`, "message_update", DATA);
	const r = await interleaved(SESSIONS, EVENTS, (s) =>
		awaited ? asyncAppend(s) : store.appendEvent(`s${s}`, "message_update", DATA),
	);
	await store.close();
	return r;
}

const rate = (r: Result) => Math.round((r.events / r.ms) * 1000);
const median = (rs: Result[]) => [...rs].sort((a, b) => rate(a) - rate(b))[Math.floor(rs.length / 2)] as Result;
const line = (name: string, r: Result, base?: Result) =>
	`  ${name.padEnd(52)} ${String(rate(r)).padStart(9)} events/s   ${r.cpuUs.toFixed(2).padStart(6)} µs CPU/event` +
	(base ? `   (${((rate(r) / rate(base)) * 100).toFixed(1)}% of the events/s of the first line)` : "");

async function postgres(): Promise<void> {
	const pool = new pg.Pool({ connectionString: PG_URL, max: 10, connectionTimeoutMillis: 2000 });
	try {
		await pool.query("SELECT 1");
	} catch (error) {
		console.log(`\nPostgreSQL: skipped (${PG_URL} unreachable: ${(error as Error).message})`);
		await pool.end();
		return;
	}
	const schema = `bench_shapes_${process.pid}`;
	await pool.query(`CREATE SCHEMA ${schema}`);
	await pool.query(
		`CREATE TABLE ${schema}.events (session_id text, id bigint, type text, data text, PRIMARY KEY (session_id, id))`,
	);
	try {
		const table = `${schema}.events`;
		const one = async (s: number, id: number) =>
			pool.query(`INSERT INTO ${table} VALUES ($1, $2, 'message_update', $3)`, [`s${s}`, id, DATA]);
		// Round trip of one awaited INSERT (autocommit, synchronous_commit on).
		const rtt: number[] = [];
		for (let i = 0; i < 200; i++) {
			const t = performance.now();
			await one(-1, i);
			rtt.push(performance.now() - t);
		}
		rtt.sort((a, b) => a - b);
		console.log(
			`\nPostgreSQL ${(await pool.query("SHOW server_version")).rows[0].server_version} on loopback, pool of 10: ` +
				`one awaited INSERT takes ${rtt[100]?.toFixed(2)} ms (median), ${rtt[189]?.toFixed(2)} ms (p95)`,
		);
		const perEvent: Result[] = [];
		const buffered: Result[] = [];
		for (let round = 0; round < ROUNDS; round++) {
			await pool.query(`TRUNCATE ${table}`);
			const next = new Array<number>(SESSIONS).fill(0);
			perEvent.push(await interleaved(SESSIONS, EVENTS, (s) => one(s, ++next[s])));
			await pool.query(`TRUNCATE ${table}`);
			next.fill(0);
			// The working set: ids assigned in the process, events buffered per session, one multi-row
			// INSERT per session per 50 ms window, all sessions' in one transaction.
			const buffers = new Map<number, { id: number; data: string }[]>();
			let writing: Promise<unknown> = Promise.resolve();
			const flush = async () => {
				const batches = [...buffers.entries()].filter(([, events]) => events.length > 0);
				buffers.clear();
				if (batches.length === 0) return;
				const client = await pool.connect();
				try {
					await client.query("BEGIN");
					for (const [s, events] of batches) {
						const values = events.map((_, i) => `($1, $${i * 2 + 2}, 'message_update', $${i * 2 + 3})`).join(", ");
						await client.query(`INSERT INTO ${table} VALUES ${values}`, [
							`s${s}`,
							...events.flatMap((e) => [e.id, e.data]),
						]);
					}
					await client.query("COMMIT");
				} finally {
					client.release();
				}
			};
			const timer = setInterval(() => {
				writing = writing.then(flush);
			}, 50);
			const r = await interleaved(SESSIONS, EVENTS, (s) => {
				const events = buffers.get(s) ?? [];
				if (events.length === 0) buffers.set(s, events);
				events.push({ id: ++next[s], data: DATA });
			});
			clearInterval(timer);
			const t = performance.now();
			await writing.then(flush);
			buffered.push({ ...r, ms: r.ms + (performance.now() - t) });
		}
		const count = Number((await pool.query(`SELECT count(*) FROM ${table}`)).rows[0].count);
		if (count !== SESSIONS * EVENTS) throw new Error(`expected ${SESSIONS * EVENTS} rows, found ${count}`);
		const a = median(perEvent);
		const b = median(buffered);
		console.log(`${SESSIONS} sessions x ${EVENTS} events, interleaved (median of ${ROUNDS}; CPU is this process's):`);
		console.log(line("fully async: each event an awaited INSERT", a));
		console.log(line("working set: buffered, one INSERT per session per 50 ms", b, a));
	} finally {
		await pool.query(`DROP SCHEMA ${schema} CASCADE`);
		await pool.end();
	}
}

async function main(): Promise<void> {
	console.log(`bench/store/contract-shapes: node ${process.version}, ${quick ? "quick" : `${ROUNDS} rounds, median`}`);
	const dir = mkdtempSync(join(tmpdir(), "wheelhouse-bench-shapes-"));
	let n = 0;
	try {
		for (const kind of ["memory", "sqlite"] as const) {
			const sync: Result[] = [];
			const awaited: Result[] = [];
			await inProcess(kind, false, dir, n++); // warm-up
			for (let round = 0; round < ROUNDS; round++) {
				sync.push(await inProcess(kind, false, dir, n++));
				awaited.push(await inProcess(kind, true, dir, n++));
			}
			console.log(
				`\n${kind} store, ${SESSIONS} sessions x ${EVENTS} appends, interleaved (median of ${ROUNDS}; the loop's own turns included):`,
			);
			console.log(line("synchronous append (the contract)", median(sync)));
			console.log(line("each append awaited (a fully async contract)", median(awaited), median(sync)));
		}
		await postgres();
	} finally {
		rmSync(dir, { recursive: true, force: true });
	}
}

await main();
