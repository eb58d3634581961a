/**
 * The store's public surface and the one factory the server calls at startup.
 */
import { createMemoryStore } from "./memory.js";
import { PostgresSessionStore, type PostgresStoreOptions } from "./postgres/index.js";
import { DEFAULT_DB_PATH, openSqliteStore, type SqliteStoreOptions } from "./sqlite/index.js";
import type { SessionStore } from "./types.js";

export { createMemoryStore } from "./memory.js";
export {
	openPostgresStore,
	PostgresSessionStore,
	type PostgresStoreOptions,
	parseDatabaseUrl,
} from "./postgres/index.js";
export { isLeaseStore, isStoreUnavailable } from "./shared.js";
export { DEFAULT_DB_PATH, openSqliteStore, type SqliteStoreOptions } from "./sqlite/index.js";
export type * from "./types.js";
export { type Caller, canSee, type Owned } from "./visibility.js";

export interface OpenStoreOptions
	extends SqliteStoreOptions,
		Partial<Omit<PostgresStoreOptions, keyof SqliteStoreOptions>> {
	/** `"sqlite"` (default), `"memory"` or `"postgres"` (needs `url`). */
	kind?: "sqlite" | "memory" | "postgres";
	/** PostgreSQL: where the store's timer-driven commits report failures (default: a process warning). */
	onFlushError?: (error: Error) => void;
}

/**
 * Opens the configured store: SQLite at `path` (default `./data/wheelhouse.db`) unless
 * `kind: "memory"` or `kind: "postgres"`. SQLite throws a clear Error for a corrupt, foreign or
 * newer database file; PostgreSQL checks its options here and connects in the background, and its
 * first asynchronous call rejects if that failed (await `recoverInterrupted` before serving: the
 * server should let either stop startup).
 */
export function openStore(options: OpenStoreOptions = {}): SessionStore {
	const { kind = "sqlite", ...rest } = options;
	if (kind === "memory") return createMemoryStore(rest);
	if (kind === "postgres") {
		if (rest.url === undefined) throw new TypeError('openStore: kind "postgres" needs a url (postgres://...)');
		return new PostgresSessionStore({ ...rest, url: rest.url });
	}
	if (kind !== "sqlite") throw new Error(`unknown store kind "${String(kind)}": use "sqlite", "memory" or "postgres"`);
	return openSqliteStore({ ...rest, path: rest.path ?? DEFAULT_DB_PATH });
}
