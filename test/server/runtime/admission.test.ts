/**
 * Fair admission (`auth.admission: "queue"`) on a real server process over SQLite: with
 * `maxRunsPerTenant: 2`, tenant A floods 50 runs; the runs past the limit answer 202 `waiting`
 * with their position and say `run_queued` on their stream; tenant B's single run starts at once;
 * A's runs start in the order they were sent, never more than 2 at a time, and all complete. A
 * SIGKILL while runs wait loses none of them: after a restart on the same file they run, in order.
 */
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import Database from "better-sqlite3";
import { afterEach, describe, expect, it } from "vitest";
import { loadConfig } from "../../../src/server/config/config.js";
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
import { docBlock } from "../../helpers/doc-blocks.js";
import { refusedStartup, startMain, stopAll } from "../../helpers/main-process.js";
import { openSse, type SseReader } from "../../helpers/sse.js";

const dirs: string[] = [];
const readers: SseReader[] = [];
afterEach(() => {
	for (const reader of readers.splice(0)) reader.close();
	stopAll();
	for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});

function setup(delayMs: number) {
	const dir = mkdtempSync(path.join(tmpdir(), "wh-admission-"));
	dirs.push(dir);
	writeFileSync(path.join(dir, "config.json"), JSON.stringify({ auth: admissionAuth(2) }));
	const db = path.join(dir, "wh.db");
	return {
		db,
		options: {
			db,
			env: {
				WHEELHOUSE_CONFIG: path.join(dir, "config.json"),
				WHEELHOUSE_API_KEYS: `${KEY_A},${KEY_B}`,
				WHEELHOUSE_FAUX_DELAY_MS: String(delayMs),
				WHEELHOUSE_MAX_SESSIONS_PER_KEY: "200",
			},
		},
	};
}

/** The runs the store recorded for `sessionIds`, by session. */
function storedRuns(db: string, sessionIds: string[]): Map<string, StoredRun[]> {
	const conn = new Database(db, { readonly: true, fileMustExist: true });
	try {
		const rows = conn
			.prepare("SELECT session_id, status, started_at, ended_at FROM runs ORDER BY started_at")
			.all() as { session_id: string; status: string; started_at: number; ended_at: number | null }[];
		const by = new Map<string, StoredRun[]>(sessionIds.map((id) => [id, []]));
		for (const r of rows) {
			by.get(r.session_id)?.push({
				sessionId: r.session_id,
				status: r.status,
				startedAt: r.started_at,
				endedAt: r.ended_at,
			});
		}
		return by;
	} finally {
		conn.close();
	}
}

/** Sessions of `key` that are idle with the reply stored (2 messages), by id. */
async function finished(base: string, key: string): Promise<Set<string>> {
	const list = await call(base, "GET", "/v1/sessions?limit=200", key);
	return new Set(
		(list.body.sessions as { id: string; status: string; messageCount: number }[])
			.filter((s) => s.status === "idle" && s.messageCount >= 2)
			.map((s) => s.id),
	);
}

describe("admission queue", () => {
	it("queues a tenant's flood in order, 2 at a time, while another tenant's run starts at once", {
		timeout: 240_000,
	}, async () => {
		const { db, options } = setup(20);
		const server = await startMain(options);
		const base = server.url;
		const ids: string[] = [];
		for (let i = 0; i < 50; i++) ids.push((await call(base, "POST", "/v1/sessions", KEY_A, {})).body.id);
		// A client following one run that will wait.
		const watched = await openSse(`${base}/v1/sessions/${ids[9]}/events`, {
			headers: { authorization: `Bearer ${KEY_A}` },
		});
		readers.push(watched);

		const answers: { status: number; body: any }[] = [];
		for (let i = 0; i < 50; i++) {
			answers.push(await call(base, "POST", `/v1/sessions/${ids[i]}/prompt`, KEY_A, { message: slowMessage(`a${i}`) }));
		}
		expect(answers.every((a) => a.status === 202)).toBe(true);
		const waiting = answers.filter((a) => a.body.status === "waiting");
		// Runs end while the flood is still being sent: at least 40 wait.
		expect(waiting.length).toBeGreaterThanOrEqual(40);
		expect(waiting[0].body).toMatchObject({
			queued: true,
			position: expect.any(Number),
			admissionId: expect.any(Number),
		});
		// Each waits behind the ones sent before it (fewer, as runs start while the flood is sent).
		for (let i = 1; i < waiting.length; i++) {
			expect(waiting[i]!.body.position).toBeGreaterThanOrEqual(1);
			expect(waiting[i]!.body.position).toBeLessThanOrEqual(waiting[i - 1]!.body.position + 1);
		}
		expect(Math.max(...waiting.map((w) => w.body.position))).toBeGreaterThan(20);
		const watchedAnswer = answers[9]!;

		// Tenant B's one run: started at once, not behind A's queue.
		const bSession = (await call(base, "POST", "/v1/sessions", KEY_B, {})).body.id;
		const sentAt = Date.now();
		const b = await call(base, "POST", `/v1/sessions/${bSession}/prompt`, KEY_B, { message: slowMessage("b") });
		expect(b.status).toBe(202);
		expect(b.body.status).toBe("started");
		await until("B's run to end", async () => ((await finished(base, KEY_B)).has(bSession) ? true : undefined));
		const aDoneWhenBEnded = (await finished(base, KEY_A)).size;
		expect(aDoneWhenBEnded).toBeLessThan(40);

		if (watchedAnswer.body.status === "waiting") {
			const queued = await watched.waitForType("run_queued", 10_000);
			expect(queued.data).toMatchObject({ type: "run_queued", position: watchedAnswer.body.position });
			await watched.waitForType("agent_start", 120_000);
			const types = watched.events.map((e) => e.event);
			expect(types.indexOf("run_queued")).toBeLessThan(types.indexOf("agent_start"));
		}

		await until("all of A's runs to complete", async () =>
			(await finished(base, KEY_A)).size === 50 ? true : undefined,
		);
		const runs = storedRuns(db, [...ids, bSession]);
		const aRuns = ids.map((id) => {
			const list = runs.get(id)!;
			expect(list).toHaveLength(1);
			expect(list[0]!.status).toBe("completed");
			return list[0]!;
		});
		// In the order they were sent, and never more than the tenant's 2 at once.
		for (let i = 1; i < aRuns.length; i++) expect(aRuns[i]!.startedAt).toBeGreaterThanOrEqual(aRuns[i - 1]!.startedAt);
		expect(maxConcurrent(aRuns)).toBeLessThanOrEqual(2);
		// B did not wait for a slot: its run started within moments of its prompt.
		const bRun = runs.get(bSession)![0]!;
		expect(bRun.startedAt - sentAt).toBeLessThan(5_000);
		expect(bRun.startedAt).toBeLessThan(aRuns[45]!.startedAt);
	});

	it("loses no waiting run to a SIGKILL: after the restart they run, in order", { timeout: 240_000 }, async () => {
		const { db, options } = setup(100);
		const first = await startMain(options);
		const ids: string[] = [];
		for (let i = 0; i < 12; i++) {
			ids.push((await call(first.url, "POST", "/v1/sessions", KEY_A, { onInterrupt: "stop" })).body.id);
		}
		const answers: { status: number; body: any }[] = [];
		for (let i = 0; i < 12; i++) {
			answers.push(
				await call(first.url, "POST", `/v1/sessions/${ids[i]}/prompt`, KEY_A, { message: slowMessage(`k${i}`) }),
			);
		}
		const waitingIds = ids.filter((_, i) => answers[i]!.body.status === "waiting");
		expect(waitingIds.length).toBeGreaterThanOrEqual(8);
		first.child.kill("SIGKILL");
		await first.exited;

		const second = await startMain(options);
		await until("every waiting run to complete after the restart", async () => {
			const done = await finished(second.url, KEY_A);
			return waitingIds.every((id) => done.has(id)) ? true : undefined;
		});
		const runs = storedRuns(db, waitingIds);
		const started = waitingIds.map((id) => {
			const list = runs.get(id)!;
			expect(list).toHaveLength(1);
			expect(list[0]!.status).toBe("completed");
			return list[0]!;
		});
		for (let i = 1; i < started.length; i++)
			expect(started[i]!.startedAt).toBeGreaterThanOrEqual(started[i - 1]!.startedAt);
		expect(maxConcurrent(started)).toBeLessThanOrEqual(2);
	});

	it("stops startup on an unknown admission mode, naming the field", async () => {
		const dir = mkdtempSync(path.join(tmpdir(), "wh-admission-"));
		dirs.push(dir);
		const file = path.join(dir, "config.json");
		writeFileSync(file, JSON.stringify({ auth: { ...admissionAuth(2), admission: "wait" } }));
		const { code, stderr } = await refusedStartup({
			WHEELHOUSE_CONFIG: file,
			WHEELHOUSE_API_KEYS: `${KEY_A},${KEY_B}`,
		});
		expect(code).not.toBe(0);
		expect(stderr).toMatch(/auth\.admission: must be "reject" or "queue"/);
	});

	it("answers a repeated Idempotency-Key of a waiting prompt with the same 202, queuing nothing more", async () => {
		const { options } = setup(100);
		const server = await startMain(options);
		const ids: string[] = [];
		for (let i = 0; i < 3; i++) ids.push((await call(server.url, "POST", "/v1/sessions", KEY_A, {})).body.id);
		for (let i = 0; i < 2; i++) {
			await call(server.url, "POST", `/v1/sessions/${ids[i]}/prompt`, KEY_A, { message: slowMessage(`r${i}`, 40) });
		}
		const keyed = async () => {
			const res = await fetch(`${server.url}/v1/sessions/${ids[2]}/prompt`, {
				method: "POST",
				headers: {
					authorization: `Bearer ${KEY_A}`,
					"content-type": "application/json",
					"idempotency-key": "wait-once-0001",
				},
				body: JSON.stringify({ message: "third" }),
			});
			return { status: res.status, body: (await res.json()) as Record<string, unknown> };
		};
		const first = await keyed();
		expect(first.status).toBe(202);
		expect(first.body).toMatchObject({ status: "waiting", queued: true, position: 1 });
		// The answer docs/identity.md shows, field for field.
		const shown = JSON.parse(docBlock("docs/identity.md", "json", '"waiting"').code);
		expect(Object.keys(first.body).sort()).toEqual(Object.keys(shown).sort());
		const repeat = await keyed();
		expect(repeat).toEqual(first);
		// Without a key, a second prompt on the session whose run waits is refused.
		const other = await call(server.url, "POST", `/v1/sessions/${ids[2]}/prompt`, KEY_A, { message: "again" });
		expect(other.status).toBe(409);
		expect(other.body.error.code).toBe("AGENT_BUSY");
	});

	it("accepts docs/identity.md's admission fragment in a config file", () => {
		const dir = mkdtempSync(path.join(tmpdir(), "wh-admission-"));
		dirs.push(dir);
		const file = path.join(dir, "config.json");
		writeFileSync(file, `{ ${docBlock("docs/identity.md", "json", '"admission"').code} }`);
		expect(loadConfig({ WHEELHOUSE_CONFIG: file }).authConfig).toEqual({ admission: "queue" });
	});
});
