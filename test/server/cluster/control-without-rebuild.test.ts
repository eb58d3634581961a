/**
 * Control posted on a replica that does not run the session — a steer, an approval, a client tool
 * result, an abort — is durable and delivered with at most two store round trips and one Redis
 * publish before its answer, and builds no session there. So is an AG-UI run that carries the
 * result of a frontend tool the run on the other replica waits for (the unmodified `HttpAgent`).
 *
 * Replica A is a real process (it runs the sessions); replica B is a real server in this process
 * on the same PostgreSQL schema and Redis prefix, so that its store calls can be counted: its
 * store is the PostgreSQL store behind a proxy that records every asynchronous call naming the
 * session, and an extension counts the sessions B builds. A subscriber on the control channel
 * counts what B publishes.
 */
import { randomBytes } from "node:crypto";
import { HttpAgent } from "@ag-ui/client";
import { Redis } from "ioredis";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { controlChannel } from "../../../src/server/cluster/redis.js";
import { openPostgresStore, type PostgresSessionStore } from "../../../src/store/postgres/index.js";
import type { SessionStore } from "../../../src/store/types.js";
import { quietConsole, runOnce } from "../../helpers/agui.js";
import {
	clusterEnv,
	createSession,
	haveClusterServices,
	NO_CLUSTER_SERVICES,
	REDIS_URL,
	type Replica,
	waitUntil,
	words,
} from "../../helpers/cluster.js";
import { json, startMain, stopAll } from "../../helpers/main-process.js";
import { PG_URL, testSchemas } from "../../helpers/postgres.js";
import { startServer, type TestServer } from "../../helpers/server.js";
import { promptSse } from "../../helpers/sse.js";

const ok = await haveClusterServices();
const schemas = testSchemas("control-no-rebuild");
const T = 60_000;

/** The store calls one request made for one session: their names and how many round trips they took. */
class StoreCalls {
	sessionId = "";
	names: string[] = [];
	/** Calls started while none of this session's was in flight: each begins a round trip. */
	roundTrips = 0;
	private inFlight = 0;

	reset(sessionId: string): void {
		this.sessionId = sessionId;
		this.names = [];
		this.roundTrips = 0;
	}

	/** `store` with every asynchronous call about the session being watched recorded. */
	wrap(store: SessionStore): SessionStore {
		return new Proxy(store, {
			get: (target, property, receiver) => {
				const value = Reflect.get(target, property, receiver);
				if (typeof value !== "function") return value;
				return (...args: unknown[]) => {
					const result = value.apply(target, args);
					const about = args[0] === this.sessionId || (args[0] as { sessionId?: string })?.sessionId === this.sessionId;
					if (!(result instanceof Promise) || !about || this.sessionId === "") return result;
					if (this.inFlight === 0) this.roundTrips++;
					this.inFlight++;
					this.names.push(String(property));
					return result.finally(() => this.inFlight--);
				};
			},
		});
	}
}

describe.skipIf(!ok)("cluster: control on a replica without the run builds nothing", () => {
	let A: Replica;
	let B: TestServer;
	let inner: PostgresSessionStore;
	let watcher: Redis;
	const calls = new StoreCalls();
	/** Sessions B built (`SessionExtension.attach` runs once per `LiveSession`). */
	let built = 0;
	/** Control messages seen on the channel, by session. */
	const published: { t: string; s: string }[] = [];

	beforeAll(async () => {
		const schema = schemas.next();
		const prefix = `wh-test:${schema}:${randomBytes(3).toString("hex")}:`;
		const env = clusterEnv(schema, prefix, { fauxDelayMs: 15 });
		// A first: it creates the schema.
		A = Object.assign(await startMain({ db: "/nonexistent/unused.db", env: { ...env, LOG_LEVEL: "info" } }), {
			name: "A",
		});
		inner = await openPostgresStore({ url: PG_URL, schema, cluster: true, leaseTtlMs: 3000 });
		B = await startServer({
			store: calls.wrap(inner),
			config: {
				store: "postgres",
				databaseUrl: PG_URL,
				databaseSchema: schema,
				redisUrl: REDIS_URL,
				redisPrefix: prefix,
				leaseTtlMs: 3000,
				heartbeatMs: 500,
				fauxDelayMs: 15,
			} as never,
		});
		B.app.wheelhouse.sessions.addExtension({
			name: "probe",
			attach: () => {
				built++;
			},
		});
		watcher = new Redis(REDIS_URL);
		await watcher.subscribe(controlChannel(prefix));
		watcher.on("message", (_channel: string, raw: string) => published.push(JSON.parse(raw).m));
	}, T);

	afterAll(async () => {
		watcher?.disconnect();
		await B?.close();
		await inner?.close();
		stopAll();
	}, T);

	/** Runs `post` on B as one request of session `id`: what B asked the store, built, and published. */
	async function onB<R>(id: string, post: () => Promise<R>) {
		const builtBefore = built;
		const sentBefore = published.filter((m) => m.s === id).length;
		calls.reset(id);
		const answer = await post();
		const names = [...calls.names];
		const roundTrips = calls.roundTrips;
		calls.reset("");
		return {
			answer,
			names,
			roundTrips,
			built: built - builtBefore,
			/** Control messages about the session published since (waits for the first). */
			published: async () => {
				await waitUntil("the control message", async () =>
					published.filter((m) => m.s === id).length > sentBefore ? true : undefined,
				);
				return published.filter((m) => m.s === id).slice(sentBefore);
			},
		};
	}

	it(
		"a steer and an approval on B reach the run on A: two round trips, one publish, no session built on B",
		async () => {
			const id = await createSession(A, { toolApprovals: { calculate: "always" } });
			const run = await promptSse(A.url, id, { message: '/tool calculate {"expression":"6*7"}' });
			const requested = await run.waitForType("approval_requested", T);

			const steer = await onB(id, () =>
				json(`${B.url}/v1/sessions/${id}/steer`, "POST", { message: "steered from B" }),
			);
			expect(steer.answer.status).toBe(202);
			expect(steer.answer.body).toMatchObject({ status: "queued", queue: "steer", queueLength: 1, idle: false });
			expect(steer.built).toBe(0);
			expect(steer.roundTrips).toBeLessThanOrEqual(2);
			expect(steer.names).toContain("enqueue");
			expect(await steer.published()).toEqual([{ t: "queue", s: id }]);
			// A took it in: its stream says so.
			await run.waitFor((e) => e.event === "queue_update" && e.data.action === "queued", T);

			const approval = await onB(id, () =>
				json(`${B.url}/v1/sessions/${id}/approvals/${requested.data.toolCallId}`, "POST", { approve: true }),
			);
			expect(approval.answer).toEqual({
				status: 200,
				body: { toolCallId: requested.data.toolCallId, status: "accepted" },
			});
			expect(approval.built).toBe(0);
			expect(approval.roundTrips).toBeLessThanOrEqual(2);
			expect(approval.names).toContain("resolvePending");
			expect(await approval.published()).toEqual([
				{ t: "pending", s: id, kind: "approval", call: requested.data.toolCallId },
			]);

			await run.waitForType("agent_end", T);
			const toolEnd = run.events.findIndex((e) => e.event === "tool_execution_end");
			const steered = run.events.findIndex(
				(e) => e.event === "message_start" && JSON.stringify(e.data).includes("steered from B"),
			);
			expect(JSON.stringify(run.events[toolEnd]!.data)).toContain("42");
			expect(steered).toBeGreaterThan(toolEnd);
		},
		T,
	);

	it(
		"a client tool result and an abort on B reach the run on A: two round trips, one publish, no session built on B",
		async () => {
			const id = await createSession(A, { clientTools: [{ name: "ask_user", description: "Ask the user" }] });
			const run = await promptSse(A.url, id, { message: "/tool ask_user {}" });
			const call = await run.waitFor((e) => e.event === "tool_execution_start", T);
			const result = await onB(id, () =>
				json(`${B.url}/v1/sessions/${id}/tool-results/${call.data.toolCallId}`, "POST", {
					content: "the user says yes",
				}),
			);
			expect(result.answer).toEqual({ status: 200, body: { toolCallId: call.data.toolCallId, status: "accepted" } });
			expect(result.built).toBe(0);
			expect(result.roundTrips).toBeLessThanOrEqual(2);
			expect(await result.published()).toEqual([
				{ t: "pending", s: id, kind: "client_tool", call: call.data.toolCallId },
			]);
			await run.waitForType("agent_end", T);
			expect(JSON.stringify(run.events.at(-2)?.data ?? {})).toContain("the user says yes");

			const long = await promptSse(A.url, id, { message: words(400) });
			const start = await long.waitForType("agent_start", T);
			await long.waitFor((e) => e.event === "message_update", T);
			const abort = await onB(id, () => json(`${B.url}/v1/sessions/${id}/abort`, "POST"));
			expect(abort.answer.status).toBe(200);
			expect(abort.answer.body.aborted).toBe(true);
			expect(abort.answer.body.runId).toBe(start.data.runId ?? abort.answer.body.runId);
			expect(abort.built).toBe(0);
			expect(abort.roundTrips).toBeLessThanOrEqual(2);
			// Durable before the answer: stored under the run, then sent.
			expect(abort.names).toContain("putIdempotencyKey");
			expect(await abort.published()).toEqual([{ t: "abort", s: id, run: abort.answer.body.runId }]);
			const end = await long.waitForType("agent_end", T);
			expect(end.data.messages.at(-1).stopReason).toBe("aborted");
		},
		T,
	);

	it(
		"an AG-UI run on B with the frontend tool's result continues the run waiting on A, and builds no session on B",
		async () => {
			const console_ = quietConsole();
			try {
				let target = A.url;
				const agent = new HttpAgent({
					url: `${A.url}/agui/v1/run`,
					threadId: `no-rebuild-${Date.now()}`,
					fetch: (input: string, init: RequestInit) => {
						const url = new URL(input);
						url.host = new URL(target).host;
						return fetch(url, init);
					},
				});
				const askUser = { name: "ask_user", description: "Ask the user", parameters: { type: "object" } };
				agent.addMessage({ id: "u1", role: "user", content: "/tool ask_user {}" });
				const first = await runOnce(agent, { tools: [askUser] });
				const sessionId = (first.events[0] as unknown as { metadata: { wheelhouse: { sessionId: string } } }).metadata
					.wheelhouse.sessionId;
				const call = agent.messages.at(-1) as { role: string; toolCalls?: { id: string }[] };
				const callId = call.toolCalls?.[0]?.id as string;
				expect(callId).toBeTruthy();

				target = B.url;
				agent.addMessage({ id: "t1", role: "tool", toolCallId: callId, content: "the user says yes" });
				const builtBefore = built;
				const second = await runOnce(agent, { tools: [askUser] });
				expect(built - builtBefore, "sessions built on B").toBe(0);
				expect(second.events.at(-1)?.type).toBe("RUN_FINISHED");
				expect(agent.messages.at(-1)).toMatchObject({
					role: "assistant",
					content: "Tool results: ask_user: the user says yes",
				});
				const stored = await json(`${A.url}/v1/sessions/${sessionId}/messages`);
				expect(stored.body.messages.map((m: { role: string }) => m.role)).toEqual([
					"user",
					"assistant",
					"toolResult",
					"assistant",
				]);
				console_.check();
			} finally {
				console_.restore();
			}
		},
		T,
	);

	it(
		"an AG-UI run on B with a new message instead of the tool's result abandons the run waiting on A and answers it",
		async () => {
			const console_ = quietConsole();
			try {
				let target = A.url;
				const agent = new HttpAgent({
					url: `${A.url}/agui/v1/run`,
					threadId: `abandon-${Date.now()}`,
					fetch: (input: string, init: RequestInit) => {
						const url = new URL(input);
						url.host = new URL(target).host;
						return fetch(url, init);
					},
				});
				const askUser = { name: "ask_user", description: "Ask the user", parameters: { type: "object" } };
				agent.addMessage({ id: "u1", role: "user", content: "/tool ask_user {}" });
				const first = await runOnce(agent, { tools: [askUser] });
				const sessionId = (first.events[0] as unknown as { metadata: { wheelhouse: { sessionId: string } } }).metadata
					.wheelhouse.sessionId;

				target = B.url;
				agent.addMessage({ id: "u2", role: "user", content: "never mind, say hi" });
				await runOnce(agent, { tools: [askUser] });
				expect(agent.messages.at(-1)).toMatchObject({ role: "assistant", content: "never mind, say hi" });
				const state = await json(`${A.url}/v1/sessions/${sessionId}`);
				expect(state.body).toMatchObject({ status: "idle", pendingToolCalls: [] });
				const stored = await json(`${A.url}/v1/sessions/${sessionId}/messages`);
				const roles = stored.body.messages.map((m: { role: string }) => m.role);
				expect(roles.slice(-2)).toEqual(["user", "assistant"]);
				expect(stored.body.messages.at(-1).content[0].text).toBe("never mind, say hi");
				console_.check();
			} finally {
				console_.restore();
			}
		},
		T,
	);
});

describe.skipIf(ok)("cluster: control on a replica without the run builds nothing (no services)", () => {
	it(NO_CLUSTER_SERVICES, () => undefined);
});
