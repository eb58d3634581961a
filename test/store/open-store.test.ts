/**
 * The factory the server calls at startup (`openStore`): the SQLite default, each kind, and a
 * clear error for a bad one.
 */
import { existsSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { DEFAULT_DB_PATH, openStore } from "../../src/store/index.js";
import { newSession } from "./contract.js";

let dir: string;
beforeEach(() => {
	dir = mkdtempSync(join(tmpdir(), "wheelhouse-open-store-"));
});
afterEach(() => rmSync(dir, { recursive: true, force: true }));

describe("openStore", () => {
	it("defaults to SQLite at ./data/wheelhouse.db and rejects an unknown store kind", async () => {
		expect(DEFAULT_DB_PATH).toBe("./data/wheelhouse.db");
		expect(() => openStore({ kind: "mysql" as never })).toThrow(/"sqlite", "memory" or "postgres"/);
	});

	it("opens the configured kind; the SQLite file persists across opens", async () => {
		const memory = openStore({ kind: "memory" });
		expect(memory.kind).toBe("memory");
		memory.close();

		const path = join(dir, "sub", "w.db");
		const a = openStore({ path });
		expect(a.kind).toBe("sqlite");
		await a.createSession(newSession("s1"));
		await a.close();
		expect(existsSync(path)).toBe(true);
		const b = openStore({ path });
		expect((await b.getSession("s1"))?.id).toBe("s1");
		await b.close();
	});
});
