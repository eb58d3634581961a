/**
 * One API key cannot take the capacity every key shares: sessions held in memory and SSE streams
 * open are limited per key (and streams per session), so another key can still create a session,
 * run AG-UI and open streams. A closed stream gives its slot back. Against the real server process.
 */
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { type MainProcess, refusedStartup, startMain, stopAll } from "../../helpers/main-process.js";
import { openSse, type SseReader } from "../../helpers/sse.js";

const KEY_A = "key-a-limits-test";
const KEY_B = "key-b-limits-test";

let dir: string | undefined;
const readers: SseReader[] = [];
afterEach(() => {
	for (const reader of readers.splice(0)) reader.close();
	stopAll();
	if (dir) rmSync(dir, { recursive: true, force: true });
	dir = undefined;
});

async function start(env: Record<string, string>): Promise<MainProcess> {
	dir = mkdtempSync(path.join(tmpdir(), "wheelhouse-key-limits-"));
	return startMain({
		db: path.join(dir, "w.db"),
		env: { WHEELHOUSE_API_KEYS: `${KEY_A},${KEY_B}`, ...env },
	});
}

async function call(server: MainProcess, key: string, method: string, route: string, body?: unknown) {
	const res = await fetch(`${server.url}${route}`, {
		method,
		headers: { authorization: `Bearer ${key}`, ...(body === undefined ? {} : { "content-type": "application/json" }) },
		body: body === undefined ? undefined : JSON.stringify(body),
	});
	const text = await res.text();
	return { status: res.status, body: text ? JSON.parse(text) : undefined };
}

/** Opens the session's event stream with `key`; kept for `afterEach` to close. */
async function stream(server: MainProcess, key: string, id: string): Promise<SseReader> {
	const reader = await openSse(`${server.url}/v1/sessions/${id}/events`, {
		headers: { authorization: `Bearer ${key}` },
	});
	readers.push(reader);
	await reader.waitForType("session_snapshot");
	return reader;
}

/**
 * Opens the stream as soon as a slot is free: the server sees a client's close a moment after
 * the client closed it.
 */
async function streamOnceFree(server: MainProcess, key: string, id: string): Promise<SseReader> {
	const deadline = Date.now() + 5_000;
	for (;;) {
		try {
			return await stream(server, key, id);
		} catch (err) {
			if (Date.now() > deadline) throw err;
			await new Promise((resolve) => setTimeout(resolve, 20));
		}
	}
}

/** The answer to opening the stream, when it is not a stream (a refusal). */
async function refusedStream(server: MainProcess, key: string, id: string) {
	const res = await fetch(`${server.url}/v1/sessions/${id}/events`, {
		headers: { authorization: `Bearer ${key}`, accept: "text/event-stream" },
	});
	expect(res.headers.get("content-type")).toMatch(/^application\/json/);
	return { status: res.status, body: (await res.json()) as any };
}

function aguiRun(threadId: string) {
	return {
		threadId,
		runId: `run-${threadId}`,
		messages: [{ id: `m-${threadId}`, role: "user", content: "hello" }],
		tools: [],
		context: [],
		state: {},
		forwardedProps: {},
	};
}

describe("per-key limits", () => {
	it("a key that holds its share of sessions is refused; another key still creates sessions and runs AG-UI", async () => {
		// 8 sessions in all: by default a key may hold a quarter of them.
		const server = await start({ WHEELHOUSE_MAX_SESSIONS: "8" });
		const held: string[] = [];
		let refused: { status: number; body: any } | undefined;
		for (let i = 0; i < 8 && !refused; i++) {
			const created = await call(server, KEY_A, "POST", "/v1/sessions", {});
			if (created.status !== 201) {
				refused = created;
				break;
			}
			held.push(created.body.id);
			await stream(server, KEY_A, created.body.id); // a stream pins the session in memory
		}
		expect(held).toHaveLength(2);
		expect(refused?.status).toBe(429);
		expect(refused?.body.error.code).toBe("TOO_MANY_KEY_SESSIONS");
		expect(refused?.body.error.message).toContain("WHEELHOUSE_MAX_SESSIONS_PER_KEY");

		// Key A's AG-UI thread needs a session too: refused the same way.
		const aguiA = await fetch(`${server.url}/agui/v1/run`, {
			method: "POST",
			headers: { authorization: `Bearer ${KEY_A}`, "content-type": "application/json" },
			body: JSON.stringify(aguiRun("thread-a")),
		});
		expect(aguiA.status).toBe(429);
		await aguiA.text();

		// Key B is not locked out.
		const b = await call(server, KEY_B, "POST", "/v1/sessions", {});
		expect(b.status).toBe(201);
		const aguiB = await fetch(`${server.url}/agui/v1/run`, {
			method: "POST",
			headers: { authorization: `Bearer ${KEY_B}`, "content-type": "application/json" },
			body: JSON.stringify(aguiRun("thread-b")),
		});
		expect(aguiB.status).toBe(200);
		expect(await aguiB.text()).toContain("RUN_FINISHED");

		// A session of key A without a stream or a run is evicted to make room for its next one,
		// and stays readable (it reloads from the store).
		readers.shift()!.close();
		// (Evictable once it was not used for 2 s: a request may still hold a session it just loaded.)
		await expect
			.poll(async () => (await call(server, KEY_A, "POST", "/v1/sessions", {})).status, {
				timeout: 10_000,
				interval: 250,
			})
			.toBe(201);
		let first = await call(server, KEY_A, "GET", `/v1/sessions/${held[0]}`);
		await expect
			.poll(
				async () => {
					first = await call(server, KEY_A, "GET", `/v1/sessions/${held[0]}`);
					return first.status;
				},
				{ timeout: 10_000, interval: 250 },
			)
			.toBe(200);
		expect(first.body.id).toBe(held[0]);
	});

	it("limits streams per session and per key, with 429 TOO_MANY_STREAMS; a closed stream frees its slot", async () => {
		const server = await start({ WHEELHOUSE_MAX_STREAMS_PER_SESSION: "2", WHEELHOUSE_MAX_STREAMS_PER_KEY: "3" });
		const s1 = (await call(server, KEY_A, "POST", "/v1/sessions", {})).body.id as string;
		const s2 = (await call(server, KEY_A, "POST", "/v1/sessions", {})).body.id as string;
		const first = await stream(server, KEY_A, s1);
		await stream(server, KEY_A, s1);
		const perSession = await refusedStream(server, KEY_A, s1);
		expect(perSession.status).toBe(429);
		expect(perSession.body.error).toMatchObject({
			code: "TOO_MANY_STREAMS",
			details: { limit: "perSession", max: 2 },
		});
		expect(perSession.body.error.message).toContain("WHEELHOUSE_MAX_STREAMS_PER_SESSION");

		await stream(server, KEY_A, s2);
		const perKey = await refusedStream(server, KEY_A, s2);
		expect(perKey.status).toBe(429);
		expect(perKey.body.error).toMatchObject({ code: "TOO_MANY_STREAMS", details: { limit: "perKey", max: 3 } });
		// A run's stream counts as well.
		const prompt = await fetch(`${server.url}/v1/sessions/${s2}/prompt`, {
			method: "POST",
			headers: { authorization: `Bearer ${KEY_A}`, accept: "text/event-stream", "content-type": "application/json" },
			body: JSON.stringify({ message: "hi" }),
		});
		expect(prompt.status).toBe(429);
		expect(((await prompt.json()) as any).error.code).toBe("TOO_MANY_STREAMS");
		// And a call through pi's streamProxy (`POST /api/stream`), refused in pi's error shape.
		const proxied = await fetch(`${server.url}/api/stream`, {
			method: "POST",
			headers: { authorization: `Bearer ${KEY_A}`, "content-type": "application/json" },
			body: JSON.stringify({
				model: { provider: "faux", id: "echo" },
				context: { messages: [{ role: "user", content: "hi", timestamp: Date.now() }] },
			}),
		});
		expect(proxied.status).toBe(429);
		expect(((await proxied.json()) as any).code).toBe("TOO_MANY_STREAMS");

		// Another key's streams are counted apart.
		const other = (await call(server, KEY_B, "POST", "/v1/sessions", {})).body.id as string;
		await stream(server, KEY_B, other);

		// Closing streams gives their slots back, every time: no slot leaks.
		first.close();
		for (let i = 0; i < 20; i++) (await streamOnceFree(server, KEY_A, s1)).close();
		// At the limit again: refused requests take no slot either.
		const again = await streamOnceFree(server, KEY_A, s1);
		for (let i = 0; i < 5; i++) expect((await refusedStream(server, KEY_A, s1)).status).toBe(429);
		again.close();
		await streamOnceFree(server, KEY_A, s1);
	});

	it("takes the limits from the config file as from the environment; a bad value stops startup naming it", async () => {
		dir = mkdtempSync(path.join(tmpdir(), "wheelhouse-key-limits-"));
		const file = path.join(dir, "config.json");
		writeFileSync(file, JSON.stringify({ maxStreamsPerSession: 1 }));
		const server = await startMain({ db: path.join(dir, "w.db"), env: { WHEELHOUSE_CONFIG: file } });
		const id = (await call(server, KEY_A, "POST", "/v1/sessions", {})).body.id as string;
		await stream(server, KEY_A, id);
		expect((await refusedStream(server, KEY_A, id)).body.error).toMatchObject({
			code: "TOO_MANY_STREAMS",
			details: { limit: "perSession", max: 1 },
		});

		const refused = await refusedStartup({ WHEELHOUSE_MAX_QUEUED_BYTES_PER_KEY: "-1" });
		expect(refused.code).not.toBe(0);
		expect(refused.stderr).toContain("WHEELHOUSE_MAX_QUEUED_BYTES_PER_KEY");
	});
});
