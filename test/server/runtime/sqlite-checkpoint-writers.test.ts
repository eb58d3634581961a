/**
 * On SQLite, WAL checkpoints never hold the server's writers, and a commit that fails is never
 * reported to a client as done. Against the real server process with megabytes per message: the
 * WAL passes its bound within a few prompts, while another connection (a backup, a replication
 * tool such as Litestream, an operator's `sqlite3` shell) holds a read snapshot, so no checkpoint
 * can finish. A checkpoint that waited for that reader while holding the write lock would make the
 * server's commits fail with SQLITE_BUSY: 500s, and worse, a run end lost after the client saw the
 * run go idle (the next prompt then refused with 409 as if the run went on elsewhere).
 */
import { mkdtempSync, rmSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import Database from "better-sqlite3";
import { afterEach, describe, expect, it } from "vitest";
import { json, type MainProcess, startMain, stopAll } from "../../helpers/main-process.js";

let dir: string | undefined;
let reader: Database.Database | undefined;
afterEach(() => {
	reader?.close();
	reader = undefined;
	stopAll();
	if (dir) rmSync(dir, { recursive: true, force: true });
	dir = undefined;
});

const PROMPTS = 14;
/** Each prompt is one word of this many characters; the echo model answers it with the same. */
const PROMPT_CHARS = 3_800_000;
const MB = 1024 * 1024;

/** Prompts and waits until the run is over; the statuses on the way, for the assertion to show. */
async function promptAndWait(server: MainProcess, id: string, message: string): Promise<string[]> {
	const seen: string[] = [];
	const prompt = await json(`${server.url}/v1/sessions/${id}/prompt`, "POST", { message });
	seen.push(`prompt ${prompt.status}${prompt.status === 202 ? "" : ` ${prompt.body?.error?.code}`}`);
	if (prompt.status !== 202) return seen;
	for (const deadline = Date.now() + 120_000; Date.now() < deadline; ) {
		const state = await json(`${server.url}/v1/sessions/${id}`);
		if (state.status !== 200) {
			seen.push(`state ${state.status}`);
			return seen;
		}
		if (state.body.status === "idle") return seen;
		await new Promise((resolve) => setTimeout(resolve, 50));
	}
	seen.push("not idle");
	return seen;
}

describe("SQLite checkpoints beside the server's writers", () => {
	it("keep every commit going while a reader holds the WAL, and nothing the client saw is lost", async () => {
		dir = mkdtempSync(path.join(tmpdir(), "wheelhouse-checkpoint-writers-"));
		const db = path.join(dir, "w.db");
		// Compaction off: every prompt stays in the transcript, and the WAL grows by all of it.
		const env = { WHEELHOUSE_COMPACTION: "off", WHEELHOUSE_MAX_SESSION_CONTEXT_BYTES: "0" };
		let server = await startMain({ db, env });
		const id = (await json(`${server.url}/v1/sessions`, "POST", {})).body.id as string;
		expect(await promptAndWait(server, id, "first")).toEqual(["prompt 202"]);

		// Another connection holds a read snapshot from here on: no checkpoint can finish.
		reader = new Database(db, { readonly: true });
		reader.prepare("BEGIN").run();
		reader.prepare("SELECT count(*) FROM sessions").get();

		const prompts: string[] = [];
		const statuses: string[] = [];
		for (let p = 0; p < PROMPTS; p++) {
			prompts.push(`${p}${"w".repeat(PROMPT_CHARS)}`);
			statuses.push(...(await promptAndWait(server, id, prompts[p] as string)));
			const created = await json(`${server.url}/v1/sessions`, "POST", {});
			statuses.push(`create ${created.status}${created.status === 201 ? "" : ` ${created.body?.error?.code}`}`);
		}
		// The WAL passed its bound (64 MiB) while the reader held it: checkpoints were due all along.
		expect(statSync(`${db}-wal`).size / MB).toBeGreaterThan(64);
		expect(statuses).toEqual(Array.from({ length: PROMPTS }, () => ["prompt 202", "create 201"]).flat());
		expect(server.output()).not.toMatch(/SQLITE_BUSY|database is locked/);

		// What the client saw is what is on disk: after a restart every prompt and answer is there, and
		// the session takes the next prompt.
		reader.prepare("COMMIT").run();
		reader.close();
		reader = undefined;
		server.child.kill("SIGKILL");
		await server.exited;
		server = await startMain({ db, env });
		const state = (await json(`${server.url}/v1/sessions/${id}`)).body;
		expect(state.status).toBe("idle");
		expect(state.messageCount).toBe(2 + 2 * PROMPTS);
		const last = await json(`${server.url}/v1/sessions/${id}/messages?offset=${state.messageCount - 2}&limit=2`);
		expect(last.body.messages[1].content[0].text).toBe(prompts.at(-1));
		expect(await promptAndWait(server, id, "after")).toEqual(["prompt 202"]);
	}, 300_000);
});
