import type { IncomingMessage, Server, ServerResponse } from "node:http";
import type { Socket } from "node:net";

/**
 * Tracks the server's connections and whether each has a request in flight, so that a graceful
 * close can end the idle ones at once (including connections that never carried a request).
 */
export function trackConnections(server: Server): { destroyIdle(): void } {
	const inFlight = new Map<Socket, number>();
	server.on("connection", (socket: Socket) => {
		inFlight.set(socket, 0);
		socket.once("close", () => inFlight.delete(socket));
	});
	server.on("request", (req: IncomingMessage, res: ServerResponse) => {
		const socket = req.socket;
		inFlight.set(socket, (inFlight.get(socket) ?? 0) + 1);
		res.once("close", () => {
			if (inFlight.has(socket)) inFlight.set(socket, Math.max(0, (inFlight.get(socket) ?? 1) - 1));
		});
	});
	return {
		destroyIdle() {
			for (const [socket, count] of inFlight) if (count === 0) socket.destroy();
		},
	};
}
