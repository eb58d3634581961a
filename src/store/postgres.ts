/**
 * The PostgreSQL store's public surface; the implementation is in `postgres/` (`postgres/store.ts` first).
 */
export { LATEST_PG_SCHEMA_VERSION } from "./postgres/migrations.js";
export { DEFAULT_LEASE_TTL_MS, DEFAULT_POOL_SIZE, DEFAULT_SCHEMA } from "./postgres/settings.js";
export { openPostgresStore, PostgresSessionStore, type PostgresStoreOptions } from "./postgres/store.js";
export { parseDatabaseUrl } from "./postgres/url.js";
