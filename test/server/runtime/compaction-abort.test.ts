/**
 * A manual compaction its client aborts (`POST .../abort` while the summary is being written) is
 * the client's doing: 409 `COMPACTION_ABORTED`, logged at info, nothing at error level; the
 * session is unchanged and usable. Against the real server process, the echo model writing the
 * summary slowly.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { json, startMain, stopAll } from "../../helpers/main-process.js";
import { openSse } from "../../helpers/sse.js";

let dir: string | undefined;
afterEach(() => {
	stopAll();
	if (dir) rmSync(dir, { recursive: true, force: true });
	dir = undefined;
});

/** The server's JSON log lines. */
function logLines(output: string): { level: number; msg: string; [key: string]: unknown }[] {
	return output
		.split("\n")
		.filter((line) => line.startsWith("{"))
		.map((line) => JSON.parse(line));
}

describe("manual compaction aborted by its client", () => {
	it("answers 409 COMPACTION_ABORTED and logs it at info; the session is unchanged", async () => {
		dir = mkdtempSync(path.join(tmpdir(), "wheelhouse-compaction-abort-"));
		const server = await startMain({
			db: path.join(dir, "w.db"),
			env: { WHEELHOUSE_FAUX_DELAY_MS: "100", LOG_FORMAT: "json" },
		});
		const id = (await json(`${server.url}/v1/sessions`, "POST", {})).body.id as string;
		for (const message of ["alpha beta", "gamma delta"]) {
			expect((await json(`${server.url}/v1/sessions/${id}/prompt`, "POST", { message })).status).toBe(202);
			await expect.poll(async () => (await json(`${server.url}/v1/sessions/${id}`)).body.status).toBe("idle");
		}
		const events = await openSse(`${server.url}/v1/sessions/${id}/events`);

		const compacting = json(`${server.url}/v1/sessions/${id}/compact`, "POST", { keepRecentTokens: 0 });
		await events.waitForType("compaction_start");
		expect((await json(`${server.url}/v1/sessions/${id}/abort`, "POST")).status).toBe(200);
		const answer = await compacting;
		expect(answer.status).toBe(409);
		expect(answer.body.error.code).toBe("COMPACTION_ABORTED");
		expect(answer.body.error.message).toContain("aborted");
		const end = await events.waitForType("compaction_end");
		expect(end.data).toMatchObject({ reason: "manual", outcome: "aborted" });
		events.close();

		// Unchanged and usable: no compaction in the transcript, the next prompt runs.
		const messages = (await json(`${server.url}/v1/sessions/${id}/messages`)).body.messages as { role: string }[];
		expect(messages.map((m) => m.role)).toEqual(["user", "assistant", "user", "assistant"]);
		expect((await json(`${server.url}/v1/sessions/${id}`)).body.status).toBe("idle");
		expect((await json(`${server.url}/v1/sessions/${id}/prompt`, "POST", { message: "still here" })).status).toBe(202);

		await server.waitForOutput(/manual compaction aborted by the client/);
		const lines = logLines(server.output());
		const aborted = lines.find((line) => line.msg === "manual compaction aborted by the client");
		expect(aborted?.level).toBe(30); // info
		expect(lines.filter((line) => line.level >= 50)).toEqual([]);
		const response = lines.find((line) => line.msg === "request completed" && (line.res as any)?.statusCode === 409);
		expect(response).toBeDefined();
	});
});
