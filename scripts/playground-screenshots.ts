/**
 * Writes the README's screenshots of the playground to docs/img: a session mid-run, the event
 * timeline with an event opened, and an approval waiting. Runs a server (stand-in model) and the
 * system's Chromium (`CHROMIUM_PATH`, default /usr/bin/chromium):
 *
 *   npm run screenshots
 */
import { mkdirSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { chromium } from "playwright-core";
import { buildApp } from "../src/server/app.js";
import { buildPlayground } from "./build-playground.js";

const repoRoot = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");
const out = path.join(repoRoot, "docs/img");
const assets = mkdtempSync(path.join(tmpdir(), "wheelhouse-screenshots-"));
const profile = mkdtempSync(path.join(tmpdir(), "wheelhouse-chromium-"));
await buildPlayground(assets);
mkdirSync(out, { recursive: true });

const app = await buildApp({ env: {}, playgroundDir: assets, config: { logLevel: "silent", fauxDelayMs: 80 } });
await app.listen({ port: 0, host: "127.0.0.1" });
const url = `http://127.0.0.1:${(app.server.address() as { port: number }).port}/`;
const browser = await chromium.launchPersistentContext(profile, {
	executablePath: process.env.CHROMIUM_PATH ?? "/usr/bin/chromium",
	headless: true,
	viewport: { width: 1400, height: 800 },
	args: ["--headless", "--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-background-networking"],
});
try {
	const page = await browser.newPage();
	await page.goto(url);
	await page.locator("#model option").first().waitFor({ state: "attached" });
	await page.getByLabel("Ask for approval before calculate runs").check();
	await page.getByRole("button", { name: "Create session" }).click();
	await page.locator('#connection[data-state="live"]').waitFor();
	const prompt = page.getByLabel("Message", { exact: true });

	await prompt.fill(
		"Here is **Markdown** streaming word by word: a list, `code`, and a steering message queued below.",
	);
	await page.getByRole("button", { name: "Send", exact: true }).click();
	await page.locator("#steer:enabled").waitFor();
	await prompt.fill("and now something else");
	await page.getByRole("button", { name: "Follow-up" }).click();
	await page.locator("#queue-list li").waitFor();
	await page.screenshot({ path: path.join(out, "playground-run.png") });
	await page.locator("#send:enabled").waitFor({ timeout: 30_000 });

	await page.getByLabel("Filter by type").fill("-message_update");
	await page.locator('#events li[data-type="message_end"] summary').last().click();
	await page.locator(".timeline").screenshot({ path: path.join(out, "playground-timeline.png") });
	await page.getByLabel("Filter by type").fill("");

	await prompt.fill('/tool calculate {"expression":"6*7"}');
	await page.getByRole("button", { name: "Send", exact: true }).click();
	await page.getByRole("group", { name: "Approve the call to calculate?" }).waitFor();
	await page.getByLabel(/Reason/).fill("fine by me");
	await page.screenshot({ path: path.join(out, "playground-approval.png") });
	console.log(`wrote ${out}/playground-{run,timeline,approval}.png`);
} finally {
	await browser.close();
	await app.close();
	rmSync(assets, { recursive: true, force: true });
	rmSync(profile, { recursive: true, force: true });
}
