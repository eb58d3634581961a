/**
 * The typed client's schedule, fork and session-filter methods against a real server: create a
 * schedule, fire it now, read its fires, pause and delete it; fork a session after its first
 * message; list sessions by metadata.
 */
import { afterAll, beforeAll, expect, it } from "vitest";
import { WheelhouseClient, WheelhouseHttpError } from "../../src/client/index.js";
import { waitUntil } from "../helpers/cluster.js";
import { startServer, type TestServer } from "../helpers/server.js";

let server: TestServer;
let client: WheelhouseClient;
beforeAll(async () => {
	server = await startServer();
	client = new WheelhouseClient({ baseUrl: server.url });
});
afterAll(() => server.close());

it("manages schedules and their fires", async () => {
	const schedule = await client.createSchedule({
		cron: "0 9 * * *",
		timezone: "Europe/Paris",
		profile: "",
		prompt: "hi",
	});
	expect(schedule).toMatchObject({ state: "active", timezone: "Europe/Paris" });
	const fire = await client.runScheduleNow(schedule.id);
	expect(fire).toMatchObject({ kind: "manual", outcome: "fired", sessionId: expect.any(String) });
	expect((await client.scheduleFires(schedule.id)).fires.map((f) => f.id)).toEqual([fire.id]);
	expect((await client.pauseSchedule(schedule.id)).state).toBe("paused");
	expect((await client.updateSchedule(schedule.id, { prompt: "hello" })).prompt).toBe("hello");
	expect((await client.listSchedules()).schedules.map((s) => s.id)).toEqual([schedule.id]);
	expect(await client.deleteSchedule(schedule.id)).toEqual({ deleted: true, id: schedule.id });
	const gone = await client.getSchedule(schedule.id).catch((err: unknown) => err);
	expect(gone).toBeInstanceOf(WheelhouseHttpError);
	expect((gone as WheelhouseHttpError).code).toBe("SCHEDULE_NOT_FOUND");
});

it("forks a session and finds sessions by metadata", async () => {
	const session = await client.createSession({ metadata: { topic: "client-fork" } });
	await client.prompt(session.id, "first");
	await waitUntil("the answer", async () =>
		(await client.getSession(session.id)).messageCount === 2 ? true : undefined,
	);
	const fork = await client.forkSession(session.id, { atMessageId: "wh-0" });
	expect(fork.messageCount).toBe(1);
	const found = await client.listSessions({ metadata: { topic: "client-fork" } });
	expect(found.sessions.map((s) => s.id)).toEqual([session.id, fork.id]);
	const forks = await client.listSessions({ metadata: { "wheelhouse.forkedFrom": session.id } });
	expect(forks.sessions.map((s) => s.id)).toEqual([fork.id]);
});
