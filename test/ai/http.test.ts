import { createServer, request as httpRequest, type IncomingHttpHeaders, type Server } from "node:http";
import type { AddressInfo, Socket } from "node:net";
import { EnvHttpProxyAgent } from "undici";
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from "vitest";
import { closeHttpPools, getHttpDispatcher, HttpProxyConfigError, readHttpProxyEnv } from "../../src/ai/http.js";
import { streamSimple } from "../../src/ai/stream.js";
import type { AssistantMessage, Context } from "../../src/ai/types.js";
import { type ReplayServer, startReplayServer } from "../helpers/replay-server.js";
import { drain, testModel } from "./providers/openai-protocol.js";

/**
 * Proxy variables for provider requests, end to end: a real forward proxy (node:http, below) in
 * front of a real fake provider (ReplayServer), with the OpenAI Chat Completions provider.
 *
 * Determinism: the fake provider listens on 127.0.0.1 and every target URL uses that literal
 * address (never `localhost`, which could resolve to ::1 first). undici's EnvHttpProxyAgent has no
 * built-in loopback exemption: it bypasses the proxy only for NO_PROXY entries, matched on the
 * URL's host name as written. So with HTTP_PROXY set and no NO_PROXY, a request to 127.0.0.1 does
 * go through the proxy, and `NO_PROXY=localhost` does not exempt 127.0.0.1 (tested below). All six
 * variables are stubbed in every test, so proxy settings of the machine running the tests do not
 * leak in.
 */

interface ProxiedRequest {
	method: string;
	url: string;
	headers: IncomingHttpHeaders;
}

/** A minimal HTTP forward proxy: absolute-URI requests to http:// targets are forwarded; CONNECT is refused (403). */
class ForwardProxy {
	readonly requests: ProxiedRequest[] = [];
	/** CONNECT targets asked for (`host:port`). */
	readonly connects: string[] = [];
	/** TCP connections accepted from clients. */
	connections = 0;
	private readonly server: Server;
	private readonly sockets = new Set<Socket>();

	constructor() {
		this.server = createServer((req, res) => {
			this.requests.push({ method: req.method ?? "", url: req.url ?? "", headers: req.headers });
			let target: URL;
			try {
				target = new URL(req.url ?? "");
			} catch {
				res.writeHead(400).end("a proxy request needs an absolute URI");
				return;
			}
			const upstream = httpRequest(
				target,
				{ method: req.method, headers: withoutHopByHop(req.headers) },
				(response) => {
					res.writeHead(response.statusCode ?? 502, withoutHopByHop(response.headers));
					response.pipe(res);
				},
			);
			upstream.on("error", () => {
				if (!res.headersSent) res.writeHead(502);
				res.end();
			});
			req.pipe(upstream);
		});
		this.server.on("connect", (req, socket: Socket) => {
			this.connects.push(req.url ?? "");
			socket.end("HTTP/1.1 403 Forbidden\r\nContent-Length: 0\r\n\r\n");
		});
		this.server.on("connection", (socket: Socket) => {
			this.connections++;
			this.sockets.add(socket);
			socket.on("close", () => this.sockets.delete(socket));
		});
	}

	async start(): Promise<this> {
		await new Promise<void>((resolve) => this.server.listen(0, "127.0.0.1", resolve));
		return this;
	}

	get url(): string {
		return `http://127.0.0.1:${(this.server.address() as AddressInfo).port}`;
	}

	reset(): void {
		this.requests.length = 0;
		this.connects.length = 0;
		this.connections = 0;
	}

	async close(): Promise<void> {
		for (const socket of this.sockets) socket.destroy();
		await new Promise<void>((resolve) => this.server.close(() => resolve()));
	}
}

const HOP_BY_HOP = new Set([
	"connection",
	"keep-alive",
	"proxy-connection",
	"proxy-authorization",
	"transfer-encoding",
	"te",
	"upgrade",
]);

function withoutHopByHop(headers: IncomingHttpHeaders): IncomingHttpHeaders {
	return Object.fromEntries(Object.entries(headers).filter(([name]) => !HOP_BY_HOP.has(name.toLowerCase())));
}

const PROXY_VARS = ["HTTP_PROXY", "http_proxy", "HTTPS_PROXY", "https_proxy", "NO_PROXY", "no_proxy"] as const;
type ProxyVar = (typeof PROXY_VARS)[number];

/** Stubs all six proxy variables of process.env: the given ones set, the others removed. */
function useEnv(vars: Partial<Record<ProxyVar, string>>): void {
	for (const name of PROXY_VARS) vi.stubEnv(name, vars[name]);
}

let provider: ReplayServer;
let proxy: ForwardProxy;
beforeAll(async () => {
	provider = await startReplayServer();
	proxy = await new ForwardProxy().start();
});
afterAll(async () => {
	await closeHttpPools();
	await provider.close();
	await proxy.close();
});
afterEach(async () => {
	vi.unstubAllEnvs();
	// Also drops the proxy dispatcher, so each test starts with fresh connections.
	await closeHttpPools();
	provider.reset();
	proxy.reset();
});

const context: Context = { messages: [{ role: "user", content: "hi", timestamp: 0 }] };
const OK = (text: string) =>
	`data: {"id":"chatcmpl-1","choices":[{"index":0,"delta":{"content":"${text}"},"finish_reason":"stop"}]}\n\ndata: [DONE]\n\n`;

/**
 * Lets a finished call's connection go back to its pool. The driver resolves at `[DONE]` and drains
 * the rest of the body in the background, and undici then waits one event-loop turn
 * (`setImmediate`) before it reuses a keep-alive socket; a call started sooner opens a second
 * connection. Between an agent's turns this always passes; here it is made explicit.
 */
async function settle(): Promise<void> {
	await new Promise((resolve) => setTimeout(resolve, 50));
}

/** One Chat Completions call to `baseUrl` (default: the fake provider), answered with `text` when it reaches the provider. */
async function call(text = "ok", baseUrl = `${provider.url}/v1`) {
	provider.enqueue({ body: OK(text) });
	return drain(
		streamSimple(testModel("openai-completions", baseUrl), context, {
			apiKey: "sk-test",
			maxRetries: 0,
		}),
	);
}

function textOf(message: AssistantMessage): string {
	return message.content.map((block) => (block.type === "text" ? block.text : "")).join("");
}

describe("provider requests and the proxy variables", () => {
	it("without proxy variables: straight to the provider, nothing through the proxy", async () => {
		useEnv({});
		const { message } = await call("direct");
		expect(message.stopReason).toBe("stop");
		expect(textOf(message)).toBe("direct");
		expect(provider.requests).toHaveLength(1);
		expect(provider.requests[0]!.url).toBe("/v1/chat/completions");
		expect(proxy.requests).toHaveLength(0);
		expect(proxy.connections).toBe(0);
	});

	it("NO_PROXY alone changes nothing (no proxy to bypass)", async () => {
		useEnv({ NO_PROXY: "example.com" });
		const { message } = await call();
		expect(message.stopReason).toBe("stop");
		expect(proxy.requests).toHaveLength(0);
	});

	it("HTTP_PROXY: the request goes through the proxy, the stream is intact, the proxy connection is reused", async () => {
		useEnv({ HTTP_PROXY: proxy.url });
		for (let i = 0; i < 3; i++) {
			const { message, events } = await call(`via proxy ${i}`);
			expect(message.stopReason).toBe("stop");
			expect(textOf(message)).toBe(`via proxy ${i}`);
			expect(events[0]?.type).toBe("start");
			expect(events.at(-1)?.type).toBe("done");
			await settle();
		}
		expect(proxy.requests).toHaveLength(3);
		const first = proxy.requests[0]!;
		// Plain forward proxying: the absolute URI of the target, not a CONNECT tunnel.
		expect(first.method).toBe("POST");
		expect(first.url).toBe(`${provider.url}/v1/chat/completions`);
		expect(first.headers.host).toBe(new URL(provider.url).host);
		expect(proxy.connects).toHaveLength(0);
		// The provider got the real request, via the proxy.
		expect(provider.requests).toHaveLength(3);
		expect(provider.requests[0]!.headers.authorization).toBe("Bearer sk-test");
		expect(provider.requests[0]!.json.model).toBe("gpt-test");
		// Keep-alive to the proxy: sequential calls share one connection.
		expect(proxy.connections).toBe(1);
	});

	it("http_proxy (lower case) works too, and credentials in the URL become Proxy-Authorization", async () => {
		const proxyUrl = new URL(proxy.url);
		useEnv({ http_proxy: `http://alice:s%40cret@${proxyUrl.host}` });
		const { message } = await call("lower");
		expect(textOf(message)).toBe("lower");
		expect(proxy.requests).toHaveLength(1);
		expect(proxy.requests[0]!.headers["proxy-authorization"]).toBe(
			`Basic ${Buffer.from("alice:s@cret").toString("base64")}`,
		);
		// The proxy credentials are for the proxy only.
		expect(provider.requests[0]!.headers["proxy-authorization"]).toBeUndefined();
	});

	it("NO_PROXY matching the target host bypasses the proxy", async () => {
		useEnv({ HTTP_PROXY: proxy.url, NO_PROXY: "example.com, 127.0.0.1" });
		const { message } = await call("bypassed");
		expect(message.stopReason).toBe("stop");
		expect(textOf(message)).toBe("bypassed");
		expect(provider.requests).toHaveLength(1);
		expect(proxy.requests).toHaveLength(0);
		expect(proxy.connections).toBe(0);
	});

	it("no_proxy (lower case) with host:port bypasses only that port", async () => {
		const port = new URL(provider.url).port;
		useEnv({ http_proxy: proxy.url, no_proxy: `127.0.0.1:${port}` });
		await call();
		expect(proxy.requests).toHaveLength(0);

		await closeHttpPools();
		useEnv({ http_proxy: proxy.url, no_proxy: "127.0.0.1:1" });
		await call();
		expect(proxy.requests).toHaveLength(1);
	});

	it("NO_PROXY=localhost does not cover 127.0.0.1 (host names are matched as written, no DNS)", async () => {
		useEnv({ HTTP_PROXY: proxy.url, NO_PROXY: "localhost" });
		const { message } = await call("still proxied");
		expect(textOf(message)).toBe("still proxied");
		expect(proxy.requests).toHaveLength(1);
	});

	it("HTTPS_PROXY alone is not used for http:// targets", async () => {
		useEnv({ HTTPS_PROXY: proxy.url });
		const { message } = await call();
		expect(message.stopReason).toBe("stop");
		expect(proxy.requests).toHaveLength(0);
		expect(proxy.connects).toHaveLength(0);
	});

	it("https:// targets tunnel through HTTPS_PROXY (CONNECT); a refused tunnel is an error event", async () => {
		useEnv({ HTTPS_PROXY: proxy.url, HTTP_PROXY: "http://127.0.0.1:1" });
		const { message, events } = await call("never", "https://llm.example.invalid/v1");
		expect(events.map((event) => event.type)).toEqual(["error"]);
		expect(message.stopReason).toBe("error");
		expect(message.errorMessage).toMatch(/403/);
		expect(proxy.connects).toEqual(["llm.example.invalid:443"]);
		expect(provider.requests).toHaveLength(0);
	});

	it("https:// targets use HTTP_PROXY when HTTPS_PROXY is unset", async () => {
		useEnv({ HTTP_PROXY: proxy.url });
		const { message } = await call("never", "https://llm.example.invalid/v1");
		expect(message.stopReason).toBe("error");
		expect(proxy.connects).toEqual(["llm.example.invalid:443"]);
	});

	it("a bad proxy URL ends the call with an error event naming the variable (never a throw, never the password)", async () => {
		useEnv({ HTTPS_PROXY: "http://bob:hunter2@proxy host:3128" });
		const { message, events } = await call("never", "https://llm.example.invalid/v1");
		expect(events.map((event) => event.type)).toEqual(["error"]);
		expect(message.stopReason).toBe("error");
		expect(message.errorMessage).toContain("HTTPS_PROXY");
		expect(message.errorMessage).toContain("Invalid proxy URL");
		expect(message.errorMessage).not.toContain("hunter2");

		useEnv({ http_proxy: "ftp://proxy.example.com:21" });
		const second = await call();
		expect(second.message.stopReason).toBe("error");
		expect(second.message.errorMessage).toMatch(/Unsupported proxy scheme "ftp:" in http_proxy/);
		expect(provider.requests).toHaveLength(0);
		expect(proxy.requests).toHaveLength(0);
	});
});

describe("getHttpDispatcher / readHttpProxyEnv (explicit env)", () => {
	const target = "https://api.example.com/v1/chat/completions";

	it("without HTTP(S)_PROXY: one direct dispatcher for every origin, NO_PROXY alone changing nothing", () => {
		const direct = getHttpDispatcher(target, {});
		expect(getHttpDispatcher("https://other.example.org/v1", {})).toBe(direct);
		expect(getHttpDispatcher(target, { NO_PROXY: "*", HTTP_PROXY: "  " })).toBe(direct);
		expect(readHttpProxyEnv({})).toBeUndefined();
	});

	it("with a proxy: one EnvHttpProxyAgent for every origin, rebuilt only when the variables change", () => {
		const env = { HTTPS_PROXY: "http://proxy.example.com:3128" };
		const agent = getHttpDispatcher(target, env);
		expect(agent).toBeInstanceOf(EnvHttpProxyAgent);
		expect(getHttpDispatcher("https://other.example.org/v1", { ...env })).toBe(agent);
		const changed = getHttpDispatcher(target, { ...env, NO_PROXY: "api.example.com" });
		expect(changed).toBeInstanceOf(EnvHttpProxyAgent);
		expect(changed).not.toBe(agent);
	});

	it("reads the env it is given, lower case first, empty values as unset", () => {
		expect(
			readHttpProxyEnv({
				http_proxy: "http://lower.example:8080",
				HTTP_PROXY: "http://upper.example:8080",
				https_proxy: "",
				HTTPS_PROXY: "https://secure.example:8443/ignored/path?x=1",
				no_proxy: ".internal, localhost",
			}),
		).toEqual({
			httpProxy: "http://lower.example:8080/",
			httpsProxy: "https://secure.example:8443/",
			noProxy: ".internal, localhost",
		});
	});

	it("a value without a scheme means http://", () => {
		expect(readHttpProxyEnv({ HTTPS_PROXY: "proxy.corp:3128" })).toEqual({
			httpProxy: undefined,
			httpsProxy: "http://proxy.corp:3128/",
			noProxy: "",
		});
	});

	it("bad values throw HttpProxyConfigError naming the variable, with credentials masked", () => {
		const cases: [Record<string, string>, string, RegExp][] = [
			[{ HTTP_PROXY: "http://proxy:99999" }, "HTTP_PROXY", /Invalid proxy URL in HTTP_PROXY/],
			[{ https_proxy: "socks5://proxy:1080" }, "https_proxy", /Unsupported proxy scheme "socks5:"/],
			[{ HTTPS_PROXY: "http://user:pa/ss@bad host" }, "HTTPS_PROXY", /"http:\/\/\*\*\*@bad host"/],
		];
		for (const [env, variable, message] of cases) {
			let error: unknown;
			try {
				readHttpProxyEnv(env);
			} catch (err) {
				error = err;
			}
			expect(error).toBeInstanceOf(HttpProxyConfigError);
			expect((error as HttpProxyConfigError).variable).toBe(variable);
			expect((error as Error).message).toMatch(message);
			expect((error as Error).message).not.toMatch(/pa\/ss/);
			expect(() => getHttpDispatcher(target, env)).toThrow(message);
		}
	});
});
