/**
 * A TCP proxy (node:net) in front of a real service, for tests of a network that fails: it counts
 * connections, and can cut every connection and refuse or swallow new ones until restored. Tests
 * put it between the server and a shared engine (PostgreSQL, a replica behind nginx) to make that
 * engine unreachable without touching the engine itself.
 */
import { once } from "node:events";
import { connect, createServer, type Server, type Socket } from "node:net";

export interface TcpProxy {
	port: number;
	/** `127.0.0.1:<port>`. */
	address: string;
	/** Connections accepted so far. */
	connections: number;
	/**
	 * Destroys every open connection; until `restore()`, new ones are closed at once (`refuse`) or
	 * accepted and never answered (`blackhole`: the peer sees a timeout, not an error).
	 */
	cut(mode?: "refuse" | "blackhole"): void;
	restore(): void;
	close(): Promise<void>;
}

/** Starts a proxy on a free loopback port forwarding to `target`. */
export async function startTcpProxy(target: { host: string; port: number }): Promise<TcpProxy> {
	const pairs = new Set<Socket>();
	let state: "open" | "refuse" | "blackhole" = "open";
	const server: Server = createServer((client) => {
		proxy.connections += 1;
		pairs.add(client);
		client.once("close", () => pairs.delete(client));
		client.on("error", () => client.destroy());
		if (state === "refuse") {
			client.destroy();
			return;
		}
		if (state === "blackhole") return;
		const upstream = connect(target.port, target.host);
		pairs.add(upstream);
		upstream.once("close", () => {
			pairs.delete(upstream);
			client.destroy();
		});
		client.once("close", () => upstream.destroy());
		upstream.on("error", () => upstream.destroy());
		client.pipe(upstream);
		upstream.pipe(client);
	});
	server.listen(0, "127.0.0.1");
	await once(server, "listening");
	const { port } = server.address() as { port: number };
	const proxy: TcpProxy = {
		port,
		address: `127.0.0.1:${port}`,
		connections: 0,
		cut(mode = "refuse") {
			state = mode;
			for (const socket of pairs) socket.destroy();
			pairs.clear();
		},
		restore() {
			state = "open";
		},
		async close() {
			for (const socket of pairs) socket.destroy();
			await new Promise<void>((resolve) => server.close(() => resolve()));
		},
	};
	return proxy;
}
