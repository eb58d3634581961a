/**
 * The stream of a run that is already started, for a repeated request (the same
 * `Idempotency-Key`): the run's events after the client's cursor, read from the log a page at a
 * time (the next page once the socket drained), then live until the run's `agent_end`. A run that
 * is over is replayed and the stream ends.
 *
 * The run's events are those from its first event (`firstEventId`, its `agent_start`) to its
 * `agent_end`. A run that never logged its `agent_end` (the process died) ends where the next run
 * begins (the next `agent_start`) or at the end of the log.
 */
import type { FastifyReply } from "fastify";
import type { LiveSession, RunHandle } from "./live-session.js";
import { openSse, REPLAY_PAGE_EVENTS, replayPageBytes, type StreamSettings, snapshotFrame } from "./session-stream.js";
import { formatComment, formatEventFrame } from "./sse.js";

/** The run to re-attach to: its id and the id of its first event. */
export interface RunPosition {
	runId: string;
	firstEventId: number;
}

/**
 * Streams run `run` of `session` to `reply` after `afterId` (the client's `Last-Event-ID`; the
 * run's beginning when absent or before it), then ends the response.
 */
export function resumeRunStream(
	session: LiveSession,
	reply: FastifyReply,
	run: RunPosition,
	afterId: number | undefined,
	settings: StreamSettings,
): void {
	let unsubscribe: (() => void) | undefined;
	const sse = openSse(reply, settings, () => unsubscribe?.());
	const store = session.store;
	const floor = run.firstEventId - 1;
	let cursor = Math.min(Math.max(afterId ?? floor, floor), session.lastEventId);
	/** Set once the replay reached the end of the log while the run was still active. */
	let live: RunHandle | undefined;

	const finish = (chunk?: string) => {
		sse.end(chunk);
		unsubscribe?.();
	};

	unsubscribe = session.subscribe({
		deliver(id, type, frame, runSeq) {
			if (!live || runSeq !== live.seq || id <= cursor) return;
			cursor = id;
			sse.send(frame, id);
			if (type === "agent_end") finish();
		},
		close(reason) {
			sse.end(formatComment(`closing: ${reason}`));
		},
	});
	if (sse.isClosed) {
		unsubscribe();
		return;
	}
	void replay();

	/** Same tick as the read that reached the end of the log: live, or over. */
	function goLive(): void {
		live = session.activeRunHandle(run.runId);
		if (!live) {
			finish();
			return;
		}
		// A run that settles without its agent_end (it failed to start) must not leave the stream open.
		void live.done.then(() => {
			if (!sse.isClosed) finish(formatComment("run ended"));
		});
	}

	async function replay(): Promise<void> {
		for (;;) {
			await sse.whenWritable();
			if (sse.isClosed) return;
			const events = store.readEvents(session.id, cursor, REPLAY_PAGE_EVENTS, replayPageBytes(settings, sse));
			const oldest = store.oldestEventId(session.id);
			if (events.length > 0 && events[0].id > cursor + 1 && (oldest === undefined || cursor < oldest - 1)) {
				// The log no longer holds the run's events after the cursor (trimmed): say so as /events does.
				const snap = snapshotFrame(session, true);
				sse.send(snap.frame, snap.id);
				cursor = snap.id;
				goLive();
				return;
			}
			for (const event of events) {
				if (event.type === "agent_start" && event.id > run.firstEventId) {
					finish(); // the next run: this one ended without its agent_end
					return;
				}
				sse.send(formatEventFrame(event.id, event.type, event.data), event.id);
				cursor = event.id;
				if (event.type === "agent_end") {
					finish();
					return;
				}
			}
			if (events.length === 0 || cursor >= session.lastEventId) {
				goLive();
				return;
			}
		}
	}
}
