/**
 * What both memory benches (index.ts, per-unit.ts) need of a server process: a free port, its
 * resident set, an SSE stream read to its end, and the median of their rounds.
 */
import { execFileSync } from "node:child_process";
import { once } from "node:events";
import { readFileSync } from "node:fs";
import { request } from "node:http";
import { createServer } from "node:net";

/** A free loopback port (closed again before the server takes it). */
export async function freePort(): Promise<number> {
	const probe = createServer();
	probe.listen(0, "127.0.0.1");
	await once(probe, "listening");
	const { port } = probe.address() as { port: number };
	probe.close();
	await once(probe, "close");
	return port;
}

/** The process's resident set in MB (Linux: /proc; elsewhere: ps). */
export function rssMb(pid: number): number {
	try {
		const status = readFileSync(`/proc/${pid}/status`, "utf8");
		const kb = Number(/VmRSS:\s+(\d+)/.exec(status)?.[1]);
		if (kb > 0) return kb / 1024;
	} catch {
		// not Linux: ask ps
	}
	return Number(execFileSync("ps", ["-o", "rss=", "-p", String(pid)], { encoding: "utf8" }).trim()) / 1024;
}

/** Reads an SSE stream (a GET, or a POST of `body`) to its end; resolves with its event count. */
export function readStream(url: string, body: string | undefined): Promise<number> {
	return new Promise((resolve, reject) => {
		const req = request(
			url,
			{
				method: body === undefined ? "GET" : "POST",
				headers: { accept: "text/event-stream", "content-type": "application/json" },
				agent: false,
			},
			(res) => {
				if (res.statusCode !== 200) reject(new Error(`${url}: HTTP ${res.statusCode}`));
				let events = 0;
				let tail = "";
				res.setEncoding("utf8");
				res.on("data", (chunk: string) => {
					const text = tail + chunk;
					for (let at = text.indexOf("\n\n"); at >= 0; at = text.indexOf("\n\n", at + 2)) events++;
					tail = text.slice(text.lastIndexOf("\n\n") + 2);
				});
				res.on("end", () => resolve(events));
				res.on("error", reject);
			},
		);
		req.on("error", reject);
		req.end(body);
	});
}

export function median(values: number[]): number {
	const sorted = [...values].sort((a, b) => a - b);
	const mid = Math.floor(sorted.length / 2);
	return sorted.length % 2 ? sorted[mid]! : (sorted[mid - 1]! + sorted[mid]!) / 2;
}
