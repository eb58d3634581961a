/**
 * The SQLite store's public surface; the implementation is in `sqlite/` (`sqlite/store.ts` first).
 */
export { LATEST_SCHEMA_VERSION } from "./sqlite/migrations.js";
export { DEFAULT_DB_PATH, openSqliteStore, SqliteSessionStore, type SqliteStoreOptions } from "./sqlite/store.js";
