/**
 * The SQLite store's public surface; the implementation starts at `store.ts`.
 */
export { LATEST_SCHEMA_VERSION } from "./migrations.js";
export { DEFAULT_DB_PATH, openSqliteStore, SqliteSessionStore, type SqliteStoreOptions } from "./store.js";
