/**
 * A crash while a tool call waits for approval, as a client lives it: the server process is
 * SIGKILLed, restarted on the same SQLite file, and a client resuming with `Last-Event-ID` learns
 * from the stream alone that the approval no longer waits, that the call failed, and that the run
 * is over; answering the approval says why it is too late; continue shows the model the failed call.
 */
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { json, startMain, stopAll } from "../../helpers/main-process.js";
import { openSse } from "../../helpers/sse.js";

const dirs: string[] = [];
afterEach(() => {
	stopAll();
	for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});

describe("a pending approval across a crash", () => {
	it("is settled on the stream at restart: approval_resolved interrupted, the error result, run_interrupted", {
		timeout: 90_000,
	}, async () => {
		const dir = mkdtempSync(path.join(tmpdir(), "wh-restart-"));
		dirs.push(dir);
		writeFileSync(path.join(dir, "config.json"), JSON.stringify({ tools: { approval: { calculate: "always" } } }));
		const options = { db: path.join(dir, "wh.db"), env: { WHEELHOUSE_CONFIG: path.join(dir, "config.json") } };

		const first = await startMain(options);
		const id = (await json(`${first.url}/v1/sessions`, "POST", { onInterrupt: "stop" })).body.id;
		const events = await openSse(`${first.url}/v1/sessions/${id}/events`);
		const prompt = await json(`${first.url}/v1/sessions/${id}/prompt`, "POST", {
			message: '/tool calculate {"expression": "1"}',
		});
		expect(prompt.status).toBe(202);
		const requested = await events.waitForType("approval_requested", 15_000);
		const { toolCallId } = requested.data;
		const lastSeen = events.events.at(-1)!.id!;
		events.close();
		first.child.kill("SIGKILL");
		await first.exited;

		const second = await startMain(options);
		const base = `${second.url}/v1/sessions/${id}`;
		const resumed = await openSse(`${base}/events`, { headers: { "last-event-id": String(lastSeen) } });
		const interrupted = await resumed.waitForType("run_interrupted", 15_000);
		expect(interrupted.data).toMatchObject({
			type: "run_interrupted",
			runId: prompt.body.runId,
			reason: "server_restart",
			interruptedAt: expect.any(Number),
		});
		const after = resumed.events.filter((e) => e.id! > lastSeen);
		expect(after.map((e) => e.event)).toEqual([
			"approval_resolved",
			"tool_execution_end",
			"message_start",
			"message_end",
			"run_interrupted",
		]);
		expect(after[0].data).toEqual({
			type: "approval_resolved",
			toolCallId,
			toolName: "calculate",
			outcome: { kind: "interrupted" },
		});
		expect(after[1].data).toMatchObject({ toolCallId, toolName: "calculate", isError: true });
		expect(after[3].data.message).toMatchObject({ role: "toolResult", toolCallId, isError: true });
		expect(after[3].data.message.content[0].text).toMatch(/interrupted by a server restart/);

		// The state agrees with the stream: nothing waits, the result is in the transcript.
		const state = (await json(base)).body;
		expect(state).toMatchObject({ status: "interrupted", pendingApprovals: [], lastEventId: interrupted.id });
		const transcript = (await json(`${base}/messages`)).body.messages;
		expect(transcript.map((m: any) => m.role)).toEqual(["user", "assistant", "toolResult"]);

		// Answering the approval now says why it is too late.
		const late = await json(`${base}/approvals/${toolCallId}`, "POST", { approve: true });
		expect([late.status, late.body.error.code]).toEqual([409, "TOOL_CALL_FINISHED"]);
		expect(late.body.error.message).toMatch(/interrupted by a server restart/);

		// continue shows the model the failed call.
		expect((await json(`${base}/continue`, "POST")).status).toBe(202);
		const end = await resumed.waitFor((e) => e.event === "agent_end" && e.id! > interrupted.id!, 15_000);
		expect(end.data.messages.at(-1).content[0].text).toMatch(
			/^Tool results: calculate \(error\): The tool call was interrupted/,
		);
		resumed.close();
	});
});
