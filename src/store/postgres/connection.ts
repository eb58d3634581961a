/**
 * The PostgreSQL store's connections: the pool (every connection in the store's schema, `bigint`
 * columns read as numbers), transactions on it, and which failures mean "the database is
 * unreachable" (a `StoreUnavailableError`: retry later) rather than a bad statement.
 */
import { createHash } from "node:crypto";
import pg from "pg";
import { StoreUnavailableError } from "../shared.js";
import type { PostgresSettings } from "./settings.js";

/** A connection a transaction runs on (or the pool, for single statements). */
export type Queryable = Pick<pg.PoolClient, "query">;

/**
 * The store's one read statement: it runs after every write called before it (read-your-writes),
 * and a connection failure rejects with a `StoreUnavailableError`.
 */
export type Read = <R extends pg.QueryResultRow = pg.QueryResultRow>(sql: string, params?: unknown[]) => Promise<R[]>;

/** `bigint` (int8, oid 20) and `numeric` sums as JS numbers: every value the store keeps fits in 2^53. */
function typeParser(oid: number, format?: string): (value: string) => unknown {
	if (oid === 20 || oid === 1700) return (value: string) => Number(value);
	return pg.types.getTypeParser(oid, format as "text");
}

/** The options of every connection: the URL, the schema as the search path, the timeouts. */
export function clientConfig(settings: PostgresSettings): pg.ClientConfig {
	return {
		connectionString: settings.url.url,
		options: `-c search_path=${settings.schema}`,
		connectionTimeoutMillis: settings.connectTimeoutMs,
		types: { getTypeParser: typeParser } as pg.CustomTypesConfig,
		application_name: "wheelhouse",
	};
}

/** The store's pool. An idle connection that breaks is dropped and reported, never thrown. */
export function createPool(settings: PostgresSettings): pg.Pool {
	const pool = new pg.Pool({ ...clientConfig(settings), max: settings.poolSize, idleTimeoutMillis: 30_000 });
	pool.on("error", (error) =>
		settings.onFlushError(new Error(`an idle PostgreSQL connection failed: ${error.message}`)),
	);
	return pool;
}

/** A single connection outside the pool (the instance-owner lock's). */
export function createClient(settings: PostgresSettings): pg.Client {
	return new pg.Client(clientConfig(settings));
}

/**
 * True when `error` says the database could not be reached or the connection broke (connection
 * refused, reset, timeout, shutdown, too many connections), or the transaction was rolled back to
 * resolve a conflict: the statement did not take effect and a retry may succeed.
 */
export function isConnectionFailure(error: unknown): boolean {
	const code = (error as { code?: unknown } | null)?.code;
	if (typeof code === "string" && /^[0-9A-Z]{5}$/.test(code)) {
		// SQLSTATE classes 08 (connection exception), 53 (insufficient resources), 57 (operator intervention),
		// 40 (transaction rollback: a deadlock or serialization failure with another replica; retrying succeeds).
		return code.startsWith("08") || code.startsWith("53") || code.startsWith("57") || code.startsWith("40");
	}
	if (typeof code === "string") return true; // ECONNREFUSED, ECONNRESET, ETIMEDOUT, ENOTFOUND ...
	const message = error instanceof Error ? error.message : String(error);
	return /timeout|terminated|Connection|ECONN|not queryable|pool/i.test(message);
}

/** `error` as a `StoreUnavailableError` when it is a connection failure; unchanged otherwise. */
export function asUnavailable(error: unknown, what: string, redactedUrl: string): unknown {
	if (!isConnectionFailure(error)) return error;
	return new StoreUnavailableError(
		`PostgreSQL at ${redactedUrl} is unreachable (${what}: ${(error as Error).message ?? String(error)})`,
		{ cause: error },
	);
}

/**
 * `text` as a named (prepared) statement: each connection parses and plans it once, later uses
 * skip that round of work (bench/pg measures reads one at a time). The name is a
 * digest of the text, so the same text always gets the same name and two texts never share one.
 */
export function named(text: string, values: unknown[]): pg.QueryConfig {
	return { name: `w${createHash("sha1").update(text).digest("hex").slice(0, 24)}`, text, values };
}
