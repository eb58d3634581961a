/**
 * A task's SSE stream (`SendStreamingMessage`, `SubscribeToTask`): the task as it stands at the
 * stream's snapshot point first, then its status and artifact updates as they happen, until it
 * ends or waits for input. Each frame is a JSON-RPC response (`result` a `StreamResponse`) whose
 * SSE `id:` and `metadata.wheelhouse.eventId` are the session's event id, so a client resumes
 * exactly with `SubscribeToTask` and `Last-Event-ID`.
 *
 * The run's events are read from its first one (the log, then live, wherever the session runs);
 * those up to the snapshot point only build the tracker's state (task-tracker.ts), which is why
 * nothing is sent twice. A run that ended without its last event reaching the log (its process
 * died) ends the stream as the store says it ended, once the log has nothing more.
 */
import type { FastifyReply } from "fastify";
import type { StoredEvent } from "../../../store/types.js";
import { formatFrame } from "../../../wire/sse-frames.js";
import { openSse, type StreamSettings } from "../../http/sse/open.js";
import type { A2aSessionAccess, ContextSession, TaskRecord } from "./session-access.js";
import { TaskTracker } from "./task-tracker.js";
import { type TaskReader, waitingCalls } from "./tasks.js";
import type { StreamResponse } from "./wire.js";

export interface TaskStreamInput {
	session: ContextSession;
	taskId: string;
	record: TaskRecord;
	/** Calls the request just answered. */
	answered: ReadonlySet<string>;
	/** The snapshot point: events after it are sent; undefined: the log's end now. */
	cursor: number | undefined;
	/** The JSON-RPC request id every frame answers. */
	rpcId: string | number | null;
}

export function streamTask(
	reply: FastifyReply,
	settings: StreamSettings,
	access: A2aSessionAccess,
	reader: TaskReader,
	input: TaskStreamInput,
): void {
	const { session, taskId, record, rpcId } = input;
	const tracker = new TaskTracker(
		{ taskId, contextId: record.contextId, sessionId: session.id },
		record.firstEventId,
		input.answered,
	);
	const snapshotAt = input.cursor ?? access.lastEventId(session);
	let stop: (() => void) | undefined;
	let snapshotSent = false;
	let finished = false;
	const sse = openSse(reply, settings, () => stop?.());
	const frame = (result: StreamResponse) =>
		formatFrame({ id: tracker.lastEventId, data: JSON.stringify({ jsonrpc: "2.0", id: rpcId, result }) });

	const finish = () => {
		if (finished) return;
		finished = true;
		sse.end();
		stop?.();
	};
	/** True when the stream is over after what was just sent. */
	const over = () => tracker.isFinal || tracker.state === "TASK_STATE_INPUT_REQUIRED";
	const sendSnapshot = () => {
		if (snapshotSent) return;
		snapshotSent = true;
		tracker.advanceTo(snapshotAt);
		sse.send(frame({ task: tracker.task() }), tracker.lastEventId);
		if (over()) finish();
	};
	const sink = (event: StoredEvent): "next" | "stop" => {
		if (event.id > snapshotAt) {
			sendSnapshot();
			if (finished) return "stop";
		}
		const out = tracker.apply(event);
		if (event.id <= snapshotAt) return "next";
		for (const response of out) sse.send(frame(response), event.id);
		if (over()) {
			finish();
			return "stop";
		}
		return "next";
	};
	const idle = async (log: { readToEnd(): Promise<unknown>; hasQueued: boolean }) => {
		if (finished) return;
		// The log had nothing more: what it holds up to the snapshot point was read.
		sendSnapshot();
		if (finished) return;
		if ((await access.runningRun(session)) === taskId) {
			// `tool_result_requested` announces a client tool's wait; a run of an older build (a rolling
			// update) announces none, and the store's pending calls show it here.
			const calls = waitingCalls(await access.pending(session)).filter((call) => call.kind === "client_tool");
			if (finished) return;
			for (const response of tracker.waitFor(calls)) sse.send(frame(response), tracker.lastEventId);
			if (over()) finish();
			return;
		}
		// The run is over: its last events may have come with its end.
		await log.readToEnd();
		if (finished || log.hasQueued) return;
		const task = await reader.task(session, taskId, record);
		const why = task.status.message?.parts[0]?.text;
		for (const response of tracker.settle(task.status.state, why)) sse.send(frame(response), tracker.lastEventId);
		finish();
	};
	const trimmed = () => {
		// The log no longer holds the run's events: the task as the store has it, then the end.
		void reader.task(session, taskId, record).then(
			(task) => {
				if (!finished) sse.send(frame({ task }));
				finish();
			},
			() => finish(),
		);
	};
	if (sse.isClosed) return;
	stop = access.follow(session, sse, record.firstEventId - 1, sink, trimmed, idle);
}
