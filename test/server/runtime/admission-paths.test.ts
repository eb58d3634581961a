/**
 * Every way of starting a run goes through the same admission (`auth.admission: "queue"`), on a
 * real server process over SQLite with `maxRunsPerTenant: 2`: tenant A floods Chat Completions
 * (each request waits for a slot and completes when one frees, never more than 2 of A's runs at
 * once) while tenant B's A2A run starts at once; a waiting prompt's `run_queued` comes again as
 * its position moves; a request that waits longer than `auth.admissionTimeoutMs` answers 429
 * `ADMISSION_TIMEOUT` and leaves nothing queued; a schedule's fire past the limit waits in the
 * queue (recorded as fired, waiting), and an MCP tools/call behind it waits in its request: each
 * runs when the slot frees, in the order they came.
 */
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import Database from "better-sqlite3";
import { afterEach, describe, expect, it } from "vitest";
import { a2aClient, answerOf, userMessage } from "../../helpers/a2a.js";
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
import { startMain, stopAll } from "../../helpers/main-process.js";
import { openSse, type SseReader } from "../../helpers/sse.js";

const dirs: string[] = [];
const readers: SseReader[] = [];
afterEach(() => {
	for (const reader of readers.splice(0)) reader.close();
	stopAll();
	for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});

async function start(auth: Record<string, unknown>, delayMs: number) {
	const dir = mkdtempSync(path.join(tmpdir(), "wh-admission-paths-"));
	dirs.push(dir);
	writeFileSync(path.join(dir, "config.json"), JSON.stringify({ auth }));
	const db = path.join(dir, "wh.db");
	const server = await startMain({
		db,
		env: {
			WHEELHOUSE_CONFIG: path.join(dir, "config.json"),
			WHEELHOUSE_API_KEYS: `${KEY_A},${KEY_B}`,
			WHEELHOUSE_FAUX_DELAY_MS: String(delayMs),
			WHEELHOUSE_MAX_SESSIONS_PER_KEY: "200",
		},
	});
	return { db, base: server.url };
}

function query<T>(db: string, sql: string): T[] {
	const conn = new Database(db, { readonly: true, fileMustExist: true });
	try {
		return conn.prepare(sql).all() as T[];
	} finally {
		conn.close();
	}
}

/** Every run the store recorded, oldest first, with its session's id. */
function storedRuns(db: string): StoredRun[] {
	return query<{ session_id: string; status: string; started_at: number; ended_at: number | null }>(
		db,
		"SELECT session_id, status, started_at, ended_at FROM runs ORDER BY started_at",
	).map((r) => ({ sessionId: r.session_id, status: r.status, startedAt: r.started_at, endedAt: r.ended_at }));
}

function chat(base: string, key: string, content: string): Promise<{ status: number; body: any }> {
	return fetch(`${base}/openai/v1/chat/completions`, {
		method: "POST",
		headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
		body: JSON.stringify({ model: "faux/echo", messages: [{ role: "user", content }] }),
	}).then(async (res) => ({ status: res.status, body: await res.json() }));
}

/** A streamed Responses request, read to its end: each event's `data`, in order. */
async function streamedResponse(base: string, key: string, input: string): Promise<any[]> {
	const res = await fetch(`${base}/openai/v1/responses`, {
		method: "POST",
		headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
		body: JSON.stringify({ model: "faux/echo", input, stream: true }),
	});
	expect(res.status).toBe(200);
	const text = await res.text();
	return text
		.split("\n")
		.filter((line) => line.startsWith("data: "))
		.map((line) => JSON.parse(line.slice(6)));
}

describe("admission on every path", () => {
	it("queues a flood of Chat Completions in the request; another tenant's A2A run starts at once", {
		timeout: 180_000,
	}, async () => {
		const { db, base } = await start(admissionAuth(2), 40);
		// Runs of 30 tokens at 40 ms (about 1.2 s each): long against a request's own time on a loaded machine.
		const flood = Array.from({ length: 8 }, (_, i) => chat(base, KEY_A, slowMessage(`a${i}`, 30)));
		// Past A's 2 slots the requests wait, each at its place in the shared queue.
		await until("A's requests to wait in the queue", async () => {
			const rows = query<{ n: number }>(db, "SELECT count(*) AS n FROM admission_queue WHERE state = 'queued'");
			return rows[0]!.n >= 4 ? true : undefined;
		});

		const client = await a2aClient(base, KEY_B);
		const sentAt = Date.now();
		const task = (await client.sendMessage({ message: userMessage([slowMessage("b", 3)]) } as never)) as never;
		expect(answerOf(task)).toContain("b b b");

		const answers = await Promise.all(flood);
		for (const [i, answer] of answers.entries()) {
			expect(answer.status).toBe(200);
			expect(answer.body.choices[0].message.content).toContain(`a${i} a${i}`);
		}
		// A run's slot is released once it has ended, which may be just after its answer was sent.
		await until(
			"every admission row to be released",
			async () => (query(db, "SELECT id FROM admission_queue").length === 0 ? true : undefined),
			15_000,
		);

		const bSessions = new Set(
			((await call(base, "GET", "/v1/sessions?limit=50", KEY_B)).body.sessions as { id: string }[]).map((s) => s.id),
		);
		const runs = storedRuns(db);
		const aRuns = runs.filter((r) => !bSessions.has(r.sessionId));
		const bRun = runs.find((r) => bSessions.has(r.sessionId))!;
		expect(aRuns).toHaveLength(8);
		expect(aRuns.every((r) => r.status === "completed")).toBe(true);
		expect(maxConcurrent(aRuns)).toBeLessThanOrEqual(2);
		// B did not wait behind A's queue: its run started while most of A's still waited.
		expect(bRun.startedAt).toBeGreaterThanOrEqual(sentAt - 1000);
		expect(bRun.startedAt).toBeLessThan(aRuns[5]!.startedAt);
	});

	it("sends run_queued again as a waiting prompt's position moves, until its agent_start", {
		timeout: 120_000,
	}, async () => {
		const { base } = await start(admissionAuth(2), 30);
		const ids: string[] = [];
		for (let i = 0; i < 6; i++) ids.push((await call(base, "POST", "/v1/sessions", KEY_A, {})).body.id);
		const watched = await openSse(`${base}/v1/sessions/${ids[5]}/events`, {
			headers: { authorization: `Bearer ${KEY_A}` },
		});
		readers.push(watched);
		const answers = [];
		for (const id of ids)
			answers.push(await call(base, "POST", `/v1/sessions/${id}/prompt`, KEY_A, { message: slowMessage(id, 8) }));
		const last = answers[5]!;
		expect(last.body).toMatchObject({ status: "waiting" });
		expect(last.body.position).toBeGreaterThanOrEqual(3);

		await watched.waitForType("agent_start", 60_000);
		const positions = watched.events.filter((e) => e.event === "run_queued").map((e) => (e.data as any).position);
		expect(positions[0]).toBe(last.body.position);
		// One event per move, each one place nearer, down to the head of the queue.
		expect(positions).toEqual(Array.from({ length: last.body.position }, (_, i) => last.body.position - i));
		const types = watched.events.map((e) => e.event);
		expect(types.lastIndexOf("run_queued")).toBeLessThan(types.indexOf("agent_start"));
	});

	it("answers 429 ADMISSION_TIMEOUT to a request that waited too long, and leaves nothing queued", {
		timeout: 120_000,
	}, async () => {
		const { db, base } = await start({ ...admissionAuth(1), admissionTimeoutMs: 800 }, 50);
		const busy = (await call(base, "POST", "/v1/sessions", KEY_A, {})).body.id;
		const long = await call(base, "POST", `/v1/sessions/${busy}/prompt`, KEY_A, { message: slowMessage("x", 100) });
		expect(long.body.status).toBe("started");

		const refused = await chat(base, KEY_A, "hello");
		expect(refused.status).toBe(429);
		expect(refused.body.error).toMatchObject({ code: "ADMISSION_TIMEOUT" });
		// A continue waits the same way (it starts its run itself).
		const other = (await call(base, "POST", "/v1/sessions", KEY_A, {})).body.id;
		const continued = await call(base, "POST", `/v1/sessions/${other}/continue`, KEY_A);
		expect(continued.status).toBe(429);
		expect(continued.body.error.code).toBe("ADMISSION_TIMEOUT");

		// A streamed response says it is queued (OpenAI's response.queued), then why it ended.
		const events = await streamedResponse(base, KEY_A, "streamed hello");
		expect(events.map((e) => e.type)).toEqual(["response.created", "response.queued", "error"]);
		expect(events[0].response.status).toBe("queued");
		expect(events[1]).toMatchObject({ position: 1, response: { status: "queued" } });
		expect(events[2]).toMatchObject({ code: "ADMISSION_TIMEOUT" });

		// Only the running prompt's slot is left: the places were given up.
		const rows = query<{ state: string; session_id: string }>(db, "SELECT state, session_id FROM admission_queue");
		expect(rows).toEqual([{ state: "running", session_id: busy }]);
	});

	it("lets a schedule's fire, an MCP tools/call and a streamed response past the limit wait their turns, in order", {
		timeout: 120_000,
	}, async () => {
		const { db, base } = await start(admissionAuth(1), 30);
		const busy = (await call(base, "POST", "/v1/sessions", KEY_A, {})).body.id;
		const long = await call(base, "POST", `/v1/sessions/${busy}/prompt`, KEY_A, { message: slowMessage("x", 40) });
		expect(long.body.status).toBe("started");
		const schedule = (
			await call(base, "POST", "/v1/schedules", KEY_A, { cron: "0 0 1 1 *", profile: "", prompt: "scheduled hello" })
		).body;
		const fired = await call(base, "POST", `/v1/schedules/${schedule.id}/run-now`, KEY_A);
		expect(fired.status).toBe(202);
		expect(fired.body).toMatchObject({
			outcome: "fired",
			runId: null,
			reason: expect.stringMatching(/waiting for a run slot/),
		});
		expect(query(db, "SELECT id FROM admission_queue WHERE state = 'queued'")).toHaveLength(1);
		// An MCP tools/call behind it: the call waits in its request, then answers.
		const transport = new StreamableHTTPClientTransport(new URL(`${base}/mcp`), {
			requestInit: { headers: { authorization: `Bearer ${KEY_A}` } },
		});
		const mcp = new Client({ name: "test", version: "1.0.0" });
		await mcp.connect(transport);
		const calling = mcp.callTool({ name: "agent", arguments: { message: "mcp hello" } });
		await until("the call to wait behind the fire", async () =>
			query(db, "SELECT id FROM admission_queue WHERE state = 'queued'").length === 2 ? true : undefined,
		);
		// A streamed response behind both: queued (OpenAI's response.queued, as its place moves), then answered.
		const streaming = streamedResponse(base, KEY_A, "streamed hello");
		const tool = await calling;
		await mcp.close();
		expect((tool.content as { type: string; text: string }[])[0]!.text).toBe("mcp hello");
		const mcpSession = (tool.structuredContent as { sessionId: string }).sessionId;
		const events = await streaming;
		const types = events.map((e) => e.type);
		expect(types.slice(0, 2)).toEqual(["response.created", "response.queued"]);
		expect(events[0].response.status).toBe("queued");
		const positions = events.filter((e) => e.type === "response.queued").map((e) => e.position);
		expect(positions[0]).toBeGreaterThanOrEqual(2);
		for (let i = 1; i < positions.length; i++) expect(positions[i]).toBeLessThan(positions[i - 1]);
		expect(types[positions.length + 1]).toBe("response.in_progress");
		expect(types.at(-1)).toBe("response.completed");
		expect(events.at(-1).response.output[0].content[0].text).toBe("streamed hello");

		const answered = await until("the fire's run to be answered", async () => {
			const page = await call(base, "GET", `/v1/sessions/${fired.body.sessionId}/messages`, KEY_A);
			return page.body.total === 2 ? page.body.messages : undefined;
		});
		expect(answered[1].content[0].text).toContain("scheduled hello");
		const runs = storedRuns(db);
		const first = runs.find((r) => r.sessionId === busy)!;
		const later = runs.find((r) => r.sessionId === fired.body.sessionId)!;
		const last = runs.find((r) => r.sessionId === mcpSession)!;
		// Each waited for the tenant's one slot, in the order they came: the long run, the fire, the call.
		expect(later.startedAt).toBeGreaterThanOrEqual(first.endedAt!);
		expect(last.startedAt).toBeGreaterThanOrEqual(later.endedAt!);
	});
});
