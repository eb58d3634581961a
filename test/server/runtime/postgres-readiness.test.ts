/**
 * The server on a PostgreSQL store that becomes unreachable (a TCP proxy in front of the database
 * is cut, then restored): `/readyz` answers 503 naming `postgres`, requests that need the store
 * answer 503 `STORE_UNAVAILABLE` (never 500), a write acknowledged meanwhile stays queued and is
 * committed once the database is back, and readiness returns.
 */
import { connect, createServer, type Server, type Socket } from "node:net";
import { afterEach, describe, expect, it, vi } from "vitest";
import { PostgresSessionStore } from "../../../src/store/postgres/index.js";
import { freePort } from "../../helpers/main-process.js";
import { havePostgres, NO_POSTGRES, PG_URL, testSchemas } from "../../helpers/postgres.js";
import { startServer, type TestServer } from "../../helpers/server.js";
import { user } from "../../store/contract.js";

const schemas = testSchemas("readiness");
const ok = await havePostgres();
const cleanups: (() => Promise<void> | void)[] = [];
afterEach(async () => {
	for (const c of cleanups.splice(0).reverse()) await c();
});

/** A TCP proxy to the test database that can be cut (every connection dropped, port closed) and restored. */
async function cuttableProxy(): Promise<{ url: string; cut(): Promise<void>; restore(): Promise<void> }> {
	const target = new URL(PG_URL);
	const port = await freePort();
	const sockets = new Set<Socket>();
	let server: Server | undefined;
	const listen = () =>
		new Promise<void>((resolve) => {
			server = createServer((client) => {
				const upstream = connect(Number(target.port || 5432), target.hostname);
				for (const s of [client, upstream]) {
					sockets.add(s);
					s.on("close", () => sockets.delete(s));
					s.on("error", () => undefined);
				}
				client.pipe(upstream).pipe(client);
			}).listen(port, "127.0.0.1", () => resolve());
		});
	await listen();
	const url = new URL(PG_URL);
	url.host = `127.0.0.1:${port}`;
	const cut = async () => {
		await new Promise<void>((resolve) => {
			server?.close(() => resolve());
			for (const s of sockets) s.destroy();
		});
	};
	cleanups.push(cut);
	return { url: url.toString(), cut, restore: listen };
}

describe.skipIf(!ok)("the server while PostgreSQL is unreachable", () => {
	it("answers 503 (readyz names postgres, STORE_UNAVAILABLE), keeps acknowledged writes, and recovers", {
		timeout: 60_000,
	}, async () => {
		const proxy = await cuttableProxy();
		const flushErrors: Error[] = [];
		const store = new PostgresSessionStore({
			url: proxy.url,
			schema: schemas.next(),
			poolSize: 3,
			retryDelayMs: 100,
			connectTimeoutMs: 1000,
			onFlushError: (e) => flushErrors.push(e),
		});
		await store.ready;
		const server: TestServer = await startServer({ store });
		cleanups.push(
			() => store.close(),
			() => server.close(),
		);

		const created = await server.request("POST", "/v1/sessions", { body: { model: "faux/echo" } });
		expect(created.status).toBe(201);
		const id = created.body.id as string;
		expect((await server.request("GET", "/readyz")).body).toMatchObject({ status: "ready", store: "postgres" });
		expect(await store.openSession(id)).toBe(true);

		await proxy.cut();
		const ready = await server.request("GET", "/readyz");
		expect(ready.status).toBe(503);
		expect(ready.body).toEqual({ status: "store_unavailable", unavailable: ["postgres"] });
		for (const [method, path, body] of [
			["POST", "/v1/sessions", { model: "faux/echo" }],
			["GET", "/v1/sessions", undefined],
			["GET", `/v1/sessions/${id}/messages`, undefined],
		] as const) {
			const res = await server.request(method, path, body === undefined ? {} : { body });
			expect([res.status, res.body?.error?.code], `${method} ${path}`).toEqual([503, "STORE_UNAVAILABLE"]);
			expect(JSON.stringify(res.body)).not.toContain("127.0.0.1");
		}

		// A barrier write made meanwhile is acknowledged, the barrier does not reject, and the write waits.
		expect(store.appendMessages(id, [user("written while the database was away")])).toBe(1);
		await store.sync();
		expect(store.syncPending).toBe(true);
		// The commit attempt that carries it reports the failure (the barrier may resolve on an earlier attempt's end).
		await vi.waitFor(() => expect(flushErrors.some((e) => /stay queued for the next try/.test(e.message))).toBe(true), {
			timeout: 10_000,
		});

		await proxy.restore();
		const deadline = Date.now() + 20_000;
		while ((await server.request("GET", "/readyz")).status !== 200) {
			expect(Date.now()).toBeLessThan(deadline);
			await new Promise((r) => setTimeout(r, 100));
		}
		await store.sync();
		expect(store.syncPending).toBe(false);
		const messages = await server.request("GET", `/v1/sessions/${id}/messages`);
		expect(messages.status).toBe(200);
		expect(messages.body.messages.map((m: { content: string }) => m.content)).toEqual([
			"written while the database was away",
		]);
	});
});

it.skipIf(ok)(`the server while PostgreSQL is unreachable: ${NO_POSTGRES}`, () => {});
