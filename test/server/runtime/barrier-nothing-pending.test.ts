/**
 * The HTTP responses' durability barrier (the store's `sync()`, awaited before a response leaves):
 * with nothing queued to commit, a response goes at once, without a call to `sync()`; with a run
 * start queued, the response waits for its commit. The real SQLite store, counted.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { openSqliteStore } from "../../../src/store/sqlite/index.js";
import { startServer, type TestServer } from "../../helpers/server.js";

let server: TestServer | undefined;
let dir: string | undefined;
afterEach(async () => {
	await server?.close();
	server = undefined;
	if (dir) rmSync(dir, { recursive: true, force: true });
	dir = undefined;
});

describe("the response barrier", () => {
	it("lets responses go without a sync() when nothing waits to be committed, and syncs when a write does", async () => {
		dir = mkdtempSync(join(tmpdir(), "wheelhouse-barrier-"));
		const store = openSqliteStore({ path: join(dir, "w.db"), syncDelayMs: 60_000 });
		let syncs = 0;
		const sync = store.sync.bind(store);
		store.sync = () => {
			syncs++;
			return sync();
		};
		server = await startServer({ store });
		const id = (await server.request("POST", "/v1/sessions", { body: { model: "faux/echo" } })).body.id as string;
		syncs = 0;
		for (let i = 0; i < 5; i++) expect((await server.request("GET", `/v1/sessions/${id}`)).status).toBe(200);
		expect(syncs).toBe(0);
		// A prompt answered with 202: its run start is queued, and the response waits for its commit.
		const accepted = await server.request("POST", `/v1/sessions/${id}/prompt`, {
			body: { message: "hi" },
			headers: { prefer: "respond-async" },
		});
		expect(accepted.status).toBe(202);
		expect(syncs).toBeGreaterThan(0);
	});
});
