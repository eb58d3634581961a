/**
 * Writes the playground's screenshots to docs/img (README.md and docs/playground.md show them): a
 * session mid-run with a queued follow-up, the event timeline, an approval waiting, a finished
 * tool call as a card with the run's usage, the page on a phone, and the sign-in. Runs a server
 * (stand-in model) and the system's Chromium (`CHROMIUM_PATH`, default /usr/bin/chromium):
 *
 *   npm run screenshots
 */
import { mkdirSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { chromium } from "playwright-core";
import { buildApp } from "../src/server/http/app.js";
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
	// A few earlier sessions, so the list looks like one in use.
	for (const title of ["Compare two JSON schemas", "Draft the release notes", "Why is the build slow?"]) {
		await app.inject({ method: "POST", url: "/v1/sessions", payload: { metadata: { title } } });
		await new Promise((resolve) => setTimeout(resolve, 20));
	}
	const page = await browser.newPage();
	await page.goto(url);
	await page.locator("#create-button:enabled").waitFor();
	await page.getByLabel("Ask for approval before calculate runs").check();
	await page.getByRole("button", { name: "Create session" }).click();
	await page.locator('#connection[data-state="live"]').waitFor();
	const prompt = page.getByLabel("Message", { exact: true });
	const send = async (text: string) => {
		await prompt.fill(text);
		await page.getByRole("button", { name: "Send", exact: true }).click();
	};

	await send(
		"Here is **Markdown** streaming word by word:\n\n- a list\n- `inline code`\n\nand a follow-up queued below.",
	);
	await page.locator("#steer:enabled").waitFor();
	await prompt.fill("and now something else");
	await page.getByRole("button", { name: "Follow-up" }).click();
	await page.locator("#queue-list li").waitFor();
	await page.screenshot({ path: path.join(out, "playground-run.png") });
	await page.locator("#send:enabled").waitFor({ timeout: 30_000 });

	await page.locator('#events li[data-type="message_update"] summary').last().click();
	await page.locator(".timeline").screenshot({ path: path.join(out, "playground-timeline.png") });

	await send('/tool calculate {"expression":"6*7"}');
	await page.getByRole("group", { name: "Approve the call to calculate?" }).waitFor();
	await page.getByLabel(/Reason/).fill("fine by me");
	await page.screenshot({ path: path.join(out, "playground-approval.png") });
	await page.getByRole("button", { name: "Approve" }).click();
	await page.locator(".tool-card[data-state=done]").waitFor();
	await page.locator("#send:enabled").waitFor({ timeout: 30_000 });
	await page.locator(".chat").screenshot({ path: path.join(out, "playground-tools.png") });

	const phone = await browser.newPage();
	await phone.setViewportSize({ width: 390, height: 844 });
	await phone.goto(url);
	await phone.locator("#create-button:enabled").waitFor();
	await phone.getByLabel("Message", { exact: true }).fill("Hello from a phone: the chat comes first.");
	await phone.getByRole("button", { name: "Send", exact: true }).click();
	await phone.locator(".run-usage").waitFor();
	await phone.screenshot({ path: path.join(out, "playground-mobile.png") });

	const keyed = await buildApp({
		env: {},
		playgroundDir: assets,
		config: { logLevel: "silent", apiKeys: ["screenshot-key-0123"] },
	});
	await keyed.listen({ port: 0, host: "127.0.0.1" });
	try {
		const signIn = await browser.newPage();
		await signIn.setViewportSize({ width: 1000, height: 420 });
		await signIn.goto(`http://127.0.0.1:${(keyed.server.address() as { port: number }).port}/`);
		await signIn.getByRole("form", { name: "Sign in" }).waitFor();
		await signIn.screenshot({ path: path.join(out, "playground-signin.png") });
	} finally {
		await keyed.close();
	}
	console.log(`wrote ${out}/playground-{run,timeline,approval,tools,mobile,signin}.png`);
} finally {
	await browser.close();
	await app.close();
	rmSync(assets, { recursive: true, force: true });
	rmSync(profile, { recursive: true, force: true });
}
