/**
 * A process killed with SIGKILL in the middle of a write burst leaves a database that opens,
 * passes the integrity check, holds every write that was acknowledged as durable, has a gap-free
 * event log, and never reuses an event id the dead process handed out.
 */
import { spawn } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createInterface } from "node:readline";
import { afterEach, beforeEach, expect, it } from "vitest";
import type { UserMessage } from "../../src/ai/types.js";
import { openSqliteStore } from "../../src/store/sqlite/index.js";

let dir: string;
beforeEach(() => {
	dir = mkdtempSync(join(tmpdir(), "wheelhouse-store-crash-"));
});
afterEach(() => rmSync(dir, { recursive: true, force: true }));

it.each(["inline", "thread"])(
	"survives SIGKILL mid-burst with a consistent, openable database (%s writer)",
	async (mode) => {
		const path = join(dir, "crash.db");
		const fixture = join(import.meta.dirname, "fixtures", "crash-writer.ts");
		const child = spawn(process.execPath, ["--import", "tsx", fixture, path, mode], {
			stdio: ["ignore", "pipe", "pipe"],
		});
		let stderr = "";
		child.stderr.on("data", (d) => {
			stderr += d;
		});
		const exited = new Promise<NodeJS.Signals | null>((resolve) =>
			child.on("exit", (_code, signal) => resolve(signal)),
		);

		// Wait for 40 acknowledged bursts, then kill without warning while the child keeps writing.
		let acked = { lastId: 0, messages: 0, queued: 0 };
		let lines = 0;
		const killed = new Promise<void>((resolve, reject) => {
			const rl = createInterface({ input: child.stdout });
			rl.on("line", (line) => {
				const [lastId, messages, queued] = line.split(" ").map(Number);
				acked = { lastId: lastId ?? 0, messages: messages ?? 0, queued: queued ?? 0 };
				if (++lines === 40) {
					child.kill("SIGKILL");
					resolve();
				}
			});
			child.on("exit", () => (lines < 40 ? reject(new Error(`child exited early: ${stderr}`)) : resolve()));
		});
		await killed;
		expect(await exited).toBe("SIGKILL");
		expect(acked.messages).toBeGreaterThanOrEqual(40);

		const store = openSqliteStore({ path, maxEventsPerSession: 10_000_000 });
		try {
			const session = await store.getSession("s1");
			expect(session?.status).toBe("running");

			// Every acknowledged message is there, in order, and the count matches the rows.
			const count = (await store.countMessages("s1")) ?? 0;
			expect(count).toBeGreaterThanOrEqual(acked.messages);
			expect(session?.messageCount).toBe(count);
			const texts: string[] = [];
			for (let offset = 0; offset < count; offset += 1000) {
				for (const m of (await store.listMessages("s1", { offset, limit: 1000 }))?.messages ?? []) {
					texts.push((m as UserMessage).content as string);
				}
			}
			expect(texts).toEqual(Array.from({ length: count }, (_, i) => `m${i}`));
			expect((await store.listQueued("s1")).length).toBeGreaterThanOrEqual(acked.queued);

			// The event log on disk is 1..n without gaps (batches commit whole), n covering every durable step.
			let after = 0;
			let expected = 1;
			for (;;) {
				const page = await store.readEvents("s1", after, 10_000);
				if (page.length === 0) break;
				for (const e of page) expect(e.id).toBe(expected++);
				after = page[page.length - 1]?.id ?? after;
			}
			expect(after).toBeGreaterThanOrEqual(acked.messages * 250 - 50);

			// Ids the dead process handed out (even unflushed ones) are never handed out again.
			await store.openSession("s1");
			const next = store.appendEvent("s1", "agent_end", "{}") ?? 0;
			expect(next).toBeGreaterThan(acked.lastId);

			expect(await store.recoverInterrupted(Date.now())).toEqual(["s1"]);
		} finally {
			await store.close();
		}
	},
);
