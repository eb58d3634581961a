/**
 * Runs a fixture of test/server/fixtures in its own Node process until it SIGKILLs itself (the
 * crash tests' way of dying mid-work) and answers what it printed; any other exit fails the test
 * with the fixture's output.
 */
import { spawn } from "node:child_process";
import { once } from "node:events";
import path from "node:path";
import { expect } from "vitest";

export async function runKilledFixture(fixture: string, args: string[]): Promise<string> {
	const child = spawn(
		process.execPath,
		["--import", "tsx", path.join(import.meta.dirname, "../server/fixtures", fixture), ...args],
		{ stdio: ["ignore", "pipe", "pipe"] },
	);
	let out = "";
	let err = "";
	child.stdout.on("data", (d) => {
		out += d;
	});
	child.stderr.on("data", (d) => {
		err += d;
	});
	const [, signal] = await once(child, "exit");
	expect(signal, `${out}\n${err}`).toBe("SIGKILL");
	return out;
}
