/**
 * Credentials in a webhook endpoint URL: the userinfo is sent as HTTP Basic auth (a receiver that
 * requires it gets the delivery), and the delivery logs ("will retry" at info, "given up" at warn)
 * show the endpoint without userinfo and query, so neither the password nor a query token leaks.
 */
import { Writable } from "node:stream";
import { afterEach, describe, expect, it } from "vitest";
import { startServer, type TestServer } from "../../helpers/server.js";
import { promptSse } from "../../helpers/sse.js";
import { newSecret, startWebhookReceiver, type WebhookReceiver } from "../../helpers/webhook-receiver.js";

let server: TestServer | undefined;
const receivers: WebhookReceiver[] = [];
afterEach(async () => {
	await server?.close();
	server = undefined;
	for (const r of receivers.splice(0)) await r.close();
});

/** `http://user:password@host:port/hooks?token=...` for a receiver's URL. */
function withCredentials(url: string, user: string, password: string, token: string): string {
	const u = new URL(url);
	u.username = user;
	u.password = password;
	u.searchParams.set("token", token);
	return u.toString();
}

describe("webhook endpoint credentials", () => {
	it("sends the URL's userinfo as Basic auth and never logs it or the query", async () => {
		const basic = `Basic ${Buffer.from("hook-user:PASS-OK-1234").toString("base64")}`;
		const guardedSecret = newSecret();
		const failingSecret = newSecret();
		const okReceiver = await startWebhookReceiver(guardedSecret, 0, { authorization: basic });
		const badReceiver = await startWebhookReceiver(failingSecret);
		receivers.push(okReceiver, badReceiver);
		badReceiver.respondWith(500);
		let log = "";
		const logStream = new Writable({
			write(chunk, _encoding, done) {
				log += chunk.toString();
				done();
			},
		});

		server = await startServer({
			logStream,
			config: {
				logLevel: "info",
				logFormat: "json",
				webhooks: {
					pollMs: 20,
					retryBaseMs: 20,
					maxAttempts: 2,
					endpoints: [
						{
							url: withCredentials(okReceiver.url, "hook-user", "PASS-OK-1234", "TOKEN-OK-5678"),
							secret: guardedSecret,
							events: ["run.completed"],
						},
						{
							url: withCredentials(badReceiver.url, "hook-user", "PASS-FAIL-1234", "TOKEN-FAIL-5678"),
							secret: failingSecret,
							events: ["run.completed"],
						},
					],
				},
			},
		});
		const id = (await server.request("POST", "/v1/sessions", { body: {} })).body.id;
		await (await promptSse(server.url, id, { message: "hello" })).waitForEnd();

		await okReceiver.waitFor(() => okReceiver.delivered("run.completed").length === 1);
		const delivered = okReceiver.delivered("run.completed")[0]!;
		expect(delivered.headers.authorization).toBe(basic);
		await badReceiver.waitFor((received) => received.length === 2);
		expect(badReceiver.received.map((r) => r.headers.authorization)).toEqual([
			`Basic ${Buffer.from("hook-user:PASS-FAIL-1234").toString("base64")}`,
			`Basic ${Buffer.from("hook-user:PASS-FAIL-1234").toString("base64")}`,
		]);

		await expect.poll(() => log.includes("webhook delivery given up"), { timeout: 10_000 }).toBe(true);
		const lines = log
			.split("\n")
			.filter(Boolean)
			.map((line) => JSON.parse(line) as Record<string, unknown>);
		const retry = lines.find((l) => l.msg === "webhook delivery failed; will retry");
		const gaveUp = lines.find((l) => l.msg === "webhook delivery given up");
		expect(retry).toMatchObject({ level: 30, endpoint: badReceiver.url });
		expect(gaveUp).toMatchObject({ level: 40, endpoint: badReceiver.url });
		for (const secret of ["PASS-OK-1234", "TOKEN-OK-5678", "PASS-FAIL-1234", "TOKEN-FAIL-5678", "hook-user"]) {
			expect(log).not.toContain(secret);
		}
	});
});
