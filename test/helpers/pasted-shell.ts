/**
 * A pasted shell block that keeps running (a server started with `npm start` or in the background):
 * started in bash as the leader of its own process group, so that the test can stop it with every
 * job it started (`stop`, or `killPastedShells()` after each test).
 */
import { type ChildProcess, spawn } from "node:child_process";
import { waitUntil } from "./cluster.js";
import { repoRoot } from "./main-process.js";

export interface PastedShell {
	child: ChildProcess;
	/** Everything written to stdout and stderr so far. */
	output(): string;
	exited: Promise<number | null>;
	/** Sends `signal` to the shell and every process it started; resolves once all of them have exited. */
	stop(signal?: NodeJS.Signals): Promise<void>;
}

/** Every shell started and not yet stopped (its jobs may outlive it). */
const started = new Set<ChildProcess>();

/** Starts `script` in bash in the repository, with PATH, HOME and `env`. */
export function startPastedShell(script: string, env: Record<string, string>): PastedShell {
	const child = spawn("bash", ["-c", script], {
		cwd: repoRoot,
		detached: true,
		env: { PATH: process.env.PATH, HOME: process.env.HOME, ...env },
		stdio: ["ignore", "pipe", "pipe"],
	});
	started.add(child);
	let output = "";
	const keep = (chunk: Buffer) => {
		output += chunk.toString();
	};
	child.stdout!.on("data", keep);
	child.stderr!.on("data", keep);
	const exited = new Promise<number | null>((resolve) => child.once("exit", (code) => resolve(code)));
	return {
		child,
		output: () => output,
		exited,
		async stop(signal = "SIGTERM") {
			signalGroup(child, signal);
			await waitUntil(
				"the pasted block's processes to exit",
				async () => (groupAlive(child) ? undefined : true),
				60_000,
			);
			started.delete(child);
		},
	};
}

function signalGroup(child: ChildProcess, signal: NodeJS.Signals): void {
	try {
		process.kill(-child.pid!, signal);
	} catch {
		// the group is gone
	}
}

function groupAlive(child: ChildProcess): boolean {
	try {
		process.kill(-child.pid!, 0);
		return true;
	} catch {
		return false;
	}
}

/** SIGKILLs every pasted shell not stopped yet, with its jobs. */
export function killPastedShells(): void {
	for (const child of started) signalGroup(child, "SIGKILL");
	started.clear();
}

/** Resolves once `GET url/readyz` answers 200 (a build may come first: minutes on a busy machine). */
export async function pastedServerReady(url: string, shell: PastedShell): Promise<void> {
	// A replica that stopped while its siblings run leaves the shell alive: its output says why.
	await waitUntil(
		`${url}/readyz`,
		async () => {
			if ((await fetch(`${url}/readyz`).catch(() => undefined))?.status === 200) return true;
			if (shell.child.exitCode !== null) throw new Error(`the pasted block exited:\n${shell.output()}`);
			return undefined;
		},
		240_000,
		200,
	).catch((error: Error) => {
		throw new Error(`${error.message}; the pasted block printed:\n${shell.output()}`);
	});
}
