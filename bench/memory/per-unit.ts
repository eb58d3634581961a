/**
 * bench/memory --per-unit: the resident memory (RSS) the Wheelhouse server process spends per unit of
 * work, measured from the outside with no forced collection: RSS after the work, settled, minus RSS
 * before it, settled.
 *
 *   npx tsx bench/memory/index.ts --per-unit
 *     BENCH_MEMORY_SESSIONS=5000  BENCH_MEMORY_SUBSCRIBERS=2000  BENCH_MEMORY_STREAM_COUNT=100
 *     BENCH_MEMORY_STREAM_TOKENS=2000  BENCH_MEMORY_PER_UNIT_REPEATS=1
 *     BENCH_MEMORY_BASELINE=/path/to/another/checkout   measures that checkout's built server
 *       (dist/main.js, with its own node_modules) in the same run, each job right after ours
 *
 * Each job runs against a fresh `node dist/main.js` with the default configuration (SQLite store in a
 * temporary folder, metrics on), the faux/echo model at 0 ms per token, and the limits raised just
 * enough to let the job through:
 *   - sessions held: `BENCH_MEMORY_SESSIONS` sessions created over HTTP, 50 requests at a time, and kept
 *     (well inside the session TTL), after 50 not counted; the figure is KB per session.
 *   - idle subscribers: `BENCH_MEMORY_SUBSCRIBERS` open `GET /v1/sessions/:id/events` streams spread over
 *     sessions of 100 streams each (the default per-session cap), nothing running; KB per subscriber.
 *   - streams: `BENCH_MEMORY_STREAM_COUNT` sessions each streaming a `BENCH_MEMORY_STREAM_TOKENS`-word
 *     answer at once; the peak delta (highest RSS while they stream, sampled every 25 ms) and the
 *     settled delta, in MB.
 * "Settled": RSS read every 500 ms until three readings in a row lie within 1% of each other (at most
 * 60 s; a figure that never settled is marked).
 */
import { type ChildProcess, spawn } from "node:child_process";
import { once } from "node:events";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { type ClientRequest, request } from "node:http";
import { cpus, loadavg, tmpdir } from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { freePort, median, readStream, rssMb } from "./helpers.js";

const here = path.dirname(fileURLToPath(import.meta.url));
const repoRoot = path.resolve(here, "../..");
const SESSIONS = Number(process.env.BENCH_MEMORY_SESSIONS ?? 5000);
const SUBSCRIBERS = Number(process.env.BENCH_MEMORY_SUBSCRIBERS ?? 2000);
const STREAM_COUNT = Number(process.env.BENCH_MEMORY_STREAM_COUNT ?? 100);
const STREAM_TOKENS = Number(process.env.BENCH_MEMORY_STREAM_TOKENS ?? 2000);
const REPEATS = Number(process.env.BENCH_MEMORY_PER_UNIT_REPEATS ?? 1);
/** Subscribers per session: the default per-session stream cap. */
const PER_SESSION = 100;
const CREATE_CONCURRENCY = 50;
/** Sessions created before the sessions-held job's "before" reading, and not counted. */
const WARMUP_SESSIONS = 50;
/** The goal: no figure more than 10% above the baseline's. */
const GOAL_RATIO = 1.1;

/** A settled RSS reading; `settled` false when the readings never came within 1% in time. */
interface Settled {
	mb: number;
	settled: boolean;
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** Reads RSS every 500 ms until three readings in a row lie within 1% of each other. */
async function settledRss(pid: number): Promise<Settled> {
	const readings: number[] = [];
	const deadline = Date.now() + 60_000;
	for (;;) {
		readings.push(rssMb(pid));
		const last = readings.slice(-3);
		if (last.length === 3 && (Math.max(...last) - Math.min(...last)) / Math.max(...last) <= 0.01) {
			return { mb: last[2]!, settled: true };
		}
		if (Date.now() > deadline) return { mb: readings.at(-1)!, settled: false };
		await sleep(500);
	}
}

/** A running server process of one checkout. */
interface Server {
	url: string;
	pid: number;
	stop: () => Promise<void>;
}

/**
 * The limits raised so the jobs fit, those the checkout at `root` knows: an older server refuses to start
 * on a variable it does not know.
 */
function raisedLimits(root: string): Record<string, string> {
	const wanted: Record<string, string> = {
		WHEELHOUSE_MAX_SESSIONS: String(Math.max(10_000, SESSIONS * 2)),
		WHEELHOUSE_MAX_SESSIONS_PER_KEY: String(Math.max(10_000, SESSIONS * 2)),
		WHEELHOUSE_MAX_STREAMS_PER_KEY: String(Math.max(1000, SUBSCRIBERS * 2)),
	};
	const known = readFileSync(path.join(root, "src/server/config/config-vars.ts"), "utf8");
	return Object.fromEntries(Object.entries(wanted).filter(([name]) => known.includes(`"${name}"`)));
}

async function startServer(root: string): Promise<Server> {
	const port = await freePort();
	const dir = mkdtempSync(path.join(tmpdir(), "wheelhouse-bench-memory-unit-"));
	const child: ChildProcess = spawn(process.execPath, [path.join(root, "dist/main.js")], {
		cwd: root,
		env: {
			PATH: process.env.PATH ?? "",
			HOME: process.env.HOME ?? "",
			PORT: String(port),
			HOST: "127.0.0.1",
			WHEELHOUSE_DB: path.join(dir, "wheelhouse.db"),
			WHEELHOUSE_FAUX_DELAY_MS: "0",
			...raisedLimits(root),
		},
		stdio: ["ignore", "ignore", "inherit"],
	});
	const url = `http://127.0.0.1:${port}`;
	const stop = async () => {
		if (child.exitCode === null) {
			child.kill("SIGTERM");
			await once(child, "exit");
		}
		rmSync(dir, { recursive: true, force: true });
	};
	const deadline = Date.now() + 60_000;
	for (;;) {
		if (child.exitCode !== null) throw new Error(`server exited with ${child.exitCode} before answering`);
		try {
			const res = await fetch(`${url}/healthz`);
			await res.arrayBuffer();
			if (res.ok) break;
		} catch {
			// not listening yet
		}
		if (Date.now() > deadline) {
			await stop();
			throw new Error(`${url}/healthz did not answer within 60 s`);
		}
		await sleep(100);
	}
	return { url, pid: child.pid!, stop };
}

/**
 * Creates one session. A 5xx is retried (up to 3 times) and counted in `retried`, so that a transient
 * server error costs the job neither its run nor its honesty: the count is printed with the figure.
 */
async function createSession(url: string, retried: { count: number }): Promise<string> {
	for (let attempt = 0; ; attempt++) {
		const res = await fetch(`${url}/v1/sessions`, {
			method: "POST",
			headers: { "content-type": "application/json" },
			body: JSON.stringify({ model: "faux/echo" }),
		});
		const json = (await res.json()) as { id?: string };
		if (res.status === 201 && json.id) return json.id;
		if (res.status < 500 || attempt === 3) {
			throw new Error(`POST /v1/sessions: ${res.status} ${JSON.stringify(json)}`);
		}
		retried.count++;
	}
}

/** Creates `n` sessions, `CREATE_CONCURRENCY` requests at a time. */
async function createSessions(url: string, n: number, retried: { count: number }): Promise<string[]> {
	const ids: string[] = [];
	let next = 0;
	await Promise.all(
		Array.from({ length: Math.min(CREATE_CONCURRENCY, n) }, async () => {
			while (next < n) {
				next++;
				ids.push(await createSession(url, retried));
			}
		}),
	);
	return ids;
}

/** Opens one SSE stream and resolves once its headers say 200; the body is read and dropped. */
function openSubscriber(url: string): Promise<ClientRequest> {
	return new Promise((resolve, reject) => {
		const req = request(url, { headers: { accept: "text/event-stream" }, agent: false }, (res) => {
			if (res.statusCode !== 200) {
				reject(new Error(`${url}: HTTP ${res.statusCode}`));
				res.resume();
				return;
			}
			res.on("error", () => {});
			res.resume();
			resolve(req);
		});
		req.on("error", reject);
		req.end();
	});
}

/** One job's figures: before and after (settled), the per-unit delta, and the peak for streams. */
interface JobResult {
	before: Settled;
	after: Settled;
	/** KB per unit (sessions, subscribers) or MB for the whole job (streams). */
	perUnit: number;
	peakDeltaMb?: number;
	note: string;
}

async function sessionsHeld(server: Server): Promise<JobResult> {
	// A few first, not counted: the code paths' first use (lazy modules, compiled code, statement caches).
	const retried = { count: 0 };
	await createSessions(server.url, WARMUP_SESSIONS, retried);
	const before = await settledRss(server.pid);
	const ids = await createSessions(server.url, SESSIONS, retried);
	const after = await settledRss(server.pid);
	// Still held: the last one answers without a reload from the store.
	const res = await fetch(`${server.url}/v1/sessions/${ids[0]}`);
	await res.arrayBuffer();
	if (!res.ok) throw new Error(`GET a created session: ${res.status}`);
	return {
		before,
		after,
		perUnit: ((after.mb - before.mb) * 1024) / SESSIONS,
		note: `${ids.length} sessions, ${retried.count} POSTs retried after a 5xx`,
	};
}

async function idleSubscribers(server: Server): Promise<JobResult> {
	const ids = await createSessions(server.url, Math.ceil(SUBSCRIBERS / PER_SESSION), { count: 0 });
	const before = await settledRss(server.pid);
	const open: ClientRequest[] = [];
	try {
		for (let i = 0; i < SUBSCRIBERS; i += CREATE_CONCURRENCY) {
			const batch = Array.from({ length: Math.min(CREATE_CONCURRENCY, SUBSCRIBERS - i) }, (_, j) =>
				openSubscriber(`${server.url}/v1/sessions/${ids[Math.floor((i + j) / PER_SESSION)]}/events`),
			);
			open.push(...(await Promise.all(batch)));
		}
		const after = await settledRss(server.pid);
		const still = open.filter((req) => !req.destroyed && !req.socket?.destroyed).length;
		return {
			before,
			after,
			perUnit: ((after.mb - before.mb) * 1024) / SUBSCRIBERS,
			note: `${still} of ${SUBSCRIBERS} still open at the end over ${ids.length} sessions`,
		};
	} finally {
		for (const req of open) req.destroy();
	}
}

async function concurrentStreams(server: Server): Promise<JobResult> {
	const ids = await createSessions(server.url, STREAM_COUNT, { count: 0 });
	const before = await settledRss(server.pid);
	const prompt = JSON.stringify({ message: Array.from({ length: STREAM_TOKENS }, (_, i) => `w${i}`).join(" ") });
	let peak = rssMb(server.pid);
	const sampler = setInterval(() => {
		peak = Math.max(peak, rssMb(server.pid));
	}, 25);
	const counts = await Promise.all(ids.map((id) => readStream(`${server.url}/v1/sessions/${id}/prompt`, prompt)));
	clearInterval(sampler);
	peak = Math.max(peak, rssMb(server.pid));
	const after = await settledRss(server.pid);
	const events = counts.reduce((sum, n) => sum + n, 0);
	return {
		before,
		after,
		perUnit: after.mb - before.mb,
		peakDeltaMb: peak - before.mb,
		note: `${events} events`,
	};
}

const JOBS = [
	{ name: `KB per session held (${SESSIONS})`, run: sessionsHeld },
	{ name: `KB per idle SSE subscriber (${SUBSCRIBERS})`, run: idleSubscribers },
	{ name: `${STREAM_COUNT} streams x ${STREAM_TOKENS} tokens, MB`, run: concurrentStreams },
] as const;

const mark = (s: Settled) => `${s.mb.toFixed(1)}${s.settled ? "" : "*"}`;

/** Runs every job on this checkout (and the baseline's, right after each), prints the table and the goal. */
export async function runPerUnit(): Promise<void> {
	const baseline = process.env.BENCH_MEMORY_BASELINE;
	const trees = [
		{ name: "this tree", root: repoRoot },
		...(baseline ? [{ name: `baseline ${path.basename(path.resolve(baseline))}`, root: path.resolve(baseline) }] : []),
	];
	const load = () =>
		loadavg()
			.map((v) => v.toFixed(2))
			.join(", ");
	console.log(`\nbench/memory --per-unit — node ${process.version}, ${cpus().length} cores, load average ${load()}`);
	const figures = new Map<string, JobResult[]>();
	for (let r = 0; r < REPEATS; r++) {
		for (const job of JOBS) {
			// Alternate which tree goes first, so a machine that gets busier does not always hit one.
			const order = r % 2 ? [...trees].reverse() : trees;
			for (const tree of order) {
				const server = await startServer(tree.root);
				try {
					const result = await job.run(server);
					const key = `${tree.name}\t${job.name}`;
					figures.set(key, [...(figures.get(key) ?? []), result]);
					console.log(
						`  ${tree.name} · ${job.name}: before ${mark(result.before)} MB, after ${mark(result.after)} MB → ${result.perUnit.toFixed(2)}${
							result.peakDeltaMb === undefined ? "" : `, peak +${result.peakDeltaMb.toFixed(1)} MB`
						} (${result.note}; load ${load()})`,
					);
				} finally {
					await server.stop();
				}
			}
		}
	}
	const value = (tree: string, job: string, pick: (r: JobResult) => number | undefined) =>
		median((figures.get(`${tree}\t${job}`) ?? []).map((r) => pick(r) ?? Number.NaN));
	const rows: { label: string; pick: (r: JobResult) => number | undefined; job: string }[] = [];
	for (const job of JOBS) {
		if (job.run === concurrentStreams) {
			rows.push({
				label: `${STREAM_COUNT} streams x ${STREAM_TOKENS} tokens: peak delta MB`,
				pick: (r) => r.peakDeltaMb,
				job: job.name,
			});
			rows.push({
				label: `${STREAM_COUNT} streams x ${STREAM_TOKENS} tokens: settled delta MB`,
				pick: (r) => r.perUnit,
				job: job.name,
			});
		} else rows.push({ label: job.name, pick: (r) => r.perUnit, job: job.name });
	}
	console.log(
		`\n${REPEATS} repeat(s) (median); * = RSS had not settled within 60 s; load average at the end ${load()}\n`,
	);
	console.log(`| figure | ${trees.map((t) => t.name).join(" | ")} |${trees.length > 1 ? " ratio |" : ""}`);
	console.log(`|---|${trees.map(() => "---:|").join("")}${trees.length > 1 ? "---:|" : ""}`);
	let met = true;
	for (const row of rows) {
		const cells = trees.map((t) => value(t.name, row.job, row.pick));
		const ratio = cells.length > 1 ? cells[0]! / cells[1]! : undefined;
		if (ratio !== undefined && !(ratio <= GOAL_RATIO)) met = false;
		console.log(
			`| ${row.label} | ${cells.map((c) => c.toFixed(2)).join(" | ")} |${ratio === undefined ? "" : ` ${ratio.toFixed(2)}x |`}`,
		);
	}
	if (trees.length > 1) {
		console.log(`\nGoal: no figure more than 10% above the baseline's: ${met ? "met" : "NOT met"}`);
	}
}

if (process.argv[1] && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) await runPerUnit();
