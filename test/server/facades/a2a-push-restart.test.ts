/**
 * A2A push notifications across a restart of the only process: a task's process is SIGKILLed
 * mid-run, and the restarted process (on the same SQLite file) marks the run interrupted with the
 * task's push notification in the same commit, though it never saw the task start: the task's
 * config gets its final state once, with its token.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { a2aClient, TaskState, userMessage } from "../../helpers/a2a.js";
import { words } from "../../helpers/cluster.js";
import { startMain, stopAll } from "../../helpers/main-process.js";
import { newSecret, startWebhookReceiver } from "../../helpers/webhook-receiver.js";

const dirs: string[] = [];
afterEach(() => {
	stopAll();
	for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});

describe("A2A push notifications across a restart", () => {
	it("a task whose process was SIGKILLed mid-run: the restarted process sends its final state once", async () => {
		const dir = mkdtempSync(path.join(tmpdir(), "wheelhouse-a2a-push-"));
		dirs.push(dir);
		const db = path.join(dir, "wheelhouse.db");
		const receiver = await startWebhookReceiver(newSecret(), 0, { unsigned: true });
		try {
			const env = { WHEELHOUSE_FAUX_DELAY_MS: "20" };
			const first = await startMain({ db, env });
			const client = await a2aClient(first.url);
			const task = (await client.sendMessage({
				message: userMessage([words(500)], { contextId: "restart-ctx" }),
				configuration: { returnImmediately: true },
			} as never)) as { id: string };
			await client.createTaskPushNotificationConfig({
				taskId: task.id,
				id: "hook",
				url: receiver.url,
				token: "restart-token",
			} as never);
			expect((await client.getTask({ id: task.id } as never)).status?.state).toBe(TaskState.TASK_STATE_WORKING);
			first.child.kill("SIGKILL");
			await first.exited;
			expect(receiver.received).toEqual([]);

			const second = await startMain({ db, env });
			await receiver.waitFor((r) => r.some((x) => x.status < 300), 30_000);
			const after = await a2aClient(second.url);
			expect((await after.getTask({ id: task.id } as never)).status?.state).toBe(TaskState.TASK_STATE_FAILED);
			await new Promise((resolve) => setTimeout(resolve, 2000));
			expect(receiver.received).toHaveLength(1);
			const [got] = receiver.received;
			expect(got!.headers["x-a2a-notification-token"]).toBe("restart-token");
			expect(got!.body.statusUpdate).toMatchObject({
				taskId: task.id,
				contextId: "restart-ctx",
				status: { state: "TASK_STATE_FAILED" },
			});
		} finally {
			await receiver.close();
		}
	}, 90_000);
});
