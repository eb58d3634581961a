/**
 * Restart recovery over real processes: SIGKILL the server in the middle of a tool, start it
 * again on the same SQLite file, and check the interrupted status, the transcript, the queued
 * message, SSE resume from before the restart, and continue.
 */
import { once } from "node:events";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { json, type MainProcess, repoRoot, startMain, stopAll } from "../../helpers/main-process.js";
import { openSse } from "../../helpers/sse.js";

const dirs: string[] = [];
afterEach(() => {
	stopAll();
	for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});

/** The server on `db` with the blocking tool of the fixtures. */
function start(db: string, env: Record<string, string> = {}): Promise<MainProcess> {
	return startMain({
		db,
		env: { WHEELHOUSE_TOOL_MODULES: path.join(repoRoot, "test/server/fixtures/block-tool.ts"), ...env },
	});
}

describe("restart recovery", () => {
	it("after SIGKILL mid-tool: interrupted status, transcript, queue, SSE resume and continue", async () => {
		const dir = mkdtempSync(path.join(tmpdir(), "wheelhouse-restart-"));
		dirs.push(dir);
		const db = path.join(dir, "wheelhouse.db");

		const first = await start(db);
		const id = (await json(`${first.url}/v1/sessions`, "POST", { onInterrupt: "stop" })).body.id;
		const live = await openSse(`${first.url}/v1/sessions/${id}/events`);
		await live.waitForType("session_snapshot");
		const prompt = await json(`${first.url}/v1/sessions/${id}/prompt`, "POST", { message: "/tool block {}" });
		expect(prompt.status).toBe(202);
		await live.waitForType("tool_execution_start");
		const queued = await json(`${first.url}/v1/sessions/${id}/follow-up`, "POST", { message: "after the restart" });
		expect(queued.status).toBe(202);
		await live.waitForType("queue_update");
		const agentStartId = live.events.find((e) => e.event === "agent_start")!.id!;
		const assistantEnd = live.events.find((e) => e.event === "message_end" && e.data.message.role === "assistant")!;
		live.close();
		first.child.kill("SIGKILL");
		await once(first.child, "exit");

		const second = await start(db);
		const state = (await json(`${second.url}/v1/sessions/${id}`)).body;
		expect(state.status).toBe("interrupted");
		expect(state.interruptedAt).toBeTypeOf("number");
		expect(state.queue.followUpCount).toBe(1);
		const transcript = (await json(`${second.url}/v1/sessions/${id}/messages`)).body.messages;
		expect(transcript.map((m: any) => m.role)).toEqual(["user", "assistant", "toolResult"]);
		expect(transcript[2].isError).toBe(true);

		// SSE resume with an id from before the restart replays the persisted events after it.
		const resumed = await openSse(`${second.url}/v1/sessions/${id}/events`, {
			headers: { "last-event-id": String(agentStartId) },
		});
		const replayed = await resumed.waitFor((e) => e.id === assistantEnd.id);
		expect(replayed.data).toEqual(assistantEnd.data);
		expect(resumed.events[0].id).toBe(agentStartId + 1);

		// continue resumes from the tool result, then the queued follow-up runs.
		const cont = await json(`${second.url}/v1/sessions/${id}/continue`, "POST");
		expect(cont.status).toBe(202);
		expect(cont.body.firstEventId).toBeGreaterThan(assistantEnd.id!);
		const end = await resumed.waitForType("agent_end", 15_000);
		const texts = end.data.messages.filter((m: any) => m.role === "assistant").map((m: any) => m.content[0].text);
		expect(texts[0]).toMatch(/^Tool results: block \(error\): The tool call was interrupted/);
		expect(texts.at(-1)).toBe("after the restart");
		const after = (await json(`${second.url}/v1/sessions/${id}`)).body;
		expect(after.status).toBe("idle");
		expect(after.queue.followUpCount).toBe(0);
		resumed.close();
		second.child.kill("SIGTERM");
		await once(second.child, "exit");
	}, 90_000);

	it("a second server on the same database file stops at startup and leaves the first one's run alone", {
		timeout: 60_000,
	}, async () => {
		const dir = mkdtempSync(path.join(tmpdir(), "wheelhouse-restart-"));
		dirs.push(dir);
		const db = path.join(dir, "wheelhouse.db");
		const first = await start(db);
		const id = (await json(`${first.url}/v1/sessions`, "POST", {})).body.id;
		const live = await openSse(`${first.url}/v1/sessions/${id}/events`);
		await live.waitForType("session_snapshot");
		expect((await json(`${first.url}/v1/sessions/${id}/prompt`, "POST", { message: "/tool block {}" })).status).toBe(
			202,
		);
		await live.waitForType("tool_execution_start");

		const second = await start(db).then(
			() => "listening",
			(error: Error) => error.message,
		);
		expect(second).toMatch(/server exited with 1 before listening/);
		expect(second).toMatch(
			/in use by another Wheelhouse process \(pid \d+ on host .*\)\. One server process per database file/,
		);
		// The first server still owns its run: not marked interrupted by the second one's recovery.
		const state = await json(`${first.url}/v1/sessions/${id}`);
		expect(state.body).toMatchObject({ status: "running", interruptedAt: null });
		live.close();
	});

	it("after SIGKILL mid-stream: the partial answer is not in the transcript and continue answers again", async () => {
		const dir = mkdtempSync(path.join(tmpdir(), "wheelhouse-restart-"));
		dirs.push(dir);
		const db = path.join(dir, "wheelhouse.db");
		const first = await start(db, { WHEELHOUSE_FAUX_DELAY_MS: "20" });
		const id = (await json(`${first.url}/v1/sessions`, "POST", { onInterrupt: "stop" })).body.id;
		const words = Array.from({ length: 200 }, (_, i) => `w${i}`).join(" ");
		const live = await openSse(`${first.url}/v1/sessions/${id}/events`);
		await live.waitForType("session_snapshot");
		await json(`${first.url}/v1/sessions/${id}/prompt`, "POST", { message: words });
		await live.waitFor((e) => e.event === "message_update" && e.data.assistantMessageEvent.delta === "w3 ");
		live.close();
		first.child.kill("SIGKILL");
		await once(first.child, "exit");

		const second = await start(db);
		const state = (await json(`${second.url}/v1/sessions/${id}`)).body;
		expect(state.status).toBe("interrupted");
		const transcript = (await json(`${second.url}/v1/sessions/${id}/messages`)).body.messages;
		expect(transcript.map((m: any) => m.role)).toEqual(["user"]);
		const events = await openSse(`${second.url}/v1/sessions/${id}/events?after=${state.lastEventId}`);
		expect((await json(`${second.url}/v1/sessions/${id}/continue`, "POST")).status).toBe(202);
		const end = await events.waitForType("agent_end", 15_000);
		expect(end.data.messages.at(-1).content[0].text).toBe(words);
		events.close();
	}, 90_000);
});
