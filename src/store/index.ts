/**
 * The store's public surface and the one factory the server calls at startup.
 */
import { createMemoryStore } from "./memory.js";
import { DEFAULT_DB_PATH, openSqliteStore, type SqliteStoreOptions } from "./sqlite.js";
import type { SessionStore } from "./types.js";

export { createMemoryStore, MemorySessionStore } from "./memory.js";
export {
	DEFAULT_DB_PATH,
	LATEST_SCHEMA_VERSION,
	openSqliteStore,
	SqliteSessionStore,
	type SqliteStoreOptions,
} from "./sqlite.js";
export type * from "./types.js";

export interface OpenStoreOptions extends SqliteStoreOptions {
	/** `"sqlite"` (default) or `"memory"`. */
	kind?: "sqlite" | "memory";
}

/**
 * Opens the configured store: SQLite at `path` (default `./data/wheelhouse.db`) unless
 * `kind: "memory"`. Throws a clear Error for a corrupt, foreign or newer database file; the
 * server should let that stop startup. Await `recoverInterrupted(Date.now())` before serving.
 */
export function openStore(options: OpenStoreOptions = {}): SessionStore {
	const { kind = "sqlite", ...rest } = options;
	if (kind === "memory") return createMemoryStore(rest);
	if (kind !== "sqlite") throw new Error(`unknown store kind "${String(kind)}": use "sqlite" or "memory"`);
	return openSqliteStore({ ...rest, path: rest.path ?? DEFAULT_DB_PATH });
}

/**
 * Reads `WHEELHOUSE_STORE` (`sqlite` | `memory`, default `sqlite`) and `WHEELHOUSE_DB` (default
 * `./data/wheelhouse.db`) into `openStore` options; `overrides` win.
 */
export function storeOptionsFromEnv(
	env: NodeJS.ProcessEnv = process.env,
	overrides: OpenStoreOptions = {},
): OpenStoreOptions {
	const kind = env.WHEELHOUSE_STORE === undefined || env.WHEELHOUSE_STORE === "" ? "sqlite" : env.WHEELHOUSE_STORE;
	if (kind !== "sqlite" && kind !== "memory") {
		throw new Error(`WHEELHOUSE_STORE must be "sqlite" or "memory"; got "${kind}"`);
	}
	return { kind, path: env.WHEELHOUSE_DB || DEFAULT_DB_PATH, ...overrides };
}
