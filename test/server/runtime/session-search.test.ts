/**
 * `GET /v1/sessions` filtered over real HTTP (memory and SQLite stores): by `metadata.<key>`,
 * `status`, `profile` and update time, 2 per page with the cursor; bad filters are 400 naming the
 * parameter.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { createMemoryStore } from "../../../src/store/memory.js";
import { openSqliteStore } from "../../../src/store/sqlite/index.js";
import type { SessionStore } from "../../../src/store/types.js";
import { words } from "../../helpers/cluster.js";
import { startServer, type TestServer } from "../../helpers/server.js";

let server: TestServer | undefined;
const cleanups: (() => void)[] = [];
afterEach(async () => {
	await server?.close();
	server = undefined;
	for (const c of cleanups.splice(0)) c();
});

const stores: [string, () => SessionStore][] = [
	["memory", () => createMemoryStore()],
	[
		"sqlite",
		() => {
			const dir = mkdtempSync(join(tmpdir(), "wh-search-"));
			const store = openSqliteStore({ path: join(dir, "db.sqlite") });
			cleanups.push(() => rmSync(dir, { recursive: true, force: true }));
			cleanups.unshift(() => void store.close());
			return store;
		},
	],
];

describe.each(stores)("filtered session list (%s)", (_name, makeStore) => {
	it("filters by metadata, status, profile and update time, page by page", async () => {
		server = await startServer({
			store: makeStore(),
			config: { fauxDelayMs: 20, profiles: { helper: { model: "faux/echo", systemPrompt: "help" } } },
		});
		const ids: string[] = [];
		for (let i = 0; i < 6; i++) {
			const body = {
				metadata: { team: i % 2 ? "red" : "blue", n: String(i) },
				...(i === 4 ? { profile: "helper" } : {}),
			};
			const res = await server.request("POST", "/v1/sessions", { body });
			expect(res.status).toBe(201);
			ids.push(res.body.id);
		}
		const list = async (query: string) => {
			const res = await server!.request("GET", `/v1/sessions?${query}`);
			expect(res.status, JSON.stringify(res.body)).toBe(200);
			return res.body as { sessions: { id: string }[]; nextCursor?: string };
		};
		const red = await list("metadata.team=red&limit=2");
		expect(red.sessions.map((s) => s.id)).toEqual([ids[1], ids[3]]);
		const red2 = await list(`metadata.team=red&limit=2&cursor=${red.nextCursor}`);
		expect(red2.sessions.map((s) => s.id)).toEqual([ids[5]]);
		expect(red2.nextCursor).toBeUndefined();
		expect((await list("metadata.team=blue&metadata.n=2")).sessions.map((s) => s.id)).toEqual([ids[2]]);
		expect((await list("profile=helper")).sessions.map((s) => s.id)).toEqual([ids[4]]);

		const run = await server.request("POST", `/v1/sessions/${ids[3]}/prompt`, { body: { message: words(200) } });
		expect(run.status).toBe(202);
		expect((await list("status=running")).sessions.map((s) => s.id)).toEqual([ids[3]]);
		expect((await list("status=running&metadata.team=blue")).sessions).toEqual([]);

		const before = Date.now();
		await new Promise((r) => setTimeout(r, 5));
		await server.request("PATCH", `/v1/sessions/${ids[0]}`, { body: { systemPrompt: "changed" } });
		expect((await list(`updatedAfter=${before}`)).sessions.map((s) => s.id)).toEqual([ids[0]]);
		expect((await list(`updatedBefore=${before}&metadata.team=blue`)).sessions.map((s) => s.id)).toEqual([
			ids[2],
			ids[4],
		]);
	});

	it("refuses bad filters naming the parameter", async () => {
		server = await startServer({ store: makeStore() });
		const bad = await server.request("GET", "/v1/sessions?status=sleeping");
		expect(bad.status).toBe(400);
		expect(bad.body.error.message).toMatch(/status/);
		const unknown = await server.request("GET", "/v1/sessions?color=red");
		expect(unknown.status).toBe(400);
		const many = Array.from({ length: 9 }, (_, i) => `metadata.k${i}=v`).join("&");
		const tooMany = await server.request("GET", `/v1/sessions?${many}`);
		expect(tooMany.status).toBe(400);
		expect(tooMany.body.error.message).toMatch(/at most 8/);
	});
});
