/**
 * One writer of the repository's dist/ at a time. Test files run in parallel, and several build
 * into dist/ (`npm run build` of a pasted example, `npm start`'s build of a stale tree, the page's
 * build): two builds writing the same files, or a server starting from files another build is
 * rewriting, fail at random. A test holds the lock from its build until its servers have started.
 * The lock is a directory (mkdir is atomic); one left by a killed test run goes stale after 10 min.
 */
import { createHash } from "node:crypto";
import { mkdirSync, rmSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { setTimeout as sleep } from "node:timers/promises";
import { repoRoot } from "./main-process.js";

const STALE_MS = 10 * 60_000;

/** Waits for dist/ to be free, takes it, and returns the release (idempotent). */
export async function holdDist(waitMs = 300_000): Promise<() => void> {
	const lock = path.join(tmpdir(), `wh-dist-lock-${createHash("sha1").update(repoRoot).digest("hex").slice(0, 12)}`);
	const deadline = Date.now() + waitMs;
	for (;;) {
		try {
			mkdirSync(lock);
			break;
		} catch (err) {
			if ((err as NodeJS.ErrnoException).code !== "EEXIST") throw err;
			const age = (() => {
				try {
					return Date.now() - statSync(lock).mtimeMs;
				} catch {
					return 0;
				}
			})();
			if (age > STALE_MS) rmSync(lock, { recursive: true, force: true });
			else if (Date.now() > deadline) throw new Error(`dist/ stayed held by another test for ${waitMs} ms (${lock})`);
			else await sleep(200);
		}
	}
	let released = false;
	return () => {
		if (released) return;
		released = true;
		rmSync(lock, { recursive: true, force: true });
	};
}
