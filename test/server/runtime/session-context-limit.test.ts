/**
 * The bound on what one session holds in memory when compaction does not bound it
 * (`WHEELHOUSE_MAX_SESSION_CONTEXT_BYTES`): with compaction off, a session past the limit takes no
 * further prompt (409 `CONTEXT_TOO_LARGE`, naming the limit) until a manual compaction releases
 * its older messages, after which it goes on; nothing stored is lost on the way.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { json, type MainProcess, startMain, stopAll } from "../../helpers/main-process.js";

let dir: string | undefined;
afterEach(() => {
	stopAll();
	if (dir) rmSync(dir, { recursive: true, force: true });
	dir = undefined;
});

const LIMIT = 2 * 1024 * 1024;
/** Each prompt is one word of this many characters; the echo model answers it with the same. */
const PROMPT_CHARS = 600_000;

async function waitIdle(server: MainProcess, id: string): Promise<void> {
	await expect
		.poll(async () => (await json(`${server.url}/v1/sessions/${id}`)).body.status, { timeout: 60_000 })
		.toBe("idle");
}

describe("WHEELHOUSE_MAX_SESSION_CONTEXT_BYTES", () => {
	it("refuses a run on a session past it until a compaction releases its older messages", async () => {
		dir = mkdtempSync(path.join(tmpdir(), "wheelhouse-context-limit-"));
		const server = await startMain({
			db: path.join(dir, "w.db"),
			env: { WHEELHOUSE_COMPACTION: "off", WHEELHOUSE_MAX_SESSION_CONTEXT_BYTES: String(LIMIT) },
		});
		const id = (await json(`${server.url}/v1/sessions`, "POST", {})).body.id as string;
		const prompt = (n: number) =>
			json(`${server.url}/v1/sessions/${id}/prompt`, "POST", { message: `${n}${"c".repeat(PROMPT_CHARS)}` });
		for (const n of [1, 2]) {
			expect((await prompt(n)).status).toBe(202);
			await waitIdle(server, id);
		}
		// Two prompts and their answers: past the limit.
		const refused = await prompt(3);
		expect(refused.status).toBe(409);
		expect(refused.body.error.code).toBe("CONTEXT_TOO_LARGE");
		expect(refused.body.error.message).toContain("WHEELHOUSE_MAX_SESSION_CONTEXT_BYTES");
		expect(refused.body.error.details.max).toBe(LIMIT);
		expect(refused.body.error.details.bytes).toBeGreaterThan(LIMIT);

		// A manual compaction is the way out: it is never refused, and the session goes on.
		const compacted = await json(`${server.url}/v1/sessions/${id}/compact`, "POST", { keepRecentTokens: 1000 });
		expect(compacted.status).toBe(200);
		expect((await prompt(3)).status).toBe(202);
		await waitIdle(server, id);

		// Everything is still in the store, in order.
		const page = await json(`${server.url}/v1/sessions/${id}/messages?limit=100`);
		expect(page.body.messages.map((m: { role: string }) => m.role)).toEqual([
			"user",
			"assistant",
			"user",
			"assistant",
			"compaction",
			"user",
			"assistant",
		]);
		expect(page.body.messages[0].content[0].text).toBe(`1${"c".repeat(PROMPT_CHARS)}`);
		expect(page.body.messages[6].content[0].text).toBe(`3${"c".repeat(PROMPT_CHARS)}`);
	}, 120_000);
});
