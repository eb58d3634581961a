/**
 * Admission through the facades in a cluster: two replica processes on one PostgreSQL schema
 * (and Redis) with `admission: "queue"` and `maxRunsPerTenant: 2`. Tenant A floods Chat
 * Completions sent to both replicas: the slots are counted in the shared store, so A never has
 * more than 2 runs going in the whole cluster, the requests past them wait (each in its own
 * replica) and every one completes when a slot frees, whichever replica freed it; tenant B's AG-UI
 * run starts without waiting behind A's queue.
 */
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { HttpAgent } from "@ag-ui/client";
import { afterAll, afterEach, describe, expect, it } from "vitest";
import { admissionAuth, call, KEY_A, KEY_B, maxConcurrent, slowMessage, until } from "../../helpers/admission.js";
import { haveClusterServices, NO_CLUSTER_SERVICES, testCluster } from "../../helpers/cluster.js";
import { stopAll } from "../../helpers/main-process.js";
import { pgQuery } from "../../helpers/postgres.js";

const ok = await haveClusterServices();
const cluster = testCluster("cadmfacades");

const dir = mkdtempSync(path.join(tmpdir(), "wh-cadmfacades-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

function chat(base: string, key: string, content: string): Promise<{ status: number; body: any }> {
	return fetch(`${base}/openai/v1/chat/completions`, {
		method: "POST",
		headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
		body: JSON.stringify({ model: "faux/echo", messages: [{ role: "user", content }] }),
	}).then(async (res) => ({ status: res.status, body: await res.json() }));
}

describe.skipIf(!ok)("admission through the facades in a cluster", () => {
	afterEach(async () => {
		stopAll();
		await cluster.dropRedisKeys();
	});

	it("shares the slots: queued Chat Completions on both replicas all complete, 2 at a time; B's AG-UI run at once", {
		timeout: 240_000,
	}, async () => {
		const config = path.join(dir, "config.json");
		writeFileSync(config, JSON.stringify({ auth: admissionAuth(2) }));
		const replicas = await cluster.start(2, {
			fauxDelayMs: 40,
			env: {
				WHEELHOUSE_CONFIG: config,
				WHEELHOUSE_API_KEYS: `${KEY_A},${KEY_B}`,
				WHEELHOUSE_MAX_SESSIONS_PER_KEY: "200",
			},
		});
		const schema = (
			await pgQuery<{ schema: string }>(
				`SELECT table_schema AS schema FROM information_schema.tables
				 WHERE table_name = 'admission_queue' AND table_schema LIKE $1`,
				[`t_cadmfacades_${process.pid}_%`],
			)
		)[0]!.schema;

		const flood = Array.from({ length: 10 }, (_, i) => chat(replicas[i % 2]!.url, KEY_A, slowMessage(`a${i}`)));
		await until("A's requests to wait in the shared queue", async () => {
			const [row] = await pgQuery<{ n: string }>(
				`SELECT count(*) AS n FROM ${schema}.admission_queue WHERE state = 'queued'`,
			);
			return Number(row!.n) >= 5 ? true : undefined;
		});

		const sentAt = Date.now();
		const agent = new HttpAgent({
			url: `${replicas[1]!.url}/agui/v1/run`,
			headers: { authorization: `Bearer ${KEY_B}` },
			threadId: "b-thread",
			initialMessages: [{ id: "b-1", role: "user", content: slowMessage("b", 3) }],
		});
		const result = await agent.runAgent({});
		expect(JSON.stringify(result.newMessages)).toContain("b b b");

		const answers = await Promise.all(flood);
		for (const [i, answer] of answers.entries()) {
			expect(answer.status).toBe(200);
			expect(answer.body.choices[0].message.content).toContain(`a${i} a${i}`);
		}
		expect(await pgQuery(`SELECT id FROM ${schema}.admission_queue`)).toHaveLength(0);

		const bSessions = new Set(
			((await call(replicas[0]!.url, "GET", "/v1/sessions?limit=50", KEY_B)).body.sessions as { id: string }[]).map(
				(s) => s.id,
			),
		);
		const runs = (
			await pgQuery<{ session_id: string; status: string; started_at: string; ended_at: string | null }>(
				`SELECT session_id, status, started_at, ended_at FROM ${schema}.runs ORDER BY started_at`,
			)
		).map((r) => ({
			sessionId: r.session_id,
			status: r.status,
			startedAt: Number(r.started_at),
			endedAt: r.ended_at === null ? null : Number(r.ended_at),
		}));
		const aRuns = runs.filter((r) => !bSessions.has(r.sessionId));
		const bRun = runs.find((r) => bSessions.has(r.sessionId))!;
		expect(aRuns).toHaveLength(10);
		expect(aRuns.every((r) => r.status === "completed")).toBe(true);
		// 2 at a time in the whole cluster, though each replica alone would have allowed 2.
		expect(maxConcurrent(aRuns)).toBeLessThanOrEqual(2);
		// B did not wait behind A's queue.
		expect(bRun.startedAt).toBeGreaterThanOrEqual(sentAt - 1000);
		expect(bRun.startedAt).toBeLessThan(aRuns[6]!.startedAt);
	});
});

if (!ok) console.warn(NO_CLUSTER_SERVICES);
