/**
 * The AG-UI catch-up (`GET /agui/v1/threads/:threadId/events`) on three replica processes: on a
 * replica without the thread's run it reads everything through the session port and the store,
 * builds no session there (`wheelhouse_sessions_held` stays 0), and every such replica answers the
 * same; what it reads agrees with the catch-up on the replica running the run. Covered: a run that
 * waits on A for a frontend tool's result, the thread once idle, and a run streaming on A that the
 * catch-ups on B and C follow to its end.
 */
import { HttpAgent } from "@ag-ui/client";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { quietConsole, runOnce } from "../../helpers/agui.js";
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
import { promptSse } from "../../helpers/sse.js";

const ok = await haveClusterServices();
const cluster = testCluster("agui-catch-up");
const T = 60_000;

type Event = Record<string, any> & { type: string };

/** The catch-up of `threadId` on `replica`, to its end: its AG-UI events. */
async function catchUp(replica: Replica, threadId: string): Promise<Event[]> {
	const res = await fetch(`${replica.url}/agui/v1/threads/${encodeURIComponent(threadId)}/events`, {
		headers: { accept: "text/event-stream" },
	});
	expect(res.status, `catch-up on ${replica.name}`).toBe(200);
	const text = await res.text();
	return text
		.split("\n")
		.filter((line) => line.startsWith("data: "))
		.map((line) => JSON.parse(line.slice("data: ".length)) as Event);
}

/** Sessions `replica` holds in memory (its `wheelhouse_sessions_held` gauge). */
async function held(replica: Replica): Promise<number> {
	const text = await (await fetch(`${replica.url}/metrics`)).text();
	const line = text.split("\n").find((l) => l.startsWith("wheelhouse_sessions_held "));
	return Number(line?.split(" ")[1]);
}

/** The events without the run id a catch-up makes up when no run is active. */
function withoutMadeUpRunId(events: Event[]): Event[] {
	return events.map((e) => (e.type === "RUN_STARTED" || e.type === "RUN_FINISHED" ? { ...e, runId: "-" } : e));
}

const ASK_USER = { name: "ask_user", description: "Ask the user", parameters: { type: "object" } };

describe.skipIf(!ok)("cluster: the AG-UI catch-up on any replica", () => {
	let replicas: Replica[];

	beforeAll(async () => {
		replicas = await cluster.start(3, { fauxDelayMs: 10, env: { WHEELHOUSE_METRICS_AUTH: "none" } });
	}, T);

	afterAll(async () => {
		stopAll();
		await cluster.dropRedisKeys();
	});

	it(
		"a run waiting on A for a frontend tool: B and C answer the same as A, and build no session",
		async () => {
			const [A, B, C] = replicas as [Replica, Replica, Replica];
			const console_ = quietConsole();
			try {
				const threadId = `catch-up-${Date.now()}`;
				const agent = new HttpAgent({ url: `${A.url}/agui/v1/run`, threadId, initialState: { step: 1 } });
				agent.addMessage({ id: "u1", role: "user", content: "/tool ask_user {}" });
				await runOnce(agent, { tools: [ASK_USER] });
				const callId = (agent.messages.at(-1) as { toolCalls?: { id: string }[] }).toolCalls?.[0]?.id as string;
				expect(callId).toBeTruthy();

				const onA = await catchUp(A, threadId);
				const onB = await catchUp(B, threadId);
				const onC = await catchUp(C, threadId);
				expect(onB).toEqual(onC);
				expect(onB.map((e) => e.type)).toEqual([
					"RUN_STARTED",
					"MESSAGES_SNAPSHOT",
					"STATE_SNAPSHOT",
					"CUSTOM",
					"RUN_FINISHED",
				]);
				// The same snapshot, state, run and waiting call as on the replica running it.
				for (const i of [0, 1, 2, 4]) expect(onB[i]).toEqual(onA[i]);
				const runId = onA[0]!.metadata.wheelhouse.runId;
				expect(typeof runId).toBe("string");
				expect(onB[0]).toMatchObject({ runId, metadata: { wheelhouse: { runId } } });
				expect(onB[2]!.snapshot).toEqual({ step: 1 });
				expect(onB[4]!.outcome).toEqual({ type: "success", pendingToolCallIds: [callId] });
				// The session's state: what the store has is what A shows, but for A's live run (usage so far, the call executing).
				const [live, stored] = [onA[3]!.value, onB[3]!.value];
				for (const field of [
					"id",
					"status",
					"runId",
					"model",
					"systemPrompt",
					"activeTools",
					"messageCount",
					"queue",
					"metadata",
					"clientTools",
					"toolApprovals",
					"pendingApprovals",
					"pendingClientToolCalls",
				]) {
					expect(stored[field], field).toEqual(live[field]);
				}
				expect(stored).toMatchObject({ status: "running", pendingClientToolCalls: [{ toolCallId: callId }] });
				expect(await held(B)).toBe(0);
				expect(await held(C)).toBe(0);

				// The result on B: the run on A goes on to its end.
				agent.addMessage({ id: "t1", role: "tool", toolCallId: callId, content: "yes" });
				agent.url = `${B.url}/agui/v1/run`;
				await runOnce(agent, { tools: [ASK_USER] });
				const sessionId = onA[0]!.metadata.wheelhouse.sessionId as string;
				// Read on A, which ran it (`GET /v1/sessions/:id` loads the session on a replica without its run).
				await waitUntil("the session idle", async () =>
					(await json(`${A.url}/v1/sessions/${sessionId}`)).body.status === "idle" ? true : undefined,
				);

				// Idle: no replica runs it, every one answers the same.
				const idle = await Promise.all(replicas.map((replica) => catchUp(replica, threadId)));
				expect(idle[0]!.map((e) => e.type)).toEqual([
					"RUN_STARTED",
					"MESSAGES_SNAPSHOT",
					"STATE_SNAPSHOT",
					"CUSTOM",
					"RUN_FINISHED",
				]);
				expect(idle[0]![0]!.metadata.wheelhouse.runId).toBeNull();
				expect(withoutMadeUpRunId(idle[1]!)).toEqual(withoutMadeUpRunId(idle[0]!));
				expect(withoutMadeUpRunId(idle[2]!)).toEqual(withoutMadeUpRunId(idle[0]!));
				expect(idle[0]![1]!.messages.map((m: { role: string }) => m.role)).toEqual([
					"user",
					"assistant",
					"tool",
					"assistant",
				]);
				expect(idle[0]![3]!.value).toMatchObject({ status: "idle", runId: null, pendingClientToolCalls: [] });
				expect(await held(B)).toBe(0);
				expect(await held(C)).toBe(0);
				console_.check();
			} finally {
				console_.restore();
			}
		},
		T,
	);

	it(
		"a run streaming on A: the catch-ups on B and C follow it to its end, whole messages, and build no session",
		async () => {
			const [A, B, C] = replicas as [Replica, Replica, Replica];
			const id = await createSession(A);
			const text = words(150);
			const run = await promptSse(A.url, id, { message: text });
			await run.waitFor((e) => e.event === "message_update", T);
			const { runId } = (await json(`${A.url}/v1/sessions/${id}`)).body;
			expect(typeof runId).toBe("string");
			// A thread id that is a session id names that session.
			const [onB, onC] = await Promise.all([catchUp(B, id), catchUp(C, id)]);
			await run.waitForType("agent_end", T);
			for (const events of [onB, onC]) {
				expect(events[0]).toMatchObject({ type: "RUN_STARTED", runId });
				expect(events.at(-1)).toMatchObject({ type: "RUN_FINISHED", runId });
				const streamed = events
					.filter((e) => e.type === "TEXT_MESSAGE_CONTENT")
					.map((e) => e.delta)
					.join("");
				expect(streamed).toBe(text);
			}
			expect(await held(B)).toBe(0);
			expect(await held(C)).toBe(0);
		},
		T,
	);
});

describe.skipIf(ok)("cluster: the AG-UI catch-up on any replica (no services)", () => {
	it(NO_CLUSTER_SERVICES, () => undefined);
});
