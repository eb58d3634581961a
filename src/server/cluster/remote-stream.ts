/**
 * The event streams a replica serves in cluster mode, wherever the session runs: the store's
 * log first, then the session's live events from Redis, with the same ids, in order, each once.
 *
 * The hand-off from replay to live loses and doubles nothing: the reader subscribes to the
 * session's channel first (what is published from then on is buffered), then reads the log after
 * its cursor, then takes the buffered and later messages, skipping every id at or below the
 * cursor. Since an event is published only once it is durable, a message whose id is not the
 * next one means messages were missed (Redis reconnected, a publish failed): the reader reads the
 * store up to it before sending it, so the gap is filled; ids the log does not have by then are
 * ones it never keeps (deltas of a message that ended, ids a crash skipped).
 *
 * The reader also re-reads the log after its cursor periodically and whenever the subscription
 * was re-established, so a lost message — the run's last event included — reaches it within that
 * interval even if nothing else is ever published on the session.
 */
import type { FastifyReply } from "fastify";
import type { StoredEvent } from "../../store/types.js";
import type { LiveSession } from "../session/live-session.js";
import { REPLAY_PAGE_EVENTS, replayPageBytes } from "../session/stream.js";
import { snapshotFrame } from "../session/view.js";
import type { SseConnection } from "../sse/connection.js";
import { formatComment, formatEventFrame } from "../sse/frames.js";
import { openSse, type StreamSettings } from "../sse/open.js";
import type { EventSubscriptions } from "./event-subscriptions.js";

export interface ClusterStreamDeps {
	subscriptions: EventSubscriptions;
	/** How often a reader re-reads the log after its cursor. */
	recheckMs: number;
}

/** What a reader does with each event, in id order: send it and go on, or stop (the stream ends). */
type EventSink = (event: StoredEvent) => "next" | "stop";

/**
 * One reader: the ordered merge of the log and the live channel after `cursor`. `start()` begins
 * with a read of the log; events reach `sink` in id order, each once.
 */
class ClusterReader {
	private readonly queue: StoredEvent[] = [];
	private readonly maxQueued: number;
	private needRead = true;
	private pumping = false;
	private stopped = false;
	private timer: NodeJS.Timeout | undefined;
	/** When the last live message arrived (the periodic re-check reads the log only after a quiet interval). */
	private lastLiveAt = 0;
	/** Called after each pass over the log with nothing left to read (the periodic re-check's hook). */
	onIdleCheck: (() => Promise<void> | void) | undefined;

	constructor(
		private readonly session: LiveSession,
		private readonly sse: SseConnection,
		private readonly settings: StreamSettings,
		public cursor: number,
		private readonly sink: EventSink,
		private readonly trimmed: () => void,
		recheckMs: number,
	) {
		this.maxQueued = REPLAY_PAGE_EVENTS * 10;
		this.timer = setInterval(() => {
			// While live messages flow they are the stream; the log is read when they stop coming.
			if (Date.now() - this.lastLiveAt >= recheckMs) this.resync();
		}, recheckMs);
		this.timer.unref();
	}

	/** A live message: queued, then taken in order. */
	live(id: number, type: string, data: string): void {
		this.lastLiveAt = Date.now();
		if (this.stopped || id <= this.cursor) return;
		// A reader far behind (its socket slow) reads the log instead of holding the live events.
		if (this.queue.length >= this.maxQueued) {
			this.queue.length = 0;
			this.needRead = true;
		} else {
			this.queue.push({ id, type, data, createdAt: 0 });
		}
		this.pump();
	}

	/** Read the log after the cursor at the next chance. */
	resync(): void {
		if (this.stopped) return;
		this.needRead = true;
		this.pump();
	}

	stop(): void {
		this.stopped = true;
		clearInterval(this.timer);
		this.queue.length = 0;
	}

	private pump(): void {
		if (this.pumping || this.stopped) return;
		this.pumping = true;
		this.run()
			.catch(() => {
				if (!this.sse.isClosed) this.sse.end(formatComment("closing: the event log could not be read"));
				this.stop();
			})
			.finally(() => {
				this.pumping = false;
				if (!this.stopped && (this.needRead || this.queue.length > 0)) this.pump();
			});
	}

	private async run(): Promise<void> {
		while (!this.stopped && !this.sse.isClosed) {
			if (this.needRead) {
				this.needRead = false;
				await this.readLog(Number.POSITIVE_INFINITY);
				if (this.stopped) return;
				await this.onIdleCheck?.();
				continue;
			}
			const next = this.queue.shift();
			if (!next) return;
			if (next.id <= this.cursor) continue;
			// A gap: what the channel missed is in the log (published only once durable).
			if (next.id > this.cursor + 1) await this.readLog(next.id - 1);
			if (this.stopped || next.id <= this.cursor) continue;
			if (!this.emit(next)) return;
		}
		if (this.sse.isClosed) this.stop();
	}

	private emit(event: StoredEvent): boolean {
		this.cursor = event.id;
		if (this.sink(event) === "stop") {
			this.stop();
			return false;
		}
		return true;
	}

	/** Sends what the log has after the cursor now (however it got there), up to the live messages waiting. */
	readToEnd(): Promise<void> {
		return this.readLog(Number.POSITIVE_INFINITY);
	}

	/** Whether live messages wait to be sent. */
	get hasQueued(): boolean {
		return this.queue.length > 0;
	}

	/** Sends the log's events after the cursor up to `until`, a page at a time as the socket drains. */
	private async readLog(until: number): Promise<void> {
		const log = this.session.events;
		while (!this.stopped) {
			await this.sse.whenWritable();
			if (this.sse.isClosed || this.stopped) return;
			const cursor = this.cursor;
			const events = await log.read(cursor, REPLAY_PAGE_EVENTS, replayPageBytes(this.settings, this.sse));
			if (this.stopped || this.sse.isClosed) return;
			if (events.length > 0 && events[0]!.id > cursor + 1 && !(await log.isRetained(cursor))) {
				// The trimmed handler sends a reset snapshot and moves the cursor to it; the next read
				// (a live message, or the periodic re-check) goes on from there.
				this.trimmed();
				return;
			}
			let progressed = false;
			for (const event of events) {
				// The log fills only what comes before the live messages waiting: its holes (deltas it
				// does not keep) must not make the reader skip live ones.
				if (event.id > until || (this.queue.length > 0 && event.id >= this.queue[0]!.id)) return;
				if (event.id <= this.cursor) continue;
				if (!this.emit(event)) return;
				progressed = true;
			}
			if (!progressed || this.cursor >= until) return;
		}
	}
}

const sendStored = (sse: SseConnection, event: StoredEvent) =>
	sse.send(formatEventFrame(event.id, event.type, event.data), event.id);

/**
 * Subscribes to the session's channel, then — once the subscription is in place, so nothing
 * published from then on is missed — makes the reader (`start` sends what comes first: the
 * snapshot) and hands it what arrived meanwhile. Returns what ends both (the connection's close
 * calls it).
 */
function attach(
	deps: ClusterStreamDeps,
	session: LiveSession,
	sse: SseConnection,
	start: () => ClusterReader,
): () => void {
	let reader: ClusterReader | undefined;
	const early: StoredEvent[] = [];
	let removed = false;
	let remove: (() => void) | undefined;
	const stop = () => {
		reader?.stop();
		removed = true;
		remove?.();
	};
	deps.subscriptions
		.add(session.id, {
			event: (id, type, data) => {
				if (reader) reader.live(id, type, data);
				else early.push({ id, type, data, createdAt: 0 });
			},
			resync: () => reader?.resync(),
			close: (reason) => {
				sse.end(formatComment(`closing: ${reason}`));
				stop();
			},
		})
		.then((off) => {
			remove = off;
			if (removed || sse.isClosed) {
				stop();
				return;
			}
			reader = start();
			for (const event of early.splice(0)) reader.live(event.id, event.type, event.data);
			reader.resync();
		});
	return stop;
}

/**
 * `GET /events` in cluster mode: after `afterId` when given (a reset snapshot when it is no longer
 * retained), else a snapshot, then everything after, live, wherever the session runs.
 */
export function streamClusterEvents(
	deps: ClusterStreamDeps,
	session: LiveSession,
	reply: FastifyReply,
	afterId: number | undefined,
	settings: StreamSettings,
): void {
	let reader: ClusterReader | undefined;
	let stop: (() => void) | undefined;
	const sse = openSse(reply, settings, () => stop?.());
	if (sse.isClosed) return;
	const snapshot = () => {
		const snap = snapshotFrame(session, true);
		sse.send(snap.frame, snap.id);
		if (reader) reader.cursor = Math.max(reader.cursor, snap.id);
		return snap.id;
	};
	stop = attach(deps, session, sse, () => {
		let cursor: number;
		// A cursor past the log's written end, on a session running elsewhere, is one the running
		// replica sent a moment ago: its events follow, live or from the log.
		const ahead = afterId !== undefined && afterId > session.lastEventId;
		if (afterId === undefined || (ahead && session.config.status !== "running")) {
			const snap = snapshotFrame(session, afterId !== undefined);
			sse.send(snap.frame, snap.id);
			cursor = snap.id;
		} else {
			cursor = afterId;
		}
		reader = new ClusterReader(
			session,
			sse,
			settings,
			cursor,
			(event) => {
				sendStored(sse, event);
				return "next";
			},
			snapshot,
			deps.recheckMs,
		);
		return reader;
	});
}

/** The run a stream follows: its id and the id of its first event. */
export interface ClusterRunPosition {
	runId: string;
	firstEventId: number;
}

/**
 * One run's stream in cluster mode (a repeated `POST /prompt` with the same key, on any replica):
 * its events after `afterId` from the log, then live until its `agent_end` (or its
 * `run_interrupted`, or the next run's `agent_start`), then the response ends. The periodic
 * re-check also ends it once the store says the run is over and the log has nothing more.
 */
export function streamClusterRun(
	deps: ClusterStreamDeps,
	session: LiveSession,
	reply: FastifyReply,
	run: ClusterRunPosition,
	afterId: number | undefined,
	settings: StreamSettings,
): void {
	let stop: (() => void) | undefined;
	const sse = openSse(reply, settings, () => stop?.());
	if (sse.isClosed) return;
	const floor = run.firstEventId - 1;
	const cursor = Math.max(afterId ?? floor, floor);
	let finished = false;
	const finish = () => {
		if (finished) return;
		finished = true;
		sse.end();
		stop?.();
	};
	stop = attach(deps, session, sse, () => {
		const r = new ClusterReader(
			session,
			sse,
			settings,
			cursor,
			(event) => {
				if (event.type === "agent_start" && event.id > run.firstEventId) {
					finish();
					return "stop";
				}
				sendStored(sse, event);
				if (event.type === "agent_end" || event.type === "run_interrupted") {
					finish();
					return "stop";
				}
				return "next";
			},
			() => {
				const snap = snapshotFrame(session, true);
				sse.send(snap.frame, snap.id);
				r.cursor = Math.max(r.cursor, snap.id);
			},
			deps.recheckMs,
		);
		// The log was read to its end: a run the store no longer has running is over.
		r.onIdleCheck = async () => {
			const record = await session.store.getSession(session.id);
			if (!record || record.currentRunId !== run.runId || record.status !== "running") {
				// The run may have ended since the log was read, its last events committed with its
				// end: read the log once more, or a short run would end this stream with none of them.
				// Live messages that came meanwhile are sent next (the last of them ends the stream);
				// without any, the log had everything.
				await r.readToEnd();
				if (!r.hasQueued) finish();
			}
		};
		return r;
	});
}
