/**
 * A stream whose end is requested while its socket is backed up still ends (its socket is destroyed
 * after the linger time) even if the peer never reads again: ends normally wait for a write pass,
 * and a stalled peer never lets the socket drain. A real socket whose client never reads.
 */
import { once } from "node:events";
import { createServer, type Server, type ServerResponse } from "node:http";
import { connect, type Socket } from "node:net";
import { afterEach, describe, expect, it } from "vitest";
import { type SseCloseReason, SseConnection } from "../../../../src/server/http/sse/connection.js";

let server: Server | undefined;
const sockets: Socket[] = [];
afterEach(async () => {
	for (const s of sockets.splice(0)) s.destroy();
	server?.closeAllConnections();
	if (server) await new Promise((resolve) => server?.close(resolve));
	server = undefined;
});

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

describe("SSE end while the socket is backed up", () => {
	it("a stream ended while waiting for a drain that never comes is still closed (as before: after the 5 s linger)", async () => {
		let res!: ServerResponse;
		const gotRequest = new Promise<void>((resolve) => {
			server = createServer((_req, r) => {
				res = r;
				resolve();
			});
		});
		server!.listen(0, "127.0.0.1");
		await once(server!, "listening");
		const { port } = server!.address() as { port: number };
		// A client that sends its request and never reads a byte.
		const client = connect(port, "127.0.0.1");
		sockets.push(client);
		client.pause();
		client.write("GET /events HTTP/1.1\r\nHost: x\r\nAccept: text/event-stream\r\n\r\n");
		await gotRequest;

		const closes: SseCloseReason[] = [];
		const sse = new SseConnection(res, {
			heartbeatMs: 0,
			retryMs: 1000,
			maxBufferBytes: 512 * 1024 * 1024,
			stallMs: 0,
			onClose: (reason) => closes.push(reason),
		});
		sse.open();
		const chunk = `data: ${"x".repeat(1024 * 1024)}\n\n`;
		const backedUp = () => (sse as unknown as { waitingForDrain: boolean }).waitingForDrain;
		for (let i = 0; i < 200 && !backedUp(); i++) {
			sse.send(chunk, i + 1);
			await sleep(5);
		}
		expect(backedUp()).toBe(true);
		let resClosed = false;
		res.on("close", () => {
			resClosed = true;
		});

		sse.end(": closing\n\n");
		expect(sse.isClosed).toBe(true);
		// The response ends at once; the linger timer (LINGER_MS, 5 s) destroys the non-reading peer's socket.
		await sleep(6_500);
		expect(closes.length > 0 || resClosed).toBe(true);
	}, 15_000);
});
