/**
 * A real nginx (Debian's package) configured as deploy/nginx.conf, for tests through the proxy.
 * The test's copy of the file differs in the upstream server addresses and the listen port only;
 * everything nginx writes goes to its own prefix folder in a temporary directory (`-p`), the pid
 * file and `daemon off` come from the command line (the file leaves both to the caller), so it
 * runs without root. Where nginx is missing the tests skip with one line; with
 * `TEST_REQUIRE_ALL=1` (CI) that is an error instead.
 */
import { type ChildProcess, spawn } from "node:child_process";
import { chmodSync, closeSync, existsSync, mkdtempSync, openSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { connect } from "node:net";
import { tmpdir } from "node:os";
import path from "node:path";
import { freePort, repoRoot } from "./main-process.js";

export const NGINX = process.env.NGINX_PATH ?? "/usr/sbin/nginx";

/** The configuration the tests run, as deployed. */
export const DEPLOY_NGINX_CONF = path.join(repoRoot, "deploy/nginx.conf");

/** Whether nginx is there; throws when it is not and `TEST_REQUIRE_ALL=1`. */
export function haveNginx(): boolean {
	if (existsSync(NGINX)) return true;
	if (process.env.TEST_REQUIRE_ALL === "1") {
		throw new Error(`TEST_REQUIRE_ALL=1 and no nginx at ${NGINX} (install Debian's nginx package or set NGINX_PATH)`);
	}
	return false;
}

/** The skip line of a test that needs nginx, or its own title. */
export function nginxTitle(title: string): string {
	return existsSync(NGINX)
		? title
		: `${title}: skipped, no nginx at ${NGINX} (apt-get install nginx, or set NGINX_PATH)`;
}

/**
 * deploy/nginx.conf with the `server` lines of each `upstream` block replaced by one line per
 * address in `upstreams` (keeping the parameters of the block's first line: max_fails, ...), and
 * its `listen` port replaced by `127.0.0.1:<listenPort>`. Throws when the file no longer has the
 * shape this relies on (upstream blocks with server lines, one listen line).
 */
export function nginxConfigFor(
	upstreams: string[],
	listenPort: number,
	source = readFileSync(DEPLOY_NGINX_CONF, "utf8"),
): string {
	if (upstreams.length === 0) throw new Error("nginxConfigFor: give at least one upstream address (host:port)");
	// A server line with the newline before it, so the lines dropped leave no blank line behind.
	const serverLine = /\n([ \t]*)server\s+(\S+?)(\s[^;]*)?;[^\n]*/g;
	let blocks = 0;
	const replaced = source.replace(
		/(upstream\s+\w+\s*\{)([\s\S]*?)(\n\s*\})/g,
		(_, open: string, body: string, close: string) => {
			blocks += 1;
			const lines = [...body.matchAll(serverLine)];
			if (lines.length === 0) throw new Error(`${DEPLOY_NGINX_CONF}: an upstream block has no server line`);
			const [, indent, , parameters = ""] = lines[0]!;
			const replacement = upstreams.map((address) => `\n${indent}server ${address}${parameters};`).join("");
			let index = 0;
			return `${open}${body.replace(serverLine, () => (index++ === 0 ? replacement : ""))}${close}`;
		},
	);
	if (blocks === 0) throw new Error(`${DEPLOY_NGINX_CONF}: no upstream block`);
	const listens = replaced.match(/^\s*listen\s+\d+\s*;/gm) ?? [];
	if (listens.length !== 1)
		throw new Error(`${DEPLOY_NGINX_CONF}: expected one \`listen <port>;\` line, found ${listens.length}`);
	return replaced.replace(/^(\s*)listen\s+\d+\s*;/m, `$1listen 127.0.0.1:${listenPort};`);
}

export interface Nginx {
	port: number;
	url: string;
	/** The generated configuration nginx runs. */
	config: string;
	/** nginx's access log (deploy/nginx.conf writes it to stdout), one line per request. */
	accessLog(): string[];
	/** nginx's error log (stderr). */
	errors(): string;
	stop(): Promise<void>;
}

/** Starts nginx as deploy/nginx.conf configures it, in front of `upstreams`; resolves once it accepts connections. */
export async function startNginx(upstreams: string[]): Promise<Nginx> {
	const port = await freePort();
	const prefix = mkdtempSync(path.join(tmpdir(), "wheelhouse-nginx-"));
	// Run as root, nginx's workers are `nobody`: they must reach the temp folders the master creates here.
	chmodSync(prefix, 0o755);
	const config = nginxConfigFor(upstreams, port);
	const configPath = path.join(prefix, "nginx.conf");
	writeFileSync(configPath, config);
	// The access log goes to /dev/stdout, which nginx opens by name: a socket (what a piped stdio
	// is here) cannot be opened so, a file can.
	const accessLogPath = path.join(prefix, "stdout.log");
	const stdoutFd = openSync(accessLogPath, "a");
	const child: ChildProcess = spawn(
		NGINX,
		["-p", `${prefix}/`, "-c", configPath, "-g", `daemon off; pid ${path.join(prefix, "nginx.pid")};`],
		{ stdio: ["ignore", stdoutFd, "pipe"] },
	);
	closeSync(stdoutFd);
	let stderr = "";
	child.stderr!.on("data", (chunk: Buffer) => {
		stderr += chunk.toString();
	});
	const exited = new Promise<void>((resolve) => child.once("exit", () => resolve()));
	let running = true;
	void exited.then(() => {
		running = false;
	});
	const stop = async () => {
		if (running) {
			child.kill("SIGTERM");
			await exited;
		}
		rmSync(prefix, { recursive: true, force: true });
	};
	const deadline = Date.now() + 10_000;
	for (;;) {
		if (!running) {
			rmSync(prefix, { recursive: true, force: true });
			throw new Error(`nginx exited before listening:\n${stderr}`);
		}
		if (await accepts(port)) break;
		if (Date.now() > deadline) {
			await stop();
			throw new Error(`nginx did not listen on ${port} within 10 s:\n${stderr}`);
		}
		await new Promise((resolve) => setTimeout(resolve, 25));
	}
	return {
		port,
		url: `http://127.0.0.1:${port}`,
		config,
		accessLog: () => (existsSync(accessLogPath) ? readFileSync(accessLogPath, "utf8").split("\n").filter(Boolean) : []),
		errors: () => stderr,
		stop,
	};
}

function accepts(port: number): Promise<boolean> {
	return new Promise((resolve) => {
		const socket = connect(port, "127.0.0.1");
		socket.once("connect", () => {
			socket.destroy();
			resolve(true);
		});
		socket.once("error", () => resolve(false));
	});
}
