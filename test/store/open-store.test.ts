/**
 * The factory the server calls at startup: WHEELHOUSE_STORE / WHEELHOUSE_DB, defaults, and a
 * clear error for a bad value.
 */
import { existsSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { DEFAULT_DB_PATH, openStore, storeOptionsFromEnv } from "../../src/store/index.js";
import { newSession } from "./contract.js";

let dir: string;
beforeEach(() => {
	dir = mkdtempSync(join(tmpdir(), "wheelhouse-open-store-"));
});
afterEach(() => rmSync(dir, { recursive: true, force: true }));

describe("openStore and storeOptionsFromEnv", () => {
	it("defaults to SQLite at ./data/wheelhouse.db", async () => {
		expect(DEFAULT_DB_PATH).toBe("./data/wheelhouse.db");
		expect(storeOptionsFromEnv({})).toEqual({ kind: "sqlite", path: "./data/wheelhouse.db" });
	});

	it("reads WHEELHOUSE_STORE and WHEELHOUSE_DB, and rejects an unknown store kind", async () => {
		expect(storeOptionsFromEnv({ WHEELHOUSE_STORE: "memory" }).kind).toBe("memory");
		expect(storeOptionsFromEnv({ WHEELHOUSE_DB: "/data/x.db" }).path).toBe("/data/x.db");
		expect(() => storeOptionsFromEnv({ WHEELHOUSE_STORE: "mysql" })).toThrow(/"sqlite", "memory" or "postgres"/);
		expect(
			storeOptionsFromEnv({
				WHEELHOUSE_STORE: "postgres",
				WHEELHOUSE_DATABASE_URL: "postgres://u@db:5432/w",
				WHEELHOUSE_DATABASE_SCHEMA: "tenant_a",
				WHEELHOUSE_DATABASE_POOL_SIZE: "4",
			}),
		).toEqual({ kind: "postgres", url: "postgres://u@db:5432/w", schema: "tenant_a", poolSize: 4 });
	});

	it("opens the configured kind; the SQLite file persists across opens", async () => {
		const memory = openStore({ kind: "memory" });
		expect(memory.kind).toBe("memory");
		memory.close();

		const path = join(dir, "sub", "w.db");
		const a = openStore(storeOptionsFromEnv({ WHEELHOUSE_DB: path }));
		expect(a.kind).toBe("sqlite");
		await a.createSession(newSession("s1"));
		await a.close();
		expect(existsSync(path)).toBe(true);
		const b = openStore({ path });
		expect((await b.getSession("s1"))?.id).toBe("s1");
		await b.close();
	});
});
