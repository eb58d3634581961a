/**
 * Starts a real Wheelhouse server on an ephemeral port for a test, with the in-memory store and
 * quiet logs unless `LOG_LEVEL` is set. `close()` is idempotent; register it in `afterEach`.
 */
import type { FastifyInstance } from "fastify";
import { type BuildAppOptions, buildApp } from "../../src/server/http/app.js";

export interface TestServer {
	app: FastifyInstance;
	url: string;
	close(): Promise<void>;
	/** `fetch` relative to the server, JSON body and bearer key helpers. */
	request(
		method: string,
		path: string,
		options?: { body?: unknown; key?: string; headers?: Record<string, string> },
	): Promise<{ status: number; body: any; headers: Headers }>;
}

export async function startServer(
	options: BuildAppOptions & { setup?: (app: FastifyInstance) => void | Promise<void> } = {},
): Promise<TestServer> {
	const app = await buildApp({
		...options,
		env: options.env ?? {},
		config: {
			logLevel: (process.env.LOG_LEVEL as never) ?? "silent",
			fauxDelayMs: 0,
			heartbeatMs: 0,
			...options.config,
		},
	});
	await options.setup?.(app);
	await app.listen({ port: 0, host: "127.0.0.1" });
	const { port } = app.server.address() as { port: number };
	const url = `http://127.0.0.1:${port}`;
	let closed: Promise<void> | undefined;
	return {
		app,
		url,
		close: () => {
			closed ??= app.close();
			return closed;
		},
		async request(method, path, opts = {}) {
			const headers: Record<string, string> = { ...opts.headers };
			if (opts.key) headers.authorization = `Bearer ${opts.key}`;
			let body: string | undefined;
			if (opts.body !== undefined) {
				body = typeof opts.body === "string" ? opts.body : JSON.stringify(opts.body);
				headers["content-type"] ??= "application/json";
			}
			const res = await fetch(`${url}${path}`, { method, headers, body });
			const text = await res.text();
			let parsed: unknown = text;
			try {
				parsed = text ? JSON.parse(text) : undefined;
			} catch {
				// not JSON (SSE or empty)
			}
			return { status: res.status, body: parsed, headers: res.headers };
		},
	};
}
