/**
 * The push URL guard of the A2A facade: which URLs a push config may name, which addresses are
 * refused, and that a host resolving to a private address is given up before the attempt.
 */
import { describe, expect, it } from "vitest";
import { A2aPushRouter, blockedAddress, pushUrlProblem } from "../../../src/server/facades/a2a/push.js";
import type { FacadeRecordStore, WebhookDelivery } from "../../../src/store/types.js";

describe("A2A push URLs", () => {
	it("takes https anywhere public and http only to localhost", () => {
		expect(pushUrlProblem("https://hooks.example.com/a2a")).toBeUndefined();
		expect(pushUrlProblem("http://localhost:8080/a2a")).toBeUndefined();
		expect(pushUrlProblem("http://127.0.0.1:8080/a2a")).toBeUndefined();
		expect(pushUrlProblem("http://[::1]:8080/a2a")).toBeUndefined();
		expect(pushUrlProblem("http://hooks.example.com/a2a")).toMatch(/https/);
		expect(pushUrlProblem("ftp://hooks.example.com/a2a")).toMatch(/https/);
		expect(pushUrlProblem("not a url")).toMatch(/not a URL/);
		expect(pushUrlProblem("https://user:pw@hooks.example.com/")).toMatch(/credentials/);
		for (const host of [
			"169.254.169.254",
			"10.1.2.3",
			"172.16.0.1",
			"192.168.1.1",
			"100.64.0.1",
			"0.0.0.0",
			"[fd00::1]",
			"[fe80::1]",
			"[::ffff:10.0.0.1]",
		])
			expect(pushUrlProblem(`https://${host}/x`), host).toMatch(/private/);
	});

	it("classifies addresses", () => {
		for (const a of [
			"127.0.0.1",
			"10.0.0.1",
			"172.31.255.255",
			"192.168.0.1",
			"169.254.1.1",
			"::1",
			"::",
			"fc00::1",
			"fe80::1",
			"::ffff:192.168.0.1",
			"224.0.0.1",
		])
			expect(blockedAddress(a), a).toBe(true);
		for (const a of ["8.8.8.8", "172.32.0.1", "100.128.0.1", "2606:4700::1111", "::ffff:8.8.8.8"])
			expect(blockedAddress(a), a).toBe(false);
	});

	it("gives a delivery up when the config's host resolves to a private address; sends it otherwise", async () => {
		const configs = (url: string) => ({
			configs: [{ id: "c", url, token: "tok", createdAt: 1 }],
		});
		let stored = configs("https://rebind.example/hook");
		const store = {
			async getFacadeRecord(sessionId: string, kind: string, key: string) {
				return { sessionId, kind, key, data: JSON.stringify(stored), updatedAt: 1 };
			},
		} as unknown as FacadeRecordStore;
		const delivery = { id: "msg_x", endpoint: "a2a-push:ses_1:run_1:c", payload: "{}" } as WebhookDelivery;
		const router = new A2aPushRouter(store, async (host) =>
			host === "rebind.example" ? ["10.0.0.5"] : ["93.184.216.34"],
		);
		expect(await router.route(delivery)).toMatchObject({ kind: "gone", error: expect.stringMatching(/private/) });
		stored = configs("https://public.example/hook");
		expect(await router.route(delivery)).toMatchObject({
			kind: "send",
			target: "https://public.example/hook",
			headers: { "x-a2a-notification-token": "tok" },
		});
		expect(await router.route({ ...delivery, endpoint: "a2a-push:ses_1:run_1:other" })).toMatchObject({ kind: "gone" });
	});
});
