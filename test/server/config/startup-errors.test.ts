/**
 * The real process (`src/main.ts`) refuses a bad configuration with one line on stderr naming the
 * variable and the fix, and exit code 1 — no stack trace — and writes readable log lines when
 * `LOG_FORMAT=pretty`.
 */
import { once } from "node:events";
import { afterEach, describe, expect, it } from "vitest";
import { refusedStartup, spawnMain, stopAll } from "../../helpers/main-process.js";

afterEach(stopAll);

describe("startup", () => {
	it("an unknown default model is one line naming the variable, and exit code 1", { timeout: 60_000 }, async () => {
		const { code, stderr } = await refusedStartup({ WHEELHOUSE_DEFAULT_MODEL: "acme/none" });
		expect(code).toBe(1);
		expect(stderr.trimEnd().split("\n"), stderr).toHaveLength(1);
		expect(stderr).toMatch(/^Invalid configuration: WHEELHOUSE_DEFAULT_MODEL: Unknown model "acme\/none"/);
	});

	it("LOG_FORMAT=pretty writes readable lines", { timeout: 60_000 }, async () => {
		const run = spawnMain({ LOG_FORMAT: "pretty", HOST: "127.0.0.1" });
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
