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
import { connect } from "node:net";
import { afterEach, describe, expect, it } from "vitest";
import { startServer, type TestServer } from "../helpers/server.js";

const KEY = "key-spellings-0123456789";
let server: TestServer;
afterEach(async () => {
	await server?.close();
});

interface RawResponse {
	status: number;
	body: string;
}

/**
 * Sends one request with `target` exactly as given and reads its status and body. Streams
 * (SSE) are cut once the head has arrived: the status is all a probe needs.
 */
function rawRequest(port: number, method: string, target: string, headers: Record<string, string>, body?: string) {
	return new Promise<RawResponse>((resolve, reject) => {
		const socket = connect(port, "127.0.0.1");
		const lines = [`${method} ${target} HTTP/1.1`, "Host: 127.0.0.1", "Connection: close"];
		for (const [name, value] of Object.entries(headers)) lines.push(`${name}: ${value}`);
		if (body !== undefined) lines.push("Content-Type: application/json", `Content-Length: ${Buffer.byteLength(body)}`);
		socket.write(`${lines.join("\r\n")}\r\n\r\n${body ?? ""}`);
		let data = "";
		const settle = () => {
			const head = data.split("\r\n\r\n")[0] ?? "";
			const status = Number(/^HTTP\/1\.1 (\d{3})/.exec(head)?.[1] ?? 0);
			resolve({ status, body: data.slice(head.length + 4) });
		};
		socket.setEncoding("latin1");
		socket.on("data", (chunk: string) => {
			data += chunk;
			if (/\r\n\r\n/.test(data) && /content-type: text\/event-stream/i.test(data)) socket.destroy();
		});
		socket.on("close", settle);
		socket.on("error", reject);
	});
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
			config: { apiKeys: [KEY] },
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
		expect(open.sort()).toEqual(["GET /healthz", "GET /openapi.json", "GET /readyz"]);
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
			for (const target of spellings(path, paramStarts)) probes.push({ method, target, body });
		}

		/** Runs every probe (with or without the key), a few at a time; the outcome by probe index. */
		async function runAll(withKey: boolean): Promise<RawResponse[]> {
			const results: RawResponse[] = new Array(probes.length);
			let next = 0;
			const worker = async () => {
				while (next < probes.length) {
					const index = next++;
					const probe = probes[index]!;
					const headers: Record<string, string> = { "x-probe": `${withKey ? "key" : "nokey"}-${index}` };
					if (withKey) headers.authorization = `Bearer ${KEY}`;
					results[index] = await rawRequest(port, probe.method, probe.target, headers, probe.body);
				}
			};
			await Promise.all(Array.from({ length: 16 }, worker));
			return results;
		}

		// Without the key first: the probes with the key change state (one deletes the session).
		const withoutKey = await runAll(false);
		const withKey = await runAll(true);

		const accepted = new Set(reached.filter((p) => p.startsWith("key-")).map((p) => Number(p.slice(4))));
		const bypassed = reached.filter((p) => p.startsWith("nokey-")).map((p) => Number(p.slice(6)));
		expect(
			bypassed.map((i) => `${probes[i]!.method} ${probes[i]!.target} → ${withoutKey[i]!.status}`),
			"spellings that got past auth without a key",
		).toEqual([]);

		// The router accepts more than the canonical spelling: these are what a prefix test missed.
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
			const response = withoutKey[index]!;
			const label = `${probe.method} ${probe.target} without a key (with a key: ${withKey[index]!.status})`;
			// Rejected by the HTTP parser or the router before any hook (malformed target): never a success.
			if (withKey[index]!.status === 400 && !accepted.has(index)) {
				expect(response.status, label).toBeGreaterThanOrEqual(400);
				continue;
			}
			expect(response.status, label).toBe(401);
			if (probe.method !== "HEAD") expect(JSON.parse(response.body).error.code, label).toBe("UNAUTHORIZED");
		}
	}, 60_000);
});
