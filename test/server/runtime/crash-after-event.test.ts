/**
 * Nothing a client was sent is lost by a crash, deltas aside: a real server in a child process
 * (test/server/fixtures/kill-after-event.ts) streams an answer to its client and is SIGKILLed as
 * soon as the client has read the answer's first delta; the store is then reopened, and every
 * event the client read (its `message_start` included: a streaming message's first event) must be
 * in the log, with the same id, type and data. On SQLite and on PostgreSQL.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { openPostgresStore } from "../../../src/store/postgres/index.js";
import { openSqliteStore } from "../../../src/store/sqlite/index.js";
import type { SessionStore, StoredEvent } from "../../../src/store/types.js";
import { runKilledFixture } from "../../helpers/killed-fixture.js";
import { havePostgres, NO_POSTGRES, PG_URL, testSchemas } from "../../helpers/postgres.js";

/**
 * The flush timer would write buffered events on its own after this long; a long interval keeps
 * it out of the test, so what is on disk is what the commits before each SSE write put there (the
 * default 50 ms has the same window, only shorter).
 */
const FLUSH_MS = "60000";

const pg = await havePostgres();
const schemas = testSchemas("crash-after-event");
const dirs: string[] = [];
const stores: SessionStore[] = [];
afterEach(async () => {
	for (const s of stores.splice(0)) await s.close();
	for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

interface Seen {
	sessionId: string;
	seen: { id: number; type: string; data: string }[];
}

/** Runs the fixture with `args`; resolves with what its client read before the process was killed. */
async function runAndKill(args: string[]): Promise<Seen> {
	const out = await runKilledFixture("kill-after-event.ts", args);
	return JSON.parse(out.split("\n")[0]!) as Seen;
}

/** Every event the client read is in the reopened store's log, as it was sent. */
async function expectAllOnDisk(store: SessionStore, { sessionId, seen }: Seen): Promise<void> {
	// The client read the answer's start: the user's message, then the assistant's `message_start`.
	expect(seen.filter((e) => e.type === "message_start")).toHaveLength(2);
	expect(seen.at(-1)?.type).toBe("message_start");
	const logged = new Map<number, StoredEvent>();
	for (const e of await store.readEvents(sessionId, 0)) logged.set(e.id, e);
	for (const e of seen) {
		expect(logged.get(e.id), `event ${e.id} (${e.type}) was sent to the client`).toMatchObject({
			type: e.type,
			data: e.data,
		});
	}
}

describe("a crash right after a client read an event", () => {
	it.each([
		["SQLite", "sqlite"],
		['SQLite with eventWriter: "thread"', "sqlite-thread"],
	])(
		"%s: every event the client read (deltas aside) is on disk",
		async (_name, kind) => {
			const dir = mkdtempSync(path.join(tmpdir(), "wh-crash-after-event-"));
			dirs.push(dir);
			const db = path.join(dir, "wheelhouse.db");
			const seen = await runAndKill([kind, db, FLUSH_MS]);
			const store = openSqliteStore({ path: db });
			stores.push(store);
			await expectAllOnDisk(store, seen);
		},
		30_000,
	);

	it.skipIf(!pg)(
		`PostgreSQL: every event the client read (deltas aside) is committed${pg ? "" : ` (${NO_POSTGRES})`}`,
		async () => {
			const schema = schemas.next();
			const seen = await runAndKill(["postgres", PG_URL, schema, FLUSH_MS]);
			// The killed process's connections (its instance-owner lock among them) close with it.
			const store = await openPostgresStore({ url: PG_URL, schema });
			stores.push(store);
			await expectAllOnDisk(store, seen);
		},
		30_000,
	);
});
