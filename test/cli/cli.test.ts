/**
 * The `wheelhouse` command against a real server process (src/main.ts, SQLite, the faux/echo
 * stand-in streaming a word every 25 ms): `chat` in a real pseudo-terminal (tmux) streams the
 * answer, steers, queues follow-ups, aborts with Ctrl-C, asks for approvals and client tool results,
 * runs its slash commands and names a session after its first prompt; `run` exits with the run's outcome
 * and prints JSON lines; `tail` picks up again after the server restarts. What the terminal shows
 * is checked against what the server stored.
 */
import { execFile, spawnSync } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { promisify } from "node:util";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { freePort, json, type MainProcess, repoRoot, startMain, stopAll } from "../helpers/main-process.js";
import { startServer } from "../helpers/server.js";
import { killAll, openTerminal } from "./tmux.js";

const exec = promisify(execFile);
const CLI = "node --import tsx src/cli/main.ts";
const DELAY = { WHEELHOUSE_FAUX_DELAY_MS: "25" };

let dir: string;
let server: MainProcess;

beforeAll(async () => {
	dir = mkdtempSync(path.join(tmpdir(), "wh-cli-"));
	server = await startMain({ db: path.join(dir, "db.sqlite"), env: DELAY });
});

afterEach(() => killAll());

afterAll(() => {
	stopAll();
	rmSync(dir, { recursive: true, force: true });
});

const words = (prefix: string, n: number) => Array.from({ length: n }, (_, i) => `${prefix}${i}`).join(" ");
const messages = async (id: string) =>
	(await json(`${server.url}/v1/sessions/${id}/messages?limit=1000`)).body.messages;
const state = async (id: string) => (await json(`${server.url}/v1/sessions/${id}`)).body;
const sessionIdOn = (screen: string) => /session (ses_\w+)/.exec(screen)![1]!;
/** The run's CLI as a script runs it: exit code, stdout, stderr. */
async function cli(args: string[], env: Record<string, string> = {}) {
	try {
		const { stdout, stderr } = await exec(process.execPath, ["--import", "tsx", "src/cli/main.ts", ...args], {
			cwd: repoRoot,
			env: { PATH: process.env.PATH, ...env },
			timeout: 30_000,
		});
		return { code: 0, stdout, stderr };
	} catch (error) {
		const e = error as { code: number; stdout: string; stderr: string };
		return { code: e.code, stdout: e.stdout, stderr: e.stderr };
	}
}
async function until<T>(probe: () => Promise<T | undefined | false>, what: string, timeoutMs = 15_000): Promise<T> {
	const deadline = Date.now() + timeoutMs;
	for (;;) {
		const value = await probe();
		if (value) return value;
		if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
		await new Promise((resolve) => setTimeout(resolve, 100));
	}
}

describe("wheelhouse chat in a terminal", { timeout: 60_000 }, () => {
	it("streams the answer, a line typed during the run steers it (Alt+Enter: follow-up), Ctrl-C aborts, twice exits", async () => {
		const term = openTerminal(`${CLI} chat --new`, { cwd: repoRoot, env: { WHEELHOUSE_URL: server.url } });
		const id = sessionIdOn(await term.waitFor(/session ses_\w+/));
		// A newcomer's first session is on the stand-in model: the terminal says what it does.
		await term.waitFor(/faux\/echo is a stand-in that repeats your message/);

		term.type(words("a", 150));
		term.keys("Enter");
		// The answer shows while the run is still going: streamed, not printed at the end.
		await term.waitFor(/^a0 a1 a2 a3/m);
		expect((await state(id)).status).toBe("running");
		// The session is named after its first prompt, as the playground names it.
		await until(async () => (await state(id)).metadata.title === `${words("a", 150).slice(0, 79)}…`, "the title");
		expect(term.screen()).not.toMatch(/^a0 .* a149$/m);

		term.type("turn left now");
		term.keys("Enter");
		await term.waitFor(/queued as steer/);
		// Alt+Enter queues the line as a follow-up instead.
		term.type("then go home");
		term.keys("M-Enter");
		await term.waitFor(/queued as follow-up/);
		await term.waitFor(/» turn left now/);
		await term.waitFor(/^turn left now$/m);
		await term.waitFor(/^then go home$/m);
		await until(async () => (await state(id)).status === "idle", "the run's end");
		// The statuses said mid-answer ("queued as …") went above the answer's line, not into it.
		expect(term.screen()).toMatch(new RegExp(`^${words("a", 150)}$`, "m"));
		const stored = await messages(id);
		expect(stored.map((m: any) => [m.role, m.content[0]?.text])).toEqual([
			["user", words("a", 150)],
			["assistant", words("a", 150)],
			["user", "turn left now"],
			["assistant", "turn left now"],
			["user", "then go home"],
			["assistant", "then go home"],
		]);

		term.type(words("b", 200));
		term.keys("Enter");
		await term.waitFor(/^b0 b1 b2/m);
		term.keys("C-c");
		await term.waitFor(/\[aborted\]/);
		const last = (await messages(id)).at(-1);
		expect(last).toMatchObject({ role: "assistant", stopReason: "aborted" });
		expect((await state(id)).status).toBe("idle");

		await new Promise((resolve) => setTimeout(resolve, 2100)); // the next Ctrl-C is a first one again
		term.keys("C-c");
		await term.waitFor(/^\(Ctrl-C again to exit\)$/m);
		expect(term.exitStatus()).toBeUndefined();
		term.keys("C-c");
		await term.waitFor(() => term.exitStatus() !== undefined);
		expect(term.exitStatus()).toBe(0);
	});

	it("asks for approvals (y runs the tool, n denies it) and a client tool's result, lists sessions, /resume by id and by number, lists and switches models, shows usage", async () => {
		const created = await json(`${server.url}/v1/sessions`, "POST", {
			tools: ["calculate"],
			toolApprovals: { calculate: "always" },
			clientTools: [
				{ name: "ask_user", description: "Ask the user", parameters: { type: "object" } },
				{ name: "ask_twice", description: "Ask after approval", parameters: { type: "object" }, approval: "always" },
			],
			metadata: { title: "approval test" },
		});
		const id = created.body.id as string;
		const term = openTerminal(`${CLI} chat`, { cwd: repoRoot, env: { WHEELHOUSE_URL: server.url } });
		// The picker lists the newest first: this session is 1.
		await term.waitFor(new RegExp(`1\\) ${id}`));
		term.type("1");
		term.keys("Enter");
		await term.waitFor(new RegExp(`session ${id}`));

		term.type('//tool calculate {"expression": "6 * 7"}');
		term.keys("Enter");
		await term.waitFor(/approve calculate\? \[y\/n\]/);
		expect((await state(id)).pendingApprovals).toHaveLength(1);
		term.type("y");
		term.keys("Enter");
		await term.waitFor(/✓ calculate: .*42/);
		const result = (await messages(id)).find((m: any) => m.role === "toolResult");
		expect(result).toMatchObject({ toolName: "calculate", isError: false });
		await until(async () => (await state(id)).status === "idle", "the run's end");

		// A client tool's call asks for its result in the terminal; the line typed is what the model sees.
		term.type('//tool ask_user {"q": "colour?"}');
		term.keys("Enter");
		await term.waitFor(/ask_user result> /);
		expect((await state(id)).pendingClientToolCalls).toHaveLength(1);
		term.type("blue");
		term.keys("Enter");
		await term.waitFor(/Tool results: ask_user: blue/);
		await until(async () => (await state(id)).status === "idle", "the run's end");

		// A client tool that needs approval asks for it first, and for its result only once the call waits for one.
		term.type("//tool ask_twice {}");
		term.keys("Enter");
		await term.waitFor(/approve ask_twice\? \[y\/n\]/);
		term.type("y");
		term.keys("Enter");
		await term.waitFor(/ask_twice result> /);
		expect((await state(id)).pendingClientToolCalls).toHaveLength(1);
		term.type("green");
		term.keys("Enter");
		await term.waitFor(/Tool results: ask_twice: green/);
		await until(async () => (await state(id)).status === "idle", "the run's end");

		// A second call, denied with n: the model sees the refusal and the tool does not run.
		term.type('//tool calculate {"expression": "1 + 2"}');
		term.keys("Enter");
		await term.waitFor(/calculate\(\{"expression":"1 \+ 2"\}\) asks for approval\napprove calculate\? \[y\/n\]/);
		term.type("n");
		term.keys("Enter");
		await term.waitFor(/calculate: denied/);
		await until(async () => (await state(id)).status === "idle", "the run's end");
		const denied = (await messages(id)).filter((m: any) => m.role === "toolResult").at(-1);
		expect(denied).toMatchObject({ toolName: "calculate", isError: true });
		expect(JSON.stringify(denied.content)).toMatch(/denied in the terminal/);

		term.type("/sessions");
		term.keys("Enter");
		await term.waitFor(new RegExp(`\\* ${id} .* approval test`));
		term.type("/model");
		term.keys("Enter");
		await term.waitFor(/^\* faux\/echo \(stand-in\)$/m);
		term.type("/model faux/echo");
		term.keys("Enter");
		await term.waitFor(/model: faux\/echo/);
		term.type("/usage");
		term.keys("Enter");
		await term.waitFor(/this session: \d+ tokens/);
		await term.waitFor(/your key .*: \d+ tokens/);
		// /resume <id> switches to another session: its last messages show, and what is typed next goes there.
		const other = (await json(`${server.url}/v1/sessions`, "POST", { metadata: { title: "the other one" } })).body
			.id as string;
		expect((await cli(["run", "-u", server.url, "-s", other, "earlier words over there"])).code).toBe(0);
		term.type(`/resume ${other}`);
		term.keys("Enter");
		await term.waitFor(new RegExp(`session ${other} · faux/echo · 2 messages`));
		await term.waitFor(/you: earlier words over there\nearlier words over there/);
		term.type("now in the other one");
		term.keys("Enter");
		await until(async () => (await messages(other)).length === 4, "the run in the resumed session");
		expect((await messages(other)).at(-1)).toMatchObject({
			role: "assistant",
			content: [{ text: "now in the other one" }],
		});
		expect((await messages(id)).some((m: any) => m.content[0]?.text === "now in the other one")).toBe(false);
		// The title it had is kept (only an untitled session is named after its first prompt).
		expect((await state(other)).metadata.title).toBe("the other one");
		// ...and back by its number in /sessions.
		term.type("/sessions");
		term.keys("Enter");
		// The picker at the start numbered it too: the number is the last list's.
		const numbered = new RegExp(`^ *(\\d+)\\) +${id} `, "gm");
		await term.waitFor((screen) => [...screen.matchAll(numbered)].length >= 2);
		const number = [...term.screen().matchAll(numbered)].at(-1)![1];
		term.type(`/resume ${number}`);
		term.keys("Enter");
		await term.waitFor((screen) => (screen.match(new RegExp(`session ${id}`, "g")) ?? []).length >= 2);
		term.type("/resume 99");
		term.keys("Enter");
		await term.waitFor(/no session 99 in the last \/sessions list/);

		term.type("/followup later please");
		term.keys("Enter");
		await term.waitFor(/queued as follow-up/);
		expect((await state(id)).queue.followUpCount).toBe(1);
		term.type("/quit");
		term.keys("Enter");
		await term.waitFor(() => term.exitStatus() !== undefined);
		expect(term.exitStatus()).toBe(0);
	});
});

describe("wheelhouse chat with piped input", { timeout: 60_000 }, () => {
	it("carries out every piped line, waits for the answers, then exits 0", async () => {
		// spawnSync blocks this process only; the server is another one.
		const result = spawnSync(process.execPath, ["--import", "tsx", "src/cli/main.ts", "chat", "--new"], {
			cwd: repoRoot,
			env: { PATH: process.env.PATH, WHEELHOUSE_URL: server.url },
			input: "piped words here\n/followup and then this\n",
			encoding: "utf8",
			timeout: 30_000,
		});
		expect(result.status, result.stderr).toBe(0);
		const id = sessionIdOn(result.stdout);
		expect(result.stdout, result.stdout).toMatch(/^piped words here$/m);
		await until(async () => (await state(id)).status === "idle", "the follow-up's run");
		expect((await messages(id)).map((m: any) => m.content[0]?.text)).toEqual([
			"piped words here",
			"piped words here",
			"and then this",
			"and then this",
		]);
	});
});

describe("wheelhouse run", { timeout: 60_000 }, () => {
	it("prints the answer and exits 0; --json prints every event as a JSON line", async () => {
		const plain = await cli(["run", "--url", server.url, "hello from a script"]);
		expect(plain).toMatchObject({ code: 0, stdout: "hello from a script\n" });
		const id = /session (ses_\w+)/.exec(plain.stderr)![1]!;
		expect((await messages(id)).at(-1)).toMatchObject({ role: "assistant", stopReason: "stop" });
		// Named after its prompt, so that it is found again in /sessions and the playground.
		expect((await state(id)).metadata.title).toBe("hello from a script");

		const lines = await cli(["run", "--json", "--session", id, "second one"], { WHEELHOUSE_URL: server.url });
		expect(lines.code).toBe(0);
		const events = lines.stdout
			.trim()
			.split("\n")
			.map((l) => JSON.parse(l));
		expect(events[0]).toMatchObject({ type: "agent_start" });
		expect(events.at(-1)).toMatchObject({ type: "agent_end" });
		expect(events.map((e) => e.id)).toEqual([...events.map((e) => e.id)].sort((a, b) => a - b));
		expect((await messages(id)).length).toBe(4);
	});

	it("exits 1 when the run fails, 2 when it is aborted, 4 when refused, 64 on bad usage", async () => {
		const budget = await json(`${server.url}/v1/sessions`, "POST", {
			tools: ["calculate"],
			budget: { maxTurnsPerRun: 1 },
		});
		const failed = await cli(["run", "-u", server.url, "-s", budget.body.id, '/tool calculate {"expression": "1+1"}']);
		expect(failed.code).toBe(1);
		expect(failed.stderr).toMatch(/run failed: Budget reached/);

		const long = await json(`${server.url}/v1/sessions`, "POST", {});
		const running = cli(["run", "-u", server.url, "-s", long.body.id, words("c", 300)]);
		await until(async () => (await state(long.body.id)).status === "running", "the run to start");
		await json(`${server.url}/v1/sessions/${long.body.id}/abort`, "POST");
		const aborted = await running;
		expect(aborted.code).toBe(2);
		expect(aborted.stderr).toMatch(/run aborted/);

		const refused = await cli(["run", "-u", server.url, "-s", "ses_nope", "hi"]);
		expect(refused.code).toBe(4);
		expect(refused.stderr).toMatch(/SESSION_NOT_FOUND/);
		const unreachable = await cli(["run", "-u", "http://127.0.0.1:9", "hi"]);
		expect(unreachable.code).toBe(4);
		// Nothing listening: where it looked, and how to point elsewhere.
		const closed = `http://127.0.0.1:${await freePort()}`;
		const nobody = await cli(["run", "hi"], { WHEELHOUSE_URL: closed });
		expect(nobody.code).toBe(4);
		expect(nobody.stderr).toContain(`cannot reach a server at ${closed} (ECONNREFUSED)`);
		expect(nobody.stderr).toMatch(/--url or WHEELHOUSE_URL/);
		expect((await cli(["run"])).code).toBe(64);
		expect((await cli(["frobnicate"])).code).toBe(64);
		expect((await cli(["run", "--url", "not a url", "x"])).stderr).toMatch(/--url: not a URL/);
	});
});

describe("wheelhouse against a server with API keys", { timeout: 60_000 }, () => {
	it("says where the key goes when it is missing or refused, and works with --api-key or WHEELHOUSE_API_KEY", async () => {
		const key = "key-cli-test-0123456789abcdef";
		const keyed = await startServer({ config: { apiKeys: [key] } });
		try {
			const missing = await cli(["run", "-u", keyed.url, "hi"]);
			expect(missing.code).toBe(4);
			expect(missing.stderr).toMatch(
				/UNAUTHORIZED: .* Give the server's API key with --api-key <key> or WHEELHOUSE_API_KEY\./,
			);
			const wrong = await cli(["run", "-u", keyed.url, "-k", "not-the-key-0000000000", "hi"]);
			expect(wrong.code).toBe(4);
			expect(wrong.stderr).toMatch(/--api-key/);
			expect(await cli(["run", "-u", keyed.url, "-k", key, "with a flag"])).toMatchObject({
				code: 0,
				stdout: "with a flag\n",
			});
			expect(await cli(["run", "-u", keyed.url, "from the env"], { WHEELHOUSE_API_KEY: key })).toMatchObject({
				code: 0,
				stdout: "from the env\n",
			});
		} finally {
			await keyed.close();
		}
	});
});

describe("wheelhouse run across a crash", { timeout: 60_000 }, () => {
	it("exits 3 when the server dies during the run and the session does not continue it", async () => {
		const created = await json(`${server.url}/v1/sessions`, "POST", { onInterrupt: "stop" });
		const id = created.body.id as string;
		const running = cli(["run", "-u", server.url, "-s", id, words("d", 400)]);
		await until(async () => (await messages(id)).length >= 1 && (await state(id)).status === "running", "the run");
		server.child.kill("SIGKILL");
		await server.exited;
		server = await startMain({ db: path.join(dir, "db.sqlite"), port: server.port, env: DELAY });
		const crashed = await running;
		expect(crashed.code, crashed.stderr).toBe(3);
		expect(crashed.stderr).toMatch(/run interrupted/);
		expect((await state(id)).status).toBe("interrupted");
	});
});

describe("wheelhouse tail", { timeout: 60_000 }, () => {
	it("replays after --after, then reconnects after a server restart and shows the next run once", async () => {
		const created = await json(`${server.url}/v1/sessions`, "POST", {});
		const id = created.body.id as string;
		expect((await cli(["run", "-u", server.url, "-s", id, "before restart"])).code).toBe(0);
		const term = openTerminal(`${CLI} tail ${id} --after 0`, { cwd: repoRoot, env: { WHEELHOUSE_URL: server.url } });
		await term.waitFor(/#1 +agent_start/);
		await term.waitFor(/agent_end +completed/);
		// Each line says what matters, not the event's JSON: an answer about to stream is just its role.
		expect(term.screen()).toMatch(/message_start +assistant$/m);
		expect(term.screen()).toMatch(/turn_end +\[stop\]$/m);
		expect(term.screen()).not.toMatch(/\[\{"type"|"role":/);

		server.child.kill("SIGTERM");
		await server.exited;
		server = await startMain({ db: path.join(dir, "db.sqlite"), port: server.port, env: DELAY });
		await term.waitFor(/reconnecting after #\d+/);
		expect((await cli(["run", "-u", server.url, "-s", id, "after restart"])).code).toBe(0);
		const screen = await term.waitFor(/message_end +assistant \[stop\]: after restart/);
		await term.waitFor((s) => (s.match(/agent_end +completed/g) ?? []).length === 2);
		const ids = [...term.screen().matchAll(/^#(\d+) /gm)].map((m) => Number(m[1]));
		expect(new Set(ids).size, screen).toBe(ids.length);
		expect(ids).toEqual([...ids].sort((a, b) => a - b));
	});
});
