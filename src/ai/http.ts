/**
 * The dispatcher of every provider request: one undici `EnvHttpProxyAgent`, which pools
 * keep-alive connections per origin (a model call is one long streaming request, and an agent
 * makes many in a row to the same origin; reusing the TLS connection saves a handshake per turn)
 * and sends them through the proxy the standard variables name. See {@link getHttpDispatcher}.
 *
 * Timeouts are not configured here: the provider driver runs its own idle timer (`timeoutMs`), so
 * undici's `headersTimeout`/`bodyTimeout` are disabled.
 *
 * undici itself is loaded by the first request ({@link undici}), not with this module: a server
 * that only runs the stand-in model, or sits idle, never needs it, and it is one of the largest
 * libraries the server has.
 */
import { createRequire } from "node:module";
import type { Dispatcher, EnvHttpProxyAgent } from "undici";

const require = createRequire(import.meta.url);

/**
 * The undici module, loaded on first use (synchronously: it is CommonJS, and `require` returns the
 * same instance an `import` of it would). Every outgoing HTTP request of the server goes through it.
 */
export function undici(): typeof import("undici") {
	return require("undici");
}

const AGENT_OPTIONS = {
	// How long an idle keep-alive connection stays open (servers usually close earlier and say so),
	// and the bound on a server's longer hint.
	keepAliveTimeout: 30_000,
	keepAliveMaxTimeout: 600_000,
	// Streams of reasoning models can be silent for minutes; the driver's idle timer decides.
	headersTimeout: 0,
	bodyTimeout: 0,
} as const;

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

/** The dispatcher for one proxy configuration (`key`), or the error that configuration gives. */
let current: { key: string; agent?: EnvHttpProxyAgent; error?: HttpProxyConfigError } | undefined;

/**
 * The dispatcher for a provider request, honouring the standard proxy variables in `env`
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
 * One `EnvHttpProxyAgent` serves every origin; it is rebuilt only when the variables change (the
 * old one's in-flight requests finish).
 *
 * Throws an {@link HttpProxyConfigError} naming the variable when a proxy URL is invalid (the
 * provider driver turns it into the call's `error` event).
 */
export function getHttpDispatcher(_url?: string | URL, env: NodeJS.ProcessEnv = process.env): Dispatcher {
	const http = readSetting(env, "http_proxy", "HTTP_PROXY");
	const https = readSetting(env, "https_proxy", "HTTPS_PROXY");
	// NO_PROXY matters only with a proxy to bypass.
	const noProxy = http || https ? readSetting(env, "no_proxy", "NO_PROXY") : undefined;
	const key = [http, https, noProxy].map((setting) => (setting ? `${setting.name}=${setting.value}` : "")).join("\n");
	if (current?.key === key) {
		if (current.error) throw current.error;
		if (!isClosed(current.agent!)) return current.agent!;
	}
	dropAgent();
	try {
		const config = toConfig(http, https, noProxy);
		const { EnvHttpProxyAgent, Pool } = undici();
		const agent = new EnvHttpProxyAgent({
			// Always explicit (`""` = none), so undici never reads process.env itself.
			httpProxy: config.httpProxy ?? "",
			httpsProxy: config.httpsProxy ?? "",
			noProxy: config.noProxy,
			...AGENT_OPTIONS,
			// http:// targets through an http:// proxy as absolute-URI requests (as curl does) rather
			// than a CONNECT tunnel, which many forward proxies refuse for port 80. https:// targets
			// always tunnel.
			proxyTunnel: false,
			// Every pool undici creates inside (to origins, through tunnels, to the proxy itself) gets
			// the keep-alive and timeout settings: some are made with the connector options alone.
			factory: (origin, options) => new Pool(origin, { ...options, ...AGENT_OPTIONS }),
		});
		current = { key, agent };
		return agent;
	} catch (error) {
		const failure =
			error instanceof HttpProxyConfigError
				? error
				: new HttpProxyConfigError(
						https?.name ?? http?.name ?? "HTTP_PROXY",
						`Cannot use the proxy set in ${[http?.name, https?.name].filter(Boolean).join(" / ")}: ${error instanceof Error ? error.message : String(error)}`,
					);
		current = { key, error: failure };
		throw failure;
	}
}

/** Closes the dispatcher gracefully (in-flight requests finish first). Safe to call more than once. */
export async function closeHttpPools(): Promise<void> {
	const agent = current?.agent;
	current = undefined;
	if (agent && !isClosed(agent)) await agent.close().catch(() => undefined);
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

/** Forgets the dispatcher, closing it gracefully (its in-flight requests finish). */
function dropAgent(): void {
	const agent = current?.agent;
	current = undefined;
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

/**
 * Validates one proxy variable and returns its URL without path, query or fragment. undici would
 * read `proxy.corp:3128` as a URL of scheme `proxy.corp:` and fail at the first request without
 * naming the variable, so the value is checked here.
 */
function parseProxyUrl({ name, value }: EnvSetting): string {
	const expected = "expected http://[user:password@]host:port or https://...";
	const shown = value.replace(/^([a-z][a-z\d+.-]*:\/\/)?.*@/is, "$1***@");
	let url: URL;
	try {
		url = new URL(HAS_SCHEME.test(value) ? value : `http://${value}`);
	} catch {
		throw new HttpProxyConfigError(name, `Invalid proxy URL in ${name} ("${shown}"): ${expected}`);
	}
	if (url.protocol !== "http:" && url.protocol !== "https:") {
		throw new HttpProxyConfigError(
			name,
			`Unsupported proxy scheme "${url.protocol}" in ${name} ("${shown}"): ${expected}`,
		);
	}
	if (!url.hostname)
		throw new HttpProxyConfigError(name, `Invalid proxy URL in ${name} ("${shown}"): no host; ${expected}`);
	url.pathname = "/";
	url.search = "";
	url.hash = "";
	return url.href;
}

function isClosed(dispatcher: Dispatcher): boolean {
	const state = dispatcher as unknown as { closed?: boolean; destroyed?: boolean };
	return !!(state.closed || state.destroyed);
}
