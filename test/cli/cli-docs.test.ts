/**
 * docs/cli.md's shell examples work as pasted: every `sh` block runs in bash, in order, against a
 * real server (`localhost:3000` becomes its address; nothing else is changed), with `wheelhouse`
 * on the PATH as the source checkout's command, and prints what the block's closing comment says.
 */
import { execFile } from "node:child_process";
import { chmodSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { promisify } from "node:util";
import { afterAll, beforeAll, expect, it } from "vitest";
import { repoRoot } from "../helpers/main-process.js";
import { startServer, type TestServer } from "../helpers/server.js";

const exec = promisify(execFile);
const doc = readFileSync(path.join(repoRoot, "docs/cli.md"), "utf8");
const blocks = [...doc.matchAll(/```sh\n([\s\S]*?)```/g)].map((m) => m[1]!);

let server: TestServer;
let bin: string;

beforeAll(async () => {
	server = await startServer();
	bin = mkdtempSync(path.join(tmpdir(), "wh-cli-bin-"));
	const command = path.join(bin, "wheelhouse");
	writeFileSync(
		command,
		`#!/bin/sh\nexec "${process.execPath}" --import "${path.join(repoRoot, "node_modules/tsx/dist/esm/index.mjs")}" "${path.join(repoRoot, "src/cli/main.ts")}" "$@"\n`,
	);
	chmodSync(command, 0o755);
});

afterAll(async () => {
	await server?.close();
	rmSync(bin, { recursive: true, force: true });
});

it("every sh block of docs/cli.md prints what its closing comment says", { timeout: 90_000 }, async () => {
	expect(blocks.length).toBeGreaterThanOrEqual(4);
	const host = new URL(server.url).host;
	for (const block of blocks) {
		const expected = [...block.matchAll(/^# (.+)$/gm)].map((m) => m[1]!).filter((line) => line !== "…");
		const { stdout } = await exec("bash", ["-c", `set -e\n${block.replaceAll("localhost:3000", host)}`], {
			cwd: tmpdir(),
			env: { PATH: `${bin}:${process.env.PATH}`, WHEELHOUSE_URL: server.url },
			timeout: 30_000,
		});
		const printed = stdout.split("\n").map((line) => line.replace(/\s+$/, ""));
		for (const line of expected) {
			// Event ids and counts vary with the run; the comment's shape must match.
			const pattern = new RegExp(
				`^${line
					.replace(/[.*+?^${}()|[\]\\]/g, "\\$&")
					.replace(/#\d+/g, "#\\d+")
					.replace(/ +/g, " +")}$`,
			);
			expect(
				printed.some((p) => pattern.test(p)),
				`${line}\nin the output of:\n${block}\n---\n${stdout}`,
			).toBe(true);
		}
	}
});
