// Starts a server process, a terminal and a Chromium: seconds on a busy machine.
/**
 * The README's quick start is enough: with nothing but what it says, a newcomer gets a working
 * agent in the browser and in the terminal. The server runs as `npm start` runs it (src/main.ts,
 * the built page, no key, no other service, the default stand-in model); the page is the one its
 * listening line names, used as a newcomer would (type, Send); the terminal command is the quick
 * start's own `sh` line, with the built `dist/cli/main.js` run from its source. Both say what the
 * stand-in model is, so that its echo is not taken for a broken agent. The quick start's curl
 * block runs as pasted too (`localhost:3000` becomes this server's address).
 */
import { execFile } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { promisify } from "node:util";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { buildPlayground } from "../../scripts/build-playground.js";
import { chromiumTitle, haveChromium, launchChromium } from "../helpers/chromium.js";
import { holdDist } from "../helpers/dist-lock.js";
import { json, type MainProcess, repoRoot, startMain, stopAll } from "../helpers/main-process.js";
import { killAll, openTerminal } from "./tmux.js";

const execFileAsync = promisify(execFile);
const readme = readFileSync(path.join(repoRoot, "README.md"), "utf8");
/** The README's "Quick start" section, up to the next second-level heading. */
const quickStart = /^## Quick start\n([\s\S]*?)(?=^## )/m.exec(readme)?.[1] ?? "";
const shLines = [...quickStart.matchAll(/```sh\n([\s\S]*?)```/g)].flatMap((m) => m[1]!.trim().split("\n"));

let dir: string;
let server: MainProcess;

beforeAll(async () => {
	dir = mkdtempSync(path.join(tmpdir(), "wh-quickstart-"));
	// `npm start` builds the page into dist/playground; src/main.ts serves it from there.
	const release = await holdDist();
	try {
		await buildPlayground(path.join(repoRoot, "dist/playground"));
	} finally {
		release();
	}
	// No key, no provider, the default faux delay: what `npm start` does on a fresh checkout.
	server = await startMain({ db: path.join(dir, "wheelhouse.db"), env: { WHEELHOUSE_FAUX_DELAY_MS: "30" } });
}, 120_000);

afterAll(() => {
	killAll();
	stopAll();
	rmSync(dir, { recursive: true, force: true });
});

describe("the README's quick start", { timeout: 90_000 }, () => {
	it("starts the server with npm start and names a terminal command for the chat", () => {
		expect(shLines).toContain("npm ci && npm start");
		expect(shLines.filter((line) => / chat$/.test(line))).toHaveLength(1);
		// The stand-in and how to see a tool call are in the quick start itself.
		expect(quickStart).toMatch(/\/tool calculate/);
		// The listening line the README quotes is the one the server prints.
		expect(quickStart).toMatch(
			/Wheelhouse listening on http:\/\/127\.0\.0\.1:3000; playground:\s+http:\/\/127\.0\.0\.1:3000\//,
		);
		expect(server.output()).toContain(`Wheelhouse listening on ${server.url}; playground: ${server.url}/`);
	});

	it("gives a working agent in the terminal with its chat command", async () => {
		const line = shLines.find((l) => / chat$/.test(l))!;
		// The built command, run from its source (the same file before `tsc`); the default URL
		// (localhost:3000) is this server's.
		const command = line.replace(/^node dist\/cli\/main\.js /, "node --import tsx src/cli/main.ts ");
		expect(command, `the quick start's chat command: ${line}`).not.toBe(line);
		const term = openTerminal(command, { cwd: repoRoot, env: { WHEELHOUSE_URL: server.url } });
		const id = /session (ses_\w+)/.exec(await term.waitFor(/session ses_\w+ · faux\/echo/))![1]!;
		await term.waitFor(/faux\/echo is a stand-in that repeats your message/);
		term.type("hello from the terminal");
		term.keys("Enter");
		await term.waitFor(/^hello from the terminal$/m);
		term.type('//tool calculate {"expression":"6*7"}');
		term.keys("Enter");
		await term.waitFor(/✓ calculate: 42/);
		const { body } = await json(`${server.url}/v1/sessions/${id}/messages?limit=100`);
		expect(body.messages[1]).toMatchObject({ role: "assistant", content: [{ text: "hello from the terminal" }] });
		term.keys("C-c");
		term.keys("C-c");
		await term.waitFor(() => term.exitStatus() !== undefined);
		expect(term.exitStatus()).toBe(0);
	});

	it.skipIf(!haveChromium())(
		chromiumTitle("gives a working agent in the browser on the page the server names"),
		async () => {
			const url = /playground: (http:\/\/\S+?\/)(?=["\s])/.exec(server.output())![1]!;
			const chromium = await launchChromium();
			try {
				const page = await chromium.browser.newPage();
				const errors: string[] = [];
				page.on("pageerror", (error) => errors.push(String(error)));
				await page.goto(url);
				// No session yet: the page says what the stand-in does, and the first message starts one.
				const hint = page.locator("#standin-hint");
				await expect.poll(() => hint.textContent()).toMatch(/faux\/echo is a stand-in: it repeats your message/);
				expect(await hint.isVisible()).toBe(true);
				await page.getByLabel("Message", { exact: true }).fill("hello from the browser");
				await page.getByRole("button", { name: "Send", exact: true }).click();
				await page.locator(".msg.assistant", { hasText: "hello from the browser" }).waitFor();
				await page.getByLabel("Message", { exact: true }).fill('/tool calculate {"expression":"6*7"}');
				await page.locator("#send:enabled").waitFor();
				await page.getByRole("button", { name: "Send", exact: true }).click();
				await page.locator(".msg.assistant", { hasText: "Tool results: calculate: 42" }).waitFor();
				// The session the terminal made is in the list under its first prompt.
				await page.locator("#session-list .title", { hasText: "hello from the terminal" }).waitFor();
				expect(await hint.isVisible()).toBe(true);
				expect(errors).toEqual([]);
			} finally {
				await chromium.close();
			}
		},
	);
	it("has curl lines that work as pasted: a streamed answer, a tool call, a steer, a resumed stream, the state", async () => {
		const block = [...quickStart.matchAll(/```sh\n([\s\S]*?)```/g)].map((m) => m[1]!).find((b) => b.includes("curl"));
		expect(block, "a curl block in the quick start").toBeDefined();
		// A reader ends a live stream (`curl -N …/events`) with Ctrl-C; here it ends after 3 s, and
		// what it printed is marked so that it can be told apart.
		const script = `set -e
curl() { case "$*" in *"/events"*) printf "\\n### %s\\n" "$*"; timeout 3 curl "$@" || true; printf "\\n### end\\n" ;; *) command curl "$@" ;; esac; }
${block!.replaceAll("localhost:3000", new URL(server.url).host)}`;
		const { stdout } = await execFileAsync("bash", ["-c", script], { cwd: dir, timeout: 60_000 });
		// The first prompt's stream, from agent_start to agent_end, with the echoed answer.
		expect(stdout).toMatch(/^event: agent_start$/m);
		expect(stdout).toMatch(/"text":"hello from curl"/);
		// The tool call's result: 2*(3+4)^2.
		expect(stdout).toMatch(/event: tool_execution_end\ndata: .*"toolName":"calculate".*98/);
		// The steer was accepted while the long answer ran, and answered in the next turn.
		expect(stdout).toMatch(/"queue":"steer"/);
		const [live, resumed] = [...stdout.matchAll(/^### (.*)\n([\s\S]*?)^### end$/gm)].map((m) => ({
			command: m[1]!,
			ids: [...m[2]!.matchAll(/^id: (\d+)$/gm)].map((id) => Number(id[1])),
			text: m[2]!,
		}));
		// Watching: the stream opens with the session's snapshot.
		expect(live!.text, live!.text.slice(0, 2000)).toMatch(/^event: session_snapshot$/m);
		// Resuming after 12: the events after it, in order, each once (a finished message's deltas
		// are not kept: docs/durability.md), then live.
		expect(resumed!.command).toMatch(/Last-Event-ID: 12/);
		expect(resumed!.ids[0]).toBe(13);
		expect(resumed!.ids).toEqual([...new Set(resumed!.ids)].sort((a, b) => a - b));
		expect(resumed!.text).toMatch(/actually, say something else/);
		expect(stdout).toMatch(/"status":"(idle|running)"/);
	});
});
