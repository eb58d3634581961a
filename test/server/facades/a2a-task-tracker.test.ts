import { describe, expect, it } from "vitest";
import { TaskTracker } from "../../../src/server/facades/a2a/task-tracker.js";
import type { StreamResponse } from "../../../src/server/facades/a2a/wire.js";
import type { StoredEvent } from "../../../src/store/types.js";

const IDS = { taskId: "run_1", contextId: "ctx", sessionId: "ses_1" };

/** A run's native events, ids from 1: agent_start, then the given ones, each with the next id. */
function events(...list: Record<string, unknown>[]): StoredEvent[] {
	return [{ type: "agent_start" }, ...list].map((data, i) => ({
		id: i + 1,
		type: data.type as string,
		data: JSON.stringify(data),
		createdAt: 0,
	}));
}

const start = { type: "message_start", message: { role: "assistant", content: [] } };
const delta = (text: string) => ({
	type: "message_update",
	assistantMessageEvent: { type: "text_delta", contentIndex: 0, delta: text },
});
const end = (text: string, stopReason = "stop", extra: Record<string, unknown> = {}) => ({
	type: "message_end",
	message: { role: "assistant", content: text ? [{ type: "text", text }] : [], stopReason, ...extra },
});
const agentEnd = { type: "agent_end", messages: [] };

function applyAll(tracker: TaskTracker, list: StoredEvent[]): StreamResponse[] {
	return list.flatMap((event) => tracker.apply(event));
}

/** The artifact's text after `out`, with A2A's `append`. */
function assemble(out: StreamResponse[], text = ""): string {
	for (const response of out) {
		if (!("artifactUpdate" in response)) continue;
		const chunk = response.artifactUpdate.artifact.parts.map((p) => p.text ?? "").join("");
		text = response.artifactUpdate.append ? text + chunk : chunk;
	}
	return text;
}

const states = (out: StreamResponse[]) =>
	out.flatMap((r) => ("statusUpdate" in r ? [r.statusUpdate.status.state] : []));

describe("A2A task tracker", () => {
	it("deltas are chunks (appended after the first); messages are separated; the end completes the task", () => {
		const tracker = new TaskTracker(IDS, 1);
		const out = applyAll(
			tracker,
			events(start, delta("Hello"), delta(" world"), end("Hello world"), start, delta("Again"), end("Again"), agentEnd),
		);
		const chunks = out.flatMap((r) => ("artifactUpdate" in r ? [r.artifactUpdate] : []));
		expect(chunks.map((c) => [c.artifact.parts[0]!.text, c.append ?? false, c.lastChunk ?? false])).toEqual([
			["Hello", false, false],
			[" world", true, false],
			["\n\nAgain", true, false],
		]);
		expect(states(out)).toEqual(["TASK_STATE_COMPLETED"]);
		expect(tracker.task().artifacts).toEqual([
			{ artifactId: "answer", name: "answer", parts: [{ text: "Hello world\n\nAgain" }] },
		]);
	});

	it("resuming after any event sends exactly what the uninterrupted stream sent after it", () => {
		const run = events(start, delta("a"), delta("b"), end("ab"), start, delta("c"), delta("d"), end("cd"), agentEnd);
		const whole = new TaskTracker(IDS, 1);
		const perEvent = run.map((event) => whole.apply(event));
		for (let cursor = 0; cursor <= run.length; cursor++) {
			const resumed = new TaskTracker(IDS, 1);
			for (const event of run.slice(0, cursor)) resumed.apply(event);
			resumed.advanceTo(cursor);
			const snapshot = resumed.task().artifacts?.[0]?.parts[0]?.text ?? "";
			const after = run.slice(cursor).flatMap((event) => resumed.apply(event));
			expect(after.map(strip)).toEqual(perEvent.slice(cursor).flat().map(strip));
			expect(assemble(after, snapshot)).toBe("ab\n\ncd");
		}
	});

	it("a message whose first deltas are missing is appended to, and its end replaces the artifact", () => {
		const tracker = new TaskTracker(IDS, 1);
		const run = events(start, delta("one "), delta("two "), delta("three"), end("one two three"), agentEnd);
		// The reader got the message's start, then nothing until the third delta (ids 4 and 5 not in the log).
		const out = [...tracker.apply(run[0]!), ...tracker.apply(run[1]!)];
		const client = "one two ";
		const after = [run[4]!, run[5]!, run[6]!].flatMap((event) => tracker.apply(event));
		expect(after[0]).toMatchObject({ artifactUpdate: { append: true, artifact: { parts: [{ text: "three" }] } } });
		expect(after[1]).toMatchObject({ artifactUpdate: { artifact: { parts: [{ text: "one two three" }] } } });
		expect("append" in (after[1] as { artifactUpdate: object }).artifactUpdate).toBe(false);
		expect(assemble(after, client)).toBe("one two three");
		expect(out).toEqual([]);
	});

	it("an approval asks for input; its resolution resumes; an answered one is not asked again", () => {
		const requested = { type: "approval_requested", toolCallId: "call_1", toolName: "calculate", args: { e: 1 } };
		const resolved = { type: "approval_resolved", toolCallId: "call_1", outcome: { kind: "approved" } };
		const tracker = new TaskTracker(IDS, 1);
		const out = applyAll(tracker, events(requested, resolved, agentEnd));
		expect(states(out)).toEqual(["TASK_STATE_INPUT_REQUIRED", "TASK_STATE_WORKING", "TASK_STATE_FAILED"]);
		const asked = out[0] as { statusUpdate: { status: { message: { parts: { data?: unknown }[] } } } };
		expect(asked.statusUpdate.status.message.parts[1]!.data).toEqual({
			kind: "approval",
			toolCallId: "call_1",
			toolName: "calculate",
			args: { e: 1 },
		});
		const answered = new TaskTracker(IDS, 1, new Set(["call_1"]));
		expect(states(applyAll(answered, events(requested)))).toEqual([]);
		expect(answered.state).toBe("TASK_STATE_WORKING");
	});

	it("aborted is canceled, an error is failed with its message, the next run's start fails the task", () => {
		const aborted = new TaskTracker(IDS, 1);
		expect(states(applyAll(aborted, events(start, end("", "aborted"), agentEnd)))).toEqual(["TASK_STATE_CANCELED"]);
		const failed = new TaskTracker(IDS, 1);
		const out = applyAll(failed, events(start, end("", "error", { errorMessage: "boom" }), agentEnd));
		expect(out.at(-1)).toMatchObject({
			statusUpdate: { status: { state: "TASK_STATE_FAILED", message: { parts: [{ text: "boom" }] } } },
		});
		const cut = new TaskTracker(IDS, 1);
		expect(states(applyAll(cut, events(start, { type: "agent_start" })))).toEqual(["TASK_STATE_FAILED"]);
	});
});

/** A response without its timestamps (two trackers differ only there). */
function strip(response: StreamResponse): unknown {
	return JSON.parse(JSON.stringify(response), (key, value) => (key === "timestamp" ? undefined : value));
}
