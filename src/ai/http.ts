import { Pool } from "undici";

/**
 * Connection reuse for every provider: one undici `Pool` per origin, with keep-alive.
 *
 * A model call is one long streaming request, and an agent makes many of them in a row to the same
 * origin; reusing the TLS connection saves a handshake (often 100+ ms) per turn. Pools are created
 * lazily and kept for the life of the process; `closeHttpPools()` ends them (tests, shutdown).
 *
 * Timeouts are not configured here: the provider driver runs its own idle timer (`timeoutMs`), so
 * undici's `headersTimeout`/`bodyTimeout` are disabled per request.
 */

/** How long an idle keep-alive connection stays open (servers usually close earlier and say so). */
const KEEP_ALIVE_TIMEOUT_MS = 30_000;
/** Upper bound when the server's keep-alive hint is larger. */
const KEEP_ALIVE_MAX_TIMEOUT_MS = 600_000;

const pools = new Map<string, Pool>();

/**
 * The pool for `url`'s origin (`protocol//host:port`), created on first use.
 *
 * Throws a `TypeError` when `url` is not an absolute URL (caller misuse: a model without `baseUrl`).
 */
export function getHttpPool(url: string | URL): Pool {
	const origin = typeof url === "string" ? new URL(url).origin : url.origin;
	let pool = pools.get(origin);
	if (!pool || pool.closed || pool.destroyed) {
		pool = new Pool(origin, {
			keepAliveTimeout: KEEP_ALIVE_TIMEOUT_MS,
			keepAliveMaxTimeout: KEEP_ALIVE_MAX_TIMEOUT_MS,
			// Streams of reasoning models can be silent for minutes; the driver's idle timer decides.
			headersTimeout: 0,
			bodyTimeout: 0,
		});
		pools.set(origin, pool);
	}
	return pool;
}

/** Number of origins with an open pool (for diagnostics and tests). */
export function httpPoolCount(): number {
	return pools.size;
}

/** Closes every pool gracefully (in-flight requests finish first). Safe to call more than once. */
export async function closeHttpPools(): Promise<void> {
	const all = [...pools.values()];
	pools.clear();
	await Promise.all(all.map((pool) => pool.close().catch(() => undefined)));
}
