/**
 * Ends the server's idle connections as soon as a graceful close begins (see trackConnections).
 */
import type { IncomingMessage, Server, ServerResponse } from "node:http";
import type { Socket } from "node:net";

interface ConnectionState {
	/** Requests on this connection whose response has not closed. */
	inFlight: number;
	/** `socket.bytesRead` when the connection last became idle (0: never used). */
	bytesReadWhenIdle: number;
}

/**
 * Tracks the server's connections, so that a graceful close can end each one as soon as it is
 * idle: keep-alive connections between requests, connections opened ahead of use (client pools,
 * load balancers) that never sent a byte — node's own `closeIdleConnections` leaves the latter
 * open until the client drops them — and the connection of every response that finishes while
 * the server drains (an SSE stream ended by the shutdown was sent with `keep-alive`). A client's
 * next request then opens a new connection, which reaches whatever listens by then: nothing (a
 * refused connection, which an EventSource retries), or the next process after a restart.
 *
 * A connection is idle when no request is in flight on it and it has received nothing since its
 * last response: one whose next request's headers are arriving is left to node, which answers it
 * (with `Connection: close`, as Fastify sets while closing).
 */
export function trackConnections(server: Server): { drain(): void } {
	const connections = new Map<Socket, ConnectionState>();
	let draining = false;
	const isIdle = (socket: Socket, state: ConnectionState) =>
		state.inFlight === 0 && socket.bytesRead === state.bytesReadWhenIdle;

	server.on("connection", (socket: Socket) => {
		connections.set(socket, { inFlight: 0, bytesReadWhenIdle: 0 });
		socket.once("close", () => connections.delete(socket));
	});
	server.on("request", (req: IncomingMessage, res: ServerResponse) => {
		const socket = req.socket;
		const state = connections.get(socket);
		if (!state) return;
		state.inFlight++;
		res.once("close", () => {
			state.inFlight = Math.max(0, state.inFlight - 1);
			if (state.inFlight === 0) state.bytesReadWhenIdle = socket.bytesRead;
			// After the response's last bytes: end() flushes what is queued before the FIN.
			if (draining && isIdle(socket, state)) socket.end();
		});
	});
	return {
		/** From now on, closes every connection once it is idle; the idle ones at once. */
		drain() {
			draining = true;
			for (const [socket, state] of connections) if (isIdle(socket, state)) socket.destroy();
		},
	};
}
