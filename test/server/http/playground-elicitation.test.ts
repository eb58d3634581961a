// Launches a real Chromium (headless) once for the file: seconds on a busy machine.
/**
 * An upstream MCP server's question in the playground, in a real browser against a real server
 * whose fixture MCP server (a real child process) asks during a tool call: the requested schema
 * shows as a form; an answer that does not fit shows the server's refusal and the form stays;
 * a fitting answer goes back to the MCP server and the tool result shows it; Decline sends a
 * decline.
 */
import type { Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { chromiumTitle } from "../../helpers/chromium.js";
import { playgroundInBrowser } from "../../helpers/playground-browser.js";
import { startServer, type TestServer } from "../../helpers/server.js";
import { fixtureCommand } from "../../tools/helpers.js";

const playground = playgroundInBrowser("playground-elicit");
const HAVE_CHROMIUM = playground.haveChromium;

let server: TestServer;

beforeAll(async () => {
	server = await startServer({
		playgroundDir: playground.assets,
		config: { tools: { mcpServers: { fx: { ...fixtureCommand(), pingIntervalMs: 0 } } } },
	});
}, 60_000);

afterAll(async () => {
	await server?.close();
});

async function send(page: Page, text: string): Promise<void> {
	await page.getByLabel("Message", { exact: true }).fill(text);
	await page.getByRole("button", { name: "Send", exact: true }).click();
}

describe("the playground and an MCP server's elicitation", () => {
	it.skipIf(!HAVE_CHROMIUM)(
		chromiumTitle("shows the requested schema as a form, shows a refusal, and sends Accept and Decline"),
		{ timeout: 60_000 },
		async () => {
			const page = await playground.browser.newPage();
			const errors: string[] = [];
			page.on("pageerror", (error) => errors.push(String(error)));
			page.on("console", (message) => {
				if (message.type() === "error") errors.push(message.text());
			});
			try {
				await page.goto(`${server.url}/`);
				await page.locator("#model option").first().waitFor({ state: "attached" });
				await page.getByRole("button", { name: "Create session" }).click();
				await page.locator('#connection[data-state="live"]').waitFor();

				await send(page, '/tool fx__ask {"question":"Who are you?"}');
				const form = page.getByRole("form", { name: "fx asks (during fx__ask)" });
				await form.waitFor();
				expect(await form.getByText("Who are you?").count()).toBe(1);
				await form.getByLabel("Name").fill("Ada");
				// Age is required: the server refuses, names the field, and the form stays.
				await form.getByRole("button", { name: "Accept" }).click();
				await page.locator("#notice", { hasText: "body.content.age: is required" }).waitFor();
				expect(await form.isVisible()).toBe(true);
				await form.getByLabel("Age").fill("36");
				await form.getByLabel("Favourite color").selectOption({ label: "green" });
				await form.getByLabel("Subscribe").check();
				await form.getByRole("button", { name: "Accept" }).click();
				await page
					.locator(".msg.assistant", {
						hasText:
							'Tool results: fx__ask: answer: {"action":"accept","content":{"name":"Ada","age":36,"color":"green","subscribe":true}}',
					})
					.waitFor();
				await form.waitFor({ state: "detached" });

				await send(page, "/tool fx__ask {}");
				const second = page.getByRole("form", { name: "fx asks (during fx__ask)" });
				await second.waitFor();
				await second.getByRole("button", { name: "Decline" }).click();
				await page
					.locator(".msg.assistant", { hasText: 'Tool results: fx__ask: answer: {"action":"decline","content":null}' })
					.waitFor();
				expect(await page.locator("#pending > *").count()).toBe(0);
				// The refused answer's 400 is the one console error (Chromium logs failed fetches).
				expect(errors.filter((e) => !/400/.test(e))).toEqual([]);
			} finally {
				await page.close();
			}
		},
	);
});
