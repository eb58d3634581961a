/**
 * What idle sessions hold in memory is bounded: past the idle-session budget
 * (`WHEELHOUSE_IDLE_SESSION_BYTES`) the least recently used are evicted, so a process that served
 * many large transcripts stays within a bound of its memory, and a session reloaded from the store
 * has its whole transcript. Against the real server process, with its JavaScript heap capped below
 * what the transcripts take: a process that kept them runs out of memory (and dies), one that evicts
 * them serves on. (Its RSS would say the same only once V8 collects, which it does when it likes.)
 *
 * On PostgreSQL: the budget is the session manager's, the same on every store. Megabytes per message
 * on SQLite start its checkpoint thread, whose WAL truncation can hold writers past the main
 * connection's busy timeout (SQLITE_BUSY on a commit), which is its own matter, not this one's.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { type MainProcess, startMain, stopAll } from "../../helpers/main-process.js";
import { havePostgres, PG_URL, testSchemas } from "../../helpers/postgres.js";

const schemas = testSchemas("idle_session_budget");
const ok = await havePostgres();

const SESSIONS = 20;
/** Prompts per session. */
const PROMPTS = 3;
/** Each prompt is one word of this many characters; the echo model answers it with the same. */
const PROMPT_CHARS = 1_500_000;
const MB = 1024 * 1024;

let dir: string | undefined;
afterEach(() => {
	stopAll();
	if (dir) rmSync(dir, { recursive: true, force: true });
	dir = undefined;
});

/** The server's heap cap: well under what the transcripts below take, well over what it needs otherwise. */
const HEAP_MB = 128;

async function call(server: MainProcess, method: string, route: string, body?: unknown) {
	const res = await fetch(`${server.url}${route}`, {
		method,
		headers: body === undefined ? {} : { "content-type": "application/json" },
		body: body === undefined ? undefined : JSON.stringify(body),
	});
	const text = await res.text();
	return { status: res.status, body: text ? JSON.parse(text) : undefined };
}

async function promptAndWait(server: MainProcess, id: string, message: string): Promise<void> {
	expect((await call(server, "POST", `/v1/sessions/${id}/prompt`, { message })).status).toBe(202);
	await expect.poll(async () => (await call(server, "GET", `/v1/sessions/${id}`)).body.status).toBe("idle");
}

describe("idle-session memory budget", () => {
	it.skipIf(!ok && process.env.TEST_REQUIRE_ALL !== "1")(
		"keeps a process that served many large transcripts bounded; a reloaded session has its whole transcript",
		async () => {
			dir = mkdtempSync(path.join(tmpdir(), "wheelhouse-idle-budget-"));
			const server = await startMain({
				db: path.join(dir, "w.db"),
				env: {
					WHEELHOUSE_STORE: "postgres",
					WHEELHOUSE_DATABASE_URL: PG_URL,
					WHEELHOUSE_DATABASE_SCHEMA: schemas.next(),
					WHEELHOUSE_IDLE_SESSION_BYTES: String(8 * MB),
					// Megabytes of context would otherwise be compacted before each call.
					WHEELHOUSE_COMPACTION: "off",
					NODE_OPTIONS: `--max-old-space-size=${HEAP_MB}`,
				},
			});
			let exited = false;
			void server.exited.then(() => {
				exited = true;
			});

			const ids: string[] = [];
			for (let i = 0; i < SESSIONS; i++) {
				const id = (await call(server, "POST", "/v1/sessions", {})).body.id as string;
				ids.push(id);
				for (let p = 0; p < PROMPTS; p++) await promptAndWait(server, id, `${i}${p}${"y".repeat(PROMPT_CHARS)}`);
			}
			// What the transcripts hold: each prompt, and its answer with the same characters, more than
			// the heap may take; kept in memory they would not fit (the process runs out of memory).
			expect((2 * SESSIONS * PROMPTS * PROMPT_CHARS) / MB).toBeGreaterThan(HEAP_MB);
			expect(exited).toBe(false);

			// A session evicted long ago reloads from the store with its whole transcript.
			const page = await call(server, "GET", `/v1/sessions/${ids[0]}/messages?limit=100`);
			expect(page.status).toBe(200);
			const messages = page.body.messages as any[];
			expect(messages.map((m) => m.role)).toEqual(Array.from({ length: PROMPTS }, () => ["user", "assistant"]).flat());
			for (let p = 0; p < PROMPTS; p++) {
				const sent = `0${p}${"y".repeat(PROMPT_CHARS)}`;
				const user = messages[2 * p].content;
				expect(typeof user === "string" ? user : user[0].text).toBe(sent);
				expect(messages[2 * p + 1].content[0].text).toBe(sent);
			}
			// And it goes on where it was: the model is sent the whole transcript.
			await promptAndWait(server, ids[0], "and now?");
			const after = await call(server, "GET", `/v1/sessions/${ids[0]}/messages?limit=100`);
			expect(after.body.messages).toHaveLength(2 * PROMPTS + 2);
			expect(after.body.messages.at(-1).content[0].text).toBe("and now?");
		},
		120_000,
	);
});
