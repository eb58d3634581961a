/**
 * Through a real nginx configured as deploy/nginx.conf (only the upstream addresses and the
 * listen port differ), in front of the real server process on SQLite with a real model API
 * (Chat Completions from a local server that plays the model and holds its answer mid-stream):
 * events arrive unbuffered, heartbeats pass, Last-Event-ID resumes, request ids go both ways,
 * the body limit answers with the server's envelope, gzip spares event streams, upstream
 * connections are kept alive, and a replica that refuses connections is skipped.
 */
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { freePort, type MainProcess, startMain } from "../helpers/main-process.js";
import { DEPLOY_NGINX_CONF, haveNginx, type Nginx, nginxConfigFor, nginxTitle, startNginx } from "../helpers/nginx.js";
import { chatChunk, type ReplayServer, startReplayServer } from "../helpers/replay-server.js";
import { openSse, promptSse, type SseEvent, type SseReader } from "../helpers/sse.js";
import { startTcpProxy, type TcpProxy } from "../helpers/tcp-proxy.js";

const enabled = haveNginx();
const HEARTBEAT_MS = 200;

let dir: string;
let replay: ReplayServer;
let main: MainProcess;
let nginx: Nginx;
const readers: SseReader[] = [];

beforeAll(async () => {
	if (!enabled) return;
	dir = mkdtempSync(path.join(tmpdir(), "wh-nginx-"));
	replay = await startReplayServer();
	const config = path.join(dir, "config.json");
	writeFileSync(
		config,
		JSON.stringify({
			models: [{ provider: "local", id: "tiny", baseUrl: `${replay.url}/v1`, contextWindow: 100_000, maxTokens: 1000 }],
		}),
	);
	main = await startMain({
		db: path.join(dir, "wh.db"),
		env: { WHEELHOUSE_CONFIG: config, WHEELHOUSE_HEARTBEAT_MS: String(HEARTBEAT_MS), LOG_FORMAT: "json" },
	});
	nginx = await startNginx([`127.0.0.1:${main.port}`]);
}, 60_000);

afterAll(async () => {
	for (const reader of readers) reader.close();
	await nginx?.stop();
	main?.child.kill("SIGKILL");
	await replay?.close();
	if (dir) rmSync(dir, { recursive: true, force: true });
});

/**
 * Scripts the next model answer: `first` is sent at once, then the model holds its answer until
 * the returned `release()`, then sends `rest` and ends.
 */
function heldAnswer(first: string, rest: string): { release(): void } {
	const head = chatChunk({
		choices: [{ index: 0, delta: { role: "assistant", content: first }, finish_reason: null }],
	});
	const tail =
		chatChunk({ choices: [{ index: 0, delta: { content: rest }, finish_reason: null }] }) +
		chatChunk({ choices: [{ index: 0, delta: {}, finish_reason: "stop" }] }) +
		chatChunk({ choices: [], usage: { prompt_tokens: 10, completion_tokens: 2, total_tokens: 12 } }) +
		"data: [DONE]\n\n";
	let release!: () => void;
	const released = new Promise<void>((resolve) => {
		release = resolve;
	});
	replay.enqueue({ body: head + tail, stallAfterBytes: Buffer.byteLength(head), resumeWhen: released });
	return { release };
}

async function call(
	base: string,
	method: string,
	url: string,
	body?: unknown,
	headers: Record<string, string> = {},
): Promise<{ status: number; headers: Headers; body: any }> {
	const res = await fetch(`${base}${url}`, {
		method,
		headers: { ...(body === undefined ? {} : { "content-type": "application/json" }), ...headers },
		body: body === undefined ? undefined : typeof body === "string" ? body : JSON.stringify(body),
	});
	const text = await res.text();
	let parsed: unknown = text;
	try {
		parsed = JSON.parse(text);
	} catch {
		// not JSON
	}
	return { status: res.status, headers: res.headers, body: parsed };
}

async function newSession(): Promise<string> {
	const created = await call(nginx.url, "POST", "/v1/sessions", { model: "local/tiny" });
	expect(created.status).toBe(201);
	return created.body.id as string;
}

async function events(base: string, id: string, headers: Record<string, string> = {}): Promise<SseReader> {
	const reader = await openSse(`${base}/v1/sessions/${id}/events`, { headers });
	readers.push(reader);
	return reader;
}

const isDelta = (text: string) => (e: SseEvent) =>
	e.event === "message_update" &&
	e.data.assistantMessageEvent?.type === "text_delta" &&
	e.data.assistantMessageEvent.delta === text;

/** What a comparison of two streams looks at: id and type of each event. */
const shape = (list: SseEvent[]) => list.map((e) => `${e.id}:${e.event}`);

describe("the configuration the tests run", () => {
	it("is deploy/nginx.conf with other upstream addresses and listen port, and nothing else changed", () => {
		const deployed = readFileSync(DEPLOY_NGINX_CONF, "utf8").split("\n");
		const generated = nginxConfigFor(["127.0.0.1:4001", "127.0.0.1:4002"], 4000).split("\n");
		const isServer = (line: string) => /^\s*server\s+\S+:\d+[^;]*;$/.test(line);
		const isListen = (line: string) => /^\s*listen\s+\S+;$/.test(line);
		expect(generated.filter((l) => !isServer(l) && !isListen(l))).toEqual(
			deployed.filter((l) => !isServer(l) && !isListen(l)),
		);
		const parameters = (line: string) => line.trim().split(/\s+/).slice(2);
		// Each upstream block: the two addresses, with the parameters of the block's servers.
		const blocks = deployed.filter((l) => /^\s*upstream\s/.test(l)).length;
		expect(blocks).toBeGreaterThan(0);
		expect(generated.filter(isServer).map(parameters)).toEqual(
			Array.from({ length: 2 * blocks }, () => parameters(deployed.find(isServer)!)),
		);
		expect(generated.filter(isServer).map((l) => l.trim().split(/\s+/)[1])).toEqual(
			Array.from({ length: blocks }, () => ["127.0.0.1:4001", "127.0.0.1:4002"]).flat(),
		);
		expect(generated.filter(isListen).map((l) => l.trim())).toEqual(["listen 127.0.0.1:4000;"]);
	});
});

describe.skipIf(!enabled)("through nginx as deploy/nginx.conf configures it", () => {
	it(
		nginxTitle("delivers each event as the server writes it: a delta arrives while the model still holds the rest"),
		async () => {
			const id = await newSession();
			const live = await events(nginx.url, id);
			// A second subscriber straight on the server: what nginx delivers must be exactly this.
			const direct = await events(main.url, id);
			await live.waitForType("session_snapshot");
			await direct.waitForType("session_snapshot");
			expect(live.response.headers.get("content-type")).toMatch(/^text\/event-stream/);

			const model = heldAnswer("Hello ", "world");
			const prompt = await call(nginx.url, "POST", `/v1/sessions/${id}/prompt`, { message: "hi" });
			expect(prompt.status).toBe(202);
			await live.waitFor(isDelta("Hello "));
			// The model has not finished: nothing after the first delta exists yet, and still it arrived.
			expect(live.types()).not.toContain("agent_end");
			expect(live.events.some(isDelta("world"))).toBe(false);

			model.release();
			await live.waitForType("agent_end");
			await direct.waitForType("agent_end");
			expect(live.events.some(isDelta("world"))).toBe(true);
			expect(shape(live.events.filter((e) => e.id !== undefined))).toEqual(
				shape(direct.events.filter((e) => e.id !== undefined)),
			);
		},
	);

	it(nginxTitle("streams POST /prompt as SSE unbuffered, and the stream ends with the run"), async () => {
		const id = await newSession();
		const model = heldAnswer("Streaming ", "answer");
		const stream = await promptSse(nginx.url, id, { message: "hi" });
		readers.push(stream);
		await stream.waitFor(isDelta("Streaming "));
		expect(stream.types()).not.toContain("agent_end");
		model.release();
		await stream.waitForEnd();
		expect(stream.types()[0]).toBe("agent_start");
		expect(stream.types().at(-1)).toBe("agent_end");
	});

	it(nginxTitle("passes heartbeats to an idle stream"), async () => {
		const id = await newSession();
		const live = await events(nginx.url, id);
		await live.waitForType("session_snapshot");
		const deadline = Date.now() + 20 * HEARTBEAT_MS;
		while (live.comments.filter((c) => c.includes("heartbeat")).length < 3 && Date.now() < deadline) {
			await new Promise((resolve) => setTimeout(resolve, HEARTBEAT_MS / 2));
		}
		expect(live.comments.filter((c) => c.includes("heartbeat")).length).toBeGreaterThanOrEqual(3);
		expect(live.ended).toBe(false);
	});

	it(
		nginxTitle(
			"resumes with Last-Event-ID mid-run: the events after it, none lost or doubled, through the hand-off to live",
		),
		async () => {
			const id = await newSession();
			const first = await events(nginx.url, id);
			await first.waitForType("session_snapshot");
			const model = heldAnswer("Part ", "two");
			expect((await call(nginx.url, "POST", `/v1/sessions/${id}/prompt`, { message: "hi" })).status).toBe(202);
			const delta = await first.waitFor(isDelta("Part "));
			first.close();

			// The client reconnects, through nginx, from the last event it has.
			const resumed = await events(nginx.url, id, { "last-event-id": String(delta.id) });
			// The replay of what was missed (nothing) and then live: release the model only now.
			await new Promise((resolve) => setTimeout(resolve, 50));
			model.release();
			await resumed.waitForType("agent_end");
			const ids = resumed.ids();
			expect(ids[0]).toBe(delta.id! + 1);
			for (let i = 1; i < ids.length; i++) expect(ids[i]).toBe(ids[i - 1]! + 1);
			expect(resumed.events.some(isDelta("two"))).toBe(true);
			expect(resumed.events.some(isDelta("Part "))).toBe(false);

			// After the run, a resume through nginx replays what the server replays.
			for (const from of [1, delta.id! - 1, delta.id!]) {
				const proxied = await events(nginx.url, id, { "last-event-id": String(from) });
				const direct = await events(main.url, id, { "last-event-id": String(from) });
				await proxied.waitForType("agent_end");
				await direct.waitForType("agent_end");
				expect(proxied.ids()[0]).toBeGreaterThan(from);
				expect(shape(proxied.events)).toEqual(shape(direct.events));
			}
		},
	);

	it(
		nginxTitle("passes the caller's X-Request-Id to the server and back; without one, nginx's id is the server's"),
		async () => {
			const id = await newSession();
			const given = "trace-nginx-7f3a:client/1";
			const res = await call(nginx.url, "GET", `/v1/sessions/${id}`, undefined, { "x-request-id": given });
			expect(res.status).toBe(200);
			expect(res.headers.get("x-request-id")).toBe(given);
			await main.waitForOutput(new RegExp(`"reqId":"${given.replace(/[/:]/g, ".")}"`));
			expect(nginx.accessLog().some((line) => line.includes(`rid=${given}`))).toBe(true);

			const stream = await events(nginx.url, id, { "x-request-id": "trace-stream-1" });
			expect(stream.response.headers.get("x-request-id")).toBe("trace-stream-1");
			stream.close();

			const anonymous = await call(nginx.url, "GET", `/v1/sessions/${id}`);
			const rid = anonymous.headers.get("x-request-id");
			expect(rid).toMatch(/^[0-9a-f]{32}$/);
			await main.waitForOutput(new RegExp(`"reqId":"${rid}"`));
			expect(nginx.accessLog().some((line) => line.includes(`rid=${rid}`))).toBe(true);
		},
	);

	it(
		nginxTitle("takes bodies up to the server's limit and answers a larger one with the server's 413 envelope"),
		async () => {
			const limit = 4_194_304;
			const body = (size: number) => {
				const open = '{"padding":"';
				const close = '"}';
				return open + "x".repeat(size - open.length - close.length) + close;
			};
			// Exactly the limit reaches the server, which parses it (and refuses the unknown field).
			const atLimit = await call(nginx.url, "POST", "/v1/sessions", body(limit));
			expect(atLimit.status).toBe(400);
			expect(atLimit.body.error.code).toBe("VALIDATION_FAILED");
			const over = await call(nginx.url, "POST", "/v1/sessions", body(limit + 1), { "x-request-id": "too-big-1" });
			expect(over.status).toBe(413);
			expect(over.headers.get("content-type")).toMatch(/^application\/json/);
			expect(over.body).toEqual({ error: { code: "PAYLOAD_TOO_LARGE", message: expect.any(String) } });
			expect(over.headers.get("x-request-id")).toBe("too-big-1");
		},
	);

	it(nginxTitle("compresses JSON answers but never an event stream"), async () => {
		const spec = await fetch(`${nginx.url}/openapi.json`, { headers: { "accept-encoding": "gzip" } });
		expect(spec.status).toBe(200);
		expect(spec.headers.get("content-encoding")).toBe("gzip");
		expect(((await spec.json()) as { openapi: string }).openapi).toMatch(/^3\./);

		const id = await newSession();
		const stream = await events(nginx.url, id, { "accept-encoding": "gzip" });
		await stream.waitForType("session_snapshot");
		expect(stream.response.headers.get("content-encoding")).toBeNull();
		stream.close();
	});
});

describe.skipIf(!enabled)("nginx's upstream connections (deploy/nginx.conf)", () => {
	let proxy: TcpProxy;
	let front: Nginx;
	afterAll(async () => {
		await front?.stop();
		await proxy?.close();
	});

	it(
		nginxTitle("keeps connections to the replicas alive across reads, and opens a new one for each write"),
		async () => {
			proxy = await startTcpProxy({ host: "127.0.0.1", port: main.port });
			front = await startNginx([proxy.address]);
			for (let i = 0; i < 20; i++) expect((await fetch(`${front.url}/healthz`)).status).toBe(200);
			// One kept-alive connection per nginx worker at most (deploy/nginx.conf: worker_processes auto).
			expect(proxy.connections).toBeGreaterThanOrEqual(1);
			expect(proxy.connections).toBeLessThanOrEqual(4);
			// A request that changes something gets a connection of its own, never a kept-alive one.
			const before = proxy.connections;
			for (let i = 0; i < 5; i++) {
				expect((await call(front.url, "POST", "/v1/sessions", { model: "local/tiny" })).status).toBe(201);
			}
			expect(proxy.connections - before).toBe(5);
		},
	);

	it(nginxTitle("skips a replica that refuses connections, for GET and POST alike"), async () => {
		const dead = `127.0.0.1:${await freePort()}`;
		const withDead = await startNginx([dead, `127.0.0.1:${main.port}`]);
		try {
			for (let i = 0; i < 6; i++) {
				expect((await fetch(`${withDead.url}/healthz`)).status).toBe(200);
				expect((await call(withDead.url, "POST", "/v1/sessions", { model: "local/tiny" })).status).toBe(201);
			}
		} finally {
			await withDead.stop();
		}
	});
});
