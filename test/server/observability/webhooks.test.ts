/**
 * Webhooks in one process: every event type reaches a local receiver that verifies its signature
 * with the `standardwebhooks` library; endpoints get only the types they asked for; a receiver that
 * fails or is down gets the delivery later with the same `webhook-id`; deliveries are given up
 * after the configured attempts (and at once on 410), recorded in the outbox and the metrics.
 */
import { afterEach, describe, expect, it } from "vitest";
import { registerFauxProvider } from "../../../src/ai/providers/faux.js";
import { createMemoryStore } from "../../../src/store/memory.js";
import type { SessionStore } from "../../../src/store/types.js";
import { startServer, type TestServer } from "../../helpers/server.js";
import { promptSse, type SseReader } from "../../helpers/sse.js";
import { newSecret, startWebhookReceiver, type WebhookReceiver } from "../../helpers/webhook-receiver.js";

const faux = registerFauxProvider({ api: "webhooks-faux", provider: "scripted" });
const SCRIPTED = `scripted/${faux.getModel().id}`;
const pickColor = {
	name: "pick_color",
	description: "Ask the user to pick a color",
	parameters: { type: "object", properties: { question: { type: "string" } }, required: ["question"] },
};

let server: TestServer | undefined;
const receivers: WebhookReceiver[] = [];
const readers: SseReader[] = [];
afterEach(async () => {
	for (const r of readers.splice(0)) r.close();
	await server?.close();
	server = undefined;
	for (const r of receivers.splice(0)) await r.close();
});

async function receiver(secret = newSecret(), port?: number): Promise<WebhookReceiver & { secret: string }> {
	const r = await startWebhookReceiver(secret, port);
	receivers.push(r);
	return Object.assign(r, { secret });
}

async function start(webhooks: Record<string, unknown>, store?: SessionStore): Promise<TestServer> {
	server = await startServer({
		config: { tools: { approval: { calculate: "always" } }, webhooks: { pollMs: 20, retryBaseMs: 20, ...webhooks } },
		models: [faux.getModel()],
		...(store ? { store } : {}),
	});
	return server;
}

async function session(body: Record<string, unknown> = {}): Promise<string> {
	const res = await server!.request("POST", "/v1/sessions", { body });
	expect(res.status).toBe(201);
	return res.body.id;
}

async function prompt(id: string, message: string): Promise<SseReader> {
	const reader = await promptSse(server!.url, id, { message });
	readers.push(reader);
	return reader;
}

describe("webhooks", () => {
	it("delivers each event type, signed, with the session and run ids", async () => {
		const hooks = await receiver();
		await start({ endpoints: [{ url: hooks.url, secret: hooks.secret }] });

		// run.completed
		const id = await session();
		const done = await prompt(id, "hello");
		await done.waitForEnd();
		await hooks.waitFor(() => hooks.delivered("run.completed").length === 1);
		const completed = hooks.delivered("run.completed")[0]!;
		expect(completed.body).toMatchObject({
			type: "run.completed",
			timestamp: expect.stringMatching(/^\d{4}-\d\d-\d\dT/),
			data: { sessionId: id, runId: expect.any(String), status: "completed", usage: expect.any(Object) },
		});
		expect(completed.id).toMatch(/^msg_/);
		expect(completed.headers["webhook-signature"]).toMatch(/^v1,/);

		// approval.requested, then an abort: run.interrupted (aborted)
		const approval = await prompt(id, '/tool calculate {"expression": "6 * 7"}');
		const requested = await approval.waitForType("approval_requested");
		await hooks.waitFor(() => hooks.delivered("approval.requested").length === 1);
		const runId = hooks.delivered("approval.requested")[0]!.body.data.runId;
		expect(hooks.delivered("approval.requested")[0]!.body.data).toEqual({
			sessionId: id,
			runId,
			toolCallId: requested.data.toolCallId,
			toolName: "calculate",
			args: { expression: "6 * 7" },
			expiresAt: expect.any(Number),
		});
		expect(runId).toEqual(expect.any(String));
		expect((await server!.request("POST", `/v1/sessions/${id}/abort`)).status).toBe(200);
		await approval.waitForEnd();
		await hooks.waitFor(() => hooks.delivered("run.interrupted").length === 1);
		expect(hooks.delivered("run.interrupted")[0]!.body.data).toMatchObject({
			sessionId: id,
			runId,
			status: "aborted",
			reason: "aborted",
		});

		// client_tool.requested
		const withTool = await session({ clientTools: [pickColor] });
		const client = await prompt(withTool, '/tool pick_color {"question": "favourite?"}');
		const asked = await client.waitFor((e) => e.event === "tool_execution_start" && e.data.toolName === "pick_color");
		await hooks.waitFor(() => hooks.delivered("client_tool.requested").length === 1);
		expect(hooks.delivered("client_tool.requested")[0]!.body.data).toMatchObject({
			sessionId: withTool,
			toolCallId: asked.data.toolCallId,
			toolName: "pick_color",
			args: { question: "favourite?" },
		});

		await server!.request("POST", `/v1/sessions/${withTool}/abort`);
		await client.waitForEnd();

		// run.failed
		const failing = await session({ model: SCRIPTED });
		faux.setResponses([{ content: "partial", stopReason: "error", errorMessage: "upstream exploded" }]);
		await (await prompt(failing, "hi")).waitForEnd();
		await hooks.waitFor(() => hooks.delivered("run.failed").length === 1);
		expect(hooks.delivered("run.failed")[0]!.body.data).toMatchObject({
			sessionId: failing,
			status: "error",
			errorMessage: "upstream exploded",
		});

		expect(hooks.received.every((r) => r.verified)).toBe(true);
		expect(new Set(hooks.received.map((r) => r.id)).size).toBe(hooks.received.length);
	});

	it("sends an endpoint only the event types it asked for; a wrong secret does not verify", async () => {
		const all = await receiver();
		const failures = await receiver();
		const other = await receiver();
		await start({
			endpoints: [
				{ url: all.url, secret: all.secret },
				{ url: failures.url, secret: failures.secret, events: ["run.failed"] },
				// Signed with another secret than the receiver checks with.
				{ url: other.url, secret: newSecret(), events: ["run.completed"] },
			],
			maxAttempts: 1,
		});
		const id = await session({ model: SCRIPTED });
		faux.setResponses([{ content: "fine" }]);
		await (await prompt(id, "one")).waitForEnd();
		faux.setResponses([{ content: "", stopReason: "error", errorMessage: "boom" }]);
		await (await prompt(id, "two")).waitForEnd();
		await all.waitFor(() => all.delivered().length === 2);
		await failures.waitFor(() => failures.received.length === 1);
		await other.waitFor(() => other.received.length === 1);
		expect(
			all
				.delivered()
				.map((r) => r.body.type)
				.sort(),
		).toEqual(["run.completed", "run.failed"]);
		expect(failures.delivered().map((r) => r.body.type)).toEqual(["run.failed"]);
		expect(other.received.map((r) => [r.body.type, r.verified])).toEqual([["run.completed", false]]);
		// Same event, two endpoints: two deliveries with their own ids and the same body.
		const [a] = all.delivered("run.failed");
		const [b] = failures.delivered("run.failed");
		expect(a!.id).not.toBe(b!.id);
		expect(a!.body).toEqual(b!.body);
	});

	it("retries a failing receiver and one that is down, with the same webhook-id, until it takes the delivery", async () => {
		const hooks = await receiver();
		hooks.respondWith(503);
		const store = createMemoryStore();
		await start({ endpoints: [{ url: hooks.url, secret: hooks.secret }], maxAttempts: 50 }, store);
		const id = await session();
		await (await prompt(id, "hello")).waitForEnd();
		await hooks.waitFor((r) => r.length >= 2);
		// Now down altogether: connections are refused.
		await hooks.stop();
		const refusedAt = (await store.listWebhooks())[0]!.attempts;
		await expect
			.poll(async () => (await store.listWebhooks())[0]!.attempts, { timeout: 15_000 })
			.toBeGreaterThan(refusedAt + 1);
		const pending = (await store.listWebhooks())[0]!;
		expect(pending).toMatchObject({ status: "pending", lastError: expect.not.stringMatching(/^HTTP/) });

		hooks.respondWith(200);
		await hooks.start();
		await hooks.waitFor(() => hooks.delivered().length === 1);
		const ids = new Set(hooks.received.map((r) => r.id));
		expect(ids.size).toBe(1);
		expect(hooks.received.map((r) => r.status)).toEqual([...hooks.received.slice(0, -1).map(() => 503), 200]);
		await expect.poll(async () => (await store.listWebhooks())[0]!.status).toBe("delivered");
		const delivered = (await store.listWebhooks())[0]!;
		expect(delivered.id).toBe([...ids][0]);
		expect(delivered.attempts).toBeGreaterThan(hooks.received.length);
	});

	it("gives up after maxAttempts, and at once on 410; both recorded and counted", async () => {
		const failing = await receiver();
		failing.respondWith(500);
		const gone = await receiver();
		gone.respondWith(410);
		const store = createMemoryStore();
		await start(
			{
				endpoints: [
					{ url: failing.url, secret: failing.secret },
					{ url: gone.url, secret: gone.secret },
				],
				maxAttempts: 3,
			},
			store,
		);
		const id = await session();
		await (await prompt(id, "hello")).waitForEnd();
		await expect.poll(async () => (await store.listWebhooks({ status: "failed" })).length, { timeout: 15_000 }).toBe(2);
		const failed = await store.listWebhooks({ status: "failed" });
		expect(failed.map((d) => [d.endpoint, d.attempts, d.lastError]).sort()).toEqual(
			[
				[failing.url, 3, "HTTP 500"],
				[gone.url, 1, "HTTP 410"],
			].sort(),
		);
		expect(failing.received).toHaveLength(3);
		expect(gone.received).toHaveLength(1);
		const metrics = await (await fetch(`${server!.url}/metrics`)).text();
		expect(metrics).toMatch(/wheelhouse_webhook_deliveries_total\{event="run.completed",outcome="failed"\} 2/);
		expect(metrics).toMatch(/wheelhouse_webhook_deliveries_total\{event="run.completed",outcome="retry"\} 2/);
	});

	it("an attempt that gets no answer within timeoutMs fails as a timeout", async () => {
		const hooks = await receiver();
		hooks.respondWith(0);
		const store = createMemoryStore();
		await start({ endpoints: [{ url: hooks.url, secret: hooks.secret }], timeoutMs: 200, maxAttempts: 1 }, store);
		const id = await session();
		await (await prompt(id, "hello")).waitForEnd();
		await expect.poll(async () => (await store.listWebhooks())[0]?.status, { timeout: 15_000 }).toBe("failed");
		expect((await store.listWebhooks())[0]).toMatchObject({ attempts: 1, lastError: "timeout" });
		expect(hooks.received).toHaveLength(1);
	});

	it("on close, an attempt in flight is cut and its delivery due again at once, the attempt uncounted", async () => {
		const hooks = await receiver();
		hooks.respondWith(0);
		const store = createMemoryStore();
		await start({ endpoints: [{ url: hooks.url, secret: hooks.secret }], timeoutMs: 60_000 }, store);
		const id = await session();
		await (await prompt(id, "hello")).waitForEnd();
		await hooks.waitFor((r) => r.length === 1);
		const before = Date.now();
		await server!.close();
		const [delivery] = await store.listWebhooks();
		expect(delivery).toMatchObject({
			id: hooks.received[0]!.id,
			status: "pending",
			attempts: 0,
			lastError: "interrupted by a server stop",
		});
		expect(delivery!.nextAttemptAt).toBeGreaterThanOrEqual(before);
		expect(delivery!.nextAttemptAt).toBeLessThanOrEqual(Date.now());
	});

	it("refuses a bad webhooks section, naming the field", async () => {
		const bad = async (webhooks: unknown, env: Record<string, string> = {}) =>
			startServer({ config: { webhooks } as never, env }).then(
				async (s) => {
					await s.close();
					return "started";
				},
				(error: Error) => error.message,
			);
		expect(await bad({ endpoints: [{ url: "ftp://x", secret: newSecret() }] })).toMatch(
			/webhooks\.endpoints\[0\]\.url: must be an http\(s\) URL/,
		);
		expect(await bad({ endpoints: [{ url: "http://x", secret: "plain" }] })).toMatch(
			/webhooks\.endpoints\[0\]\.secret: must start with "whsec_"/,
		);
		expect(await bad({ endpoints: [{ url: "http://x", secret: `\${HOOK_SECRET}` }] })).toMatch(
			/webhooks\.endpoints\[0\]\.secret: environment variable HOOK_SECRET is not set/,
		);
		expect(await bad({ endpoints: [{ url: "http://x", secret: newSecret(), events: ["run.done"] }] })).toMatch(
			/webhooks\.endpoints\[0\]\.events: unknown event type "run.done"/,
		);
		expect(await bad({ endpoints: [], maxAttempts: 0 })).toMatch(/webhooks\.maxAttempts: must be an integer/);
		expect(
			await bad({ endpoints: [{ url: "http://x", secret: `\${HOOK_SECRET}` }] }, { HOOK_SECRET: newSecret() }),
		).toBe("started");
	});
});
