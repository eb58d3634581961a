/**
 * Forking across replicas: a session run on replica A is forked through replica B (read from the
 * shared store), the fork continues on B, the parent on A; while the parent runs on A, a fork
 * through B is refused with 409.
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

const ok = await haveClusterServices();
const cluster = testCluster("fork");

async function turn(replica: Replica, id: string, message: string): Promise<void> {
	const res = await json(`${replica.url}/v1/sessions/${id}/prompt`, "POST", { message });
	expect(res.status, JSON.stringify(res.body)).toBe(202);
	await waitUntil("the run's end", async () => {
		const s = await json(`${replica.url}/v1/sessions/${id}`);
		return s.body.status === "idle" ? true : undefined;
	});
}

describe.skipIf(!ok)("fork in a cluster", () => {
	afterEach(() => stopAll());

	it("forks on B a session run on A; refuses while it runs on A", async () => {
		const [a, b] = (await cluster.start(2, { fauxDelayMs: 20 })) as [Replica, Replica];
		const id = await createSession(a);
		await turn(a, id, "one");
		await turn(a, id, "two");
		const forked = await json(`${b.url}/v1/sessions/${id}/fork`, "POST", { atMessageId: "wh-1" });
		expect(forked.status, JSON.stringify(forked.body)).toBe(201);
		expect(forked.body.messageCount).toBe(2);
		await turn(b, forked.body.id, "fork goes on");
		expect((await json(`${a.url}/v1/sessions/${forked.body.id}/messages`)).body.total).toBe(4);
		expect((await json(`${a.url}/v1/sessions/${id}/messages`)).body.total).toBe(4);

		const run = await json(`${a.url}/v1/sessions/${id}/prompt`, "POST", { message: words(300) });
		expect(run.status).toBe(202);
		const busy = await json(`${b.url}/v1/sessions/${id}/fork`, "POST", {});
		expect(busy.status).toBe(409);
		expect(busy.body.error.code).toBe("AGENT_BUSY");
	}, 90_000);
});

afterAll(() => {
	if (!ok) console.log(NO_CLUSTER_SERVICES);
});
