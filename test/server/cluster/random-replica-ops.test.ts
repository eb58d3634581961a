/**
 * Every `/v1` operation of a session on three replicas with no sticky routing: each request goes
 * to a random replica — create, prompt, steer, follow-up, approval, client tool result, abort,
 * messages, state, events and resumes — for several sessions at once. Nothing is left waiting
 * (idle, empty queues, no pending call), each message is in the transcript once, and every
 * stream — live from the start, replayed from the start, resumed at a random event — has every
 * event once, in order, the same on every replica.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
	createSession,
	haveClusterServices,
	NO_CLUSTER_SERVICES,
	type Replica,
	testCluster,
	waitUntil,
	words,
} from "../../helpers/cluster.js";
import { json, stopAll } from "../../helpers/main-process.js";
import { openSse, type SseEvent } from "../../helpers/sse.js";

const ok = await haveClusterServices();
const cluster = testCluster("random-replica-ops");
const T = 150_000;
/** How long one step may wait. */
const STEP = 40_000;

const shape = (e: SseEvent) => `${e.id} ${e.event} ${JSON.stringify(e.data)}`;

describe.skipIf(!ok)("cluster: every /v1 operation on a random replica", () => {
	let replicas: Replica[];
	beforeAll(async () => {
		replicas = await cluster.start(3, { fauxDelayMs: 15 });
	}, T);
	afterAll(async () => {
		stopAll();
		await cluster.dropRedisKeys();
	});

	const any = () => replicas[Math.floor(Math.random() * replicas.length)]!;
	/** A request to a random replica; the status must be `status`. */
	async function call(path: string, method = "GET", body?: unknown, status = 200): Promise<any> {
		const on = any();
		const res = await json(`${on.url}${path}`, method, body);
		if (res.status !== status) {
			throw new Error(`${method} ${path} on ${on.name}: ${res.status} ${JSON.stringify(res.body)}`);
		}
		return res.body;
	}
	async function idle(id: string): Promise<any> {
		return waitUntil(
			`session ${id} idle`,
			async () => {
				const state = await call(`/v1/sessions/${id}`);
				return state.status === "idle" ? state : undefined;
			},
			T,
		);
	}

	/** Where each scenario is (named when one hangs). */
	const progress = new Map<string, string>();

	/** One session through every operation; a failure says where it was and what the session is. */
	async function scenario(tag: string): Promise<void> {
		const context: { id?: string; watchOn?: string; lastId?: () => number } = {};
		try {
			await steps(tag, context);
		} catch (err) {
			const state = context.id ? await json(`${replicas[0]!.url}/v1/sessions/${context.id}`) : undefined;
			const logs = replicas.map(
				(r) =>
					`--- ${r.name}\n${r
						.output()
						.split("\n")
						.filter((l) => /"level":(40|50)/.test(l))
						.slice(-10)
						.join("\n")}`,
			);
			throw new Error(
				`${tag} at ${progress.get(tag)}, watching on ${context.watchOn}, last id seen ${context.lastId?.()}; session ${JSON.stringify(
					state && { status: state.body.status, lastEventId: state.body.lastEventId, runId: state.body.runId },
				)}: ${(err as Error).message.slice(0, 300)}\n${logs.join("\n")}`,
			);
		}
	}

	async function steps(tag: string, context: { id?: string; watchOn?: string; lastId?: () => number }): Promise<void> {
		const step = (what: string) => progress.set(tag, what);
		step("create");
		const id = await createSession(any(), {
			toolApprovals: { calculate: "always" },
			clientTools: [{ name: "ask_user", description: "Ask the user" }],
		});
		const watchOn = any();
		const watch = await openSse(`${watchOn.url}/v1/sessions/${id}/events`);
		await watch.waitForType("session_snapshot", STEP);
		const since = () => watch.events.length;
		Object.assign(context, { id, watchOn: watchOn.name, lastId: () => watch.ids().at(-1) ?? 0 });

		step("prompt, steer, follow-up");
		// 1. A prompt, steered and followed up (each on a random replica) while it streams.
		let from = since();
		await call(`/v1/sessions/${id}/prompt`, "POST", { message: words(150, `${tag}p`) }, 202);
		await watch.waitFor((e) => watch.events.indexOf(e) >= from && e.event === "message_update", STEP);
		await call(`/v1/sessions/${id}/steer`, "POST", { message: `${tag} steer` }, 202);
		await call(`/v1/sessions/${id}/follow-up`, "POST", { message: `${tag} follow` }, 202);
		await idle(id);

		step("approval: prompt");
		// 2. A tool call held for approval, approved elsewhere.
		from = since();
		await call(`/v1/sessions/${id}/prompt`, "POST", { message: '/tool calculate {"expression":"6*7"}' }, 202);
		step("approval: requested");
		const approval = await watch.waitFor(
			(e) => watch.events.indexOf(e) >= from && e.event === "approval_requested",
			STEP,
		);
		step(`approval: approve ${approval.data.toolCallId}`);
		await call(`/v1/sessions/${id}/approvals/${approval.data.toolCallId}`, "POST", { approve: true });
		step("approval: idle");
		await idle(id);

		step("client tool");
		// 3. A client tool, its result posted elsewhere.
		from = since();
		await call(`/v1/sessions/${id}/prompt`, "POST", { message: "/tool ask_user {}" }, 202);
		const asked = await watch.waitFor((e) => watch.events.indexOf(e) >= from && e.event === "tool_execution_start", T);
		await call(`/v1/sessions/${id}/tool-results/${asked.data.toolCallId}`, "POST", {
			content: `${tag} the user says yes`,
		});
		await idle(id);

		step("abort");
		// 4. A long prompt, aborted elsewhere.
		from = since();
		await call(`/v1/sessions/${id}/prompt`, "POST", { message: words(400, `${tag}l`) }, 202);
		await watch.waitFor((e) => watch.events.indexOf(e) >= from && e.event === "message_update", STEP);
		expect((await call(`/v1/sessions/${id}/abort`, "POST")).aborted).toBe(true);
		const state = await idle(id);

		step("checks");
		// Nothing left waiting.
		expect(state.queue.steeringCount).toBe(0);
		expect(state.queue.followUpCount).toBe(0);
		expect(state.pendingToolCalls).toEqual([]);

		// Each message once, in the transcript on any replica (the echo model repeats it in its answer:
		// only the user messages and tool results count).
		const messages = (await call(`/v1/sessions/${id}/messages?limit=1000`)).messages as { role: string }[];
		const sent = messages.filter((m) => m.role === "user" || m.role === "toolResult").map((m) => JSON.stringify(m));
		for (const text of [`${tag}p0 `, `${tag} steer`, `${tag} follow`, `${tag} the user says yes`, `${tag}l0 `]) {
			expect(
				sent.filter((m) => m.includes(text)),
				text,
			).toHaveLength(1);
		}

		// The live stream: four runs, every id once, in order.
		const endId = state.lastEventId as number;
		await watch.waitFor((e) => (e.id ?? 0) >= endId, STEP);
		const live = watch.events.filter((e) => e.id !== undefined && e.event !== "session_snapshot");
		const ids = live.map((e) => e.id as number);
		for (let i = 1; i < ids.length; i++) expect(ids[i]).toBeGreaterThan(ids[i - 1]!);
		expect(live.filter((e) => e.event === "agent_start")).toHaveLength(4);
		expect(live.filter((e) => e.event === "agent_end")).toHaveLength(4);
		watch.close();

		step("replays");
		// Replayed from the start, and resumed at a random event (a delta, most likely), on random
		// replicas: exactly what the live stream had. Not at the last event: after it there is
		// nothing to replay, and the wait for the end below would wait for ever.
		const cursors = [0, live[Math.floor(Math.random() * (live.length - 1))]!.id as number];
		for (const cursor of cursors) {
			const on = any();
			const replay = await openSse(`${on.url}/v1/sessions/${id}/events`, {
				headers: { "last-event-id": String(cursor) },
			});
			await replay.waitFor((e) => (e.id ?? 0) >= endId, STEP);
			replay.close();
			const got = replay.events.filter((e) => e.id !== undefined && (e.id as number) <= endId).map(shape);
			const want = live.filter((e) => (e.id as number) > cursor && (e.id as number) <= endId).map(shape);
			expect(got, `after ${cursor} on ${on.name}`).toEqual(want);
		}
	}

	it(
		"four sessions at once, each operation on a random replica: nothing waits, nothing is doubled or missing",
		async () => {
			let timer: NodeJS.Timeout | undefined;
			const hung = new Promise<never>((_, reject) => {
				timer = setTimeout(() => {
					const logs = replicas.map(
						(r) =>
							`--- ${r.name}\n${r
								.output()
								.split("\n")
								.filter((l) => /"level":(40|50)/.test(l))
								.slice(-15)
								.join("\n")}`,
					);
					reject(new Error(`hung: ${JSON.stringify([...progress])}\n${logs.join("\n")}`));
				}, T - 20_000);
			});
			try {
				await Promise.race([Promise.all(["s1", "s2", "s3", "s4"].map((tag) => scenario(tag))), hung]);
			} finally {
				clearTimeout(timer);
			}
		},
		T,
	);
});

describe.skipIf(ok)("cluster: every /v1 operation on a random replica (no services)", () => {
	it(NO_CLUSTER_SERVICES, () => undefined);
});
