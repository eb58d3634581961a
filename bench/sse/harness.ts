/**
 * What bench/sse's orchestrators (index.ts, observability-cost.ts) share: the real server's
 * session requests — sessions created, the prompt request that streams an answer, sessions
 * deleted — binding a process to one CPU, and the child processes they talk to over IPC.
 */
import { type ChildProcess, execFileSync, fork } from "node:child_process";
import { cpus } from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import type { StreamRequest } from "./client.js";
import type { ServerReply } from "./server-process.js";

const here = path.dirname(fileURLToPath(import.meta.url));

/** Forks `file` of this directory, or of the same directory in `checkout`, through tsx (`flags`: more node flags). */
export function forkTs(file: string, checkout?: string, flags: string[] = []): ChildProcess {
	return fork(checkout ? path.join(checkout, "bench/sse", file) : path.join(here, file), [], {
		cwd: checkout,
		execArgv: ["--import", "tsx", ...flags],
		stdio: ["ignore", "inherit", "inherit", "ipc"],
	});
}

/** The child's next message of `type` (a child's `error` message rejects). */
export function next<T>(child: ChildProcess, type: string): Promise<T> {
	return new Promise((resolve, reject) => {
		const onMessage = (message: { type: string; message?: string }) => {
			if (message.type === "error") {
				child.off("message", onMessage);
				reject(new Error(`child: ${message.message}`));
			} else if (message.type === type) {
				child.off("message", onMessage);
				resolve(message as T);
			}
		};
		child.on("message", onMessage);
	});
}

/** Sends `command` to a server child and resolves with its reply of `type`. */
export async function ask<T extends ServerReply["type"]>(
	child: ChildProcess,
	command: object,
	type: T,
): Promise<Extract<ServerReply, { type: T }>> {
	const reply = next<Extract<ServerReply, { type: T }>>(child, type);
	child.send(command);
	return reply;
}

/**
 * Binds a process, all its threads, to one CPU (`taskset`, util-linux); false where that cannot
 * be done (no `taskset`, one CPU, BENCH_SSE_PIN=0).
 */
export function pinToCpu(pid: number, cpu: number): boolean {
	if (process.env.BENCH_SSE_PIN === "0" || cpus().length < 2) return false;
	try {
		execFileSync("taskset", ["-a", "-cp", String(cpu), String(pid)], { stdio: "ignore" });
		return true;
	} catch {
		return false;
	}
}

/** A prompt the echo model answers with `n` tokens. */
export function words(n: number): string {
	return Array.from({ length: n }, (_, i) => `w${i}`).join(" ");
}

export async function createSessions(url: string, count: number): Promise<string[]> {
	const ids: string[] = [];
	for (let i = 0; i < count; i++) {
		const res = await fetch(`${url}/v1/sessions`, {
			method: "POST",
			headers: { "content-type": "application/json" },
			body: JSON.stringify({ model: "faux/echo" }),
		});
		if (res.status !== 201) throw new Error(`POST /v1/sessions: ${res.status} ${await res.text()}`);
		ids.push(((await res.json()) as { id: string }).id);
	}
	return ids;
}

export function promptRequest(url: string, id: string, message: string): StreamRequest {
	return {
		method: "POST",
		url: `${url}/v1/sessions/${id}/prompt`,
		headers: { accept: "text/event-stream", "content-type": "application/json" },
		body: JSON.stringify({ message }),
	};
}

export async function deleteSessions(url: string, ids: string[]): Promise<void> {
	for (let i = 0; i < ids.length; i += 25) {
		await Promise.all(
			ids.slice(i, i + 25).map(async (id) => {
				const res = await fetch(`${url}/v1/sessions/${id}`, { method: "DELETE" });
				await res.arrayBuffer();
				if (!res.ok) throw new Error(`DELETE /v1/sessions/${id}: ${res.status}`);
			}),
		);
	}
}
