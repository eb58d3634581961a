/**
 * Webhooks across processes (the real entry, src/main.ts, on a SQLite file): deliveries the first
 * process could not make are sent by the next one with the same `webhook-id`, a run cut by the
 * crash is reported as `run.interrupted` and the run that continues it (`onInterrupt: "continue"`)
 * as `run.completed`; a bad webhook configuration stops startup naming the field.
 */
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { json, refusedStartup, startMain, stopAll } from "../../helpers/main-process.js";
import { openSse } from "../../helpers/sse.js";
import { newSecret, startWebhookReceiver, type WebhookReceiver } from "../../helpers/webhook-receiver.js";

const dirs: string[] = [];
const receivers: WebhookReceiver[] = [];
afterEach(async () => {
	stopAll();
	for (const r of receivers.splice(0)) await r.close();
	for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});

function tempDir(): string {
	const dir = mkdtempSync(path.join(tmpdir(), "wh-webhooks-"));
	dirs.push(dir);
	return dir;
}

describe("webhooks across a restart", () => {
	it("the next process sends what the crashed one could not, same webhook-id, and reports the cut run", {
		timeout: 90_000,
	}, async () => {
		const dir = tempDir();
		const secret = newSecret();
		const hooks = await startWebhookReceiver(secret);
		receivers.push(hooks);
		hooks.respondWith(503);
		writeFileSync(
			path.join(dir, "config.json"),
			JSON.stringify({
				tools: { approval: { calculate: "always" } },
				webhooks: {
					endpoints: [{ url: hooks.url, secret: `\${HOOK_SECRET}` }],
					pollMs: 50,
					retryBaseMs: 200,
					retryMaxMs: 400,
				},
			}),
		);
		const options = {
			db: path.join(dir, "wh.db"),
			env: { WHEELHOUSE_CONFIG: path.join(dir, "config.json"), HOOK_SECRET: secret },
		};

		const first = await startMain(options);
		const id = (await json(`${first.url}/v1/sessions`, "POST", {})).body.id;
		const events = await openSse(`${first.url}/v1/sessions/${id}/events`);
		const done = await json(`${first.url}/v1/sessions/${id}/prompt`, "POST", { message: "hello" });
		expect(done.status).toBe(202);
		await events.waitForType("agent_end", 15_000);
		const cut = await json(`${first.url}/v1/sessions/${id}/prompt`, "POST", {
			message: '/tool calculate {"expression": "1"}',
		});
		await events.waitForType("approval_requested", 15_000);
		events.close();
		// Both were tried and refused (503): their ids are known before the crash.
		await hooks.waitFor((r) => ["run.completed", "approval.requested"].every((t) => r.some((x) => x.body.type === t)));
		const triedIds = new Map(hooks.received.map((r) => [r.body.type as string, r.id]));
		first.child.kill("SIGKILL");
		await first.exited;
		const refusedAttempts = hooks.received.length;
		expect(hooks.received.every((r) => r.verified && r.status === 503)).toBe(true);

		hooks.respondWith(204);
		const second = await startMain(options);
		// The cut run's session continues by itself (onInterrupt "continue"): its new run's end is a fourth delivery.
		await hooks.waitFor(() => hooks.delivered().length === 4);
		const delivered = new Map(hooks.delivered().map((r) => [r.body.type as string, r]));
		expect(
			hooks
				.delivered()
				.map((r) => r.body.type as string)
				.sort(),
		).toEqual(["approval.requested", "run.completed", "run.completed", "run.interrupted"]);
		const completed = hooks.delivered().filter((r) => r.body.type === "run.completed");
		const earlier = completed.find((r) => r.body.data.runId === done.body.runId);
		expect(earlier!.id).toBe(triedIds.get("run.completed"));
		expect(earlier!.body.data).toMatchObject({ sessionId: id });
		expect(delivered.get("approval.requested")!.id).toBe(triedIds.get("approval.requested"));
		expect(delivered.get("run.interrupted")!.body.data).toMatchObject({
			sessionId: id,
			runId: cut.body.runId,
			status: "interrupted",
			reason: "server_restart",
		});
		const continued = completed.find((r) => r !== earlier)!.body.data;
		expect(continued).toMatchObject({ sessionId: id, status: "completed" });
		expect([done.body.runId, cut.body.runId]).not.toContain(continued.runId);
		expect((await json(`${second.url}/v1/sessions/${id}`)).body.status).toBe("idle");
		// Nothing was delivered twice, and nothing but these four was sent after the restart.
		await new Promise((resolve) => setTimeout(resolve, 300));
		expect(hooks.received.length).toBe(refusedAttempts + 4);
		expect(second.output()).not.toMatch(/given up/);
	});

	it("a bad webhook configuration stops startup with one line naming the field", { timeout: 30_000 }, async () => {
		const env = await refusedStartup({
			WHEELHOUSE_WEBHOOK_URL: "http://127.0.0.1:9/hooks",
			WHEELHOUSE_WEBHOOK_SECRET: "hunter2",
		});
		expect(env.code).toBe(1);
		expect(env.stderr).toMatch(/^Invalid configuration: WHEELHOUSE_WEBHOOK_SECRET: must start with "whsec_"/);
		expect(env.stderr).not.toMatch(/hunter2|\n\s+at /);

		const dir = tempDir();
		const file = path.join(dir, "config.json");
		writeFileSync(
			file,
			JSON.stringify({
				webhooks: { endpoints: [{ url: "http://127.0.0.1:9/hooks", secret: newSecret(), events: ["run.done"] }] },
			}),
		);
		const fromFile = await refusedStartup({ WHEELHOUSE_CONFIG: file });
		expect(fromFile.code).toBe(1);
		expect(fromFile.stderr).toMatch(/webhooks\.endpoints\[0\]\.events: unknown event type "run.done"/);
	});
});
