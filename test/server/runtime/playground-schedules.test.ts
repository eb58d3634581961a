// Launches a real Chromium (headless) once for the file: seconds on a busy machine.
/**
 * The playground's schedules panel and fork button in a real browser: opened, the panel lists the
 * key's schedules with their timing and state; a schedule opened shows its fires, and a fire's
 * "open session" opens the session that fire made. "Fork" makes a new session with the open
 * session's conversation and opens it. No console error (CSP violations show there).
 */
import { afterAll, expect, it } from "vitest";
import { playgroundInBrowser } from "../../helpers/playground-browser.js";
import { startServer, type TestServer } from "../../helpers/server.js";

const playground = playgroundInBrowser("playground-schedules");
const HAVE_CHROMIUM = playground.haveChromium;
let server: TestServer | undefined;

afterAll(async () => {
	await server?.close();
});

it.skipIf(!HAVE_CHROMIUM)(
	"lists schedules and their fires, and opens a fire's session",
	async () => {
		server = await startServer({ playgroundDir: playground.assets });
		const created = await server.request("POST", "/v1/schedules", {
			body: { cron: "0 9 * * 1-5", timezone: "Europe/Paris", profile: "", prompt: "weekday report" },
		});
		expect(created.status).toBe(201);
		const fire = await server.request("POST", `/v1/schedules/${created.body.id}/run-now`);
		expect(fire.body.outcome).toBe("fired");

		const page = await playground.browser.newPage();
		const errors: string[] = [];
		page.on("console", (message) => {
			if (message.type() === "error") errors.push(message.text());
		});
		page.on("pageerror", (error) => errors.push(String(error)));
		await page.goto(server.url);
		await page.locator("#schedules-panel > summary").click();
		const item = page.locator(`#schedule-list li[data-schedule="${created.body.id}"]`);
		await item.waitFor();
		expect(await item.locator("summary").textContent()).toBe("0 9 * * 1-5 (Europe/Paris) · active");
		await item.locator("summary").click();
		const fireItem = item.locator(".fire");
		await fireItem.waitFor();
		expect(await fireItem.textContent()).toMatch(/manual · fired/);
		await fireItem.getByRole("button", { name: "open session" }).click();
		await page.waitForFunction(
			(id) => (globalThis as any).location.hash.includes(`session=${id}`),
			fire.body.sessionId,
		);
		expect(await page.locator("#no-schedules").isHidden()).toBe(true);
		expect(errors).toEqual([]);
		await page.close();
	},
	60_000,
);

it.skipIf(!HAVE_CHROMIUM)(
	"forks the open session and opens the fork",
	async () => {
		server ??= await startServer({ playgroundDir: playground.assets });
		const parent = await server.request("POST", "/v1/sessions", {
			body: {
				messages: [
					{ role: "user", content: "hello", timestamp: 1 },
					{ role: "user", content: "again", timestamp: 2 },
				],
			},
		});
		expect(parent.status).toBe(201);
		const page = await playground.browser.newPage();
		const errors: string[] = [];
		page.on("pageerror", (error) => errors.push(String(error)));
		page.on("console", (message) => {
			if (message.type() === "error") errors.push(message.text());
		});
		await page.goto(`${server.url}/#session=${parent.body.id}`);
		await page.locator('#connection[data-state="live"]').waitFor();
		await page.locator("#fork:enabled").click();
		await page.waitForFunction(
			(id) => !(globalThis as any).location.hash.includes(id) && (globalThis as any).location.hash.includes("session="),
			parent.body.id,
		);
		const forkId = decodeURIComponent(
			await page.evaluate(() => (globalThis as any).location.hash.replace("#session=", "")),
		);
		const fork = await server.request("GET", `/v1/sessions/${forkId}`);
		expect(fork.body).toMatchObject({ messageCount: 2, metadata: { "wheelhouse.forkedFrom": parent.body.id } });
		await page.locator("#session-info", { hasText: forkId }).waitFor();
		expect(errors).toEqual([]);
		await page.close();
	},
	60_000,
);
