import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll } from "vitest";
import { openSqliteStore } from "../../src/store/sqlite/index.js";
import { runStoreContract } from "./contract.js";
import { runWebhookOutboxContract } from "./contract-webhooks.js";

const dir = mkdtempSync(join(tmpdir(), "wheelhouse-store-contract-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));
let n = 0;

// A fresh file per store, in both event-writer modes. flushIntervalMs 0 keeps the timer path exercised.
runStoreContract("sqlite, inline writes (default)", (options) =>
	openSqliteStore({ ...options, path: join(dir, `db-${n++}.db`), flushIntervalMs: 0 }),
);
runWebhookOutboxContract("sqlite, inline writes (default)", (options) =>
	openSqliteStore({ ...options, path: join(dir, `db-${n++}.db`), flushIntervalMs: 0 }),
);
runWebhookOutboxContract("sqlite, writer thread", (options) =>
	openSqliteStore({ ...options, path: join(dir, `db-${n++}.db`), flushIntervalMs: 0, eventWriter: "thread" }),
);
runStoreContract("sqlite, writer thread", (options) =>
	openSqliteStore({ ...options, path: join(dir, `db-${n++}.db`), flushIntervalMs: 0, eventWriter: "thread" }),
);
