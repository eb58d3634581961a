// Launches a real Chromium (headless) once for the file: seconds on a busy machine.
/**
 * The playground as a user meets it, in a real browser against a real server (stand-in model):
 * the chat and the timeline follow new content unless the reader scrolled up; sessions carry a
 * title (the first prompt, editable, stored as metadata), list newest first and can be searched;
 * user messages keep their line breaks and inline code is styled; `message_update` runs fold in
 * the timeline and a reopened session shows its earlier events; tool calls are cards with their
 * arguments and results; each run ends with its usage; the sign-in is clear and "Create session"
 * waits for the models; Send is disabled while the server is away; on a phone the chat comes
 * first; and axe-core finds no serious or critical accessibility violation. One browser for the
 * file; the page is reused where the test allows.
 */
import { readFileSync } from "node:fs";
import { createRequire } from "node:module";
import type { Page } from "playwright-core";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { CHROMIUM } from "../../helpers/chromium.js";
import { playgroundInBrowser } from "../../helpers/playground-browser.js";
import { startServer, type TestServer } from "../../helpers/server.js";

const playground = playgroundInBrowser("playground-ux");
const HAVE_CHROMIUM = playground.haveChromium;
const KEY = "key-playground-ux-0123456789";
const AXE_SOURCE = readFileSync(createRequire(import.meta.url).resolve("axe-core/axe.min.js"), "utf8");

/** The file's page: every test that needs no page of its own navigates this one. */
let shared: { page: Page; errors: string[] } | undefined;
/** The file's server (stand-in model, 5 ms between words): tests that need no other share it. */
let server: TestServer;
const cleanups: (() => unknown)[] = [];

beforeAll(async () => {
	server = await startServer({ playgroundDir: playground.assets, config: { fauxDelayMs: 5 } });
	if (!HAVE_CHROMIUM) return;
	shared = await newPage();
}, 60_000);

afterAll(async () => {
	await server?.close();
});

afterEach(async () => {
	for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

/** A new tab; its console errors, uncaught exceptions and CSP violations are collected. */
async function newPage(): Promise<{ page: Page; errors: string[] }> {
	const page = await playground.browser.newPage();
	const errors: string[] = [];
	page.on("console", (message) => {
		if (message.type() === "error") errors.push(message.text());
	});
	page.on("pageerror", (error) => errors.push(String(error)));
	await page.addInitScript(() => {
		const doc = (globalThis as any).document;
		doc.addEventListener("securitypolicyviolation", (event: any) =>
			console.error(`CSP violation: ${event.violatedDirective} ${event.blockedURI}`),
		);
	});
	return { page, errors };
}

/** The shared tab at `url` (a fresh load), with its error list emptied. */
async function sharedPage(url = `${server.url}/`, viewport = { width: 1280, height: 720 }) {
	const { page, errors } = shared!;
	await page.setViewportSize(viewport);
	// Away from the last test's page first: what it still logs (a retry to its closed server) is not this test's.
	await page.goto("about:blank");
	errors.length = 0;
	await page.goto(url);
	return { page, errors };
}

async function createSession(page: Page): Promise<string> {
	await page.getByRole("button", { name: "Create session" }).click();
	await page.locator('#connection[data-state="live"]').waitFor();
	return (await page.locator('#session-list li[aria-current="true"]').getAttribute("data-session"))!;
}

async function send(page: Page, text: string): Promise<void> {
	await page.getByLabel("Message", { exact: true }).fill(text);
	await page.getByRole("button", { name: "Send", exact: true }).click();
}

async function idle(page: Page): Promise<void> {
	await page.locator("#send:enabled").waitFor();
	await page.locator("#abort:disabled").waitFor();
}

/** How far (px) `selector`'s scrolling element is from its bottom. */
const distanceFromBottom = (page: Page, selector: string) =>
	page.locator(selector).evaluate((e: any) => e.scrollHeight - e.scrollTop - e.clientHeight);

/** axe-core's serious and critical violations on the page as it is now (id: the elements' selectors). */
async function axeViolations(page: Page): Promise<string[]> {
	// Evaluated through the DevTools protocol, which the page's CSP does not govern (an injected
	// <script> would be blocked, as it should be).
	await page.evaluate(AXE_SOURCE);
	const violations: { id: string; impact: string; nodes: { target: string[] }[] }[] = await page.evaluate(
		async () =>
			(await (globalThis as any).axe.run((globalThis as any).document, { resultTypes: ["violations"] })).violations,
	);
	return violations
		.filter((v) => v.impact === "serious" || v.impact === "critical")
		.map((v) => `${v.id}: ${v.nodes.map((n) => n.target.join(" ")).join(", ")}`);
}

type Dataset = { dataset: Record<string, string> };

describe.skipIf(!HAVE_CHROMIUM)(
	HAVE_CHROMIUM ? "the playground, used" : `the playground, used: skipped, no Chromium at ${CHROMIUM}`,
	() => {
		it("follows new messages and events to the bottom, but leaves a reader who scrolled up where they are", async () => {
			const { page, errors } = await sharedPage(`${server.url}/`, { width: 1280, height: 560 });
			const id = await createSession(page);
			const long = Array.from({ length: 40 }, (_, i) => `line ${i}`).join("\n");
			await send(page, long);
			await page.locator(".msg.assistant", { hasText: "line 39" }).waitFor();
			await idle(page);
			expect(await page.locator("#chat-scroll").evaluate((e: any) => e.scrollHeight > e.clientHeight + 200)).toBe(true);
			expect(await distanceFromBottom(page, "#chat-scroll")).toBeLessThanOrEqual(2);
			expect(await distanceFromBottom(page, ".timeline")).toBeLessThanOrEqual(2);

			// The reader scrolls up to read; a run started elsewhere (the API) must not pull them down.
			await page.locator("#chat-scroll").evaluate((e: any) => {
				e.scrollTop = 0;
			});
			await page.waitForTimeout(100);
			const prompt = await server.request("POST", `/v1/sessions/${id}/prompt`, { body: { message: "from elsewhere" } });
			expect(prompt.status).toBeLessThan(300);
			await page.locator(".msg.assistant", { hasText: "from elsewhere" }).waitFor();
			await idle(page);
			expect(await page.locator("#chat-scroll").evaluate((e: any) => e.scrollTop)).toBe(0);
			await page.getByRole("button", { name: "New messages below ↓" }).click();
			expect(await distanceFromBottom(page, "#chat-scroll")).toBeLessThanOrEqual(2);
			expect(await page.locator("#jump-latest").isHidden()).toBe(true);
			expect(errors).toEqual([]);
		});

		it("titles a session with its first prompt, keeps an edited title as metadata, and shows it after a reload", async () => {
			const { page, errors } = await sharedPage();
			const id = await createSession(page);
			await send(page, "Plan the **garden** layout\nwith beds and paths");
			await idle(page);
			const item = page.locator(`#session-list li[data-session="${id}"] .title`);
			await expect.poll(() => item.textContent()).toBe("Plan the garden layout");
			// The list's count follows the run (the prompt and its answer), not the count at load.
			await expect
				.poll(() => page.locator(`#session-list li[data-session="${id}"] .meta`).textContent())
				.toMatch(/^faux\/echo · 2 messages · /);
			await expect
				.poll(async () => ((await server.request("GET", `/v1/sessions/${id}`)).body as any).metadata.title)
				.toBe("Plan the garden layout");

			// Escape gives up an edit.
			await page.getByLabel("Session title").fill("never mind");
			await page.getByLabel("Session title").press("Escape");
			expect(await page.getByLabel("Session title").inputValue()).toBe("Plan the garden layout");

			await page.getByLabel("Session title").fill("Garden, spring 2027");
			await page.getByLabel("Session title").press("Enter");
			await expect
				.poll(async () => ((await server.request("GET", `/v1/sessions/${id}`)).body as any).metadata.title)
				.toBe("Garden, spring 2027");
			await expect.poll(() => item.textContent()).toBe("Garden, spring 2027");

			await page.reload();
			await page.locator('#connection[data-state="live"]').waitFor();
			await expect.poll(() => page.getByLabel("Session title").inputValue()).toBe("Garden, spring 2027");
			expect(await item.textContent()).toBe("Garden, spring 2027");
			expect(errors).toEqual([]);
		});

		it("lists sessions newest first, with their titles, and finds them by search", async () => {
			const own = await startServer({ playgroundDir: playground.assets });
			cleanups.push(() => own.close());
			for (const title of ["alpha report", "beta notes", "gamma plan"]) {
				const res = await own.request("POST", "/v1/sessions", { body: { metadata: { title } } });
				expect(res.status).toBe(201);
				await new Promise((resolve) => setTimeout(resolve, 5));
			}
			const { page, errors } = await sharedPage(`${own.url}/`);
			await page.locator("#session-list li").nth(2).waitFor();
			expect(await page.locator("#session-list .title").allTextContents()).toEqual([
				"gamma plan",
				"beta notes",
				"alpha report",
			]);
			await page.getByLabel("Search sessions").fill("beta");
			await expect.poll(() => page.locator("#session-list .title").allTextContents()).toEqual(["beta notes"]);
			await page.getByLabel("Search sessions").fill("no such thing");
			await page.getByText("No sessions match.").waitFor();
			expect(await page.locator("#session-list li").count()).toBe(0);
			await page.getByLabel("Search sessions").fill("");
			await expect.poll(() => page.locator("#session-list li").count()).toBe(3);

			// Talking in the oldest moves it to the top.
			await page.getByRole("button", { name: /^alpha report/ }).click();
			await page.locator('#connection[data-state="live"]').waitFor();
			await send(page, "back to this one");
			await idle(page);
			await expect
				.poll(() => page.locator("#session-list .title").allTextContents())
				.toEqual(["alpha report", "gamma plan", "beta notes"]);
			expect(errors).toEqual([]);
		});

		it("keeps the list's message counts fresh while the page stays open beside another client", async () => {
			const own = await startServer({ playgroundDir: playground.assets });
			cleanups.push(() => own.close());
			const other = await own.request("POST", "/v1/sessions", { body: { metadata: { title: "from a terminal" } } });
			const id = (other.body as any).id as string;
			const { page, errors } = await sharedPage(`${own.url}/`);
			const meta = page.locator(`#session-list li[data-session="${id}"] .meta`);
			await expect.poll(() => meta.textContent()).toMatch(/^faux\/echo · 0 messages · /);
			// Another client talks in it; the page is neither reloaded nor hidden and shown again.
			const prompt = await own.request("POST", `/v1/sessions/${id}/prompt`, { body: { message: "hi" } });
			expect(prompt.status).toBeLessThan(300);
			await expect.poll(() => meta.textContent(), { timeout: 25_000 }).toMatch(/^faux\/echo · 2 messages · /);
			expect(errors).toEqual([]);
		});

		it("keeps the line breaks of a user message and styles inline code", async () => {
			const { page, errors } = await sharedPage();
			await createSession(page);
			await send(page, "first line\nsecond line\n\nthird with `inline code`");
			await idle(page);
			// innerText, not textContent: it is the text as laid out, where collapsed line breaks are gone.
			// biome-ignore lint/performance/useDomNodeTextContent: the rendering is what is tested
			expect(await page.locator(".msg.user .text").evaluate((e: any) => e.innerText)).toBe(
				"first line\nsecond line\n\nthird with `inline code`",
			);
			const code = page.locator(".msg.assistant code").first();
			const style = await code.evaluate((e: any) => {
				const s = (globalThis as any).getComputedStyle(e);
				return {
					font: s.fontFamily,
					background: s.backgroundColor,
					padding: s.paddingLeft,
					radius: s.borderTopLeftRadius,
				};
			});
			expect(style.font).toMatch(/mono/i);
			expect(style.background).not.toBe("rgba(0, 0, 0, 0)");
			expect(Number.parseFloat(style.padding)).toBeGreaterThan(0);
			expect(errors).toEqual([]);
		});

		it("folds message_update runs into one timeline entry, and a reopened session shows its earlier events", async () => {
			const { page, errors } = await sharedPage();
			await createSession(page);
			await send(page, Array.from({ length: 30 }, (_, i) => `w${i}`).join(" "));
			await idle(page);
			const folded = page.locator('#events li[data-type="message_update"]');
			const counts = await folded.evaluateAll((items) =>
				items.map((i) => Number((i as unknown as Dataset).dataset.count)),
			);
			// One entry per streamed message: the user's (one update at most) and the answer's (many).
			expect(counts.length).toBeLessThanOrEqual(2);
			expect(Math.max(...counts)).toBeGreaterThanOrEqual(10);
			expect(await folded.last().locator("summary").textContent()).toMatch(/message_update ×\d+/);
			await folded.last().locator("summary").click();
			expect(await folded.last().locator("pre").textContent()).toContain('"type": "message_update"');
			const before = await page
				.locator("#events li")
				.evaluateAll((items) => items.map((i) => (i as unknown as Dataset).dataset.type));

			await page.reload();
			await page.locator('#connection[data-state="live"]').waitFor();
			await page.locator('#events li[data-type="agent_end"]').waitFor();
			const after = await page
				.locator("#events li")
				.evaluateAll((items) => items.map((i) => (i as unknown as Dataset).dataset.type));
			// The same events as before the reload (the old stream's opening snapshot aside), then the
			// snapshot the new stream started with.
			expect(before[0]).toBe("session_snapshot");
			expect(after).toEqual([...before.slice(1), "session_snapshot"]);
			expect(errors).toEqual([]);
		});

		it("shows a tool call as a card with its arguments and result, and each run's usage, also after a reload", async () => {
			const { page, errors } = await sharedPage();
			await createSession(page);
			await send(page, "plain answer");
			await idle(page);
			await send(page, '/tool calculate {"expression":"6*7"}');
			await page.locator(".msg.assistant", { hasText: "Tool results: calculate: 42" }).waitFor();
			await idle(page);
			const check = async () => {
				const card = page.getByRole("region", { name: /Tool call: calculate/ });
				await card.waitFor();
				expect(await card.getAttribute("data-state")).toBe("done");
				expect(await card.locator(".tool-args pre").textContent()).toBe(JSON.stringify({ expression: "6*7" }, null, 2));
				expect(await card.locator(".tool-result pre").textContent()).toBe("42");
				expect(await card.locator(".tool-state").textContent()).toBe("done");
				// The result is in the card, not a message of its own.
				expect(await page.locator(".msg.toolResult").count()).toBe(0);
				const usage = await page.locator(".run-usage").allTextContents();
				expect(usage).toHaveLength(2);
				expect(usage[0]).toMatch(/^Run: 1 model call · \d+ in · \d+ out · \$\d+\.\d+$/);
				expect(usage[1]).toMatch(/^Run: 2 model calls · \d+ in · \d+ out · \$\d+\.\d+$/);
			};
			await check();
			await page.reload();
			await page.locator('#connection[data-state="live"]').waitFor();
			await page.locator(".msg.assistant", { hasText: "Tool results: calculate: 42" }).waitFor();
			await check();
			expect(errors).toEqual([]);
		});

		it("disables Send and says so while the server is unreachable", async () => {
			const own = await startServer({ playgroundDir: playground.assets, config: { sseRetryMs: 100 } });
			cleanups.push(() => own.close());
			const { page, errors } = await sharedPage(`${own.url}/`);
			await createSession(page);
			await page.getByLabel("Message", { exact: true }).fill("typed while it is away");
			expect(await page.locator("#send").isEnabled()).toBe(true);
			await own.close();
			await page.locator('#connection[data-state="reconnecting"]').waitFor();
			expect(await page.locator("#send").isDisabled()).toBe(true);
			const status = page.locator("#composer-status");
			expect(await status.isVisible()).toBe(true);
			expect(await status.textContent()).toMatch(/Not connected to the server/);
			// What was typed stays.
			expect(await page.getByLabel("Message", { exact: true }).inputValue()).toBe("typed while it is away");
			expect(errors.filter((e) => !/ERR_CONNECTION_REFUSED|Failed to load resource/.test(e))).toEqual([]);
		});

		it("on a phone, shows the chat first and starts a session from the first message", async () => {
			const { page, errors } = await sharedPage(`${server.url}/`, { width: 390, height: 844 });
			await page.locator("#create-button:enabled").waitFor();
			const chat = (await page.locator("#chat-heading").boundingBox())!;
			const sessions = (await page.locator("#sessions-heading").boundingBox())!;
			expect(chat.y).toBeLessThan(sessions.y);
			const composer = (await page.getByLabel("Message", { exact: true }).boundingBox())!;
			expect(composer.y + composer.height).toBeLessThanOrEqual(844);
			expect(await page.locator("#send").isEnabled()).toBe(true);
			expect(await page.evaluate(() => (globalThis as any).document.documentElement.scrollWidth)).toBeLessThanOrEqual(
				390,
			);

			await send(page, "hello from a phone");
			const answer = page.locator(".msg.assistant", { hasText: "hello from a phone" });
			await answer.waitFor();
			await idle(page);
			const box = (await answer.boundingBox())!;
			expect(box.y + box.height).toBeLessThanOrEqual(844);
			expect(await page.locator("#create").getAttribute("open")).toBeNull();
			expect(await axeViolations(page)).toEqual([]);
			expect(errors).toEqual([]);
		});

		it("asks to sign in in plain words, with Create session disabled until the models load", async () => {
			const own = await startServer({ playgroundDir: playground.assets, config: { apiKeys: [KEY] } });
			cleanups.push(() => own.close());
			const { page, errors } = await sharedPage(`${own.url}/`);
			await page.getByRole("form", { name: "Sign in" }).waitFor();
			const reason = (await page.locator("#auth-reason").textContent())!;
			expect(reason).toMatch(/needs an API key/);
			expect(reason).not.toMatch(/[`<>]/);
			expect(await page.getByRole("button", { name: "Create session" }).isDisabled()).toBe(true);
			expect(await page.locator("#create-status").textContent()).toBe("Sign in to load the models.");
			expect(await page.locator("#send").isDisabled()).toBe(true);
			expect(await axeViolations(page)).toEqual([]);

			// A wrong key: said plainly, still no models.
			await page.getByLabel("API key", { exact: true }).fill("not-the-key-0000");
			await page.getByRole("button", { name: "Use this key" }).click();
			await page.locator("#auth-reason", { hasText: "was not accepted" }).waitFor();
			expect(await page.getByRole("button", { name: "Create session" }).isDisabled()).toBe(true);

			await page.getByLabel("API key", { exact: true }).fill(KEY);
			await page.getByRole("button", { name: "Use this key" }).click();
			await page.locator("#create-button:enabled").waitFor();
			expect(await page.locator("#create-status").isHidden()).toBe(true);
			expect(await page.locator("#model option").count()).toBeGreaterThan(0);
			expect(errors.filter((e) => !/401/.test(e))).toEqual([]);
		});

		it("has no serious or critical accessibility violations (axe-core) with a run, a tool card and an approval on the page", async () => {
			const { page, errors } = await sharedPage();
			await page.getByLabel("Ask for approval before calculate runs").check();
			await createSession(page);
			await send(page, "some `code` and **bold**\nover two lines");
			// The answer first: right after Send, the page may not show the run yet (idle too early).
			await page.locator(".msg.assistant", { hasText: "over two lines" }).waitFor();
			await idle(page);
			await send(page, '/tool calculate {"expression":"1+1"}');
			await page.getByRole("group", { name: "Approve the call to calculate?" }).waitFor({ timeout: 45_000 });
			const state = page.locator(".tool-card .tool-state");
			await expect.poll(() => state.textContent()).toBe("waiting for approval");
			await page.locator('#events li[data-type="message_update"] summary').first().click();
			expect(await axeViolations(page)).toEqual([]);
			await page.getByRole("button", { name: "Approve" }).click();
			await idle(page);
			expect(await state.textContent()).toBe("done");
			expect(await axeViolations(page)).toEqual([]);
			expect(errors).toEqual([]);
		}, 60_000);
	},
);
