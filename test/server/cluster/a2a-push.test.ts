/**
 * A2A push notifications in a cluster of three replica processes:
 * - a task runs on A, its push config is set through B (the reference client's
 *   `createTaskPushNotificationConfig`), and A is SIGKILLed right after the task completed, while
 *   the receiver is down — so A cannot have delivered it. The delivery, put in the outbox in the run
 *   end's commit, is sent by B's dispatcher once the receiver is back: received once, with the token.
 * - a task runs on B, its config set through C, and B is SIGKILLed mid-run: the replica that takes
 *   the session over marks the run interrupted (the task fails, as `GetTask` says) with its push
 *   notification in the same commit, though that replica never saw the task start; the continued
 *   run (not a task) completes and sends nothing more.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { a2aClient, TaskState, userMessage } from "../../helpers/a2a.js";
import {
	haveClusterServices,
	NO_CLUSTER_SERVICES,
	type Replica,
	testCluster,
	waitUntil,
	words,
} from "../../helpers/cluster.js";
import { stopAll } from "../../helpers/main-process.js";
import { newSecret, startWebhookReceiver, type WebhookReceiver } from "../../helpers/webhook-receiver.js";

const ok = await haveClusterServices();
const cluster = testCluster("a2a-push");
const T = 90_000;

describe.skipIf(!ok)("cluster: A2A push notifications", () => {
	let A: Replica;
	let B: Replica;
	let C: Replica;
	let receiver: WebhookReceiver;
	beforeAll(async () => {
		[A, B, C] = (await cluster.start(3, { fauxDelayMs: 20 })) as [Replica, Replica, Replica];
		receiver = await startWebhookReceiver(newSecret(), 0, { unsigned: true });
	}, T);
	afterAll(async () => {
		stopAll();
		await receiver?.close();
		await cluster.dropRedisKeys();
	});

	it(
		"the replica that ran the task is SIGKILLed right after completion: the other delivers the notification once",
		async () => {
			await receiver.stop(); // down until A is gone: A's attempts are refused
			const onA = await a2aClient(A.url);
			const task = (await onA.sendMessage({
				message: userMessage([words(100)]),
				configuration: { returnImmediately: true },
			} as never)) as { id: string; contextId: string };
			const onB = await a2aClient(B.url);
			await onB.createTaskPushNotificationConfig({
				taskId: task.id,
				id: "hook",
				url: receiver.url,
				token: "cluster-token",
			} as never);
			expect((await onB.getTask({ id: task.id } as never)).status?.state, "the config was set while the task ran").toBe(
				TaskState.TASK_STATE_WORKING,
			);
			await waitUntil(
				"the task completed",
				async () =>
					(await onB.getTask({ id: task.id } as never)).status?.state === TaskState.TASK_STATE_COMPLETED
						? true
						: undefined,
				30_000,
				20,
			);
			A.child.kill("SIGKILL");
			await A.exited;
			expect(receiver.received).toEqual([]);

			await receiver.start();
			await receiver.waitFor((r) => r.some((x) => x.status < 300), 45_000);
			await new Promise((resolve) => setTimeout(resolve, 3000));
			expect(receiver.received).toHaveLength(1);
			const [got] = receiver.received;
			expect(got!.headers["x-a2a-notification-token"]).toBe("cluster-token");
			expect(got!.body.statusUpdate).toMatchObject({
				taskId: task.id,
				contextId: task.contextId,
				status: { state: "TASK_STATE_COMPLETED" },
			});
		},
		T,
	);

	it(
		"the replica running the task is SIGKILLed mid-run: the replica that takes it over sends its final state once",
		async () => {
			const onB = await a2aClient(B.url);
			const contextId = `ctx-takeover-${Date.now()}`;
			const task = (await onB.sendMessage({
				message: userMessage([words(300)], { contextId }),
				configuration: { returnImmediately: true },
			} as never)) as unknown as { id: string; contextId: string; metadata: { wheelhouse: { sessionId: string } } };
			expect(task.contextId).toBe(contextId);
			const onC = await a2aClient(C.url);
			await onC.createTaskPushNotificationConfig({
				taskId: task.id,
				id: "hook",
				url: receiver.url,
				token: "takeover-token",
			} as never);
			expect((await onC.getTask({ id: task.id } as never)).status?.state, "killed while it ran").toBe(
				TaskState.TASK_STATE_WORKING,
			);
			B.child.kill("SIGKILL");
			await B.exited;

			const final = await waitUntil(
				"the task ended on the replica that took it over",
				async () => {
					const got = await onC.getTask({ id: task.id } as never);
					return got.status?.state === TaskState.TASK_STATE_WORKING ? undefined : got;
				},
				45_000,
				100,
			);
			expect(final.status?.state).toBe(TaskState.TASK_STATE_FAILED);
			const sessionId = task.metadata.wheelhouse.sessionId;
			// The continued run (a new run, not the task) answers on the replica that took over.
			await waitUntil(
				"the continued run completed",
				async () => {
					const state = (await fetch(`${C.url}/v1/sessions/${sessionId}`).then((r) => r.json())) as { status: string };
					if (state.status !== "idle") return undefined;
					const { messages } = (await fetch(`${C.url}/v1/sessions/${sessionId}/messages`).then((r) => r.json())) as {
						messages: { role: string }[];
					};
					return messages.some((m) => m.role === "assistant") ? true : undefined;
				},
				45_000,
				100,
			);
			await receiver.waitFor((r) => r.some((x) => x.status < 300 && x.body?.statusUpdate?.taskId === task.id), 30_000);
			await new Promise((resolve) => setTimeout(resolve, 3000));
			// Only this task's (the first test's delivery may be retried late, at least once).
			const mine = receiver.received.filter((r) => r.body?.statusUpdate?.taskId === task.id);
			expect(mine, JSON.stringify(receiver.received.map((r) => [r.id, r.status, r.body]))).toHaveLength(1);
			const [got] = mine;
			expect(got!.headers["x-a2a-notification-token"]).toBe("takeover-token");
			expect(got!.body.statusUpdate).toMatchObject({
				taskId: task.id,
				contextId,
				status: { state: "TASK_STATE_FAILED" },
			});
		},
		T,
	);
});

describe.skipIf(ok)("cluster: A2A push notifications (no services)", () => {
	it.skip(NO_CLUSTER_SERVICES, () => {});
});
