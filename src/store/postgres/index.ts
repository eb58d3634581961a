/**
 * The PostgreSQL store's public surface; the implementation starts at `store.ts`.
 */
export { LATEST_PG_SCHEMA_VERSION } from "./migrations.js";
export { DEFAULT_LEASE_TTL_MS, DEFAULT_POOL_SIZE, DEFAULT_SCHEMA } from "./settings.js";
export { openPostgresStore, PostgresSessionStore, type PostgresStoreOptions } from "./store.js";
export { parseDatabaseUrl } from "./url.js";
