/**
 * Graceful close and connections with a request on its way in (real server, raw socket).
 */
import { once } from "node:events";
import net from "node:net";
import { afterEach, describe, expect, it } from "vitest";
import { startServer, type TestServer } from "../../helpers/server.js";

let server: TestServer | undefined;
afterEach(async () => {
	await server?.close();
	server = undefined;
});

describe("graceful close", () => {
	it("answers a request whose headers were arriving when close began (node keeps such connections)", async () => {
		server = await startServer();
		const { port } = server.app.server.address() as net.AddressInfo;
		const socket = net.connect(port, "127.0.0.1");
		await once(socket, "connect");
		let received = "";
		socket.on("data", (d) => {
			received += d;
		});
		const closed = once(socket, "close");
		// The request line and a header are in; the blank line that ends the headers is still on its way.
		socket.write("GET /v1/sessions HTTP/1.1\r\nHost: localhost\r\n");
		await new Promise((resolve) => setTimeout(resolve, 50));
		const closing = server.close();
		await new Promise((resolve) => setTimeout(resolve, 50));
		if (!socket.destroyed) socket.write("\r\n");
		await Promise.race([closed, new Promise((resolve) => setTimeout(resolve, 2000))]);
		socket.destroy();
		await closing;
		// Node's own closeIdleConnections leaves a connection with a partly received request alone
		// (it gets its answer, a 503 while closing at worst); destroyIdle() resets it.
		expect(received).toMatch(/^HTTP\/1\.1 \d{3}/);
	});
});
