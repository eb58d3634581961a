/**
 * The deployed topology as processes: three replica processes on PostgreSQL and Redis behind a
 * real nginx configured as deploy/nginx.conf. Clients talk to nginx only, streaming their
 * sessions' events and prompting run after run, while each replica in turn is stopped (SIGTERM)
 * and started again on its address (a rolling restart): every client resumes through nginx with
 * Last-Event-ID and ends with every event of the session exactly once, in order, and every run
 * it was told had started has ended.
 */
import { randomBytes, randomUUID } from "node:crypto";
import { afterAll, describe, expect, it } from "vitest";
import { readSse } from "../../src/client/sse-parser.js";
import { clusterEnv, haveClusterServices, NO_CLUSTER_SERVICES, words } from "../helpers/cluster.js";
import { json, type MainProcess, startMain, stopAll } from "../helpers/main-process.js";
import { haveNginx, type Nginx, nginxTitle, startNginx } from "../helpers/nginx.js";
import { testSchemas } from "../helpers/postgres.js";

const enabled = haveNginx() && (await haveClusterServices());
const schemas = testSchemas("nginx-cluster");
const T = 240_000;

let nginx: Nginx | undefined;
afterAll(async () => {
	await nginx?.stop();
	stopAll();
});

interface Seen {
	id: number | undefined;
	type: string;
	data: any;
}

/**
 * A client of nginx that keeps one session's event stream open: it reconnects after every end or
 * error with `Last-Event-ID` (the last id it got), and records every event as it arrives, with no
 * de-duplication of its own, so a doubled or missing event shows.
 */
function follow(base: string, id: string): { events: Seen[]; reconnects: number; stop(): Promise<void> } {
	const events: Seen[] = [];
	const controller = new AbortController();
	let lastId = 0;
	const state = { events, reconnects: 0, stop: async () => {} };
	const loop = (async () => {
		while (!controller.signal.aborted) {
			try {
				const res = await fetch(`${base}/v1/sessions/${id}/events`, {
					headers: { accept: "text/event-stream", "last-event-id": String(lastId) },
					signal: controller.signal,
				});
				if (res.ok && res.body) {
					for await (const message of readSse(res.body)) {
						const eventId = message.id ? Number(message.id) : undefined;
						events.push({ id: eventId, type: message.event, data: JSON.parse(message.data) });
						if (eventId !== undefined) lastId = eventId;
					}
				} else {
					await res.text();
				}
			} catch {
				// A connection cut by a stopping replica: resume below.
			}
			if (controller.signal.aborted) break;
			state.reconnects += 1;
			await new Promise((resolve) => setTimeout(resolve, 100));
		}
	})();
	state.stop = async () => {
		controller.abort();
		await loop;
	};
	return state;
}

/** The session's stored log (`?after=0` on one replica) up to its `runs`-th `agent_end`: id and type of each event. */
async function storedLog(base: string, id: string, runs: number): Promise<{ id: number; type: string }[]> {
	const controller = new AbortController();
	const res = await fetch(`${base}/v1/sessions/${id}/events?after=0`, {
		headers: { accept: "text/event-stream" },
		signal: controller.signal,
	});
	const log: { id: number; type: string }[] = [];
	let ends = 0;
	for await (const message of readSse(res.body!)) {
		if (!message.id) continue;
		log.push({ id: Number(message.id), type: message.event });
		if (message.event === "agent_end" && ++ends === runs) break;
	}
	controller.abort();
	return log;
}

/** Answers nginx gave on its own (its 502 page: the replica went away before it answered). */
const gatewayErrors: string[] = [];

/**
 * POSTs through nginx as a client should during a rolling restart: with one `Idempotency-Key`
 * for every attempt (where the route takes one), retrying while the answer is a 503 (a replica
 * stopping: the error envelope) or nginx's 502 (the replica closed the connection before it
 * answered, so the request may or may not have been taken: the key makes the retry safe).
 */
async function postRetrying(url: string, body: unknown, key?: string): Promise<{ status: number; body: any }> {
	for (let attempt = 0; ; attempt++) {
		const raw = await fetch(url, {
			method: "POST",
			headers: { "content-type": "application/json", ...(key ? { "idempotency-key": key } : {}) },
			body: JSON.stringify(body),
		});
		const text = await raw.text();
		const isJson = (raw.headers.get("content-type") ?? "").startsWith("application/json");
		if (raw.status === 502 && !isJson) {
			gatewayErrors.push(`POST ${url}`);
		} else {
			if (!isJson) throw new Error(`POST ${url}: ${raw.status} not JSON: ${text}`);
			const res = { status: raw.status, body: JSON.parse(text) };
			const retry = res.status === 503 || (res.status === 409 && res.body.error.code === "IDEMPOTENCY_IN_PROGRESS");
			if (!retry || attempt > 100) return res;
			expect(res.body.error.code).toMatch(/^[A-Z_]+$/);
		}
		if (attempt > 100) throw new Error(`POST ${url}: no answer after 100 attempts`);
		await new Promise((resolve) => setTimeout(resolve, 100));
	}
}

describe.skipIf(!enabled)("three replicas behind nginx (deploy/nginx.conf)", () => {
	it(
		nginxTitle(
			"a rolling restart under load: every client resumes through nginx and ends with every event exactly once",
		),
		async () => {
			const schema = schemas.next();
			const prefix = `wh-test:${schema}:${randomBytes(3).toString("hex")}:`;
			const env = {
				// No replica dies here: each stops gracefully and gives its leases back. A lease expires
				// only if its replica stalls past the TTL, which a loaded machine can make happen; another
				// replica then takes the run over and continues it (a fourth run), as it should for a stall,
				// but that is not what this test is about.
				...clusterEnv(schema, prefix, { fauxDelayMs: 20, heartbeatMs: 500, leaseTtlMs: 15_000 }),
				// A stopping replica lets its runs finish (they are short here).
				WHEELHOUSE_SHUTDOWN_GRACE_MS: "8000",
				LOG_LEVEL: "info",
			};
			const start = (port?: number) => startMain({ db: "/nonexistent/unused.db", port, env });
			const replicas: MainProcess[] = [await start()];
			replicas.push(...(await Promise.all([start(), start()])));
			nginx = await startNginx(replicas.map((r) => `127.0.0.1:${r.port}`));
			const base = nginx.url;

			const SESSIONS = 4;
			const RUNS = 3;
			const ids: string[] = [];
			for (let i = 0; i < SESSIONS; i++) {
				const created = await postRetrying(`${base}/v1/sessions`, {});
				expect(created.status).toBe(201);
				ids.push(created.body.id);
			}
			const clients = ids.map((id) => follow(base, id));
			const runsEnded = (client: ReturnType<typeof follow>) =>
				client.events.filter((e) => e.type === "agent_end").length;

			// Each session: RUNS prompts through nginx, one after the other's end.
			const load = ids.map(async (id, i) => {
				for (let run = 0; run < RUNS; run++) {
					const res = await postRetrying(
						`${base}/v1/sessions/${id}/prompt`,
						{ message: words(40, `s${i}r${run}w`) },
						randomUUID(),
					);
					expect(res.status, JSON.stringify(res.body)).toBe(202);
					const deadline = Date.now() + 60_000;
					while (runsEnded(clients[i]!) < run + 1) {
						if (Date.now() > deadline) {
							throw new Error(
								`session ${i}: run ${run} never ended for its client; got ${clients[i]!.events.map((e) => `${e.id}:${e.type}`).join(" ")}`,
							);
						}
						await new Promise((resolve) => setTimeout(resolve, 50));
					}
				}
			});

			// The rolling restart: each replica in turn stops and comes back on its address.
			const rolling = (async () => {
				for (let r = 0; r < replicas.length; r++) {
					await new Promise((resolve) => setTimeout(resolve, 600));
					const old = replicas[r]!;
					old.child.kill("SIGTERM");
					expect(await old.exited).toEqual({ code: 0, signal: null });
					replicas[r] = await start(old.port);
				}
			})();
			await Promise.all([...load, rolling]);
			for (const client of clients) await client.stop();

			// The reference: the session's log as stored, read from a replica directly.
			for (const [i, id] of ids.entries()) {
				const client = clients[i]!;
				const got = client.events.filter((e) => e.id !== undefined);
				const gotIds = got.map((e) => e.id!);
				const log = await storedLog(replicas[1]!.url, id, RUNS);
				// Every event the store kept (all but the deltas of ended messages) reached the client.
				const missing = log.filter((e) => !gotIds.includes(e.id));
				expect(missing, `session ${i}: stored events the client never got`).toEqual([]);
				expect(new Set(gotIds).size, `session ${i}: no event twice`).toBe(gotIds.length);
				for (let k = 1; k < gotIds.length; k++) expect(gotIds[k]).toBeGreaterThan(gotIds[k - 1]!);
				expect(got.filter((e) => e.type === "agent_start")).toHaveLength(RUNS);
				expect(got.filter((e) => e.type === "agent_end")).toHaveLength(RUNS);

				const stored = await json(`${replicas[0]!.url}/v1/sessions/${id}/messages`);
				const answers = stored.body.messages.filter((m: { role: string }) => m.role === "assistant");
				expect(answers).toHaveLength(RUNS);
				// Every answer the store has reached the client, once.
				const ended = got
					.filter((e) => e.type === "message_end" && e.data.message?.role === "assistant")
					.map((e) => JSON.stringify(e.data.message));
				for (const answer of answers) {
					const text = answer.content.map((c: { text?: string }) => c.text ?? "").join("");
					expect(ended.filter((m) => m.includes(text))).toHaveLength(1);
				}
			}
			// The clients did have to resume: streams were cut by the stopping replicas.
			expect(clients.reduce((sum, c) => sum + c.reconnects, 0)).toBeGreaterThan(0);
			// nginx's own 502s: only requests caught by a replica's stop (at most one per client and stop).
			expect(gatewayErrors.length, gatewayErrors.join("\n")).toBeLessThanOrEqual(SESSIONS * replicas.length);
		},
		T,
	);
});

if (!enabled) {
	describe("three replicas behind nginx (deploy/nginx.conf)", () => {
		it.skip(`a rolling restart under load: ${haveNginx() ? NO_CLUSTER_SERVICES : "skipped, no nginx"}`, () => {});
	});
}
