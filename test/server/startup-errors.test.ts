/**
 * The real process (`src/main.ts`) refuses a bad configuration with one line on stderr naming the
 * variable and the fix, and exit code 1 — no stack trace — and writes readable log lines when
 * `LOG_FORMAT=pretty`.
 */
import { type ChildProcess, spawn } from "node:child_process";
import { once } from "node:events";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { afterEach, describe, expect, it } from "vitest";

const repoRoot = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../..");
const children: ChildProcess[] = [];
afterEach(() => {
	for (const child of children.splice(0)) if (child.exitCode === null) child.kill("SIGKILL");
});

function startMain(env: Record<string, string>): { child: ChildProcess; stdout: () => string; stderr: () => string } {
	const child = spawn(process.execPath, ["--import", "tsx", "src/main.ts"], {
		cwd: repoRoot,
		env: { PATH: process.env.PATH, PORT: "0", WHEELHOUSE_STORE: "memory", ...env },
	});
	children.push(child);
	let stdout = "";
	let stderr = "";
	child.stdout!.on("data", (chunk: Buffer) => {
		stdout += chunk.toString();
	});
	child.stderr!.on("data", (chunk: Buffer) => {
		stderr += chunk.toString();
	});
	return { child, stdout: () => stdout, stderr: () => stderr };
}

/** Runs the server with `env`; resolves with its exit code and stderr once it exits. */
async function refused(env: Record<string, string>): Promise<{ code: number | null; stderr: string }> {
	const run = startMain(env);
	const [code] = (await once(run.child, "exit")) as [number | null];
	return { code, stderr: run.stderr() };
}

describe("startup", () => {
	it("an unknown default model is one line naming the variable, and exit code 1", { timeout: 60_000 }, async () => {
		const { code, stderr } = await refused({ WHEELHOUSE_DEFAULT_MODEL: "acme/none" });
		expect(code).toBe(1);
		expect(stderr.trimEnd().split("\n"), stderr).toHaveLength(1);
		expect(stderr).toMatch(/^Invalid configuration: WHEELHOUSE_DEFAULT_MODEL: Unknown model "acme\/none"/);
	});

	it("LOG_FORMAT=pretty writes readable lines", { timeout: 60_000 }, async () => {
		const run = startMain({ LOG_FORMAT: "pretty", HOST: "127.0.0.1" });
		await new Promise<void>((resolve, reject) => {
			run.child.stdout!.on("data", () => {
				if (/listening on/.test(run.stdout())) resolve();
			});
			run.child.once("exit", (code) => reject(new Error(`exited with ${code}: ${run.stderr()}`)));
		});
		const lines = run.stdout().trimEnd().split("\n");
		expect(
			lines.some((line) => /^\[[\d:.]+\] INFO: Wheelhouse listening on http:\/\/127\.0\.0\.1:\d+/.test(line)),
		).toBe(true);
		for (const line of lines) expect(line.startsWith("{")).toBe(false);
		run.child.kill("SIGTERM");
		await once(run.child, "exit");
	});
});
