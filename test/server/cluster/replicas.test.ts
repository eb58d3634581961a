/**
 * Three replica processes on one PostgreSQL schema and one Redis prefix: any replica serves any
 * session, streams carry a run's events to every replica with the same ids exactly once, one run
 * per session across replicas, and control requests posted on any replica reach the run.
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
import { openSse, promptSse, type SseEvent, type SseReader } from "../../helpers/sse.js";

const ok = await haveClusterServices();
const cluster = testCluster("replicas");
const T = 60_000;

/** Strictly increasing, no id twice. */
function expectIncreasing(ids: number[]): void {
	for (let i = 1; i < ids.length; i++) expect(ids[i]).toBeGreaterThan(ids[i - 1]!);
}

const idsOf = (events: SseEvent[]) => events.filter((e) => e.id !== undefined).map((e) => e.id as number);

async function idle(replica: Replica, id: string): Promise<any> {
	return waitUntil(`session ${id} idle on ${replica.name}`, async () => {
		const res = await json(`${replica.url}/v1/sessions/${id}`);
		return res.body?.status === "idle" ? res.body : undefined;
	});
}

describe.skipIf(!ok)("cluster: three replicas", () => {
	let A: Replica;
	let B: Replica;
	let C: Replica;
	beforeAll(async () => {
		[A, B, C] = (await cluster.start(3, { fauxDelayMs: 15 })) as [Replica, Replica, Replica];
	}, T);
	afterAll(() => stopAll());

	it(
		"any replica serves any session: create on A; get, patch, list, messages, delete on B and C",
		async () => {
			const id = await createSession(A, { metadata: { team: "blue" } });
			expect((await json(`${B.url}/v1/sessions/${id}`)).body.metadata).toEqual({ team: "blue" });
			const patched = await json(`${B.url}/v1/sessions/${id}`, "PATCH", { systemPrompt: "be brief" });
			expect(patched.status).toBe(200);
			expect((await json(`${C.url}/v1/sessions/${id}`)).body.systemPrompt).toBe("be brief");
			const list = await json(`${C.url}/v1/sessions?limit=1000`);
			expect(list.body.sessions.map((s: { id: string }) => s.id)).toContain(id);

			// A run on A; its transcript read on B, its state on C.
			expect((await json(`${A.url}/v1/sessions/${id}/prompt`, "POST", { message: "hello cluster" })).status).toBe(202);
			const state = await idle(C, id);
			expect(state.messageCount).toBe(2);
			const messages = await json(`${B.url}/v1/sessions/${id}/messages`);
			expect(messages.body.total).toBe(2);
			expect(JSON.stringify(messages.body.messages[1])).toContain("hello cluster");

			// A second run on B: the session is free again after the first.
			expect((await json(`${B.url}/v1/sessions/${id}/prompt`, "POST", { message: "again" })).status).toBe(202);
			expect((await idle(A, id)).messageCount).toBe(4);

			expect((await json(`${C.url}/v1/sessions/${id}`, "DELETE")).body).toEqual({ deleted: true, id });
			for (const r of [A, B, C]) expect((await json(`${r.url}/v1/sessions/${id}`)).status).toBe(404);
		},
		T,
	);

	it(
		"streams: /events on B and C deliver a run on A with the same ids, once, in order; resume across the hand-off",
		async () => {
			const id = await createSession(A);
			const onB = await openSse(`${B.url}/v1/sessions/${id}/events`);
			const onC = await openSse(`${C.url}/v1/sessions/${id}/events`);
			await onB.waitForType("session_snapshot", T);
			await onC.waitForType("session_snapshot", T);

			const run = await promptSse(A.url, id, { message: words(40) });
			await run.waitForType("agent_end", T);
			const runIds = idsOf(run.events);
			expectIncreasing(runIds);
			for (const reader of [onB, onC]) {
				await reader.waitFor((e) => e.event === "agent_end", T);
				const live = reader.events.filter((e) => e.event !== "session_snapshot");
				expect(idsOf(live)).toEqual(runIds);
				expect(live.map((e) => e.event)).toEqual(run.events.map((e) => e.event));
			}

			// A second run, executing on B; C resumes from inside it (replay, then live).
			const second = await promptSse(B.url, id, { message: words(60, "x") });
			const start = await second.waitForType("agent_start", T);
			await second.waitFor((e) => e.event === "message_update", T);
			const resumed = await openSse(`${C.url}/v1/sessions/${id}/events`, {
				headers: { "last-event-id": String(start.id) },
			});
			await second.waitForType("agent_end", T);
			await resumed.waitForType("agent_end", T);
			const after = second.events.filter((e) => (e.id as number) > (start.id as number));
			const got = idsOf(resumed.events);
			expectIncreasing(got);
			// Every event of the run after the cursor, each once, in order — the deltas of the message
			// that was streaming when C resumed included (from the session's tail in Redis).
			expect(got.every((n) => after.some((e) => e.id === n))).toBe(true);
			const kept = after.filter((e) => e.event !== "message_update").map((e) => e.id);
			expect(kept.every((n) => got.includes(n as number))).toBe(true);
			const firstLive = got.findIndex((n, i) => i > 0 && n !== got[i - 1]! + 1);
			const tail = idsOf(after).filter((n) => n >= got[Math.max(0, firstLive)]!);
			expect(got.slice(Math.max(0, firstLive))).toEqual(tail);
			expect(got).toEqual(idsOf(after));
			// ?after= on A replays the whole second run from the store.
			const replay = await openSse(`${A.url}/v1/sessions/${id}/events?after=${(start.id as number) - 1}`);
			await replay.waitForType("agent_end", T);
			expect(idsOf(replay.events)[0]).toBe(start.id);
			expectIncreasing(idsOf(replay.events));
			for (const r of [onB, onC, resumed, replay, run, second]) r.close();
		},
		T,
	);

	it(
		"one run per session: two prompts at once on B and C — one runs, the other is refused or queued",
		async () => {
			const id = await createSession(A);
			const [b, c] = await Promise.all([
				json(`${B.url}/v1/sessions/${id}/prompt`, "POST", { message: words(200) }),
				json(`${C.url}/v1/sessions/${id}/prompt`, "POST", { message: words(200) }),
			]);
			const statuses = [b.status, c.status].sort();
			expect(statuses).toEqual([202, 409]);
			expect([b, c].find((r) => r.status === 409)!.body.error.code).toBe("AGENT_BUSY");

			// While it runs (wherever), a prompt with ifBusy followUp on A is queued and delivered by that run.
			const queued = await json(`${A.url}/v1/sessions/${id}/prompt`, "POST", {
				message: "follow me",
				ifBusy: "followUp",
			});
			expect(queued.status).toBe(202);
			expect(queued.body.status).toBe("queued");
			const state = await idle(A, id);
			expect(state.messageCount).toBe(4);
			const transcript = await json(`${C.url}/v1/sessions/${id}/messages`);
			expect(JSON.stringify(transcript.body.messages[2])).toContain("follow me");
			const runs = await waitUntil("one run", async () => {
				const s = await json(`${B.url}/v1/sessions/${id}`);
				return s.body.status === "idle" ? s : undefined;
			});
			expect(runs.body.queue.followUpCount).toBe(0);
		},
		T,
	);

	it(
		"control reaches the run: steer on C during an approval-held tool batch on A, approval on B, abort on C",
		async () => {
			const id = await createSession(A, { toolApprovals: { calculate: "always" } });
			const watch = await openSse(`${B.url}/v1/sessions/${id}/events`);
			await watch.waitForType("session_snapshot", T);
			const run = await promptSse(A.url, id, { message: '/tool calculate {"expression":"6*7"}' });
			const requested = await run.waitForType("approval_requested", T);
			const steer = await json(`${C.url}/v1/sessions/${id}/steer`, "POST", { message: "steered from C" });
			expect(steer.status).toBe(202);
			// The owner took the queued message in (its stream says so) before the batch ends.
			await watch.waitFor((e) => e.event === "queue_update" && e.data.action === "queued", T);
			const approve = await json(`${B.url}/v1/sessions/${id}/approvals/${requested.data.toolCallId}`, "POST", {
				approve: true,
			});
			expect(approve.status).toBe(200);
			await run.waitForType("agent_end", T);
			const types = run.events.map((e) => e.event);
			const toolEnd = types.indexOf("tool_execution_end");
			const steered = run.events.findIndex(
				(e) => e.event === "message_start" && JSON.stringify(e.data).includes("steered from C"),
			);
			expect(toolEnd).toBeGreaterThan(0);
			expect(steered).toBeGreaterThan(toolEnd);
			expect(JSON.stringify(run.events[toolEnd]!.data)).toContain("42");

			// Abort on C of a long run on A: it ends aborted.
			const long = await promptSse(A.url, id, { message: words(400) });
			await long.waitFor((e) => e.event === "message_update", T);
			const aborted = await json(`${C.url}/v1/sessions/${id}/abort`, "POST");
			expect(aborted.body.aborted).toBe(true);
			const end = await long.waitForType("agent_end", T);
			const last = end.data.messages[end.data.messages.length - 1];
			expect(last.stopReason).toBe("aborted");
			watch.close();
		},
		T,
	);

	it(
		"control reaches the run: a client tool result on B, a PATCH on C, a DELETE on B end a run on A",
		async () => {
			const id = await createSession(A, { clientTools: [{ name: "ask_user", description: "Ask the user" }] });
			const run = await promptSse(A.url, id, { message: "/tool ask_user {}" });
			const call = await run.waitFor((e) => e.event === "tool_execution_start", T);
			// PATCH on C while the run waits: applied by A's running Agent.
			expect((await json(`${C.url}/v1/sessions/${id}`, "PATCH", { systemPrompt: "patched on C" })).status).toBe(200);
			await waitUntil("the patch on A", async () => {
				const s = await json(`${A.url}/v1/sessions/${id}`);
				return s.body.systemPrompt === "patched on C" ? true : undefined;
			});
			const result = await json(`${B.url}/v1/sessions/${id}/tool-results/${call.data.toolCallId}`, "POST", {
				content: "the user says yes",
			});
			expect(result.status).toBe(200);
			await run.waitForType("agent_end", T);
			expect(JSON.stringify(run.events.at(-2)?.data ?? {})).toContain("the user says yes");
			// An answer to a call that no longer waits: 409 on any replica.
			const again = await json(`${C.url}/v1/sessions/${id}/tool-results/${call.data.toolCallId}`, "POST", {
				content: "late",
			});
			expect(again.status).toBe(409);

			// DELETE on B of a session running on A: A's stream ends, the session is gone everywhere.
			const long = await promptSse(A.url, id, { message: words(400) });
			await long.waitFor((e) => e.event === "message_update", T);
			expect((await json(`${B.url}/v1/sessions/${id}`, "DELETE")).status).toBe(200);
			await long.waitForEnd(T);
			for (const r of [A, B, C]) expect((await json(`${r.url}/v1/sessions/${id}`)).status).toBe(404);
		},
		T,
	);
});

describe.skipIf(!ok)("cluster: the failure modes of others", () => {
	let A: Replica;
	let B: Replica;
	let C: Replica;
	beforeAll(async () => {
		[A, B, C] = (await cluster.start(3, { fauxDelayMs: 5 })) as [Replica, Replica, Replica];
	}, T);
	afterAll(() => stopAll());

	it(
		"no final event is lost to an id collision: back-to-back runs on alternating replicas keep every id once",
		async () => {
			const id = await createSession(A);
			const watch = await openSse(`${C.url}/v1/sessions/${id}/events`);
			await watch.waitForType("session_snapshot", T);
			const ends: number[] = [];
			for (const [i, replica] of [A, B, A, B, C].entries()) {
				// Each run starts on the next replica the moment the last one ended.
				const run = await promptSse(replica.url, id, { message: words(10, `r${i}-`) });
				const end = await run.waitForType("agent_end", T);
				ends.push(end.id as number);
				run.close();
			}
			for (const end of ends) await watch.waitFor((e) => e.id === end && e.event === "agent_end", T);
			expectIncreasing(idsOf(watch.events));
			expect(watch.types().filter((t) => t === "agent_end")).toHaveLength(ends.length);
			const log = await openSse(`${B.url}/v1/sessions/${id}/events?after=0`);
			await log.waitFor((e) => e.id === ends.at(-1), T);
			expectIncreasing(idsOf(log.events));
			expect(log.events.filter((e) => e.event === "agent_end").map((e) => e.id)).toEqual(ends);
			watch.close();
			log.close();
		},
		T,
	);

	it(
		"ifBusy interrupt on B aborts the run on A and starts the prompt on B; a repeated prompt (same key) on C follows that run",
		async () => {
			const id = await createSession(A);
			const first = await promptSse(A.url, id, { message: words(2000) });
			await first.waitFor((e) => e.event === "message_update", T);
			const headers = { "content-type": "application/json", "idempotency-key": `k-${id}` };
			const body = JSON.stringify({ message: "instead", ifBusy: "interrupt" });
			const second = await openSse(`${B.url}/v1/sessions/${id}/prompt`, { method: "POST", headers, body });
			const end = await first.waitForType("agent_end", T);
			expect(end.data.messages.at(-1).stopReason).toBe("aborted");
			const start = await second.waitForType("agent_start", T);
			expect(start.id as number).toBeGreaterThan(end.id as number);
			const repeat = await openSse(`${C.url}/v1/sessions/${id}/prompt`, { method: "POST", headers, body });
			await second.waitForType("agent_end", T);
			await repeat.waitForEnd(T);
			expect(repeat.response.headers.get("idempotent-replayed")).toBe("true");
			expect(repeat.types()[0]).toBe("agent_start");
			expect(repeat.types().at(-1)).toBe("agent_end");
			expect(idsOf(repeat.events).filter((n) => !second.ids().includes(n))).toEqual([]);
		},
		T,
	);

	it(
		"a reader that subscribed a moment before the run starts elsewhere gets every event (the approval request too)",
		async () => {
			for (let i = 0; i < 5; i++) {
				const id = await createSession(A, { toolApprovals: { calculate: "always" } });
				const watch = await openSse(`${B.url}/v1/sessions/${id}/events`);
				await watch.waitForType("session_snapshot", T);
				const run = await promptSse(A.url, id, { message: '/tool calculate {"expression":"1+1"}' });
				const requested = await run.waitForType("approval_requested", T);
				const seen = await watch.waitForType("approval_requested", 20_000);
				expect(seen.id).toBe(requested.id);
				await json(`${C.url}/v1/sessions/${id}/abort`, "POST");
				await watch.waitForType("agent_end", T);
				expect(idsOf(watch.events.filter((e) => e.event !== "session_snapshot"))).toEqual(idsOf(run.events));
				watch.close();
				run.close();
			}
		},
		T,
	);

	it(
		"a disconnect on a replica that does not run the session aborts nothing",
		async () => {
			const id = await createSession(A);
			const onB = await openSse(`${B.url}/v1/sessions/${id}/events`);
			const onC = await openSse(`${C.url}/v1/sessions/${id}/events`);
			await onB.waitForType("session_snapshot", T);
			await onC.waitForType("session_snapshot", T);
			expect((await json(`${A.url}/v1/sessions/${id}/prompt`, "POST", { message: words(80) })).status).toBe(202);
			await onB.waitFor((e) => e.event === "message_update", T);
			onB.close();
			const end = await onC.waitForType("agent_end", T);
			const last = end.data.messages[end.data.messages.length - 1];
			expect(last.stopReason).toBe("stop");
			onC.close();
		},
		T,
	);
});

describe.skipIf(ok)("cluster: three replicas (no services)", () => {
	it(NO_CLUSTER_SERVICES, () => undefined);
});

export type { SseReader };
