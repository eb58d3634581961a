// Launches a real Chromium (headless) once for the file: seconds on a busy machine.
/**
 * The playground's Regenerate and Edit last buttons in a real browser: Regenerate answers the last
 * user message again (the old answer listed as a superseded branch) and the chat shows the
 * transcript as it is after the cut; Edit last replaces the last user message with the composer's
 * text and runs from it, and the chat no longer shows the old message. No console error.
 */
import { afterAll, expect, it } from "vitest";
import { waitUntil } from "../../helpers/cluster.js";
import { playgroundInBrowser } from "../../helpers/playground-browser.js";
import { startServer, type TestServer } from "../../helpers/server.js";

const playground = playgroundInBrowser("playground-branching");
const HAVE_CHROMIUM = playground.haveChromium;
let server: TestServer | undefined;

afterAll(async () => {
	await server?.close();
});

it.skipIf(!HAVE_CHROMIUM)(
	"regenerates the last answer and edits the last user message",
	async () => {
		server = await startServer({ playgroundDir: playground.assets });
		const id = (await server.request("POST", "/v1/sessions", { body: { model: "faux/echo" } })).body.id as string;
		const idle = () =>
			waitUntil("the session idle", async () => {
				const s = await server!.request("GET", `/v1/sessions/${id}`);
				return s.body.status === "idle" && !s.body.isStreaming ? true : undefined;
			});
		expect((await server.request("POST", `/v1/sessions/${id}/prompt`, { body: { message: "hello" } })).status).toBe(
			202,
		);
		await idle();
		const page = await playground.browser.newPage();
		const errors: string[] = [];
		page.on("pageerror", (error) => errors.push(String(error)));
		page.on("console", (message) => {
			if (message.type() === "error") errors.push(message.text());
		});
		await page.goto(`${server.url}/#session=${id}`);
		await page.locator('#connection[data-state="live"]').waitFor();

		await page.locator("#regenerate:enabled").click();
		await waitUntil("the old answer superseded", async () => {
			const branches = (await server!.request("GET", `/v1/sessions/${id}/branches`)).body.branches;
			return branches.length === 1 ? true : undefined;
		});
		await idle();
		await page.locator("#regenerate:enabled").waitFor();

		await page.locator("#prompt").fill("edited hello");
		await page.locator("#edit-last:enabled").click();
		await waitUntil("the edit's run", async () => {
			const messages = (await server!.request("GET", `/v1/sessions/${id}/messages`)).body.messages;
			return messages.length === 2 && messages[1].role === "assistant" && messages[0].content[0].text === "edited hello"
				? true
				: undefined;
		});
		await idle();
		await page.locator("#messages", { hasText: "edited hello" }).waitFor();
		// The chat shows the edited turn only: the old "hello" and its answers are gone from it.
		await waitUntil("the chat to show the edited transcript", async () => {
			const chat = await page.locator("#messages").textContent();
			return (chat ?? "").replaceAll("edited hello", "").includes("hello") ? undefined : chat;
		});
		expect((await page.locator("#messages").textContent())?.match(/edited hello/g)).toHaveLength(2);
		const branches = (await server.request("GET", `/v1/sessions/${id}/branches`)).body.branches;
		expect(branches.map((b: any) => [b.branch, b.fromMessageId, b.messageCount])).toEqual([
			[1, "wh-1", 1],
			[2, "wh-0", 2],
		]);
		expect(errors).toEqual([]);
		await page.close();
	},
	60_000,
);
