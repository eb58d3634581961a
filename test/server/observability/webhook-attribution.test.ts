/**
 * Webhook payloads name who ran what: a run's end and a tool call waiting for approval carry the
 * session's `ownerId` (the key's owner id, never the key) and its `tenant` (`auth.keyTenants`),
 * so a receiver can attribute them without asking the server.
 */
import { afterEach, describe, expect, it } from "vitest";
import { ownerIdOf } from "../../../src/server/runtime/owner-id.js";
import { startServer, type TestServer } from "../../helpers/server.js";
import { promptSse, type SseReader } from "../../helpers/sse.js";
import { newSecret, startWebhookReceiver, type WebhookReceiver } from "../../helpers/webhook-receiver.js";

const KEY = "attribution-key-a-00000001";
const PLAIN = "attribution-key-none-0001";
let server: TestServer | undefined;
let hooks: WebhookReceiver | undefined;
const readers: SseReader[] = [];
afterEach(async () => {
	for (const r of readers.splice(0)) r.close();
	await server?.close();
	await hooks?.close();
});

describe("webhook attribution", () => {
	it("names the owner and tenant of the session in run and approval events", async () => {
		const secret = newSecret();
		hooks = await startWebhookReceiver(secret);
		server = await startServer({
			config: {
				apiKeys: [KEY, PLAIN],
				authConfig: { keyTenants: { [KEY]: "org-a" } },
				tools: { approval: { calculate: "always" } },
				webhooks: { pollMs: 20, retryBaseMs: 20, endpoints: [{ url: hooks.url, secret }] },
			},
		});
		const id = (await server.request("POST", "/v1/sessions", { body: { model: "faux/echo" }, key: KEY })).body.id;
		const run = await promptSse(server.url, id, { message: '/tool calculate {"expression": "2 + 2"}' }, KEY);
		readers.push(run);
		const { toolCallId } = (await run.waitForType("approval_requested")).data;
		await server.request("POST", `/v1/sessions/${id}/approvals/${toolCallId}`, { body: { approve: true }, key: KEY });
		await run.waitForEnd();
		await hooks.waitFor(() => hooks!.delivered("run.completed").length === 1);
		const who = { ownerId: ownerIdOf(KEY), tenant: "org-a" };
		expect(JSON.stringify(hooks.received)).not.toContain(KEY);
		expect(hooks.delivered("approval.requested")[0]!.body.data).toMatchObject({ sessionId: id, ...who });
		expect(hooks.delivered("run.completed")[0]!.body.data).toMatchObject({ sessionId: id, ...who });

		// A key without a tenant: its owner id, tenant null.
		const plain = (await server.request("POST", "/v1/sessions", { body: { model: "faux/echo" }, key: PLAIN })).body.id;
		const other = await promptSse(server.url, plain, { message: "hello" }, PLAIN);
		readers.push(other);
		await other.waitForEnd();
		await hooks.waitFor(() => hooks!.delivered("run.completed").length === 2);
		expect(hooks.delivered("run.completed")[1]!.body.data).toMatchObject({
			sessionId: plain,
			ownerId: ownerIdOf(PLAIN),
			tenant: null,
		});
	});
});
