/**
 * Rewind, regenerate and edit across replicas: a session run on replica A is rewound, regenerated
 * and edited through replica B; A's subscriber learns of each cut on its stream and a resume on B
 * from before the regenerate gets exactly what A's subscriber got; A then goes on from the rewound
 * transcript (not from the copy it held); while the session runs on A, each is refused on B (409).
 * Real processes, PostgreSQL and Redis.
 */
import { afterAll, afterEach, describe, expect, it } from "vitest";
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
const cluster = testCluster("rewind");

async function idle(replica: Replica, id: string): Promise<void> {
	await waitUntil("the run's end", async () => {
		const s = await json(`${replica.url}/v1/sessions/${id}`);
		return s.body.status === "idle" && !s.body.isStreaming ? true : undefined;
	});
}

async function turn(replica: Replica, id: string, message: string): Promise<void> {
	const res = await json(`${replica.url}/v1/sessions/${id}/prompt`, "POST", { message });
	expect(res.status, JSON.stringify(res.body)).toBe(202);
	await idle(replica, id);
}

const texts = async (replica: Replica, id: string): Promise<string[]> =>
	(await json(`${replica.url}/v1/sessions/${id}/messages?limit=1000`)).body.messages.map((m: any) => m.content[0].text);

/** The logged events (with an id, no deltas) as id, type and raw data. */
const logged = (events: SseEvent[]) =>
	events
		.filter((e) => e.id !== undefined && e.event !== "message_update" && e.event !== "session_snapshot")
		.map((e) => ({ id: e.id!, event: e.event, data: JSON.stringify(e.data) }));

describe.skipIf(!ok)("rewind in a cluster", () => {
	afterEach(() => stopAll());

	it("rewinds, regenerates and edits on B a session run on A; A goes on from the cut", async () => {
		const [a, b] = (await cluster.start(2, { fauxDelayMs: 5 })) as [Replica, Replica];
		const id = await createSession(a);
		const onA = await openSse(`${a.url}/v1/sessions/${id}/events`);
		for (const m of ["one", "two", "three"]) await turn(a, id, m);

		const rewound = await json(`${b.url}/v1/sessions/${id}/rewind`, "POST", { toMessageId: "wh-3" });
		expect(rewound.status, JSON.stringify(rewound.body)).toBe(200);
		expect(rewound.body.messageCount).toBe(4);
		await onA.waitFor((e) => e.event === "transcript_rewound", 10_000);
		// A held the session (its subscriber): its next run starts from the rewound transcript.
		await turn(a, id, "four");
		expect(await texts(b, id)).toEqual(["one", "one", "two", "two", "four", "four"]);

		const before = onA.ids().at(-1)!;
		const regen = await json(`${b.url}/v1/sessions/${id}/regenerate`, "POST");
		expect(regen.status, JSON.stringify(regen.body)).toBe(202);
		const end = await onA.waitFor((e) => e.event === "agent_end" && e.id! > before, 10_000);
		const resumed = await openSse(`${b.url}/v1/sessions/${id}/events`, {
			headers: { "last-event-id": String(before) },
		});
		await resumed.waitFor((e) => e.id === end.id, 10_000);
		const seenOnA = logged(onA.events).filter((e) => e.id > before && e.id <= end.id!);
		expect(logged(resumed.events).filter((e) => e.id <= end.id!)).toEqual(seenOnA);
		expect(seenOnA[0]!.event).toBe("transcript_rewound");
		resumed.close();

		const edit = await json(`${b.url}/v1/sessions/${id}/messages/wh-4`, "PATCH", { content: "FOUR" });
		expect(edit.status, JSON.stringify(edit.body)).toBe(202);
		await idle(b, id);
		await turn(a, id, "five");
		expect(await texts(a, id)).toEqual(["one", "one", "two", "two", "FOUR", "FOUR", "five", "five"]);
		const branches = (await json(`${a.url}/v1/sessions/${id}/branches`)).body.branches;
		expect(branches.map((x: any) => [x.branch, x.fromMessageId, x.messageCount])).toEqual([
			[1, "wh-4", 2],
			[2, "wh-5", 1],
			[3, "wh-4", 2],
		]);
		onA.close();

		const run = await json(`${a.url}/v1/sessions/${id}/prompt`, "POST", { message: words(300) });
		expect(run.status).toBe(202);
		for (const [method, route, body] of [
			["POST", "rewind", { toMessageId: "wh-0" }],
			["POST", "regenerate", undefined],
			["PATCH", "messages/wh-0", { content: "edited" }],
		] as const) {
			const busy = await json(`${b.url}/v1/sessions/${id}/${route}`, method, body);
			expect(busy.status, `${route}: ${JSON.stringify(busy.body)}`).toBe(409);
			expect(busy.body.error.code).toBe("AGENT_BUSY");
		}
	}, 120_000);

	it("an Idempotency-Key sent to A and repeated on B: the same regenerate run, edit run and fork", async () => {
		const [a, b] = (await cluster.start(2, { fauxDelayMs: 5 })) as [Replica, Replica];
		const id = await createSession(a);
		for (const m of ["one", "two", "three"]) await turn(a, id, m);
		const keyed = (key: string) => ({ "idempotency-key": key });

		const regen = await json(`${a.url}/v1/sessions/${id}/regenerate`, "POST", undefined, keyed("regen"));
		expect(regen.status, JSON.stringify(regen.body)).toBe(202);
		await idle(a, id);
		const again = await json(`${b.url}/v1/sessions/${id}/regenerate`, "POST", undefined, keyed("regen"));
		expect(again.status).toBe(202);
		expect(again.body).toEqual(regen.body);
		// As SSE on B: that run again, from its cut to its end.
		const replay = await openSse(`${b.url}/v1/sessions/${id}/regenerate`, {
			method: "POST",
			headers: { "idempotency-key": "regen" },
		});
		await replay.waitForEnd(10_000);
		expect(replay.response.headers.get("idempotent-replayed")).toBe("true");
		expect(replay.events[0]).toMatchObject({ id: regen.body.firstEventId, event: "transcript_rewound" });
		expect(replay.events.at(-1)?.event).toBe("agent_end");

		const edit = await json(`${a.url}/v1/sessions/${id}/messages/wh-2`, "PATCH", { content: "TWO" }, keyed("edit"));
		expect(edit.status, JSON.stringify(edit.body)).toBe(202);
		await idle(a, id);
		const editAgain = await json(
			`${b.url}/v1/sessions/${id}/messages/wh-2`,
			"PATCH",
			{ content: "TWO" },
			keyed("edit"),
		);
		expect(editAgain.body.runId).toBe(edit.body.runId);
		const reused = await json(`${b.url}/v1/sessions/${id}/messages/wh-2`, "PATCH", { content: "2" }, keyed("edit"));
		expect(reused.status).toBe(422);
		expect(await texts(b, id)).toEqual(["one", "one", "TWO", "TWO"]);

		const fork = await json(`${a.url}/v1/sessions/${id}/fork`, "POST", {}, keyed("fork"));
		expect(fork.status, JSON.stringify(fork.body)).toBe(201);
		const forkAgain = await json(`${b.url}/v1/sessions/${id}/fork`, "POST", {}, keyed("fork"));
		expect(forkAgain.status).toBe(201);
		expect(forkAgain.body.id).toBe(fork.body.id);

		const branches = (await json(`${b.url}/v1/sessions/${id}/branches`)).body.branches;
		expect(branches).toHaveLength(2); // one regenerate, one edit
	}, 120_000);
});

afterAll(() => {
	if (!ok) console.log(NO_CLUSTER_SERVICES);
});
