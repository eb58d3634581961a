/**
 * Binds event streams ({@link StreamSink}s: SSE responses, opened by the route's opener when the
 * stream begins) to sessions: the live `/events` stream (snapshot or replay, then live), the
 * stream of one run (`POST /prompt` / `/continue` with `Accept: text/event-stream`), and the
 * stream of a run already started, for a repeated request (the same `Idempotency-Key`).
 *
 * Both resumes share one replay loop ({@link replayLog}), paced by the socket and held to the
 * subscriber's buffer budget like live events: the backlog is read from the session's event log a
 * page at a time, each page sized in bytes to fit half the budget (less what the socket still
 * holds), the next one only once the socket took the last, so a resume of a long log never sits
 * in memory at once. A replayer whose socket stops draining is dropped by the connection's stall
 * rule with `stream_dropped` and resumes from the last id it was sent. Reads are asynchronous; the
 * switch from replay to live happens in the same tick as the check that the cursor reached the
 * log's last id (the subscriber is registered before the first read and ignores what it gets
 * until then), so no event is lost or sent twice.
 */
import type { StoredEvent } from "../../../store/types.js";
import type { SseEventName } from "../../../wire/events.js";
import { formatComment, formatFrame } from "../../../wire/sse-frames.js";
import type { LiveSession } from "./live-session.js";
import type { RunHandle } from "./runs.js";
import { type OpenStreamSink, type StreamSink, sendStored } from "./stream-sink.js";
import { snapshotFrame } from "./view.js";

/** Most events in a replay page; pages are sized by bytes first, this only bounds tiny events. */
export const REPLAY_PAGE_EVENTS = 1000;

/**
 * The bytes the next replay page may take: half the budget, less what the connection still holds.
 * Half, because the frames that follow a page (heartbeats, live events after the switch) must not
 * push a subscriber that keeps up over its budget.
 */
export function replayPageBytes(sse: StreamSink): number {
	return Math.max(1, Math.floor(sse.maxBufferBytes / 2) - sse.bufferedBytes);
}

/** What a replay calls, each synchronously in the tick the read it follows resolved in. */
interface ReplayTarget {
	/** An event of the log after the cursor, in id order: `next` sends it and goes on, `stop` ends the replay. */
	event(event: StoredEvent): "next" | "stop";
	/** The replay reached the end of the log (nothing may come between this and going live). */
	caughtUp(): void;
	/** The log no longer holds the events after the cursor (trimmed past a slow replay). */
	trimmed(): void;
}

/**
 * Replays the session's log after `cursor` to `sse`, a page at a time as the socket drains (see
 * the file's comment). Returns when the replay is over; the outcome was told to `target`.
 */
async function replayLog(session: LiveSession, sse: StreamSink, cursor: number, target: ReplayTarget): Promise<void> {
	const log = session.events;
	for (;;) {
		await sse.whenWritable();
		if (sse.isClosed) return;
		// An empty page means the end only if nothing was appended while it was read (the ids after the
		// last retained event may be ones a crash lost: the cursor never reaches `lastEventId` then).
		const lastBefore = log.lastEventId;
		const events = await log.read(cursor, REPLAY_PAGE_EVENTS, replayPageBytes(sse));
		if (sse.isClosed) return;
		if (events.length > 0 && events[0].id > cursor + 1 && !(await log.isRetained(cursor))) {
			if (!sse.isClosed) target.trimmed();
			return;
		}
		for (const event of events) {
			if (target.event(event) === "stop") return;
			cursor = event.id;
		}
		if (cursor >= log.lastEventId || (events.length === 0 && log.lastEventId === lastBefore)) {
			target.caughtUp(); // same tick as the check: nothing in between
			return;
		}
	}
}

/** A replay the store failed (e.g. closed by a shutdown) ends its stream instead of failing the process. */
function endOnFailure(sse: StreamSink, replay: Promise<void>): void {
	replay.catch(() => sse.end(formatComment("closing: the event log could not be read")));
}

/**
 * The last frame of a run's stream on a replica that lost the session's lease (cluster mode: it
 * stalled, another replica took the run over): `stream_dropped` with reason `lease_lost`, naming
 * the session's event stream and the last id this stream sent, after which the client resumes
 * there (where it sees `run_interrupted` and what follows). `wheelhouse-agents/client`'s `streamPrompt`
 * does so by itself.
 */
export function leaseLostFrame(sessionId: string, lastEventId: number | undefined): string {
	const notice = JSON.stringify({
		type: "stream_dropped",
		reason: "lease_lost",
		message:
			`This replica lost session ${sessionId} to another one (it stalled past its lease): nothing more comes here. ` +
			`Resume on GET /v1/sessions/${sessionId}/events with Last-Event-ID: ${lastEventId ?? 0}.`,
		lastEventId: lastEventId ?? null,
	});
	return formatFrame({ event: "stream_dropped" satisfies SseEventName, data: notice });
}

/**
 * Streams the session's events to the sink `open` opens: after `afterId` when given (replay, then
 * live; a reset snapshot when that id is no longer retained), else a snapshot, then live.
 */
export function streamSessionEvents(session: LiveSession, open: OpenStreamSink, afterId: number | undefined): void {
	let unsubscribe: (() => void) | undefined;
	const sse = open(() => unsubscribe?.());
	let cursor = 0;
	let live = false;

	const sendSnapshot = (reset: boolean) => {
		const snap = snapshotFrame(session, reset);
		cursor = snap.id;
		sse.send(snap.frame, snap.id);
		live = true;
	};

	unsubscribe = session.observe({
		event({ id, frame }) {
			if (!live || id <= cursor) return;
			cursor = id;
			sse.send(frame, id);
		},
		close(reason) {
			sse.end(formatComment(`closing: ${reason}`));
		},
	});
	if (sse.isClosed) {
		unsubscribe();
		return;
	}
	const log = session.events;
	const last = log.lastEventId;
	if (afterId === undefined) {
		sendSnapshot(false);
		return;
	}
	if (afterId > last) {
		sendSnapshot(true);
		return;
	}
	cursor = afterId;
	const resume = async () => {
		if (afterId < last && !(await log.isRetained(afterId))) {
			if (!sse.isClosed) sendSnapshot(true);
			return;
		}
		await replayLog(session, sse, cursor, {
			event(event) {
				sendStored(sse, event);
				cursor = event.id;
				return "next";
			},
			caughtUp() {
				live = true;
			},
			// The log was trimmed past us while we replayed (a very slow reader): start over.
			trimmed: () => sendSnapshot(true),
		});
	};
	endOnFailure(sse, resume());
}

/**
 * Streams one run to the sink `open` opens (once the run exists): every event from its
 * `agent_start` to its `agent_end`, then ends. Returns the `attach` callback for
 * `LiveSession.prompt` / `continue`.
 */
export function runStreamAttacher(session: LiveSession, open: OpenStreamSink): (run: RunHandle) => void {
	return (run) => {
		let unsubscribe: (() => void) | undefined;
		const sse = open(() => unsubscribe?.());
		unsubscribe = session.observe({
			event({ id, type, frame, runSeq }) {
				if (runSeq !== run.seq) return;
				sse.send(frame, id);
				if (type === "agent_end") {
					sse.end();
					unsubscribe?.();
				}
			},
			close(reason) {
				sse.end(formatComment(`closing: ${reason}`));
			},
			leaseLost() {
				sse.abandon(leaseLostFrame(session.id, sse.lastSentId));
			},
		});
		// A run that ends without agent_end (it failed to start) must not leave the stream open.
		void run.done.then(() => {
			if (!sse.isClosed) sse.end(formatComment("run ended"));
			unsubscribe?.();
		});
	};
}

/** The run to re-attach to: its id and the id of its first event. */
export interface RunPosition {
	runId: string;
	firstEventId: number;
	/**
	 * The run began with a cut (a regenerate's or an edit's: its first event is its
	 * `transcript_rewound`), so its own `agent_start` is the event after its first.
	 */
	afterCut?: boolean;
}

/** The id of a run's own `agent_start`: an `agent_start` after it is the next run's. */
export function ownStartId(run: RunPosition): number {
	return run.firstEventId + (run.afterCut ? 1 : 0);
}

/**
 * Streams run `run` of `session` to the sink `open` opens, after `afterId` (the client's
 * `Last-Event-ID`; the run's beginning when absent or before it), then ends the stream: the run's
 * events after the cursor from the log, then live until the run's `agent_end`. A run that is over
 * is replayed and the stream ends.
 *
 * The run's events are those from its first event (`firstEventId`, its `agent_start`, or for a
 * run that began with a cut its `transcript_rewound`) to its `agent_end`. A run that never logged its `agent_end` (the process died) ends where the next run
 * begins (the next `agent_start`) or at the end of the log.
 */
export function resumeRunStream(
	session: LiveSession,
	open: OpenStreamSink,
	run: RunPosition,
	afterId: number | undefined,
): void {
	let unsubscribe: (() => void) | undefined;
	const sse = open(() => unsubscribe?.());
	const floor = run.firstEventId - 1;
	let cursor = Math.min(Math.max(afterId ?? floor, floor), session.lastEventId);
	/** Set once the replay reached the end of the log while the run was still active. */
	let live: RunHandle | undefined;

	const finish = (chunk?: string) => {
		sse.end(chunk);
		unsubscribe?.();
	};

	unsubscribe = session.observe({
		event({ id, type, frame, runSeq }) {
			if (!live || runSeq !== live.seq || id <= cursor) return;
			cursor = id;
			sse.send(frame, id);
			if (type === "agent_end") finish();
		},
		close(reason) {
			sse.end(formatComment(`closing: ${reason}`));
		},
		leaseLost() {
			sse.abandon(leaseLostFrame(session.id, sse.lastSentId));
		},
	});
	if (sse.isClosed) {
		unsubscribe();
		return;
	}

	/** Same tick as the check that the replay reached the end of the log: live, or over. */
	const goLive = () => {
		live = session.activeRunHandle(run.runId);
		if (!live) {
			finish();
			return;
		}
		// A run that settles without its agent_end (it failed to start) must not leave the stream open.
		void live.done.then(() => {
			if (!sse.isClosed) finish(formatComment("run ended"));
		});
	};

	const replay = replayLog(session, sse, cursor, {
		event(event) {
			if (event.type === "agent_start" && event.id > ownStartId(run)) {
				finish(); // the next run: this one ended without its agent_end
				return "stop";
			}
			sendStored(sse, event);
			cursor = event.id;
			if (event.type === "agent_end") {
				finish();
				return "stop";
			}
			return "next";
		},
		caughtUp: goLive,
		trimmed() {
			// The log no longer holds the run's events after the cursor: say so as /events does.
			const snap = snapshotFrame(session, true);
			sse.send(snap.frame, snap.id);
			cursor = snap.id;
			goLive();
		},
	});
	endOnFailure(sse, replay);
}
