/**
 * Schedules in one process, over real HTTP: a per-second cron schedule fires a new session per
 * tick (recorded, reported to a webhook receiver), pause stops it and resume starts it again,
 * run-now fires at once, `ifBusy: "skip"` on a running session records a skip, a one-shot fires
 * once and is done, and bad input is refused naming the field. Runs on the memory and SQLite stores.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { createMemoryStore } from "../../../src/store/memory.js";
import { openSqliteStore } from "../../../src/store/sqlite/index.js";
import type { SessionStore } from "../../../src/store/types.js";
import { waitUntil, words } from "../../helpers/cluster.js";
import { startServer, type TestServer } from "../../helpers/server.js";
import { newSecret, startWebhookReceiver, type WebhookReceiver } from "../../helpers/webhook-receiver.js";

let server: TestServer | undefined;
let receiver: WebhookReceiver | undefined;
const cleanups: (() => void)[] = [];
afterEach(async () => {
	await server?.close();
	server = undefined;
	await receiver?.close();
	receiver = undefined;
	for (const c of cleanups.splice(0)) c();
});

const stores: [string, () => SessionStore][] = [
	["memory", () => createMemoryStore()],
	[
		"sqlite",
		() => {
			const dir = mkdtempSync(join(tmpdir(), "wh-schedules-"));
			const store = openSqliteStore({ path: join(dir, "db.sqlite") });
			cleanups.push(() => rmSync(dir, { recursive: true, force: true }));
			cleanups.unshift(() => void store.close());
			return store;
		},
	],
];

async function start(store: SessionStore, config: Record<string, unknown> = {}): Promise<TestServer> {
	const secret = newSecret();
	receiver = await startWebhookReceiver(secret);
	server = await startServer({
		store,
		config: { webhooks: { pollMs: 20, endpoints: [{ url: receiver.url, secret }] }, ...config },
	});
	return server;
}

async function fires(id: string): Promise<any[]> {
	const res = await server!.request("GET", `/v1/schedules/${id}/fires`);
	expect(res.status).toBe(200);
	return res.body.fires;
}

describe.each(stores)("schedules (%s store)", (_name, makeStore) => {
	it("fires a new session per tick, recorded and reported; pause, resume and run-now behave", async () => {
		await start(makeStore());
		const created = await server!.request("POST", "/v1/schedules", {
			body: { cron: "* * * * * *", profile: "", prompt: "good morning", metadata: { team: "ops" } },
		});
		expect(created.status).toBe(201);
		const schedule = created.body;
		expect(schedule).toMatchObject({ cron: "* * * * * *", timezone: "UTC", state: "active", ifBusy: "followUp" });
		expect(schedule.nextFireAt).toBeGreaterThan(Date.now() - 1000);

		// Two ticks fired, each with its own session and run.
		const fired = await waitUntil("two fires", async () => {
			const list = (await fires(schedule.id)).filter((f) => f.outcome === "fired");
			return list.length >= 2 ? list : undefined;
		});
		expect(new Set(fired.map((f) => f.tickAt)).size).toBe(fired.length);
		for (const f of fired) {
			expect(f).toMatchObject({ kind: "tick", sessionId: expect.any(String), runId: expect.any(String) });
			expect(f.tickAt % 1000).toBe(0);
		}
		const session = await server!.request("GET", `/v1/sessions/${fired[0].sessionId}`);
		expect(session.body.metadata).toMatchObject({ team: "ops", "wheelhouse.schedule": schedule.id });
		const transcript = await waitUntil("the fire's answer", async () => {
			const page = await server!.request("GET", `/v1/sessions/${fired[0].sessionId}/messages`);
			return page.body.total >= 2 ? page.body.messages : undefined;
		});
		expect(transcript[0].content[0].text).toBe("good morning");

		await receiver!.waitFor(() => receiver!.delivered("schedule.fired").length >= 2);
		const hook = receiver!.delivered("schedule.fired")[0]!.body;
		expect(hook.data).toMatchObject({
			scheduleId: schedule.id,
			fireId: expect.any(Number),
			kind: "tick",
			outcome: "fired",
			sessionId: expect.any(String),
			runId: expect.any(String),
			metadata: { team: "ops" },
		});

		// Paused: no tick fires; the fires list stops growing.
		const paused = await server!.request("POST", `/v1/schedules/${schedule.id}/pause`);
		expect(paused.body.state).toBe("paused");
		const atPause = (await fires(schedule.id)).length;
		await new Promise((r) => setTimeout(r, 2500));
		expect((await fires(schedule.id)).filter((f) => f.kind === "tick").length).toBeLessThanOrEqual(atPause + 1);
		const settledCount = (await fires(schedule.id)).length;

		// run-now fires while paused, at once.
		const now = await server!.request("POST", `/v1/schedules/${schedule.id}/run-now`);
		expect(now.status).toBe(202);
		expect(now.body).toMatchObject({ kind: "manual", outcome: "fired", runId: expect.any(String) });
		expect((await fires(schedule.id)).length).toBe(settledCount + 1);

		// Resumed: ticks fire again, from after now (the paused ticks are not recorded).
		const resumed = await server!.request("POST", `/v1/schedules/${schedule.id}/resume`);
		expect(resumed.body.state).toBe("active");
		expect(resumed.body.nextFireAt).toBeGreaterThan(Date.now() - 1000);
		await waitUntil("a tick after resuming", async () => {
			const list = await fires(schedule.id);
			return list.some((f) => f.kind === "tick" && f.tickAt > now.body.tickAt && f.outcome === "fired")
				? true
				: undefined;
		});
		expect((await fires(schedule.id)).some((f) => f.outcome === "missed")).toBe(false);

		// Listed; deleted with its fires.
		const list = await server!.request("GET", "/v1/schedules");
		expect(list.body.schedules.map((s: { id: string }) => s.id)).toEqual([schedule.id]);
		expect((await server!.request("DELETE", `/v1/schedules/${schedule.id}`)).body).toEqual({
			deleted: true,
			id: schedule.id,
		});
		expect((await server!.request("GET", `/v1/schedules/${schedule.id}`)).body.error.code).toBe("SCHEDULE_NOT_FOUND");
	}, 30_000);

	it("records a skip when the session is running and ifBusy is skip; follows up otherwise", async () => {
		await start(makeStore(), { fauxDelayMs: 20 });
		const sessionId = (await server!.request("POST", "/v1/sessions", { body: {} })).body.id;
		const skip = (
			await server!.request("POST", "/v1/schedules", {
				body: { cron: "0 0 1 1 *", sessionId, prompt: "check in", ifBusy: "skip" },
			})
		).body;
		const follow = (
			await server!.request("POST", "/v1/schedules", {
				body: { cron: "0 0 1 1 *", sessionId, prompt: "and then", ifBusy: "followUp" },
			})
		).body;
		// A long run: the echo model streams one word per 20 ms.
		const run = await server!.request("POST", `/v1/sessions/${sessionId}/prompt`, { body: { message: words(200) } });
		expect(run.status).toBe(202);
		const skipped = await server!.request("POST", `/v1/schedules/${skip.id}/run-now`);
		expect(skipped.body).toMatchObject({
			outcome: "skipped",
			sessionId,
			runId: null,
			reason: expect.stringMatching(/running/),
		});
		await receiver!.waitFor(() => receiver!.delivered("schedule.skipped").length === 1);
		expect(receiver!.delivered("schedule.skipped")[0]!.body.data).toMatchObject({
			scheduleId: skip.id,
			outcome: "skipped",
		});
		const queued = await server!.request("POST", `/v1/schedules/${follow.id}/run-now`);
		expect(queued.body).toMatchObject({ outcome: "fired", sessionId, reason: expect.stringMatching(/follow-up/) });
		// The follow-up is answered after the run: the transcript ends with it and its answer.
		const messages = await waitUntil(
			"the follow-up answered",
			async () => {
				const page = await server!.request("GET", `/v1/sessions/${sessionId}/messages`);
				const last = page.body.messages.at(-2);
				return page.body.total === 4 && last?.content?.[0]?.text === "and then" ? page.body.messages : undefined;
			},
			30_000,
		);
		expect(messages.map((m: { role: string }) => m.role)).toEqual(["user", "assistant", "user", "assistant"]);
	}, 40_000);

	it("fires a one-shot once, then it is done", async () => {
		await start(makeStore());
		const at = new Date(Date.now() + 1200).toISOString();
		const created = await server!.request("POST", "/v1/schedules", { body: { at, profile: "", prompt: "once" } });
		expect(created.status).toBe(201);
		expect(created.body).toMatchObject({ cron: null, at: Date.parse(at), nextFireAt: Date.parse(at) });
		const done = await waitUntil("the one-shot done", async () => {
			const s = await server!.request("GET", `/v1/schedules/${created.body.id}`);
			return s.body.state === "done" ? s.body : undefined;
		});
		expect(done).toMatchObject({ nextFireAt: null, lastFireAt: Date.parse(at) });
		await waitUntil("its fire settled", async () =>
			(await fires(created.body.id))[0]?.outcome === "fired" ? true : undefined,
		);
		expect(await fires(created.body.id)).toHaveLength(1);
	});
});

describe("schedule requests", () => {
	it("refuses bad input naming the field, and other keys' schedules", async () => {
		server = await startServer({ config: { apiKeys: ["key-aaaaaaaa", "key-bbbbbbbb"] } });
		const post = (body: unknown, key = "key-aaaaaaaa") => server!.request("POST", "/v1/schedules", { body, key });
		const bad = async (body: unknown, pattern: RegExp, status = 400) => {
			const res = await post(body);
			expect(res.status, JSON.stringify(res.body)).toBe(status);
			expect(res.body.error.message).toMatch(pattern);
		};
		await bad({ cron: "not a cron", profile: "", prompt: "x" }, /body\.cron/);
		await bad({ cron: "* * * * *", timezone: "Mars/Olympus", profile: "", prompt: "x" }, /body\.cron: "Mars\/Olympus"/);
		await bad({ cron: "* * * * *", at: "2030-01-01T00:00:00Z", profile: "", prompt: "x" }, /exactly one of `cron`/);
		await bad({ profile: "", prompt: "x" }, /exactly one of `cron`/);
		await bad({ cron: "* * * * *", prompt: "x" }, /exactly one of `profile`/);
		await bad({ at: "tomorrow", profile: "", prompt: "x" }, /body\.at/);
		await bad({ cron: "* * * * *", profile: "nope", prompt: "x" }, /profile "nope"/);
		await bad({ cron: "* * * * *", sessionId: "missing", prompt: "x" }, /missing/, 404);
		await bad({ cron: "* * * * *", profile: "", prompt: "x", ifBusy: "sometimes" }, /ifBusy/);

		const mine = await post({ cron: "0 9 * * *", timezone: "America/New_York", profile: "", prompt: "x" });
		expect(mine.status).toBe(201);
		const theirs = await server!.request("GET", `/v1/schedules/${mine.body.id}`, { key: "key-bbbbbbbb" });
		expect(theirs.status).toBe(404);
		expect(theirs.body.error.code).toBe("SCHEDULE_NOT_FOUND");
		const list = await server!.request("GET", "/v1/schedules", { key: "key-bbbbbbbb" });
		expect(list.body.schedules).toEqual([]);

		// A PATCH that changes the timing computes the next tick again.
		const patched = await server!.request("PATCH", `/v1/schedules/${mine.body.id}`, {
			key: "key-aaaaaaaa",
			body: { cron: "30 9 * * *", prompt: "y" },
		});
		expect(patched.status).toBe(200);
		expect(patched.body).toMatchObject({ cron: "30 9 * * *", prompt: "y", timezone: "America/New_York" });
		const local = new Intl.DateTimeFormat("en-US", {
			timeZone: "America/New_York",
			hour: "2-digit",
			minute: "2-digit",
			hourCycle: "h23",
		}).format(new Date(patched.body.nextFireAt));
		expect(local).toBe("09:30");
	});
});
