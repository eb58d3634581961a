/**
 * A2A push notifications with the reference client's push-config methods (`@a2a-js/sdk`) and a
 * local receiver: the card says push is on; a config set on a running task gets the task's final
 * state once, with its token and authentication; get, list and delete; a config made after the
 * task ended gets the final state at once; a deleted config gets nothing; URLs other than https
 * (or http to localhost) and private addresses are refused; another key's task is not found.
 */
import { afterEach, describe, expect, it } from "vitest";
import { a2aClient, TaskState, userMessage } from "../../helpers/a2a.js";
import { startServer, type TestServer } from "../../helpers/server.js";
import { newSecret, startWebhookReceiver, type WebhookReceiver } from "../../helpers/webhook-receiver.js";

const KEY = "key-one-0123456789";
const OTHER = "key-two-0123456789";
let server: TestServer;
let receiver: WebhookReceiver;
afterEach(async () => {
	await server?.close();
	await receiver?.close();
});

const words = (n: number) => Array.from({ length: n }, (_, i) => `w${i}`).join(" ");

/** Waits `ms` (to see that nothing more arrives), the dispatcher polling meanwhile. */
const settle = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

describe("A2A push notifications", () => {
	it("a config set on a running task gets its final state once, with the token; get, list, delete", async () => {
		server = await startServer({ config: { apiKeys: [KEY, OTHER], fauxDelayMs: 20 } });
		receiver = await startWebhookReceiver(newSecret(), 0, { unsigned: true });
		const card = await server.request("GET", "/.well-known/agent-card.json");
		expect(card.body.capabilities.pushNotifications).toBe(true);

		const client = await a2aClient(server.url, KEY);
		const task = (await client.sendMessage({
			message: userMessage([words(60)]),
			configuration: { returnImmediately: true },
		} as never)) as { id: string; contextId: string; status?: { state: number } };
		expect(task.status?.state).toBe(TaskState.TASK_STATE_WORKING);

		const created = await client.createTaskPushNotificationConfig({
			taskId: task.id,
			id: "cfg-1",
			url: receiver.url,
			token: "tok-123",
			authentication: { scheme: "Bearer", credentials: "cred-456" },
		} as never);
		expect(created).toMatchObject({ taskId: task.id, id: "cfg-1", url: receiver.url, token: "tok-123" });
		// A second config, deleted before the task ends: it gets nothing.
		await client.createTaskPushNotificationConfig({
			taskId: task.id,
			id: "cfg-2",
			url: `${receiver.url}?gone`,
			token: "tok-gone",
		} as never);
		expect(
			(await client.getTaskPushNotificationConfig({ taskId: task.id, id: "cfg-1" } as never)).authentication,
		).toMatchObject({ scheme: "Bearer", credentials: "cred-456" });
		const listed = await client.listTaskPushNotificationConfig({ taskId: task.id } as never);
		expect(listed.configs.map((c) => c.id).sort()).toEqual(["cfg-1", "cfg-2"]);
		await client.deleteTaskPushNotificationConfig({ taskId: task.id, id: "cfg-2" } as never);
		expect(
			(await client.listTaskPushNotificationConfig({ taskId: task.id } as never)).configs.map((c) => c.id),
		).toEqual(["cfg-1"]);
		// Another key does not see the task.
		const other = await a2aClient(server.url, OTHER);
		await expect(other.listTaskPushNotificationConfig({ taskId: task.id } as never)).rejects.toMatchObject({
			name: "TaskNotFoundError",
		});

		await receiver.waitFor((r) => r.length >= 1, 30_000);
		await settle(2500);
		expect(receiver.received).toHaveLength(1);
		const [got] = receiver.received;
		expect(got!.status).toBe(204);
		expect(got!.headers["x-a2a-notification-token"]).toBe("tok-123");
		expect(got!.headers.authorization).toBe("Bearer cred-456");
		expect(got!.id).toMatch(/^msg_/);
		expect(got!.body).toEqual({
			statusUpdate: {
				taskId: task.id,
				contextId: task.contextId,
				status: { state: "TASK_STATE_COMPLETED", timestamp: expect.any(String) },
			},
		});
		expect((await client.getTask({ id: task.id } as never)).status?.state).toBe(TaskState.TASK_STATE_COMPLETED);
	}, 60_000);

	it("a config made after the task ended gets the final state at once; a task without one sends nothing", async () => {
		server = await startServer({ config: { apiKeys: [KEY] } });
		receiver = await startWebhookReceiver(newSecret(), 0, { unsigned: true });
		const client = await a2aClient(server.url, KEY);
		const quiet = (await client.sendMessage({ message: userMessage(["no config"]) } as never)) as { id: string };
		const done = (await client.sendMessage({ message: userMessage(["all done"]) } as never)) as {
			id: string;
			contextId: string;
			status?: { state: number };
		};
		expect(done.status?.state).toBe(TaskState.TASK_STATE_COMPLETED);
		await client.createTaskPushNotificationConfig({
			taskId: done.id,
			id: "late",
			url: receiver.url,
			token: "t",
		} as never);
		await receiver.waitFor((r) => r.length >= 1);
		await settle(2500);
		expect(receiver.received.map((r) => [r.body.statusUpdate.taskId, r.body.statusUpdate.status.state])).toEqual([
			[done.id, "TASK_STATE_COMPLETED"],
		]);
		expect(receiver.received.some((r) => r.body.statusUpdate.taskId === quiet.id)).toBe(false);
	}, 30_000);

	it("a task that waits for an approval notifies input-required, then its end once answered", async () => {
		// The echo model takes a few delays to ask for the tool: the config is set before the approval is asked.
		server = await startServer({
			config: { apiKeys: [KEY], fauxDelayMs: 1000, tools: { approval: { calculate: "always" } } },
		});
		receiver = await startWebhookReceiver(newSecret(), 0, { unsigned: true });
		const client = await a2aClient(server.url, KEY);
		const task = (await client.sendMessage({
			message: userMessage(['/tool calculate {"expression": "6 * 7"}']),
			configuration: { returnImmediately: true },
		} as never)) as { id: string; contextId: string };
		await client.createTaskPushNotificationConfig({ taskId: task.id, id: "c", url: receiver.url, token: "t" } as never);
		await receiver.waitFor((r) => r.length >= 1);
		expect(receiver.received[0]!.body.statusUpdate.status.state).toBe("TASK_STATE_INPUT_REQUIRED");
		const done = await client.sendMessage({
			message: userMessage([{ approve: true }], { taskId: task.id, contextId: task.contextId }),
		} as never);
		expect((done as { status?: { state: number } }).status?.state).toBe(TaskState.TASK_STATE_COMPLETED);
		await receiver.waitFor((r) => r.length >= 2);
		await settle(2500);
		expect(receiver.received.map((r) => r.body.statusUpdate.status.state)).toEqual([
			"TASK_STATE_INPUT_REQUIRED",
			"TASK_STATE_COMPLETED",
		]);
		expect(new Set(receiver.received.map((r) => r.id)).size).toBe(2);
	}, 30_000);

	it("a task in a session made over /v1 (the session id as its context) notifies its final state once", async () => {
		server = await startServer({ config: { apiKeys: [KEY], fauxDelayMs: 20 } });
		receiver = await startWebhookReceiver(newSecret(), 0, { unsigned: true });
		const made = await server.request("POST", "/v1/sessions", {
			body: {},
			headers: { authorization: `Bearer ${KEY}` },
		});
		const sessionId = made.body.id as string;
		const client = await a2aClient(server.url, KEY);
		const task = (await client.sendMessage({
			message: userMessage([words(60)], { contextId: sessionId }),
			configuration: { returnImmediately: true },
		} as never)) as { id: string; contextId: string };
		expect(task.contextId).toBe(sessionId);
		await client.createTaskPushNotificationConfig({
			taskId: task.id,
			id: "cfg",
			url: receiver.url,
			token: "tok-v1",
		} as never);
		await receiver.waitFor((r) => r.length >= 1, 30_000);
		await settle(2000);
		expect(receiver.received).toHaveLength(1);
		expect(receiver.received[0]!.headers["x-a2a-notification-token"]).toBe("tok-v1");
		expect(receiver.received[0]!.body.statusUpdate).toMatchObject({
			taskId: task.id,
			contextId: sessionId,
			status: { state: "TASK_STATE_COMPLETED" },
		});
	});

	it("refuses URLs that are not https (except to localhost) and private addresses, naming the field", async () => {
		server = await startServer({ config: { apiKeys: [KEY] } });
		const client = await a2aClient(server.url, KEY);
		const task = (await client.sendMessage({ message: userMessage(["hi"]) } as never)) as { id: string };
		for (const url of [
			"http://example.com/hook",
			"https://169.254.169.254/latest",
			"https://10.0.0.8/x",
			"ftp://x/y",
		]) {
			await expect(
				client.createTaskPushNotificationConfig({ taskId: task.id, id: "x", url, token: "t" } as never),
			).rejects.toThrow(/params\.url/);
		}
		await expect(
			client.createTaskPushNotificationConfig({
				taskId: "run_nope",
				id: "x",
				url: "https://a.example/",
				token: "",
			} as never),
		).rejects.toMatchObject({ name: "TaskNotFoundError" });
		expect((await client.listTaskPushNotificationConfig({ taskId: task.id } as never)).configs).toEqual([]);
	}, 30_000);
});
