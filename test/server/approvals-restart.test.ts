/**
 * Pending interactions survive a crash of the server process: the SQLite store keeps them, and
 * the restarted server lists them (marked `orphaned`: the run that waited died with the process)
 * until the next run starts. A real child process, SIGKILLed.
 */
import { type ChildProcess, spawn } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { openSse } from "../helpers/sse.js";
import { repoRoot } from "../tools/helpers.js";

let dir: string;
let child: ChildProcess | undefined;

beforeAll(() => {
	dir = mkdtempSync(path.join(tmpdir(), "wh-restart-"));
	writeFileSync(path.join(dir, "config.json"), JSON.stringify({ tools: { approval: { calculate: "always" } } }));
});
afterEach(() => {
	if (child && child.exitCode === null && child.signalCode === null) child.kill("SIGKILL");
});
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** Starts `src/main.ts` on a free port with the SQLite store in `dir`; resolves with its base URL. */
function startMain(): Promise<string> {
	const proc = spawn(process.execPath, ["--import", "tsx", "src/main.ts"], {
		cwd: repoRoot,
		env: {
			...process.env,
			PORT: "0",
			HOST: "127.0.0.1",
			LOG_LEVEL: "info",
			WHEELHOUSE_STORE: "sqlite",
			WHEELHOUSE_DB: path.join(dir, "wh.db"),
			WHEELHOUSE_CONFIG: path.join(dir, "config.json"),
			WHEELHOUSE_FAUX_DELAY_MS: "0",
			OPENAI_API_KEY: "",
			ANTHROPIC_API_KEY: "",
			GEMINI_API_KEY: "",
		},
		stdio: ["ignore", "pipe", "pipe"],
	});
	child = proc;
	return new Promise((resolve, reject) => {
		let seen = "";
		const onData = (chunk: Buffer) => {
			seen += chunk.toString();
			const match = /Wheelhouse listening on (http:\/\/[^"\s]+)/.exec(seen);
			if (match) resolve(match[1]!);
		};
		proc.stdout!.on("data", onData);
		proc.stderr!.on("data", onData);
		proc.once("exit", (code) => reject(new Error(`exited with ${code}:\n${seen}`)));
	});
}

async function json(method: string, url: string, body?: unknown): Promise<{ status: number; body: any }> {
	const res = await fetch(url, {
		method,
		headers: body === undefined ? {} : { "content-type": "application/json" },
		body: body === undefined ? undefined : JSON.stringify(body),
	});
	return { status: res.status, body: await res.json() };
}

describe("pending approvals across a crash", () => {
	it("are listed as orphaned after a restart, answer 409, and clear when the next run starts", {
		timeout: 60_000,
	}, async () => {
		let base = await startMain();
		const id = (await json("POST", `${base}/v1/sessions`, {})).body.id;
		const events = await openSse(`${base}/v1/sessions/${id}/events`);
		await json("POST", `${base}/v1/sessions/${id}/prompt`, { message: '/tool calculate {"expression": "1"}' });
		const requested = await events.waitForType("approval_requested", 15_000);
		const { toolCallId } = requested.data;
		events.close();

		const crashed = new Promise((resolve) => child!.once("exit", resolve));
		child!.kill("SIGKILL");
		await crashed;

		base = await startMain();
		const state = (await json("GET", `${base}/v1/sessions/${id}`)).body;
		expect(state.status).toBe("interrupted");
		expect(state.pendingApprovals).toMatchObject([
			{ toolCallId, toolName: "calculate", args: { expression: "1" }, orphaned: true },
		]);
		const late = await json("POST", `${base}/v1/sessions/${id}/approvals/${toolCallId}`, { approve: true });
		expect([late.status, late.body.error.code]).toEqual([409, "TOOL_CALL_FINISHED"]);

		const next = await openSse(`${base}/v1/sessions/${id}/prompt`, {
			method: "POST",
			headers: { "content-type": "application/json" },
			body: JSON.stringify({ message: "hello again" }),
		});
		await next.waitForEnd(15_000);
		expect((await json("GET", `${base}/v1/sessions/${id}`)).body.pendingApprovals).toEqual([]);
	});
});
