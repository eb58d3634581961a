// Launches a real Chromium (headless): seconds on a busy machine.
/**
 * A page on another origin drives a server that has API keys and CORS set, in a real browser:
 * it creates a session and posts a prompt with `fetch` and the `Authorization` header (so each
 * call is preflighted), mints a stream token, opens the browser's own `EventSource` on the
 * session's events with it, and receives the run's events. Skips (one line) without Chromium,
 * fails without it under TEST_REQUIRE_ALL=1.
 */
import { once } from "node:events";
import { createServer, type Server } from "node:http";
import { afterEach, describe, expect, it } from "vitest";
import { chromiumTitle, haveChromium, launchChromium } from "../../helpers/chromium.js";
import { startServer, type TestServer } from "../../helpers/server.js";

const KEY = "key-browser-page-0123456789";
const cleanups: (() => unknown)[] = [];
afterEach(async () => {
	for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

/** The page: everything a browser client of Wheelhouse does, in the order it does it. */
function pageHtml(api: string): string {
	return `<!doctype html><meta charset="utf-8"><title>wheelhouse client</title><script type="module">
const api = ${JSON.stringify(api)};
const auth = { authorization: "Bearer ${KEY}" };
const json = { ...auth, "content-type": "application/json" };
window.result = (async () => {
	const session = await (await fetch(api + "/v1/sessions", { method: "POST", headers: json, body: "{}" })).json();
	const minted = await (await fetch(api + "/v1/sessions/" + session.id + "/stream-token", { method: "POST", headers: auth })).json();
	const events = [];
	const source = new EventSource(api + minted.eventsUrl);
	await new Promise((resolve, reject) => {
		source.onerror = () => reject(new Error("EventSource error, readyState " + source.readyState));
		for (const type of ["session_snapshot", "agent_start", "message_start", "message_end", "agent_end"]) {
			source.addEventListener(type, async (event) => {
				const data = JSON.parse(event.data);
				events.push({ type, id: event.lastEventId, text: data.message?.role === "assistant" ? JSON.stringify(data.message.content) : undefined });
				if (type === "session_snapshot") {
					const prompt = await fetch(api + "/v1/sessions/" + session.id + "/prompt", { method: "POST", headers: json, body: JSON.stringify({ message: "hello from the browser" }) });
					if (prompt.status !== 202) reject(new Error("prompt: " + prompt.status + " " + await prompt.text()));
				}
				if (type === "agent_end") resolve();
			});
		}
	});
	source.close();
	return { sessionId: session.id, eventsUrl: minted.eventsUrl, events };
})().catch((error) => ({ error: String(error) }));
</script>`;
}

describe("a browser on another origin, with API keys set", () => {
	it.skipIf(!haveChromium())(
		chromiumTitle("authenticates with fetch and opens the event stream with a stream token"),
		async () => {
			// The page's origin: another port, so every API call is cross-origin.
			let api = "";
			const pages: Server = createServer((_req, res) => {
				res.writeHead(200, { "content-type": "text/html; charset=utf-8" });
				res.end(pageHtml(api));
			});
			pages.listen(0, "127.0.0.1");
			await once(pages, "listening");
			cleanups.push(() => pages.close());
			const pageOrigin = `http://127.0.0.1:${(pages.address() as { port: number }).port}`;

			const server: TestServer = await startServer({ config: { apiKeys: [KEY], corsOrigins: [pageOrigin] } });
			cleanups.push(() => server.close());
			api = server.url;

			const { browser, close } = await launchChromium();
			cleanups.push(close);
			const page = await browser.newPage();
			const consoleErrors: string[] = [];
			page.on("console", (message) => {
				if (message.type() === "error") consoleErrors.push(message.text());
			});
			await page.goto(`${pageOrigin}/`);
			const result = await page.evaluate(() => (globalThis as unknown as { result: Promise<unknown> }).result);

			expect(consoleErrors, "browser console errors (CORS failures show here)").toEqual([]);
			const { events, eventsUrl } = result as { events: { type: string; text?: string }[]; eventsUrl: string };
			expect(result).not.toHaveProperty("error");
			expect(eventsUrl).toMatch(/\/events\?token=/);
			expect(events.map((e) => e.type)).toEqual(
				expect.arrayContaining(["session_snapshot", "agent_start", "message_start", "message_end", "agent_end"]),
			);
			expect(events.at(-1)!.type).toBe("agent_end");
			expect(events.some((e) => e.text?.includes("hello from the browser"))).toBe(true);
		},
		90_000,
	);
});
