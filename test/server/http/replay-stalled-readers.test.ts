// Starts a server process through tsx's loader: seconds on a busy 2-core machine.
/**
 * Readers that stall while they resume cost bounded memory and are dropped, as on the live path:
 * a real server process (src/main.ts, SQLite store) with a long retained log, several `/events`
 * connections with `Last-Event-ID: 0` that never read. The server's resident memory grows by about
 * their buffers, not by the log they asked for; each is dropped with `stream_dropped` naming the
 * last id it was sent; each then resumes from that id and gets exactly the rest.
 */
import { type ChildProcess, spawn } from "node:child_process";
import { once } from "node:events";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { get, type IncomingMessage } from "node:http";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { afterEach, expect, it } from "vitest";
import { openSse } from "../../helpers/sse.js";

const repoRoot = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../../..");
const children: ChildProcess[] = [];
const dirs: string[] = [];
const responses: IncomingMessage[] = [];

afterEach(() => {
	for (const res of responses.splice(0)) res.destroy();
	for (const child of children.splice(0)) if (child.exitCode === null) child.kill("SIGKILL");
	for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});

const BUFFER_BYTES = 256 * 1024;
const STALL_MS = 1000;
const READERS = 6;
const RUNS = 30;
const MESSAGE_BYTES = 50_000;

async function freePort(): Promise<number> {
	const server = createServer().listen(0, "127.0.0.1");
	await once(server, "listening");
	const { port } = server.address() as { port: number };
	server.close();
	return port;
}

/** The server process, and a way to wait for a count of log lines matching a pattern. */
async function startServerProcess(env: Record<string, string>) {
	const port = await freePort();
	const dir = mkdtempSync(path.join(tmpdir(), "wheelhouse-replay-"));
	dirs.push(dir);
	const child = spawn(process.execPath, ["--import", "tsx", "src/main.ts"], {
		cwd: repoRoot,
		env: {
			PATH: process.env.PATH,
			PORT: String(port),
			HOST: "127.0.0.1",
			LOG_LEVEL: "info",
			WHEELHOUSE_STORE: "sqlite",
			WHEELHOUSE_DB: path.join(dir, "wheelhouse.db"),
			...env,
		},
	});
	children.push(child);
	let output = "";
	const watchers: (() => void)[] = [];
	const onData = (chunk: Buffer) => {
		output += chunk.toString();
		for (const w of watchers.splice(0)) w();
	};
	child.stdout!.on("data", onData);
	child.stderr!.on("data", onData);
	const count = (pattern: RegExp) => output.split("\n").filter((line) => pattern.test(line)).length;
	const waitForLines = async (pattern: RegExp, n: number, timeoutMs: number) => {
		const deadline = Date.now() + timeoutMs;
		while (count(pattern) < n && Date.now() < deadline) {
			await new Promise<void>((resolve) => {
				const t = setTimeout(resolve, deadline - Date.now());
				watchers.push(() => {
					clearTimeout(t);
					resolve();
				});
			});
		}
		return count(pattern);
	};
	if ((await waitForLines(/listening/i, 1, 20_000)) < 1) throw new Error(`server did not start:\n${output}`);
	return { child, url: `http://127.0.0.1:${port}`, waitForLines, output: () => output };
}

/** Resident memory of a process, in bytes (Linux). */
function rss(pid: number): number {
	const match = /^VmRSS:\s+(\d+) kB/m.exec(readFileSync(`/proc/${pid}/status`, "utf8"));
	return Number(match![1]) * 1024;
}

/** The `id:` of every event frame, and the `stream_dropped` notice if there is one. */
function parseFrames(text: string): { ids: number[]; lastEvent: string | undefined; dropped: any } {
	const ids: number[] = [];
	let lastEvent: string | undefined;
	let dropped: any;
	for (const frame of text.split("\n\n")) {
		const id = /^id: (\d+)$/m.exec(frame);
		if (id) ids.push(Number(id[1]));
		const event = /^event: (.+)$/m.exec(frame);
		if (event) lastEvent = event[1];
		if (event?.[1] === "stream_dropped") dropped = JSON.parse(/^data: (.*)$/m.exec(frame)![1]);
	}
	return { ids, lastEvent, dropped };
}

it("stalled replayers hold about their buffer each, are dropped, and resume from where they were", async () => {
	const server = await startServerProcess({
		WHEELHOUSE_SSE_BUFFER_BYTES: String(BUFFER_BYTES),
		WHEELHOUSE_SSE_STALL_MS: String(STALL_MS),
		WHEELHOUSE_FAUX_DELAY_MS: "0",
		WHEELHOUSE_HEARTBEAT_MS: "0",
	});
	const pid = server.child.pid!;
	const created = await fetch(`${server.url}/v1/sessions`, {
		method: "POST",
		headers: { "content-type": "application/json" },
		body: "{}",
	});
	const { id } = (await created.json()) as { id: string };
	// A long log: each run repeats its message several times (message_end, text_end, turn_end, agent_end).
	const message = "x".repeat(MESSAGE_BYTES);
	for (let i = 0; i < RUNS; i++) {
		const res = await fetch(`${server.url}/v1/sessions/${id}/prompt`, {
			method: "POST",
			headers: { "content-type": "application/json", accept: "text/event-stream" },
			body: JSON.stringify({ message }),
		});
		await res.text();
	}
	const { lastEventId } = (await (await fetch(`${server.url}/v1/sessions/${id}`)).json()) as { lastEventId: number };

	// What a reader that keeps up gets: the ids of the whole retained log.
	const reference = await openSse(`${server.url}/v1/sessions/${id}/events`, { headers: { "last-event-id": "0" } });
	await reference.waitFor((e) => e.id === lastEventId, 10_000);
	const allIds = reference.ids();
	reference.close();

	const before = rss(pid);
	// Readers that ask for the whole log and never read a byte of it.
	const stalled = await Promise.all(
		Array.from(
			{ length: READERS },
			() =>
				new Promise<IncomingMessage>((resolve, reject) => {
					const req = get(`${server.url}/v1/sessions/${id}/events`, {
						agent: false,
						headers: { accept: "text/event-stream", "last-event-id": "0" },
					});
					req.on("response", (res) => {
						responses.push(res);
						resolve(res);
					});
					req.on("error", reject);
				}),
		),
	);
	let peak = before;
	const sampler = setInterval(() => {
		peak = Math.max(peak, rss(pid));
	}, 20);
	// Each is dropped once it has not drained for the stall time.
	const drops = await server.waitForLines(/SSE subscriber dropped/, READERS, STALL_MS + 6_000);
	clearInterval(sampler);
	peak = Math.max(peak, rss(pid));
	expect(drops, server.output().slice(-2000)).toBe(READERS);
	// About one buffer each, far from the log each asked for (about 9 MB each): a replay that queued
	// whole pages of events ahead of a stalled reader would hold all of it.
	expect(peak - before).toBeLessThan(READERS * BUFFER_BYTES * 2 + 24 * 1024 * 1024);

	// Reading now (all at once: a dropped peer has a few seconds to take its last bytes): what each
	// was sent, then the drop notice with the last id it got, then the end.
	const texts = await Promise.all(
		stalled.map(async (res) => {
			res.setEncoding("utf8");
			let text = "";
			res.on("data", (chunk: string) => {
				text += chunk;
			});
			await once(res, "end");
			return text;
		}),
	);
	for (const text of texts) {
		const { ids, lastEvent, dropped } = parseFrames(text);
		expect(lastEvent).toBe("stream_dropped");
		expect(dropped.reason).toBe("slow_consumer");
		expect(ids.length).toBeGreaterThan(0);
		expect(dropped.lastEventId).toBe(ids.at(-1));
		expect(ids).toEqual(allIds.slice(0, ids.length));

		// Resuming from the notice's id: exactly the rest of the log.
		const resumed = await openSse(`${server.url}/v1/sessions/${id}/events`, {
			headers: { "last-event-id": String(dropped.lastEventId) },
		});
		await resumed.waitFor((e) => e.id === lastEventId, 20_000);
		expect([...ids, ...resumed.ids()]).toEqual(allIds);
		resumed.close();
	}
}, 60_000);
