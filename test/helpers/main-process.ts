/**
 * Runs the real server entry (src/main.ts, through tsx's loader) as a child process, for tests of
 * restarts, crashes, shutdown and refused startups. `stopAll()` (in `afterEach`) SIGKILLs what is
 * still running.
 */
import { type ChildProcess, spawn } from "node:child_process";
import { once } from "node:events";
import { createServer } from "node:net";
import path from "node:path";
import { fileURLToPath } from "node:url";

export const repoRoot = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../..");

export interface MainProcess {
	child: ChildProcess;
	port: number;
	url: string;
	/** Everything written to stdout and stderr so far. */
	output(): string;
	/** Resolves once the output matches `pattern`. */
	waitForOutput(pattern: RegExp): Promise<void>;
	/** Resolves with the exit code and signal. */
	exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
}

const running = new Set<ChildProcess>();

/** A port that was free a moment ago. */
export async function freePort(): Promise<number> {
	const server = createServer().listen(0, "127.0.0.1");
	await once(server, "listening");
	const { port } = server.address() as { port: number };
	server.close();
	return port;
}

/** A started `src/main.ts` whose stdout and stderr are kept apart. */
export interface SpawnedMain {
	child: ChildProcess;
	stdout(): string;
	stderr(): string;
}

/**
 * Spawns `src/main.ts` with `env` over an in-memory store on any free port (`PORT=0`) and waits
 * for nothing: for startups that must fail, or whose output the test reads itself.
 */
export function spawnMain(env: Record<string, string>): SpawnedMain {
	const child = spawn(process.execPath, ["--import", "tsx", "src/main.ts"], {
		cwd: repoRoot,
		env: { PATH: process.env.PATH, PORT: "0", WHEELHOUSE_STORE: "memory", ...env },
		stdio: ["ignore", "pipe", "pipe"],
	});
	running.add(child);
	child.once("exit", () => running.delete(child));
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

/** Runs the server with `env` (see `spawnMain`); resolves with its exit code and stderr once it exits. */
export async function refusedStartup(env: Record<string, string>): Promise<{ code: number | null; stderr: string }> {
	const run = spawnMain(env);
	const [code] = (await once(run.child, "exit")) as [number | null];
	return { code, stderr: run.stderr() };
}

/** Starts `src/main.ts` with the SQLite store at `db`; resolves once it listens. */
export async function startMain(options: {
	db: string;
	port?: number;
	env?: Record<string, string>;
}): Promise<MainProcess> {
	const port = options.port ?? (await freePort());
	const { child } = spawnMain({
		PORT: String(port),
		HOST: "127.0.0.1",
		LOG_LEVEL: "info",
		WHEELHOUSE_STORE: "sqlite",
		WHEELHOUSE_DB: options.db,
		WHEELHOUSE_FAUX_DELAY_MS: "0",
		...options.env,
	});
	let output = "";
	const outputWaiters = new Set<() => void>();
	const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) =>
		child.once("exit", (code, signal) => resolve({ code, signal })),
	);
	await new Promise<void>((resolve, reject) => {
		const onData = (chunk: Buffer) => {
			output += chunk.toString();
			for (const waiter of [...outputWaiters]) waiter();
			if (/listening on/i.test(output)) resolve();
		};
		child.stdout!.on("data", onData);
		child.stderr!.on("data", onData);
		void exited.then(({ code }) => reject(new Error(`server exited with ${code} before listening:\n${output}`)));
	});
	const waitForOutput = (pattern: RegExp) =>
		new Promise<void>((resolve) => {
			const check = () => {
				if (!pattern.test(output)) return;
				outputWaiters.delete(check);
				resolve();
			};
			outputWaiters.add(check);
			check();
		});
	return { child, port, url: `http://127.0.0.1:${port}`, output: () => output, waitForOutput, exited };
}

/** SIGKILLs every child still running. */
export function stopAll(): void {
	for (const child of running) child.kill("SIGKILL");
	running.clear();
}

/** `fetch` with a JSON body; resolves with the status and the parsed body. */
export async function json(
	url: string,
	method = "GET",
	body?: unknown,
	headers: Record<string, string> = {},
): Promise<{ status: number; body: any }> {
	const res = await fetch(url, {
		method,
		headers: body === undefined ? headers : { "content-type": "application/json", ...headers },
		body: body === undefined ? undefined : JSON.stringify(body),
	});
	const text = await res.text();
	return { status: res.status, body: text ? JSON.parse(text) : undefined };
}
