/**
 * Schedules survive a crash of the server (a real process, SIGKILLed, over an SQLite file): after
 * the restart they are listed as they were and go on firing; the ticks that passed while the server
 * was down are recorded as missed (`missed: "skip"`), or the newest of them fires late once
 * (`missed: "once"`); no tick is recorded twice.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, expect, it } from "vitest";
import { waitUntil } from "../../helpers/cluster.js";
import { json, type MainProcess, startMain, stopAll } from "../../helpers/main-process.js";

const dirs: string[] = [];
afterEach(() => {
	stopAll();
	for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});

// Lease TTL 2 s: a tick more than 1 s late counts as missed.
const ENV = { WHEELHOUSE_LEASE_TTL_MS: "2000" };

async function fires(server: MainProcess, id: string): Promise<any[]> {
	const res = await json(`${server.url}/v1/schedules/${id}/fires?limit=1000`);
	expect(res.status).toBe(200);
	return res.body.fires;
}

it("keeps schedules across a crash, records the missed ticks, and fires a catch-up", async () => {
	const dir = mkdtempSync(join(tmpdir(), "wh-sched-restart-"));
	dirs.push(dir);
	const db = join(dir, "wh.db");
	const first = await startMain({ db, env: ENV });
	const skip = await json(`${first.url}/v1/schedules`, "POST", { cron: "* * * * * *", profile: "", prompt: "tick" });
	const once = await json(`${first.url}/v1/schedules`, "POST", {
		cron: "* * * * * *",
		profile: "",
		prompt: "tock",
		missed: "once",
	});
	expect([skip.status, once.status]).toEqual([201, 201]);
	for (const id of [skip.body.id, once.body.id]) {
		await waitUntil("two fires", async () =>
			(await fires(first, id)).filter((f) => f.outcome === "fired").length >= 2 ? true : undefined,
		);
	}

	first.child.kill("SIGKILL");
	await first.exited;
	const killedAt = Date.now();
	// Down for a while: several ticks pass, all more than a second late by the restart.
	await new Promise((r) => setTimeout(r, 3500));
	const second = await startMain({ db, env: ENV });
	const restartedAt = Date.now();

	const listed = await json(`${second.url}/v1/schedules`);
	expect(listed.body.schedules.map((s: { id: string; state: string }) => [s.id, s.state])).toEqual([
		[skip.body.id, "active"],
		[once.body.id, "active"],
	]);

	const after = await waitUntil("a tick fired after the restart", async () => {
		const list = await fires(second, skip.body.id);
		return list.some((f) => f.kind === "tick" && f.outcome === "fired" && f.tickAt >= restartedAt - 1000)
			? list
			: undefined;
	});
	const missed = after.filter((f) => f.outcome === "missed");
	expect(missed.length).toBeGreaterThanOrEqual(2);
	for (const f of missed) {
		expect(f.tickAt).toBeGreaterThanOrEqual(killedAt - 2000);
		expect(f.tickAt).toBeLessThan(restartedAt);
	}
	// One record per tick, whatever its outcome.
	const ticks = after.filter((f) => f.kind !== "manual").map((f) => f.tickAt);
	expect(new Set(ticks).size).toBe(ticks.length);

	const caught = await waitUntil("the catch-up fired", async () => {
		const list = await fires(second, once.body.id);
		return list.find((f) => f.kind === "catch_up" && f.outcome === "fired");
	});
	expect(caught.tickAt).toBeLessThan(restartedAt);
	expect(caught.sessionId).toEqual(expect.any(String));
	const onceTicks = (await fires(second, once.body.id)).map((f) => f.tickAt);
	expect(new Set(onceTicks).size).toBe(onceTicks.length);
}, 60_000);
