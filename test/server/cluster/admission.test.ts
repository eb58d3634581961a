/**
 * Fair admission across real replica processes: three replicas on one PostgreSQL schema with
 * `admission: "queue"` and `maxRunsPerTenant: 2`. Tenant A floods 50 runs, sent round-robin to
 * the replicas; the slots are counted in the shared store, so A never has more than 2 runs going
 * in the whole cluster; tenant B's run starts at once; a replica holding one of A's slots is
 * SIGKILLed while runs wait, its slot comes back once its heartbeat is stale, and the other
 * replicas run every waiting run, in the order they were sent.
 */
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterAll, afterEach, describe, expect, it } from "vitest";
import {
	admissionAuth,
	call,
	KEY_A,
	KEY_B,
	maxConcurrent,
	type StoredRun,
	slowMessage,
	until,
} from "../../helpers/admission.js";
import { haveClusterServices, NO_CLUSTER_SERVICES, testCluster } from "../../helpers/cluster.js";
import { stopAll } from "../../helpers/main-process.js";
import { pgQuery } from "../../helpers/postgres.js";

const ok = await haveClusterServices();
const cluster = testCluster("cadmission");
const dir = mkdtempSync(path.join(tmpdir(), "wh-cadmission-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** The schema the replicas of this file use (one cluster per file). */
async function schemaOfThisFile(): Promise<string> {
	const rows = await pgQuery<{ schema: string }>(
		`SELECT table_schema AS schema FROM information_schema.tables
		 WHERE table_name = 'admission_queue' AND table_schema LIKE $1`,
		[`t_cadmission_${process.pid}_%`],
	);
	expect(rows).toHaveLength(1);
	return rows[0]!.schema;
}

async function storedRuns(schema: string): Promise<Map<string, StoredRun[]>> {
	const rows = await pgQuery<{ session_id: string; status: string; started_at: string; ended_at: string | null }>(
		`SELECT session_id, status, started_at, ended_at FROM ${schema}.runs ORDER BY started_at, seq`,
	);
	const by = new Map<string, StoredRun[]>();
	for (const r of rows) {
		const list = by.get(r.session_id) ?? [];
		list.push({
			sessionId: r.session_id,
			status: r.status,
			startedAt: Number(r.started_at),
			endedAt: r.ended_at === null ? null : Number(r.ended_at),
		});
		by.set(r.session_id, list);
	}
	return by;
}

describe.skipIf(!ok)("admission queue in a cluster", () => {
	afterEach(async () => {
		stopAll();
		await cluster.dropRedisKeys();
	});

	it("shares the slots and the queue: 2 at a time cluster-wide, B at once, nothing lost to a SIGKILL", {
		timeout: 240_000,
	}, async () => {
		const config = path.join(dir, "config.json");
		writeFileSync(config, JSON.stringify({ auth: admissionAuth(2) }));
		const replicas = await cluster.start(3, {
			fauxDelayMs: 20,
			env: {
				WHEELHOUSE_CONFIG: config,
				WHEELHOUSE_API_KEYS: `${KEY_A},${KEY_B}`,
				WHEELHOUSE_MAX_SESSIONS_PER_KEY: "200",
			},
		});
		const schema = await schemaOfThisFile();
		const ids: string[] = [];
		for (let i = 0; i < 50; i++) {
			ids.push((await call(replicas[i % 3]!.url, "POST", "/v1/sessions", KEY_A, { onInterrupt: "stop" })).body.id);
		}
		const answers: { status: number; body: any }[] = [];
		for (let i = 0; i < 50; i++) {
			const r = replicas[i % 3]!;
			answers.push(
				await call(r.url, "POST", `/v1/sessions/${ids[i]}/prompt`, KEY_A, { message: slowMessage(`a${i}`) }),
			);
		}
		expect(answers.every((a) => a.status === 202)).toBe(true);
		const waiting = answers.filter((a) => a.body.status === "waiting");
		expect(waiting.length).toBeGreaterThanOrEqual(30);
		// Each waits behind the ones sent before it (fewer, as runs start while the flood is sent).
		for (let i = 1; i < waiting.length; i++) {
			expect(waiting[i]!.body.position).toBeGreaterThanOrEqual(1);
			expect(waiting[i]!.body.position).toBeLessThanOrEqual(waiting[i - 1]!.body.position + 1);
		}
		expect(Math.max(...waiting.map((w) => w.body.position))).toBeGreaterThan(20);

		// Tenant B, on the third replica: started at once.
		const c = replicas[2]!;
		const bSession = (await call(c.url, "POST", "/v1/sessions", KEY_B, {})).body.id;
		const b = await call(c.url, "POST", `/v1/sessions/${bSession}/prompt`, KEY_B, { message: slowMessage("b") });
		expect(b.body.status).toBe("started");

		// Mid-queue: a replica that holds a slot of A dies (its run is cut short, its slot must come back).
		const victim = await until("a replica holding a slot of A", async () => {
			const holders = await pgQuery<{ holder: string }>(
				`SELECT holder FROM ${schema}.admission_queue WHERE state = 'running' AND tenant = 'org-a'`,
			);
			return replicas.find((r) => holders.some((h) => h.holder.includes(`:${r.child.pid}:`)));
		});
		const killedAt = Date.now();
		const queuedAtKill = Number(
			(await pgQuery<{ n: string }>(`SELECT count(*) AS n FROM ${schema}.admission_queue WHERE state = 'queued'`))[0]!
				.n,
		);
		expect(queuedAtKill).toBeGreaterThan(10);
		victim.child.kill("SIGKILL");
		await victim.exited;

		const alive = replicas.filter((r) => r !== victim);
		await until("every run of A to have run", async () => {
			const runs = await storedRuns(schema);
			const pending = await pgQuery(`SELECT 1 FROM ${schema}.admission_queue`);
			const allRan = ids.every((id) => (runs.get(id) ?? []).some((r) => r.endedAt !== null));
			return allRan && pending.length === 0 ? true : undefined;
		});
		const runs = await storedRuns(schema);
		const firsts = ids.map((id) => runs.get(id)![0]!);
		// Each prompt ran once; a run cut short by the kill had started before it.
		for (const run of firsts) {
			expect(runs.get(run.sessionId)).toHaveLength(1);
			if (run.status !== "completed") expect(run.startedAt).toBeLessThan(killedAt + 1000);
		}
		expect(firsts.filter((r) => r.status === "completed").length).toBeGreaterThanOrEqual(50 - 2 * 3);
		// 2 at a time in the whole cluster, and in the order sent (a start cut short by the kill too).
		expect(maxConcurrent(firsts.filter((r) => r.status === "completed"))).toBeLessThanOrEqual(2);
		for (let i = 1; i < firsts.length; i++)
			expect(firsts[i]!.startedAt).toBeGreaterThanOrEqual(firsts[i - 1]!.startedAt);
		// Tenant B's run did not wait behind A's queue.
		const bRun = runs.get(bSession)![0]!;
		expect(bRun.startedAt).toBeLessThan(firsts[40]!.startedAt);
		for (const r of alive) expect((await call(r.url, "GET", "/readyz", KEY_A)).status).toBe(200);
	});
});

if (!ok) console.warn(NO_CLUSTER_SERVICES);
