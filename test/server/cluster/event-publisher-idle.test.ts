/**
 * The live fan-out's `idle()`, which a replica awaits before it gives up an idle session's lease:
 * it waits for the events queued when it was called, not for a moment with nothing queued at all.
 * Against real Redis and PostgreSQL: one session's steady stream of events (another run on the same
 * replica, each event written to the store, each batch a commit) must not hold it, and it still
 * waits until the events it covers are published.
 */
import { randomBytes } from "node:crypto";
import { setTimeout as sleep } from "node:timers/promises";
import { Redis } from "ioredis";
import pino from "pino";
import { afterEach, describe, expect, it } from "vitest";
import { EventPublisher } from "../../../src/server/cluster/event-publisher.js";
import { RedisLink, tailKey } from "../../../src/server/cluster/redis.js";
import type { SessionEvent } from "../../../src/server/runtime/session/observers.js";
import { openPostgresStore } from "../../../src/store/postgres/index.js";
import { haveClusterServices, NO_CLUSTER_SERVICES, REDIS_URL } from "../../helpers/cluster.js";
import { PG_URL, testSchemas } from "../../helpers/postgres.js";
import { newSession, user } from "../../store/contract.js";

const ok = await haveClusterServices();
const schemas = testSchemas("publisher-idle");
const cleanups: (() => Promise<void>)[] = [];
afterEach(async () => {
	for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

const event = (sessionId: string, id: number, type: string): SessionEvent => ({
	sessionId,
	id,
	type,
	data: JSON.stringify({ type }),
	frame: "",
	runSeq: 1,
});

describe.skipIf(!ok)("EventPublisher.idle", () => {
	it("resolves once the events queued before it are published, while another session keeps publishing", async () => {
		const prefix = `wh-test:publisher-idle:${randomBytes(4).toString("hex")}:`;
		const link = new RedisLink(REDIS_URL, pino({ level: "silent" }));
		await link.connect();
		const inspect = new Redis(REDIS_URL);
		cleanups.push(async () => {
			const keys = await inspect.keys(`${prefix}*`);
			if (keys.length > 0) await inspect.del(...keys);
			inspect.disconnect();
			await link.close();
		});
		const store = await openPostgresStore({ url: PG_URL, schema: schemas.next(), poolSize: 4, cluster: true });
		cleanups.push(() => store.close());
		for (const id of ["busy", "quiet"]) {
			await store.createSession(newSession(id));
			await store.startRun(id, `${id}-run`, 10, [user("go")]);
		}
		await store.flush();
		const publisher = new EventPublisher(store, link, prefix, pino({ level: "silent" }));
		cleanups.push(async () => publisher.close());
		const append = (sessionId: string, type: string) => {
			const id = store.appendEvent(sessionId, type, JSON.stringify({ type }));
			if (id === undefined) throw new Error(`${sessionId}: the store took no event`);
			publisher.observer.event(event(sessionId, id, type));
			return id;
		};

		// A busy session on the same replica: an event every turn of the event loop, as a streaming run's deltas.
		let producing = true;
		let busyId = 0;
		const produce = () => {
			if (!producing) return;
			busyId = append("busy", "tool_execution_update");
			setImmediate(produce);
		};
		produce();
		await sleep(50);

		append("quiet", "agent_end");
		const outcome = await Promise.race([
			publisher.idle().then(() => "idle" as const),
			sleep(5_000).then(() => "still waiting" as const),
		]);
		const quietPublished = (await inspect.exists(tailKey(prefix, "quiet"))) === 1;
		const busyWhenIdle = busyId;
		producing = false;

		expect(outcome).toBe("idle");
		// It waited for the quiet session's event: that is in its tail (appended with the publish).
		expect(quietPublished).toBe(true);
		// The busy session was still producing the whole time.
		expect(busyWhenIdle).toBeGreaterThan(100);
	});
});

describe.skipIf(ok)("EventPublisher.idle (no services)", () => {
	it(NO_CLUSTER_SERVICES, () => undefined);
});
