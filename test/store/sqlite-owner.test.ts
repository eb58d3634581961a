/**
 * One server process per database file: the store takes ownership of the file when it opens it
 * (src/store/owner-lock.ts). Other processes are real child processes.
 */
import { type ChildProcess, spawn } from "node:child_process";
import { once } from "node:events";
import { mkdtempSync, rmSync } from "node:fs";
import { hostname, tmpdir } from "node:os";
import { join } from "node:path";
import Database from "better-sqlite3";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { openSqliteStore, type SqliteSessionStore } from "../../src/store/sqlite/index.js";
import { newSession } from "./contract.js";

let dir: string;
const children: ChildProcess[] = [];
const stores: SqliteSessionStore[] = [];
beforeEach(() => {
	dir = mkdtempSync(join(tmpdir(), "wheelhouse-owner-"));
});
afterEach(async () => {
	for (const s of stores.splice(0)) await s.close();
	for (const c of children.splice(0)) if (c.exitCode === null) c.kill("SIGKILL");
	rmSync(dir, { recursive: true, force: true });
});

function open(path: string, options: Parameters<typeof openSqliteStore>[0] = {}): SqliteSessionStore {
	const s = openSqliteStore({ path, ...options });
	stores.push(s);
	return s;
}

async function hold(path: string, mode: "own" | "other-host"): Promise<ChildProcess> {
	const child = spawn(
		process.execPath,
		["--import", "tsx", join(import.meta.dirname, "fixtures", "hold-store.ts"), path, mode],
		{
			stdio: ["ignore", "pipe", "pipe"],
		},
	);
	children.push(child);
	let err = "";
	child.stderr!.on("data", (d) => {
		err += d;
	});
	await new Promise<void>((resolve, reject) => {
		child.stdout!.on("data", (d) => String(d).includes("ready") && resolve());
		child.once("exit", (code) => reject(new Error(`holder exited with ${code}: ${err}`)));
	});
	return child;
}

function owner(path: string): { pid: number; host: string } | undefined {
	const db = new Database(path, { readonly: true });
	try {
		return db.prepare("SELECT pid, host FROM wheelhouse_owner").get() as { pid: number; host: string } | undefined;
	} finally {
		db.close();
	}
}

describe("SQLite store ownership of its file", () => {
	it("refuses a second store on the same file in this process until the first one closes", async () => {
		const path = join(dir, "a.db");
		const first = open(path);
		await first.createSession(newSession("s1"));
		expect(() => openSqliteStore({ path })).toThrow(/already open in this process; close that store first/);
		await first.close();
		expect(owner(path)).toBeUndefined(); // released on close
		const second = open(path);
		expect((await second.getSession("s1"))?.id).toBe("s1");
		expect(owner(path)).toEqual({ pid: process.pid, host: hostname() });
	});

	it("takes over a row left by an earlier process with this process's pid (a restarted container's pid 1)", async () => {
		const path = join(dir, "d.db");
		open(path).close();
		const db = new Database(path);
		db.prepare("INSERT INTO wheelhouse_owner VALUES (1, 'earlier-run', ?, ?, 1, ?)").run(
			process.pid,
			hostname(),
			Date.now(),
		);
		db.close();
		open(path);
		expect(owner(path)).toEqual({ pid: process.pid, host: hostname() });
	});

	it("refuses a file a live process on this host owns, naming it; takes it at once after that process is killed", {
		timeout: 30_000,
	}, async () => {
		const path = join(dir, "b.db");
		const child = await hold(path, "own");
		expect(() => openSqliteStore({ path })).toThrow(
			new RegExp(
				`in use by another Wheelhouse process \\(pid ${child.pid} on host .*\\)\\. One server process per database file`,
			),
		);
		const exited = once(child, "exit");
		child.kill("SIGKILL");
		await exited;
		// The SIGKILLed owner could not release its row; its process is gone, so the file is taken without waiting.
		expect(owner(path)?.pid).toBe(child.pid);
		open(path);
		expect(owner(path)?.pid).toBe(process.pid);
	});

	it("waits for an owner on another host to go stale, and refuses one that keeps its heartbeat fresh", {
		timeout: 30_000,
	}, async () => {
		const path = join(dir, "c.db");
		const child = await hold(path, "other-host");
		expect(() => openSqliteStore({ path, lockStaleMs: 300, lockHeartbeatMs: 50 })).toThrow(
			/in use by another Wheelhouse process \(pid 4242 on host some-other-host, .*\); its lock did not expire within 300 ms/,
		);
		const exited = once(child, "exit");
		child.kill("SIGKILL");
		await exited;
		// Its last heartbeat is fresh: this open waits until it is older than lockStaleMs, then takes the file.
		open(path, { lockStaleMs: 300, lockHeartbeatMs: 50 });
		expect(owner(path)).toEqual({ pid: process.pid, host: hostname() });
	});
});
