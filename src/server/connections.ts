import type { IncomingMessage, Server, ServerResponse } from "node:http";
import type { Socket } from "node:net";

interface ConnectionState {
	/** Requests on this connection whose response has not closed. */
	inFlight: number;
	/** `socket.bytesRead` when the connection last became idle (0: never used). */
	bytesReadWhenIdle: number;
}

/**
 * Tracks the server's connections, so that a graceful close can end the idle ones at once:
 * keep-alive connections between requests, and connections opened ahead of use (client pools,
 * load balancers) that never sent a byte — node's own `closeIdleConnections` leaves the latter
 * open until the client drops them. A connection is idle when no request is in flight on it and it
 * has received nothing since its last response: one whose next request's headers are arriving is
 * left to node, which answers it.
 */
export function trackConnections(server: Server): { destroyIdle(): void } {
	const connections = new Map<Socket, ConnectionState>();
	server.on("connection", (socket: Socket) => {
		connections.set(socket, { inFlight: 0, bytesReadWhenIdle: 0 });
		socket.once("close", () => connections.delete(socket));
	});
	server.on("request", (req: IncomingMessage, res: ServerResponse) => {
		const state = connections.get(req.socket);
		if (!state) return;
		state.inFlight++;
		res.once("close", () => {
			state.inFlight = Math.max(0, state.inFlight - 1);
			if (state.inFlight === 0) state.bytesReadWhenIdle = req.socket.bytesRead;
		});
	});
	return {
		destroyIdle() {
			for (const [socket, state] of connections) {
				if (state.inFlight === 0 && socket.bytesRead === state.bytesReadWhenIdle) socket.destroy();
			}
		},
	};
}
