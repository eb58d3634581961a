/**
 * Connection reuse for every provider, and the standard proxy variables.
 *
 * Without a proxy: one undici `Pool` per origin, with keep-alive. A model call is one long
 * streaming request, and an agent makes many of them in a row to the same origin; reusing the TLS
 * connection saves a handshake (often 100+ ms) per turn. Pools are created lazily and kept for the
 * life of the process; `closeHttpPools()` ends them (tests, shutdown).
 *
 * With a proxy (`HTTPS_PROXY` / `HTTP_PROXY`, either case, and `NO_PROXY`): one undici
 * `EnvHttpProxyAgent` for all origins, with the same keep-alive and timeout settings. See
 * {@link getHttpDispatcher} for the rules.
 *
 * Timeouts are not configured here: the provider driver runs its own idle timer (`timeoutMs`), so
 * undici's `headersTimeout`/`bodyTimeout` are disabled on every pool.
 *
 * undici itself is loaded by the first request ({@link undici}), not with this module: a server
 * that only runs the stand-in model, or sits idle, never needs it, and it is one of the largest
 * libraries the server has.
 */
import { createRequire } from "node:module";
import type { Dispatcher, EnvHttpProxyAgent, Pool } from "undici";

const require = createRequire(import.meta.url);

/**
 * The undici module, loaded on first use (synchronously: it is CommonJS, and `require` returns the
 * same instance an `import` of it would). Every outgoing HTTP request of the server goes through it.
 */
export function undici(): typeof import("undici") {
	return require("undici");
}

/** How long an idle keep-alive connection stays open (servers usually close earlier and say so). */
const KEEP_ALIVE_TIMEOUT_MS = 30_000;
/** Upper bound when the server's keep-alive hint is larger. */
const KEEP_ALIVE_MAX_TIMEOUT_MS = 600_000;

const POOL_OPTIONS = {
	keepAliveTimeout: KEEP_ALIVE_TIMEOUT_MS,
	keepAliveMaxTimeout: KEEP_ALIVE_MAX_TIMEOUT_MS,
	// Streams of reasoning models can be silent for minutes; the driver's idle timer decides.
	headersTimeout: 0,
	bodyTimeout: 0,
} as const;

const pools = new Map<string, Pool>();

/**
 * The direct (unproxied) pool for `url`'s origin (`protocol//host:port`), created on first use.
 * Providers call {@link getHttpDispatcher}, which returns this pool when no proxy is configured.
 *
 * Throws a `TypeError` when `url` is not an absolute URL (caller misuse: a model without `baseUrl`).
 */
export function getHttpPool(url: string | URL): Pool {
	const origin = typeof url === "string" ? new URL(url).origin : url.origin;
	let pool = pools.get(origin);
	if (!pool || pool.closed || pool.destroyed) {
		pool = new (undici().Pool)(origin, POOL_OPTIONS);
		pools.set(origin, pool);
	}
	return pool;
}

/** Number of origins with an open direct pool (for diagnostics and tests). */
export function httpPoolCount(): number {
	return pools.size;
}

/** Closes every pool and the proxy dispatcher gracefully (in-flight requests finish first). Safe to call more than once. */
export async function closeHttpPools(): Promise<void> {
	const all: Dispatcher[] = [...pools.values()];
	pools.clear();
	if (proxy?.agent) all.push(proxy.agent);
	proxy = undefined;
	await Promise.all(all.map((dispatcher) => dispatcher.close().catch(() => undefined)));
}

// ---- proxy ----

/** A proxy setting read from the environment: the variable it came from and its value. */
interface EnvSetting {
	name: string;
	value: string;
}

/** The proxy configuration found in an environment (see {@link readHttpProxyEnv}). */
export interface HttpProxyConfig {
	/** Proxy for `http://` targets, and for `https://` ones when there is no `httpsProxy` (normalised URL). */
	httpProxy?: string;
	/** Proxy for `https://` targets (normalised URL). */
	httpsProxy?: string;
	/** Hosts reached directly: comma- or space-separated `host`, `.domain`, `*.domain`, `host:port`, or `*`. */
	noProxy: string;
}

/** A proxy variable that does not hold a usable proxy URL. The message names the variable, never a password. */
export class HttpProxyConfigError extends Error {
	constructor(
		readonly variable: string,
		message: string,
	) {
		super(message);
		this.name = "HttpProxyConfigError";
	}
}

/** The proxy dispatcher for one configuration (`key`), or the error that configuration gives. */
let proxy: { key: string; agent?: EnvHttpProxyAgent; error?: HttpProxyConfigError } | undefined;

/**
 * The dispatcher for a provider request to `url`, honouring the standard proxy variables in `env`
 * (default `process.env`; read on every call, so a change takes effect on the next request):
 *
 * - `https_proxy` / `HTTPS_PROXY`: proxy for `https://` targets (CONNECT tunnel);
 * - `http_proxy` / `HTTP_PROXY`: proxy for `http://` targets (plain forward proxying, absolute-URI
 *   requests), and for `https://` targets too when no HTTPS proxy is set;
 * - `no_proxy` / `NO_PROXY`: hosts reached directly, matched on the URL's host name as written (no
 *   DNS: `localhost` does not cover `127.0.0.1`; loopback is not exempt by itself); `*` = all.
 *
 * Lower case wins over upper case; empty values count as unset. A value without a scheme
 * (`proxy.corp:3128`) means `http://`; credentials in the URL (`http://user:pass@host:port`) are
 * sent as `Proxy-Authorization: Basic`.
 *
 * Without `HTTP(S)_PROXY` this is {@link getHttpPool} — the unproxied path of old, unchanged. With
 * one, it is a single undici `EnvHttpProxyAgent` shared by all origins (keep-alive pools to the
 * proxy and to the `NO_PROXY` hosts), rebuilt only when the variables change.
 *
 * Throws an {@link HttpProxyConfigError} naming the variable when a proxy URL is invalid (the
 * provider driver turns it into the call's `error` event).
 */
export function getHttpDispatcher(url: string | URL, env: NodeJS.ProcessEnv = process.env): Dispatcher {
	const http = readSetting(env, "http_proxy", "HTTP_PROXY");
	const https = readSetting(env, "https_proxy", "HTTPS_PROXY");
	// The common case: four environment reads on top of the pool look-up, nothing parsed.
	if (!http && !https) {
		if (proxy) dropProxy();
		return getHttpPool(url);
	}
	const noProxy = readSetting(env, "no_proxy", "NO_PROXY");
	const key = [http, https, noProxy].map((setting) => (setting ? `${setting.name}=${setting.value}` : "")).join("\n");
	const current = proxy;
	if (current?.key === key) {
		if (current.error) throw current.error;
		if (!isClosed(current.agent!)) return current.agent!;
	}
	// The variables changed (or the agent was closed): in-flight requests on the old agent finish.
	dropProxy();
	try {
		const config = toConfig(http, https, noProxy);
		proxy = { key, agent: createProxyAgent(config) };
		return proxy.agent!;
	} catch (error) {
		const failure =
			error instanceof HttpProxyConfigError
				? error
				: new HttpProxyConfigError(
						https?.name ?? http!.name,
						`Cannot use the proxy set in ${[http?.name, https?.name].filter(Boolean).join(" / ")}: ${error instanceof Error ? error.message : String(error)}`,
					);
		proxy = { key, error: failure };
		throw failure;
	}
}

/**
 * The proxy configuration in `env` (default `process.env`), or undefined when neither
 * `HTTP_PROXY` nor `HTTPS_PROXY` (either case) is set. Throws an {@link HttpProxyConfigError}
 * naming the variable when a proxy URL is invalid.
 */
export function readHttpProxyEnv(env: NodeJS.ProcessEnv = process.env): HttpProxyConfig | undefined {
	const http = readSetting(env, "http_proxy", "HTTP_PROXY");
	const https = readSetting(env, "https_proxy", "HTTPS_PROXY");
	if (!http && !https) return undefined;
	return toConfig(http, https, readSetting(env, "no_proxy", "NO_PROXY"));
}

/** Forgets the proxy dispatcher, closing it gracefully (its in-flight requests finish). */
function dropProxy(): void {
	const agent = proxy?.agent;
	proxy = undefined;
	if (agent && !isClosed(agent)) void agent.close().catch(() => undefined);
}

/** The first non-empty of `lower`, `upper` in `env` (trimmed), with its name. */
function readSetting(env: NodeJS.ProcessEnv, lower: string, upper: string): EnvSetting | undefined {
	const lowerValue = env[lower]?.trim();
	if (lowerValue) return { name: lower, value: lowerValue };
	const upperValue = env[upper]?.trim();
	return upperValue ? { name: upper, value: upperValue } : undefined;
}

function toConfig(
	http: EnvSetting | undefined,
	https: EnvSetting | undefined,
	noProxy: EnvSetting | undefined,
): HttpProxyConfig {
	return {
		httpProxy: http ? parseProxyUrl(http) : undefined,
		httpsProxy: https ? parseProxyUrl(https) : undefined,
		noProxy: noProxy?.value ?? "",
	};
}

const HAS_SCHEME = /^[a-z][a-z\d+.-]*:\/\//i;

/** Validates one proxy variable and returns its URL without path, query or fragment. */
function parseProxyUrl({ name, value }: EnvSetting): string {
	const expected = "expected http://[user:password@]host:port or https://...";
	let url: URL;
	try {
		url = new URL(HAS_SCHEME.test(value) ? value : `http://${value}`);
	} catch {
		throw new HttpProxyConfigError(name, `Invalid proxy URL in ${name} ("${redact(value)}"): ${expected}`);
	}
	if (url.protocol !== "http:" && url.protocol !== "https:") {
		throw new HttpProxyConfigError(
			name,
			`Unsupported proxy scheme "${url.protocol}" in ${name} ("${redact(value)}"): ${expected}`,
		);
	}
	if (!url.hostname) {
		throw new HttpProxyConfigError(name, `Invalid proxy URL in ${name} ("${redact(value)}"): no host; ${expected}`);
	}
	url.pathname = "/";
	url.search = "";
	url.hash = "";
	return url.href;
}

/** The value with any `user:password@` part masked, so an error never shows a password. */
function redact(value: string): string {
	return value.replace(/^([a-z][a-z\d+.-]*:\/\/)?.*@/is, "$1***@");
}

function createProxyAgent(config: HttpProxyConfig): EnvHttpProxyAgent {
	const { EnvHttpProxyAgent, Pool } = undici();
	return new EnvHttpProxyAgent({
		// Always explicit (`""` = none), so undici never falls back to process.env itself.
		httpProxy: config.httpProxy ?? "",
		httpsProxy: config.httpsProxy ?? "",
		noProxy: config.noProxy,
		...POOL_OPTIONS,
		// http:// targets through an http:// proxy as absolute-URI requests (as curl does) rather than
		// a CONNECT tunnel, which many forward proxies refuse for port 80. https:// targets always tunnel.
		proxyTunnel: false,
		// Every pool undici creates inside (to NO_PROXY origins, through tunnels, to the proxy itself)
		// gets the keep-alive and timeout settings of the direct pools.
		factory: (origin, options) => new Pool(origin, { ...options, ...POOL_OPTIONS }),
	});
}

function isClosed(dispatcher: Dispatcher): boolean {
	const state = dispatcher as unknown as { closed?: boolean; destroyed?: boolean };
	return !!(state.closed || state.destroyed);
}
