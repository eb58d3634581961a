/**
 * The PostgreSQL store's options, each checked (misuse throws with the allowed range) before
 * anything connects.
 */
import { checkLimit } from "../shared.js";
import { type EngineSettings, resolveEngineSettings } from "../sql/settings.js";
import type { StoreOptions } from "../types.js";
import { checkSchemaName, type DatabaseUrl, parseDatabaseUrl } from "./url.js";

export const DEFAULT_SCHEMA = "public";
export const DEFAULT_POOL_SIZE = 10;
export const DEFAULT_LEASE_TTL_MS = 15_000;

export interface PostgresStoreOptions extends StoreOptions {
	/** `postgres://user:password@host:5432/database` (required). */
	url: string;
	/** The schema the store's tables live in; created if missing. Default `public`. */
	schema?: string;
	/** Connections in the pool (reads, commits, lease renewals). Default 10. */
	poolSize?: number;
	/**
	 * Several replicas share the database (cluster mode): no instance-owner lock, and a session's
	 * lease is taken from another replica only once it expired. Default false: this process takes
	 * the instance-owner lock of the schema (a second process on it stops at startup) and owns
	 * every session's lease.
	 */
	cluster?: boolean;
	/** How long a session lease lasts without renewal; renewed every third of it. Default 15,000 ms. */
	leaseTtlMs?: number;
	/** Longest time a buffered event waits before it is written. Default 50 ms. */
	flushIntervalMs?: number;
	/**
	 * Longest time a barrier write waits for a `sync()` before committing on its own. Default 0: at
	 * the end of the event-loop turn it was made in (or after the commit in flight).
	 */
	syncDelayMs?: number;
	/** A buffer of this many events is written at once. Default 2,000. */
	maxBatchEvents?: number;
	/** After a failed commit (database unreachable), the next try waits this long. Default 1,000 ms. */
	retryDelayMs?: number;
	/** Connecting gives up after this long. Default 5,000 ms. */
	connectTimeoutMs?: number;
	/** Called when a commit that no caller awaits fails (its writes stay queued), and on lost leases. Default: a process warning. */
	onFlushError?: (error: Error) => void;
}

export interface PostgresSettings extends EngineSettings {
	url: DatabaseUrl;
	schema: string;
	poolSize: number;
	cluster: boolean;
	leaseTtlMs: number;
	retryDelayMs: number;
	connectTimeoutMs: number;
	onFlushError: (error: Error) => void;
}

export function resolveSettings(options: PostgresStoreOptions): PostgresSettings {
	if (typeof options.url !== "string") {
		throw new TypeError("the PostgreSQL store needs a url: postgres://user:password@host:5432/database");
	}
	const url = parseDatabaseUrl(options.url);
	if (typeof url === "string") throw new RangeError(url);
	const schema = options.schema ?? DEFAULT_SCHEMA;
	const badSchema = checkSchemaName(schema);
	if (badSchema) throw new RangeError(badSchema);
	return {
		url,
		schema,
		poolSize: checkLimit("poolSize", options.poolSize, DEFAULT_POOL_SIZE, 1, 1000),
		cluster: options.cluster === true,
		leaseTtlMs: checkLimit("leaseTtlMs", options.leaseTtlMs, DEFAULT_LEASE_TTL_MS, 30, 3_600_000),
		...resolveEngineSettings(options),
		retryDelayMs: checkLimit("retryDelayMs", options.retryDelayMs, 1000, 1, 600_000),
		connectTimeoutMs: checkLimit("connectTimeoutMs", options.connectTimeoutMs, 5000, 1, 600_000),
		onFlushError:
			options.onFlushError ??
			((error) => process.emitWarning(`session store: ${error.message}`, "WheelhouseStoreWarning")),
	};
}
