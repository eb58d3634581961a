/**
 * The store's public surface and the one factory the server calls at startup.
 */
import { createMemoryStore } from "./memory.js";
import { PostgresSessionStore, type PostgresStoreOptions } from "./postgres.js";
import { DEFAULT_DB_PATH, openSqliteStore, type SqliteStoreOptions } from "./sqlite.js";
import type { SessionStore } from "./types.js";

export { createMemoryStore, MemorySessionStore } from "./memory.js";
export {
	DEFAULT_LEASE_TTL_MS,
	DEFAULT_POOL_SIZE,
	DEFAULT_SCHEMA,
	LATEST_PG_SCHEMA_VERSION,
	openPostgresStore,
	PostgresSessionStore,
	type PostgresStoreOptions,
	parseDatabaseUrl,
} from "./postgres.js";
export { isLeaseStore, isStoreUnavailable, StoreUnavailableError } from "./shared.js";
export {
	DEFAULT_DB_PATH,
	LATEST_SCHEMA_VERSION,
	openSqliteStore,
	SqliteSessionStore,
	type SqliteStoreOptions,
} from "./sqlite.js";
export type * from "./types.js";

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

/**
 * Reads `WHEELHOUSE_STORE` (`sqlite` | `memory` | `postgres`, default `sqlite`), `WHEELHOUSE_DB`
 * (default `./data/wheelhouse.db`) and, for PostgreSQL, `WHEELHOUSE_DATABASE_URL`,
 * `WHEELHOUSE_DATABASE_SCHEMA` and `WHEELHOUSE_DATABASE_POOL_SIZE` into `openStore` options;
 * `overrides` win.
 */
export function storeOptionsFromEnv(
	env: NodeJS.ProcessEnv = process.env,
	overrides: OpenStoreOptions = {},
): OpenStoreOptions {
	const kind = env.WHEELHOUSE_STORE === undefined || env.WHEELHOUSE_STORE === "" ? "sqlite" : env.WHEELHOUSE_STORE;
	if (kind !== "sqlite" && kind !== "memory" && kind !== "postgres") {
		throw new Error(`WHEELHOUSE_STORE must be "sqlite", "memory" or "postgres"; got "${kind}"`);
	}
	if (kind !== "postgres") return { kind, path: env.WHEELHOUSE_DB || DEFAULT_DB_PATH, ...overrides };
	const pool = env.WHEELHOUSE_DATABASE_POOL_SIZE;
	return {
		kind,
		...(env.WHEELHOUSE_DATABASE_URL ? { url: env.WHEELHOUSE_DATABASE_URL } : {}),
		...(env.WHEELHOUSE_DATABASE_SCHEMA ? { schema: env.WHEELHOUSE_DATABASE_SCHEMA } : {}),
		...(pool ? { poolSize: Number(pool) } : {}),
		...overrides,
	};
}
