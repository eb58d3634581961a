/**
 * `wheelhouse-agents/server`: the HTTP/SSE server as a library. `buildApp` returns a Fastify instance
 * that is not listening yet (call `app.listen`, or `app.inject` in tests); `loadConfig` reads the
 * same environment and config file as `npm start` (`configWarnings` lists what it passes over:
 * `buildApp` logs them); `openStore` opens the session store.
 */

export {
	createMemoryStore,
	type OpenStoreOptions,
	openSqliteStore,
	openStore,
	type SessionStore,
	type SqliteStoreOptions,
} from "../store/index.js";
export {
	CONFIG_VARS,
	ConfigError,
	type ConfigVar,
	type ConfigWarning,
	configWarnings,
	loadConfig,
	redactConfig,
	type ServerConfig,
} from "./config/config.js";
export { type BuildAppOptions, buildApp } from "./http/app.js";
export { ApiError, ERROR_CODES, type ErrorCode, type ErrorEnvelope } from "./http/errors.js";
export type { CompactionMessage } from "./runtime/compaction/types.js";
