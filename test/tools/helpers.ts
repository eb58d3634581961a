import { type ChildProcess, spawn } from "node:child_process";
import { createHash } from "node:crypto";
import { mkdirSync, readFileSync, renameSync, writeFileSync } from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import ts from "typescript";
import type { McpManager, McpServerStatus } from "../../src/tools/mcp/index.js";

export const repoRoot = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../..");
export const fixtureServer = path.join(repoRoot, "test/tools/fixtures/mcp-server.ts");

let compiled: string | undefined;

/**
 * The fixture as plain JavaScript, transpiled once per test process with the TypeScript compiler
 * into node_modules/.cache (so its SDK imports resolve): a child started with plain `node` is up
 * in about half the time of `node --import tsx`, which adds up over the many restarts the MCP
 * tests make. Written to a temporary name and renamed, so parallel workers never read half a file;
 * named by a hash of its text, because node_modules (and so the cache) may be shared by several
 * checkouts whose fixtures differ.
 */
function compiledFixture(): string {
	if (compiled) return compiled;
	const dir = path.join(repoRoot, "node_modules/.cache/wheelhouse-test");
	mkdirSync(dir, { recursive: true });
	const out = ts.transpileModule(readFileSync(fixtureServer, "utf8"), {
		compilerOptions: { module: ts.ModuleKind.ESNext, target: ts.ScriptTarget.ES2022 },
	}).outputText;
	const file = path.join(dir, `mcp-server.${createHash("sha256").update(out).digest("hex").slice(0, 16)}.mjs`);
	const temp = `${file}.${process.pid}.${Date.now()}`;
	writeFileSync(temp, out);
	renameSync(temp, file);
	compiled = file;
	return file;
}

/** The stdio command that runs the fixture MCP server (a real child process). */
export function fixtureCommand(): { command: string; args: string[] } {
	return { command: process.execPath, args: [compiledFixture()] };
}

/** Starts the fixture over Streamable HTTP in a child process; resolves with its port once it listens. */
export async function startHttpFixture(port = 0): Promise<{ child: ChildProcess; port: number; url: string }> {
	const child = spawn(process.execPath, [compiledFixture(), "--http", String(port)], {
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
