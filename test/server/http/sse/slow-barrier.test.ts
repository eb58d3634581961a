/**
 * The write passes with a barrier that resolves after it is called (a store committing across a
 * network): a frame reaches the socket only once a barrier called after the frame was queued has
 * resolved. Frames queued while a barrier is awaited depend on writes it may not cover, so they go
 * out with the next pass, after the next barrier. A real socket and a real client.
 */
import { once } from "node:events";
import { createServer, type Server, type ServerResponse } from "node:http";
import { afterEach, describe, expect, it } from "vitest";
import { SseConnection } from "../../../../src/server/http/sse/connection.js";
import { WritePasses } from "../../../../src/server/http/sse/write-passes.js";
import { formatEventFrame } from "../../../../src/wire/sse-frames.js";

let server: Server | undefined;
afterEach(async () => {
	server?.closeAllConnections();
	if (server) await new Promise((resolve) => server?.close(resolve));
	server = undefined;
});

const idsIn = (text: string) => [...text.matchAll(/^id: (\d+)$/gm)].map((m) => Number(m[1]));

describe("SSE write passes and an asynchronous barrier", () => {
	it("write a frame only after a barrier called after it was queued has resolved, every frame once, in order", async () => {
		const TOTAL = 300;
		/** The highest id queued so far, and the highest id a resolved barrier covers. */
		let queued = 0;
		let durable = 0;
		let barriers = 0;
		const passes = new WritePasses();
		passes.addBarrier({
			get pending() {
				return queued > durable;
			},
			run() {
				barriers++;
				const covers = queued; // what was queued when the barrier was called
				return new Promise<void>((resolve) =>
					setTimeout(() => {
						durable = Math.max(durable, covers);
						resolve();
					}, 4),
				);
			},
		});
		const early: number[] = [];
		const check = (chunk: unknown) => {
			for (const id of idsIn(String(chunk ?? ""))) if (id > durable) early.push(id);
		};
		server = createServer((_req, res: ServerResponse) => {
			const write = res.write.bind(res) as (chunk: unknown, ...rest: unknown[]) => boolean;
			const end = res.end.bind(res) as (chunk?: unknown, ...rest: unknown[]) => ServerResponse;
			res.write = ((chunk: unknown, ...rest: unknown[]) => {
				check(chunk);
				return write(chunk, ...rest);
			}) as typeof res.write;
			res.end = ((chunk?: unknown, ...rest: unknown[]) => {
				if (typeof chunk !== "function") check(chunk);
				return end(chunk, ...rest);
			}) as typeof res.end;
			const sse = new SseConnection(res, {
				heartbeatMs: 0,
				retryMs: 1000,
				maxBufferBytes: 1 << 24,
				stallMs: 0,
				passes,
			});
			sse.open();
			// Frames keep coming, faster than the barrier resolves: some are always queued while one is awaited.
			const timer = setInterval(() => {
				for (let k = 0; k < 3 && queued < TOTAL; k++) {
					queued++;
					sse.send(formatEventFrame(queued, "e", `{"n":${queued}}`), queued);
				}
				if (queued >= TOTAL) {
					clearInterval(timer);
					sse.end();
				}
			}, 1);
		});
		server.listen(0, "127.0.0.1");
		await once(server, "listening");
		const { port } = server.address() as { port: number };

		const res = await fetch(`http://127.0.0.1:${port}/events`, { headers: { accept: "text/event-stream" } });
		expect(res.status).toBe(200);
		const ids = idsIn(await res.text());

		expect(ids).toEqual(Array.from({ length: TOTAL }, (_, i) => i + 1));
		expect(early).toEqual([]);
		// The frames went out in several passes, each behind its own barrier.
		expect(barriers).toBeGreaterThan(3);
	});
});
