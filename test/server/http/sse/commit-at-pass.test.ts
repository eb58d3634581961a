/**
 * The write passes with a barrier that has a commit waiting for every frame (each frame depends on
 * a new queued write, as a busy server's run starts and messages do): a pass commits when it runs;
 * it never holds frames back so that more writes can join the commit. A real connection on a real
 * socket; once the stream is open the timers are faked, so the passes' own spacing is what the test
 * sees, not the machine's load.
 */
import { once } from "node:events";
import { createServer, type Server, type ServerResponse } from "node:http";
import { afterEach, describe, expect, it, vi } from "vitest";
import { SseConnection } from "../../../../src/server/http/sse/connection.js";
import { WritePasses } from "../../../../src/server/http/sse/write-passes.js";
import { formatEventFrame } from "../../../../src/wire/sse-frames.js";

let server: Server | undefined;
afterEach(async () => {
	vi.useRealTimers();
	server?.closeAllConnections();
	if (server) await new Promise((resolve) => server?.close(resolve));
	server = undefined;
});

const idsIn = (text: string) => [...text.matchAll(/^id: (\d+)$/gm)].map((m) => Number(m[1]));

describe("SSE write passes and a barrier with a commit waiting", () => {
	it("commit and write each frame at the next pass (within the write spacing) while frames keep coming", async () => {
		const FRAMES = 100;
		let queued = 0;
		let durable = 0;
		let commits = 0;
		const passes = new WritePasses();
		passes.addBarrier({
			get pending() {
				return queued > durable;
			},
			async run() {
				commits++;
				durable = queued;
			},
		});
		/** When each frame was queued, and when it reached the socket (fake clock, ms). */
		const queuedAt = new Map<number, number>();
		const writtenAt = new Map<number, number>();
		let opened!: (sse: SseConnection) => void;
		const connection = new Promise<SseConnection>((resolve) => {
			opened = resolve;
		});
		server = createServer((_req, res: ServerResponse) => {
			const write = res.write.bind(res) as (chunk: unknown, ...rest: unknown[]) => boolean;
			res.write = ((chunk: unknown, ...rest: unknown[]) => {
				for (const id of idsIn(String(chunk ?? ""))) writtenAt.set(id, performance.now());
				return write(chunk, ...rest);
			}) as typeof res.write;
			const sse = new SseConnection(res, {
				heartbeatMs: 0,
				retryMs: 1000,
				maxBufferBytes: 1 << 24,
				stallMs: 0,
				passes,
			});
			sse.open();
			opened(sse);
		});
		server.listen(0, "127.0.0.1");
		await once(server, "listening");
		const { port } = server.address() as { port: number };
		const res = await fetch(`http://127.0.0.1:${port}/events`);
		const sse = await connection;
		const realNow = performance.now();
		vi.useFakeTimers({ toFake: ["setTimeout", "clearTimeout", "setImmediate", "clearImmediate", "performance"] });
		// The fake clock starts at 0: move it past the real one, which the passes have seen.
		await vi.advanceTimersByTimeAsync(realNow + 100);
		// A frame every millisecond, each after a new queued write: frames never stop coming.
		for (let n = 1; n <= FRAMES; n++) {
			queued = n;
			queuedAt.set(n, performance.now());
			sse.send(formatEventFrame(n, "e", `{"n":${n}}`), n);
			await vi.advanceTimersByTimeAsync(1);
		}
		await vi.advanceTimersByTimeAsync(50);
		const waits = [...queuedAt].map(([id, at]) => (writtenAt.get(id) ?? Number.POSITIVE_INFINITY) - at);
		vi.useRealTimers();
		sse.end();
		expect(idsIn(await res.text())).toEqual(Array.from({ length: FRAMES }, (_, i) => i + 1));
		// Writes take no fake time, so the write spacing is its minimum, 1 ms: no frame waits longer.
		expect(Math.max(...waits)).toBeLessThanOrEqual(1);
		expect(commits).toBeGreaterThanOrEqual(FRAMES);
	});
});
