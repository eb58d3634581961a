import { type ChildProcess, spawn } from "node:child_process";
import path from "node:path";
import { fileURLToPath } from "node:url";
import type { McpManager, McpServerStatus } from "../../src/tools/mcp.js";

export const repoRoot = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../..");
export const fixtureServer = path.join(repoRoot, "test/tools/fixtures/mcp-server.ts");

/** The stdio command that runs the fixture MCP server (node with the tsx loader). */
export function fixtureCommand(): { command: string; args: string[] } {
	return { command: process.execPath, args: ["--import", "tsx", fixtureServer] };
}

/** Starts the fixture over Streamable HTTP in a child process; resolves with its port once it listens. */
export async function startHttpFixture(port = 0): Promise<{ child: ChildProcess; port: number; url: string }> {
	const child = spawn(process.execPath, ["--import", "tsx", fixtureServer, "--http", String(port)], {
		cwd: repoRoot,
		stdio: ["ignore", "pipe", "pipe"],
	});
	let stderr = "";
	child.stderr!.on("data", (d) => {
		stderr += d;
	});
	const bound = await new Promise<number>((resolve, reject) => {
		let out = "";
		child.stdout!.on("data", (d) => {
			out += d;
			const match = /listening (\d+)/.exec(out);
			if (match) resolve(Number(match[1]));
		});
		child.once("exit", (code) => reject(new Error(`fixture exited with ${code}: ${stderr}`)));
	});
	return { child, port: bound, url: `http://127.0.0.1:${bound}/mcp` };
}

/** Kills a child and waits for its exit. */
export async function killChild(child: ChildProcess, signal: NodeJS.Signals = "SIGKILL"): Promise<void> {
	if (child.exitCode !== null || child.signalCode !== null) return;
	const exited = new Promise((resolve) => child.once("exit", resolve));
	child.kill(signal);
	await exited;
}

/** Resolves with the first status of `server` that satisfies `predicate` (now or on a later change). */
export function waitForStatus(
	manager: McpManager,
	server: string,
	predicate: (status: McpServerStatus) => boolean,
	timeoutMs = 15_000,
): Promise<McpServerStatus> {
	const now = manager.status().find((s) => s.name === server);
	if (now && predicate(now)) return Promise.resolve(now);
	return new Promise((resolve, reject) => {
		const timer = setTimeout(() => {
			off();
			reject(new Error(`timed out waiting for ${server}; last status ${JSON.stringify(manager.status())}`));
		}, timeoutMs);
		const off = manager.onChange((status) => {
			if (status.name === server && predicate(status)) {
				clearTimeout(timer);
				off();
				resolve(status);
			}
		});
	});
}

/** Re-evaluates `check` after each macrotask until it returns a value other than undefined (bounded). */
export async function eventually<T>(check: () => Promise<T | undefined>, timeoutMs = 10_000): Promise<T> {
	const deadline = Date.now() + timeoutMs;
	for (;;) {
		const value = await check();
		if (value !== undefined) return value;
		if (Date.now() > deadline) throw new Error("condition not met in time");
		await new Promise((r) => setTimeout(r, 20));
	}
}
