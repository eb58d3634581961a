/**
 * Binds SSE responses to sessions: the live `/events` stream (snapshot or replay, then live) and
 * the stream of one run (`POST /prompt` / `/continue` with `Accept: text/event-stream`).
 *
 * Replay is paced by the socket and held to the subscriber's buffer budget like live events: the
 * backlog is read from the store a page at a time, each page sized in bytes to fit half the budget
 * (less what the socket still holds), the next one only once the socket took the last, so a resume
 * of a long log never sits in memory at once. A replayer whose socket stops draining is dropped by
 * the connection's stall rule with `stream_dropped` and resumes from the last id it was sent. The
 * switch from replay to live happens in the same tick as the read that reached the end of the log,
 * so no event is lost or sent twice.
 */
import type { FastifyReply } from "fastify";
import type { SessionStore } from "../store/types.js";
import type { SseEventName } from "../wire/events.js";
import type { LiveSession, RunHandle, SessionSubscriber } from "./live-session.js";
import { formatComment, formatEventFrame, formatFrame, SseConnection, type SseStats } from "./sse.js";

export interface StreamSettings {
	heartbeatMs: number;
	retryMs: number;
	maxBufferBytes: number;
	/** How long a subscriber's socket may go without draining before it is dropped (0: never). */
	stallMs: number;
	/** The app's SSE counters (metrics); absent when metrics are off. */
	stats?: SseStats;
}

/** Most events in a replay page; pages are sized by bytes first, this only bounds tiny events. */
export const REPLAY_PAGE_EVENTS = 1000;

/** Hijacks the reply and opens an SSE response on it (keeping headers hooks set, e.g. CORS). */
export function openSse(reply: FastifyReply, settings: StreamSettings, onClose?: () => void): SseConnection {
	const log = reply.request.log;
	reply.hijack();
	const headers = { ...reply.getHeaders(), "x-request-id": String(reply.request.id) } as Record<
		string,
		string | string[] | number | undefined
	>;
	const sse = new SseConnection(reply.raw, {
		heartbeatMs: settings.heartbeatMs,
		retryMs: settings.retryMs,
		maxBufferBytes: settings.maxBufferBytes,
		stallMs: settings.stallMs,
		stats: settings.stats,
		headers,
		onClose(reason) {
			if (reason === "overflow") {
				log.info({ lastEventId: sse.lastSentId ?? null }, "SSE subscriber dropped: it did not keep up (it can resume)");
			}
			onClose?.();
		},
	});
	sse.open();
	// HEAD (Fastify's automatic HEAD route runs the GET handler): the GET's status and headers,
	// then the end; node sends no body for HEAD, and a stream that never ends would never answer.
	if (reply.request.method === "HEAD") sse.end();
	return sse;
}

/** The `session_snapshot` frame: the session state now, with the in-flight partial message. */
export function snapshotFrame(session: LiveSession, reset: boolean): { id: number; frame: string } {
	const id = session.lastEventId;
	const data = JSON.stringify({
		type: "session_snapshot",
		...(reset ? { reset: true } : {}),
		lastEventId: id,
		state: session.view(),
		...(session.streamingMessage ? { streamingMessage: session.streamingMessage } : {}),
	});
	// The snapshot carries the id of the last event it reflects: resuming from it is exact.
	return { id, frame: formatFrame({ id, event: "session_snapshot" satisfies SseEventName, data }) };
}

/**
 * Streams the session's events to `reply`: after `afterId` when given (replay, then live;
 * a reset snapshot when that id is no longer retained), else a snapshot, then live.
 */
export function streamSessionEvents(
	session: LiveSession,
	reply: FastifyReply,
	afterId: number | undefined,
	settings: StreamSettings,
): void {
	let unsubscribe: (() => void) | undefined;
	const sse = openSse(reply, settings, () => unsubscribe?.());
	let cursor = 0;
	let live = false;

	const subscriber: SessionSubscriber = {
		deliver(id, _type, frame) {
			if (!live || id <= cursor) return;
			cursor = id;
			sse.send(frame, id);
		},
		close(reason) {
			sse.end(formatComment(`closing: ${reason}`));
		},
	};

	const sendSnapshot = (reset: boolean) => {
		const snap = snapshotFrame(session, reset);
		cursor = snap.id;
		sse.send(snap.frame, snap.id);
		live = true;
	};

	unsubscribe = session.subscribe(subscriber);
	if (sse.isClosed) {
		unsubscribe();
		return;
	}
	const store = session.store;
	const last = session.lastEventId;
	if (afterId === undefined) {
		sendSnapshot(false);
		return;
	}
	if (afterId > last || (afterId < last && !isRetained(store, session.id, afterId))) {
		sendSnapshot(true);
		return;
	}
	cursor = afterId;
	void replay();

	async function replay(): Promise<void> {
		for (;;) {
			await sse.whenWritable();
			if (sse.isClosed) return;
			const events = store.readEvents(session.id, cursor, REPLAY_PAGE_EVENTS, replayPageBytes(settings, sse));
			if (events.length > 0 && events[0].id > cursor + 1 && !isRetained(store, session.id, cursor)) {
				// The log was trimmed past us while we replayed (a very slow reader): start over.
				sendSnapshot(true);
				return;
			}
			for (const event of events) {
				sse.send(formatEventFrame(event.id, event.type, event.data), event.id);
				cursor = event.id;
			}
			if (events.length === 0 || cursor >= session.lastEventId) {
				live = true; // same tick as the read that reached the end: nothing in between
				return;
			}
		}
	}
}

/**
 * The bytes the next replay page may take: half the budget, less what the connection still holds.
 * Half, because the frames that follow a page (heartbeats, live events after the switch) must not
 * push a subscriber that keeps up over its budget.
 */
export function replayPageBytes(settings: StreamSettings, sse: SseConnection): number {
	return Math.max(1, Math.floor(settings.maxBufferBytes / 2) - sse.bufferedBytes);
}

function isRetained(store: SessionStore, sessionId: string, afterId: number): boolean {
	const oldest = store.oldestEventId(sessionId);
	return oldest !== undefined && afterId >= oldest - 1;
}

/**
 * Streams one run to `reply`: every event from its `agent_start` to its `agent_end`, then ends.
 * Returns the `attach` callback for `LiveSession.prompt` / `continue`.
 */
export function runStreamAttacher(
	session: LiveSession,
	reply: FastifyReply,
	settings: StreamSettings,
): (run: RunHandle) => void {
	return (run) => {
		let unsubscribe: (() => void) | undefined;
		const sse = openSse(reply, settings, () => unsubscribe?.());
		unsubscribe = session.subscribe({
			deliver(id, type, frame, runSeq) {
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
		});
		// A run that ends without agent_end (it failed to start) must not leave the stream open.
		void run.done.then(() => {
			if (!sse.isClosed) sse.end(formatComment("run ended"));
			unsubscribe?.();
		});
	};
}
