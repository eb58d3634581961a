/**
 * A private `redis-server` process for one test, so a test can stop and restart Redis without
 * touching the shared one (127.0.0.1:6379) other tests use. No persistence: a restart comes back
 * empty, as a Redis that lost its memory does. Where the binary is missing the tests skip with one
 * line; with `TEST_REQUIRE_ALL=1` (CI) that is an error instead.
 */
import { type ChildProcess, spawn } from "node:child_process";
import { existsSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { freePort } from "./main-process.js";

export const REDIS_SERVER = process.env.REDIS_SERVER_PATH ?? "/usr/bin/redis-server";

/** Whether redis-server is there; throws when it is not and `TEST_REQUIRE_ALL=1`. */
export function haveRedisServer(): boolean {
	if (existsSync(REDIS_SERVER)) return true;
	if (process.env.TEST_REQUIRE_ALL === "1") {
		throw new Error(
			`TEST_REQUIRE_ALL=1 and no redis-server at ${REDIS_SERVER} (install the redis-server package or set REDIS_SERVER_PATH)`,
		);
	}
	return false;
}

export interface PrivateRedis {
	port: number;
	/** `redis://127.0.0.1:<port>`. */
	url: string;
	/** Stops the server (SIGKILL: no goodbye to clients); its port stays reserved for `start()`. */
	kill(): Promise<void>;
	/** Starts it again on the same port, empty. */
	start(): Promise<void>;
	/** Stops it for good and removes its folder. */
	close(): Promise<void>;
	/** What the server has logged since it was last started. */
	log(): string;
}

/**
 * Starts a redis-server on a free loopback port; resolves once it accepts commands. `args` are
 * more configuration directives on its command line (`["--maxmemory", "2mb"]`).
 */
export async function startPrivateRedis(args: string[] = []): Promise<PrivateRedis> {
	const port = await freePort();
	const dir = mkdtempSync(path.join(tmpdir(), "wheelhouse-redis-"));
	let child: ChildProcess | undefined;
	let exited: Promise<void> = Promise.resolve();
	let output = "";

	const start = async () => {
		const proc = spawn(
			REDIS_SERVER,
			["--port", String(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no", "--dir", dir, ...args],
			{ stdio: ["ignore", "pipe", "pipe"] },
		);
		child = proc;
		exited = new Promise((resolve) => proc.once("exit", () => resolve()));
		output = "";
		await new Promise<void>((resolve, reject) => {
			const onData = (chunk: Buffer) => {
				output += chunk.toString();
				if (/Ready to accept connections/.test(output)) resolve();
			};
			proc.stdout!.on("data", onData);
			proc.stderr!.on("data", onData);
			void exited.then(() => reject(new Error(`redis-server exited before it was ready:\n${output}`)));
		});
	};
	const kill = async () => {
		if (child && child.exitCode === null && child.signalCode === null) {
			child.kill("SIGKILL");
			await exited;
		}
	};
	await start();
	return {
		port,
		url: `redis://127.0.0.1:${port}`,
		kill,
		start,
		async close() {
			await kill();
			rmSync(dir, { recursive: true, force: true });
		},
		log: () => output,
	};
}
