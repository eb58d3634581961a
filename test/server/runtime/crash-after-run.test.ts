/**
 * What is on disk when the server crashes right after a client saw a run end.
 * A real server in a child process (test/server/fixtures/kill-after-run.ts), SIGKILLed;
 * the file is then reopened with the real store.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { openSqliteStore, type SqliteSessionStore } from "../../../src/store/sqlite/index.js";
import { runKilledFixture } from "../../helpers/killed-fixture.js";

const dirs: string[] = [];
const stores: SqliteSessionStore[] = [];
afterEach(() => {
	for (const s of stores.splice(0)) s.close();
	for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

async function runAndKill(db: string, flushIntervalMs: number): Promise<string> {
	const out = await runKilledFixture("kill-after-run.ts", [db, String(flushIntervalMs)]);
	expect(out).toContain("seen agent_end");
	return out.split("\n")[0]!;
}

describe("crash right after a client saw agent_end", () => {
	it("the run end and the agent_end event are both on disk (the log is never behind a run end)", async () => {
		const dir = mkdtempSync(path.join(tmpdir(), "wh-crash-after-run-"));
		dirs.push(dir);
		const db = path.join(dir, "wheelhouse.db");
		// A long flush interval only widens the window in which buffered events wait; 50 ms (the default) has the same window.
		const id = await runAndKill(db, Number(process.env.REVIEW_FLUSH_MS ?? 60_000));
		const store = openSqliteStore({ path: db });
		stores.push(store);
		// The run end is on disk (committed by sync() before the SSE write)...
		expect((await store.listRuns(id)).map((r) => r.status)).toEqual(["completed"]);
		expect((await store.getSession(id))?.status).toBe("idle");
		expect((await store.listMessages(id))?.messages.map((m) => m.role)).toEqual(["user", "assistant"]);
		// ...so the event that announced it must be too: a client resuming after the restart must be able to see the run end.
		const types = (await store.readEvents(id, 0)).map((e) => e.type);
		expect(types).toContain("message_end");
		expect(types.at(-1)).toBe("agent_end");
	}, 30_000);
});
