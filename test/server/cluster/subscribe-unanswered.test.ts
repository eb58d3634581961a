/**
 * A replica whose Redis link stays open but answers nothing (the subscribe to a session's channel
 * never completes): a replay with `Last-Event-ID` opened there still gets every event after its
 * cursor, from the store, and the replica says the subscribe was not answered.
 */
import { afterAll, describe, expect, it } from "vitest";
import {
	createSession,
	haveClusterServices,
	NO_CLUSTER_SERVICES,
	type Replica,
	redisProxy,
	testCluster,
	waitUntil,
	words,
} from "../../helpers/cluster.js";
import { json, stopAll } from "../../helpers/main-process.js";
import { openSse } from "../../helpers/sse.js";

const ok = await haveClusterServices();
const cluster = testCluster("subscribe-unanswered");
const T = 90_000;

describe.skipIf(!ok)("cluster: a subscribe that Redis never answers", () => {
	afterAll(async () => {
		stopAll();
		await cluster.dropRedisKeys();
	});

	it(
		"a replay on a replica whose Redis answers nothing gets every event from the store",
		async () => {
			const proxy = await redisProxy();
			try {
				const [A, B] = (await cluster.start(2, {
					fauxDelayMs: 5,
					envOf: (name): Record<string, string> => (name === "B" ? { WHEELHOUSE_REDIS_URL: proxy.url } : {}),
				})) as Replica[];
				const id = await createSession(A!);
				expect((await json(`${A!.url}/v1/sessions/${id}/prompt`, "POST", { message: words(5) })).status).toBe(202);
				const state = await waitUntil("idle", async () => {
					const res = await json(`${A!.url}/v1/sessions/${id}`);
					return res.body.status === "idle" && res.body.lastEventId > 0 ? res.body : undefined;
				});
				const endId = state.lastEventId as number;
				const fromA = await openSse(`${A!.url}/v1/sessions/${id}/events`, { headers: { "last-event-id": "0" } });
				await fromA.waitFor((e) => (e.id ?? 0) >= endId, 20_000);
				fromA.close();
				// Everything Redis sends B from now on is lost, without B noticing.
				proxy.blackhole();
				const replay = await openSse(`${B!.url}/v1/sessions/${id}/events`, { headers: { "last-event-id": "0" } });
				try {
					await replay.waitFor((e) => (e.id ?? 0) >= endId, 20_000);
					// The events the store keeps, as A sent them (the deltas only Redis kept are gone with it).
					const logged = new Set(replay.events.map((e) => e.id));
					const kept = fromA.events.filter((e) => e.event !== "message_update");
					expect(kept.filter((e) => !logged.has(e.id))).toEqual([]);
					expect(replay.events.map((e) => e.id)).toEqual([...logged].sort((a, b) => a! - b!));
				} finally {
					replay.close();
				}
				expect(B!.output()).toContain("the subscribe to a session's live events has not been answered");
			} finally {
				await proxy.close();
			}
		},
		T,
	);
});

describe.skipIf(ok)("cluster: a subscribe that Redis never answers (no services)", () => {
	it(NO_CLUSTER_SERVICES, () => undefined);
});
