/**
 * With API keys set, no spelling of any route's path gets past auth. Every route of the app (from
 * its OpenAPI document, which collects every route through `onRoute`, plus the automatic HEAD
 * routes) is sent over a raw socket, so nothing normalises the request target, in every spelling
 * the router might accept: percent-encoding of each character, `%2F`, trailing and doubled
 * slashes, dot segments, `;` parameters, case changes, absolute-form targets (`GET http://h/v1/…`,
 * as a proxy client sends them), query and fragment. With the key, a spelling that reaches a
 * route shows that the router accepts it; without the key, none may reach a route's hooks past
 * auth, and each gets the 401 envelope.
 */
import { once } from "node:events";
import { connect, type Socket } from "node:net";
import { afterEach, describe, expect, it } from "vitest";
import { startServer, type TestServer } from "../../../helpers/server.js";

const KEY = "key-spellings-0123456789";
let server: TestServer;
afterEach(async () => {
	await server?.close();
});

interface RawResponse {
	status: number;
	body: string;
}

/** The connection was closed before any byte of the response arrived. */
class StaleConnection extends Error {}

/**
 * One keep-alive connection that sends each request target exactly as given and reads the
 * status and body. A stream (SSE) is cut once its head has arrived, and a connection the server
 * closes is opened again for the next request.
 */
class RawConnection {
	private socket: Socket | undefined;
	private buffer = Buffer.alloc(0);
	private closed = true;
	private wake: (() => void) | undefined;

	constructor(private readonly port: number) {}

	async request(method: string, target: string, headers: Record<string, string>, body?: string): Promise<RawResponse> {
		try {
			return await this.send(method, target, headers, body);
		} catch (error) {
			// The server may close a kept-alive connection after an answer (a refused request target
			// is answered, then the connection closed): send again on a new one, as HTTP clients do.
			if (!(error instanceof StaleConnection)) throw error;
			return this.send(method, target, headers, body);
		}
	}

	private async send(method: string, target: string, headers: Record<string, string>, body?: string) {
		if (this.closed) await this.open();
		const lines = [`${method} ${target} HTTP/1.1`, "Host: 127.0.0.1"];
		for (const [name, value] of Object.entries(headers)) lines.push(`${name}: ${value}`);
		if (body !== undefined) lines.push("Content-Type: application/json", `Content-Length: ${Buffer.byteLength(body)}`);
		this.socket!.write(`${lines.join("\r\n")}\r\n\r\n${body ?? ""}`);

		while (this.buffer.indexOf("\r\n\r\n") === -1) await this.more(method, target);
		const headEnd = this.buffer.indexOf("\r\n\r\n");
		const head = this.buffer.subarray(0, headEnd).toString("latin1");
		const status = Number(/^HTTP\/1\.1 (\d{3})/.exec(head)?.[1] ?? 0);
		const length = /\r\ncontent-length: *(\d+)/i.exec(head);
		if (/\r\ncontent-type: text\/event-stream/i.test(head) || (!length && method !== "HEAD")) {
			// A stream, or a body delimited by the connection's end: this connection is done.
			this.socket!.destroy();
			this.closed = true;
			this.buffer = Buffer.alloc(0);
			return { status, body: "" };
		}
		const size = method === "HEAD" || status === 204 || status === 304 ? 0 : Number(length![1]);
		while (this.buffer.length < headEnd + 4 + size) await this.more(method, target);
		const responseBody = this.buffer.subarray(headEnd + 4, headEnd + 4 + size).toString("utf8");
		this.buffer = this.buffer.subarray(headEnd + 4 + size);
		// Only a response that says so keeps the connection (the HTTP layer's own answers to a
		// refused target do not, and may carry a body even for HEAD).
		if (!/\r\nconnection: *keep-alive/i.test(head)) {
			this.socket!.destroy();
			this.closed = true;
			this.buffer = Buffer.alloc(0);
		}
		return { status, body: responseBody };
	}

	close(): void {
		this.socket?.destroy();
	}

	private async open(): Promise<void> {
		const socket = connect(this.port, "127.0.0.1");
		this.socket = socket;
		this.buffer = Buffer.alloc(0);
		socket.on("data", (chunk: Buffer) => {
			if (this.socket !== socket) return;
			this.buffer = Buffer.concat([this.buffer, chunk]);
			this.wake?.();
		});
		socket.on("error", () => {
			// Followed by "close": a reset connection is handled there.
		});
		socket.on("close", () => {
			if (this.socket !== socket) return;
			this.closed = true;
			this.wake?.();
		});
		await once(socket, "connect");
		this.closed = false;
	}

	/** Waits for more bytes; a connection closed mid-response is an error. */
	private async more(method: string, target: string): Promise<void> {
		if (this.closed && this.buffer.length === 0) throw new StaleConnection();
		if (this.closed) throw new Error(`connection closed before the response to ${method} ${target} was complete`);
		await new Promise<void>((resolve) => {
			this.wake = resolve;
		});
		this.wake = undefined;
	}
}

const hex = (char: string) => `%${char.charCodeAt(0).toString(16).toUpperCase().padStart(2, "0")}`;

/** The route's path in every spelling worth trying; `paramStarts`: where parameter values begin. */
function spellings(path: string, paramStarts: Set<number>): string[] {
	const out = new Set<string>([path]);
	const slashes = [...path].flatMap((c, i) => (c === "/" ? [i] : []));
	for (let i = 0; i < path.length; i++) {
		if (path[i] === "/") continue;
		// Every character of the static segments, and the first one of each parameter value.
		if (i > 0 && path[i - 1] !== "/" && !isStatic(path, i, paramStarts)) continue;
		out.add(path.slice(0, i) + hex(path[i]!) + path.slice(i + 1));
		// Lower-case hex digits in the version segment; the rest of the path decodes the same way.
		if (i < 3) out.add(path.slice(0, i) + hex(path[i]!).toLowerCase() + path.slice(i + 1));
	}
	out.add(path.replace(/^\/v1\//, "/%76%31/"));
	out.add(
		path
			.split("/")
			.map((s) => [...s].map(hex).join(""))
			.join("/"),
	);
	for (const at of slashes) {
		if (at > 0) out.add(`${path.slice(0, at)}%2F${path.slice(at + 1)}`);
		out.add(`${path.slice(0, at)}//${path.slice(at + 1)}`);
		out.add(`${path.slice(0, at)}/.${path.slice(at)}`);
		out.add(`${path.slice(0, at)}/%2e${path.slice(at)}`);
		out.add(`${path.slice(0, at)}/x/..${path.slice(at)}`);
		out.add(`${path.slice(0, at)}\\${path.slice(at + 1)}`);
		const end = path.indexOf("/", at + 1);
		out.add(`${path.slice(0, end === -1 ? path.length : end)};x=1${end === -1 ? "" : path.slice(end)}`);
	}
	out.add(`${path}/`);
	out.add(`${path}//`);
	out.add(`${path};jsessionid=1`);
	out.add(`${path}?x=1`);
	out.add(`${path}#frag`);
	out.add(`${path}%00`);
	out.add(`${path}%20`);
	out.add(path.toUpperCase());
	out.add(path.replace("/v1/", "/V1/"));
	out.add(`//${path.slice(1)}`);
	for (const prefix of ["http://127.0.0.1", "HTTP://EXAMPLE.COM:1", "https://x", "http://x"]) {
		out.add(prefix + path);
		out.add(prefix + path.replace("/v1/", "/%76%31/"));
	}
	return [...out];
}

function isStatic(path: string, i: number, paramStarts: Set<number>): boolean {
	for (const start of paramStarts) {
		const end = path.indexOf("/", start);
		if (i >= start && i < (end === -1 ? path.length : end)) return false;
	}
	return true;
}

describe("auth on every spelling of every route", () => {
	it("with keys set, no spelling of any route reaches it without a key", async () => {
		const reached: string[] = [];
		server = await startServer({
			// `/metrics` takes this operator credential instead of an API key: without any, 401 too.
			// Hundreds of keyless probes from one address: the limit of refused requests is off here.
			config: { apiKeys: [KEY], metricsToken: "spellings-metrics-operator-0123", unauthRateLimitPerMinute: 0 },
			setup(app) {
				// Runs only after auth passed, on a matched route: a probe recorded here got past auth.
				app.addHook("preParsing", async function recordReached(request) {
					if (request.routeOptions.url !== undefined) reached.push(String(request.headers["x-probe"]));
				});
			},
		});
		const port = Number(new URL(server.url).port);
		const created = await server.request("POST", "/v1/sessions", { key: KEY, body: {} });
		expect(created.status).toBe(201);
		const sessionId: string = created.body.id;

		const spec = (await server.request("GET", "/openapi.json")).body;
		const routes: { method: string; template: string }[] = [];
		const open: string[] = [];
		for (const [template, operations] of Object.entries(spec.paths as Record<string, Record<string, any>>)) {
			for (const [method, operation] of Object.entries(operations)) {
				if (!operation.security) {
					open.push(`${method.toUpperCase()} ${template}`);
					continue;
				}
				routes.push({ method: method.toUpperCase(), template });
				if (method === "get") routes.push({ method: "HEAD", template });
			}
		}
		// The A2A agent card is open on purpose: a client reads it to learn how to authenticate.
		expect(open.sort()).toEqual([
			"GET /.well-known/agent-card.json",
			"GET /healthz",
			"GET /openapi.json",
			"GET /readyz",
		]);
		// Sanity: the enumeration covers the routes registered by the tools plugin, too.
		expect(routes.map((r) => `${r.method} ${r.template}`)).toEqual(
			expect.arrayContaining([
				"GET /v1/sessions",
				"DELETE /v1/sessions/{id}",
				"GET /v1/sessions/{id}/events",
				"POST /v1/sessions/{id}/approvals/{toolCallId}",
				"PUT /v1/sessions/{id}/tool-declarations",
				"GET /v1/tools/mcp-servers",
			]),
		);

		interface Probe {
			method: string;
			target: string;
			body?: string;
		}
		const probes: Probe[] = [];
		/** The canonical path of each probe's route, by probe index. */
		const canonical: string[] = [];
		for (const { method, template } of routes) {
			const paramStarts = new Set<number>();
			let path = "";
			for (const segment of template.split("/").slice(1)) {
				path += "/";
				if (segment.startsWith("{")) {
					paramStarts.add(path.length);
					path += segment === "{id}" ? sessionId : "call_1";
				} else path += segment;
			}
			const body = method === "POST" || method === "PUT" || method === "PATCH" ? '{"message":"hi"}' : undefined;
			for (const target of spellings(path, paramStarts)) {
				probes.push({ method, target, body });
				canonical.push(path);
			}
		}

		/** Runs the probes at `indexes` (with or without the key) over a few keep-alive connections. */
		async function run(indexes: number[], withKey: boolean): Promise<Map<number, RawResponse>> {
			const results = new Map<number, RawResponse>();
			let next = 0;
			const worker = async () => {
				const connection = new RawConnection(port);
				try {
					while (next < indexes.length) {
						const index = indexes[next++]!;
						const probe = probes[index]!;
						const headers: Record<string, string> = { "x-probe": `${withKey ? "key" : "nokey"}-${index}` };
						if (withKey) headers.authorization = `Bearer ${KEY}`;
						results.set(index, await connection.request(probe.method, probe.target, headers, probe.body));
					}
				} finally {
					connection.close();
				}
			};
			await Promise.all(Array.from({ length: 8 }, worker));
			return results;
		}

		// Every probe without the key first (the probes with the key change state: one deletes the session).
		const withoutKey = await run(
			probes.map((_, index) => index),
			false,
		);
		const bypassed = reached.filter((p) => p.startsWith("nokey-")).map((p) => Number(p.slice(6)));
		expect(
			bypassed.map((i) => `${probes[i]!.method} ${probes[i]!.target} → ${withoutKey.get(i)!.status}`),
			"spellings that got past auth without a key",
		).toEqual([]);

		// With the key: the probes that were not answered 401 (to tell a malformed target from a hole),
		// and every spelling of two routes, to show what the router accepts besides the canonical path.
		const sample = new Set(["GET /v1/sessions", `POST /v1/sessions/${sessionId}/prompt`]);
		const again = probes.flatMap((probe, index) =>
			withoutKey.get(index)!.status !== 401 || sample.has(`${probe.method} ${canonical[index]}`) ? [index] : [],
		);
		const withKey = await run(again, true);
		const accepted = new Set(reached.filter((p) => p.startsWith("key-")).map((p) => Number(p.slice(4))));
		const acceptedTargets = [...accepted].map((i) => `${probes[i]!.method} ${probes[i]!.target}`);
		expect(acceptedTargets).toEqual(
			expect.arrayContaining([
				"GET /%76%31/sessions",
				"GET /%761/sessions",
				"GET /v%31/sessions",
				"GET /%76%31/%73%65%73%73%69%6F%6E%73",
				"GET http://x/v1/sessions",
				`POST http://x/%76%31/sessions/${sessionId}/prompt`,
			]),
		);

		for (const [index, probe] of probes.entries()) {
			const response = withoutKey.get(index)!;
			if (response.status === 401) {
				if (probe.method !== "HEAD") {
					const body = JSON.parse(response.body);
					// `/api/stream` answers in the flat shape pi's streamProxy reads: `{ error: message, code }`.
					expect(typeof body.error === "string" ? body.code : body.error.code).toBe("UNAUTHORIZED");
				}
				continue;
			}
			// Not 401: only a target the HTTP parser or the router refuses before any hook, with or without a key.
			const label = `${probe.method} ${probe.target} without a key: ${response.status}; with a key: ${withKey.get(index)!.status}`;
			expect(accepted.has(index), label).toBe(false);
			expect(response.status, label).toBe(400);
			expect(withKey.get(index)!.status, label).toBe(400);
		}
	}, 120_000);
});
