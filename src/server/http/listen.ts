/**
 * Listening, for the process entry (main.ts): one log line once the server listens — its address
 * and the playground's URL — and one line, without a stack, saying why when it cannot.
 *
 * Fastify logs a line of its own for every address it listens on (several for `0.0.0.0`); the
 * app's logger drops those (see {@link FASTIFY_LISTEN_TEXT}) so the line here is the only one.
 */
import type { FastifyInstance } from "fastify";
import { ConfigError } from "../config/config.js";

/**
 * What Fastify is told to log when it listens (`listenTextResolver`); the app's logger drops a
 * message equal to it (app.ts), so the server's own line stands alone.
 */
export const FASTIFY_LISTEN_TEXT = "\u0000fastify-listening";

/** Whether `listen` succeeded: the address, or one line saying why not. */
export type ListenOutcome = { kind: "listening"; address: string } | { kind: "failed"; message: string };

/** Where to listen, and which variables set it (for the message when it fails). */
export interface ListenTarget {
	port: number;
	host: string;
}

/**
 * Listens on `target`, then logs one line with the address and, when the app serves it, the
 * playground's URL. Contract: never throws; a failure (port in use, no such interface, the app's
 * own startup failing in `ready`) is the outcome's one-line message.
 */
export async function listenAndAnnounce(app: FastifyInstance, target: ListenTarget): Promise<ListenOutcome> {
	let address: string;
	try {
		address = await app.listen({ ...target, listenTextResolver: () => FASTIFY_LISTEN_TEXT });
	} catch (err) {
		return { kind: "failed", message: describeListenError(err, target) };
	}
	const playground = app.hasRoute({ method: "GET", url: "/playground" }) ? `${address}/` : undefined;
	app.log.info(
		{ address, ...(playground ? { playground } : {}) },
		playground ? `Wheelhouse listening on ${address}; playground: ${playground}` : `Wheelhouse listening on ${address}`,
	);
	return { kind: "listening", address };
}

/** One line for a listen error: what happened, where, and what to do. */
function describeListenError(err: unknown, target: ListenTarget): string {
	if (err instanceof ConfigError) return err.message;
	const e = err as NodeJS.ErrnoException & { port?: number; address?: string };
	// The metrics listener (WHEELHOUSE_METRICS_PORT) listens in the app's `ready`: name its port.
	const port = typeof e.port === "number" ? e.port : target.port;
	const variable = port === target.port ? "PORT" : "WHEELHOUSE_METRICS_PORT";
	const where = `cannot listen on ${target.host}:${port}`;
	switch (e.code) {
		case "EADDRINUSE":
			return `${where}: the port is in use by another process; stop it or set ${variable} to a free port`;
		case "EACCES":
			return `${where}: permission denied (ports below 1024 need privileges); set ${variable} to 1024 or above`;
		case "EADDRNOTAVAIL":
			return `${where}: no interface of this machine has the address ${target.host}; set HOST to one that does (127.0.0.1, or 0.0.0.0 for all)`;
		case "ENOTFOUND":
		case "EAI_AGAIN":
			return `${where}: the host name ${target.host} does not resolve; set HOST to an address (127.0.0.1, or 0.0.0.0 for all)`;
		default:
			return `${where}: ${e.message ?? String(err)}`;
	}
}
