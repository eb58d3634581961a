// Launches a real Chromium (headless): seconds on a busy machine.
/**
 * docs/events.md's browser example runs as pasted in a real browser: a page on another origin
 * (CORS set for it, API keys on) mints a stream token with the block's `fetch` and follows the
 * session with its `EventSource`. `https://wheelhouse.example.com` becomes the server's address;
 * the page gives what the block leaves to the reader (`apiKey`, `id`, `render`, `done`) ahead of it
 * and, after it, tells the test when the stream is open. Skips (one line) without Chromium.
 */
import { once } from "node:events";
import { createServer, type Server } from "node:http";
import { afterEach, describe, expect, it } from "vitest";
import { chromiumTitle, haveChromium, launchChromium } from "../../helpers/chromium.js";
import { docBlock } from "../../helpers/doc-blocks.js";
import { startServer, type TestServer } from "../../helpers/server.js";

const KEY = "key-docs-browser-0123456789";
const cleanups: (() => unknown)[] = [];
afterEach(async () => {
	for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

describe("docs/events.md in a browser", () => {
	it.skipIf(!haveChromium())(
		chromiumTitle("the stream token example follows a run to its end"),
		async () => {
			const block = docBlock("docs/events.md", "js", "stream-token").code;
			expect(block).toContain("https://wheelhouse.example.com");
			let html = "";
			const pages: Server = createServer((_req, res) => {
				res.writeHead(200, { "content-type": "text/html; charset=utf-8" });
				res.end(html);
			});
			pages.listen(0, "127.0.0.1");
			await once(pages, "listening");
			cleanups.push(() => pages.close());
			const pageOrigin = `http://127.0.0.1:${(pages.address() as { port: number }).port}`;
			const server: TestServer = await startServer({
				config: { apiKeys: [KEY], corsOrigins: [pageOrigin], fauxDelayMs: 5 },
			});
			cleanups.push(() => server.close());
			const id = (await server.request("POST", "/v1/sessions", { body: {}, key: KEY })).body.id as string;

			html = `<!doctype html><meta charset="utf-8"><title>docs example</title><script type="module">
const apiKey = ${JSON.stringify(KEY)};
const id = ${JSON.stringify(id)};
window.updates = 0;
const render = () => { window.updates++; };
const done = (data) => { window.ended = data; };
${block.replaceAll("https://wheelhouse.example.com", server.url)}
source.onopen = () => { window.opened = true; };
</script>`;

			const { browser, close } = await launchChromium();
			cleanups.push(close);
			const page = await browser.newPage();
			const consoleErrors: string[] = [];
			page.on("console", (message) => {
				if (message.type() === "error") consoleErrors.push(message.text());
			});
			await page.goto(`${pageOrigin}/`);
			await page.waitForFunction(() => (globalThis as { opened?: boolean }).opened === true, undefined, {
				timeout: 30_000,
			});
			const prompted = await server.request("POST", `/v1/sessions/${id}/prompt`, {
				body: { message: "hello from the docs page" },
				key: KEY,
			});
			expect(prompted.status).toBe(202);
			await page.waitForFunction(() => (globalThis as { ended?: unknown }).ended !== undefined, undefined, {
				timeout: 30_000,
			});
			const { ended, updates } = await page.evaluate(() => {
				const g = globalThis as unknown as { ended: { type: string; messages: unknown[] }; updates: number };
				return { ended: g.ended, updates: g.updates };
			});
			expect(consoleErrors, "browser console errors (CORS failures show here)").toEqual([]);
			expect(ended.type).toBe("agent_end");
			expect(JSON.stringify(ended.messages)).toContain("hello from the docs page");
			expect(updates).toBeGreaterThan(0);
		},
		90_000,
	);
});
