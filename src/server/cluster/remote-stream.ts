/**
 * The event streams a replica serves in cluster mode, wherever the session runs: the store's
 * log and the session's tail in Redis first, then the session's live events from Redis, with the
 * same ids, in order, each once — deltas included, whichever replica the client resumes on and
 * wherever in a message it stopped.
 *
 * The hand-off from replay to live loses and doubles nothing: the reader subscribes to the
 * session's channel first (what is published from then on is buffered), then reads after its
 * cursor, then takes the buffered and later messages, skipping every id at or below the cursor.
 *
 * A read is the union of two sources, by id: the store's log (every durable event; the deltas of
 * a streaming message only on the replica running it) and the session's tail (every event
 * published lately, deltas included; `event-tail.ts`). Since events are published in id order,
 * each once durable, the two together have every published event up to the tail's high-water
 * mark; above it the log may have an event whose deltas are not published yet, so a read takes
 * the log only up to the mark, and what is above comes live (or, when no live message came for a
 * moment, because its publish failed, from a read of the whole log). A message whose id is not the next
 * one means messages were missed (Redis reconnected, a publish failed): the reader reads both up
 * to it before sending it, so the gap is filled; ids neither has by then are ones nothing keeps
 * (deltas trimmed from the tail or lost with Redis, ids a crash skipped).
 *
 * The reader also re-reads after its cursor whenever its subscription was re-established, and
 * when no live message came for an interval; what the mark holds back then and does not come
 * live within a second is read from the whole log (a publish that failed never moves the mark),
 * so a lost message — the run's last event included — reaches it within that interval (and a
 * second) even if nothing else is ever published on the session.
 */
import type { StoredEvent } from "../../store/types.js";
import { formatComment } from "../../wire/sse-frames.js";
import type { LiveSession } from "../runtime/session/live-session.js";
import type { EventFollower } from "../runtime/session/port.js";
import { ownStartId, REPLAY_PAGE_EVENTS, replayPageBytes } from "../runtime/session/stream.js";
import { type OpenStreamSink, type StreamSink, sendStored } from "../runtime/session/stream-sink.js";
import { snapshotFrame } from "../runtime/session/view.js";
import type { EventSubscriptions } from "./event-subscriptions.js";
import type { EventTail } from "./event-tail.js";

export interface ClusterStreamDeps {
	subscriptions: EventSubscriptions;
	/** How often a reader re-reads the log after its cursor. */
	recheckMs: number;
}

/** The longest events the tail's mark held back wait for their publish (see `recheckHeldBack`). */
const HOLD_BACK_MS = 1000;

/** The tail of a process without Redis: the log is all there is (a single node's readers). */
export const NO_TAIL: Pick<EventTail, "read"> = {
	read: async () => ({ events: [], covered: Number.POSITIVE_INFINITY }),
};

/** What a reader does with each event, in id order: send it and go on, or stop (the stream ends). */
type EventSink = (event: StoredEvent) => "next" | "stop";

/**
 * How far a read may take the log: `marked`, up to the tail's high-water mark (what is above may
 * still have deltas to publish: it comes live); `all`, the whole log (when what the mark held
 * back did not come live for a while: its publish failed, and the reader would otherwise wait).
 */
type ReadScope = "marked" | "all";

/** What one read found: the events to send, and whether the mark held back events the log has. */
interface MergedPage {
	events: StoredEvent[];
	heldBack: boolean;
}

/**
 * The union by id of a log page and a tail page after `cursor`, in id order, as far as both are
 * known to be complete: not past the log page's last event (the log may go on after it, with
 * events the tail trimmed), nor the tail's mark when `scope` is `marked`; at most `maxBytes` of
 * data (one event at least).
 */
export function mergePages(
	cursor: number,
	logged: StoredEvent[],
	tail: { events: StoredEvent[]; covered: number } | undefined,
	scope: ReadScope,
	maxBytes: number,
): MergedPage {
	if (!tail) return { events: logged, heldBack: false };
	const byId = new Map<number, StoredEvent>();
	for (const event of tail.events) if (event.id > cursor) byId.set(event.id, event);
	for (const event of logged) if (event.id > cursor) byId.set(event.id, event);
	let limit = scope === "marked" ? tail.covered : Number.POSITIVE_INFINITY;
	const lastLogged = logged.at(-1)?.id;
	if (lastLogged !== undefined) limit = Math.min(limit, lastLogged);
	const heldBack = scope === "marked" && logged.some((e) => e.id > tail.covered);
	const events: StoredEvent[] = [];
	let bytes = 0;
	for (const id of [...byId.keys()].sort((a, b) => a - b)) {
		if (id > limit) break;
		const event = byId.get(id)!;
		bytes += event.data.length;
		if (events.length > 0 && bytes > maxBytes) break;
		events.push(event);
	}
	return { events, heldBack };
}

/**
 * One reader: the ordered merge of the log and the live channel after `cursor`. `start()` begins
 * with a read of the log; events reach `sink` in id order, each once.
 */
export class ClusterReader {
	private readonly queue: StoredEvent[] = [];
	private readonly maxQueued: number;
	/** The read to do at the next chance, if any. */
	private needRead: ReadScope | undefined = "marked";
	private pumping = false;
	private stopped = false;
	private timer: NodeJS.Timeout | undefined;
	/** When the last live message arrived (the periodic re-check reads the log only after a quiet interval). */
	private lastLiveAt = 0;
	/** How long events the mark held back may wait for their publish before the whole log is read. */
	private readonly holdMs: number;
	/** The re-read after events were held back, if one is due. */
	private heldTimer: NodeJS.Timeout | undefined;
	/**
	 * Called after each pass over the log with nothing left to read (the periodic re-check's hook);
	 * `heldBack`: the log has events above the tail's mark, not sent yet.
	 */
	onIdleCheck: ((heldBack: boolean) => Promise<void> | void) | undefined;
	/** The scope of the current pass (what `readToEnd` reads in). */
	private scope: ReadScope = "marked";

	constructor(
		private readonly session: LiveSession,
		private readonly tail: Pick<EventTail, "read">,
		private readonly sse: StreamSink,
		public cursor: number,
		private readonly sink: EventSink,
		private readonly trimmed: () => void,
		recheckMs: number,
	) {
		this.maxQueued = REPLAY_PAGE_EVENTS * 10;
		this.holdMs = Math.min(recheckMs, HOLD_BACK_MS);
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
			this.needRead ??= "marked";
		} else {
			this.queue.push({ id, type, data, createdAt: 0 });
		}
		this.pump();
	}

	/** Read after the cursor at the next chance. */
	resync(): void {
		this.request("marked");
	}

	private request(scope: ReadScope): void {
		if (this.stopped) return;
		if (this.needRead !== "all") this.needRead = scope;
		this.pump();
	}

	stop(): void {
		this.stopped = true;
		clearInterval(this.timer);
		clearTimeout(this.heldTimer);
		this.queue.length = 0;
	}

	/**
	 * The log has events above the mark: normally their publish is a moment away and brings them
	 * live. If no live message came by `holdMs` (the publish failed: Redis was away from the
	 * running replica), the whole log is read instead of waiting for the quiet re-check.
	 */
	private recheckHeldBack(): void {
		if (this.heldTimer) return;
		const since = Date.now();
		this.heldTimer = setTimeout(() => {
			this.heldTimer = undefined;
			if (this.lastLiveAt < since) this.request("all");
		}, this.holdMs);
		this.heldTimer.unref();
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
				if (!this.stopped && (this.needRead !== undefined || this.queue.length > 0)) this.pump();
			});
	}

	private async run(): Promise<void> {
		while (!this.stopped && !this.sse.isClosed) {
			if (this.needRead !== undefined) {
				const scope = this.needRead;
				this.needRead = undefined;
				this.scope = scope;
				const heldBack = await this.readLog(Number.POSITIVE_INFINITY, scope);
				if (this.stopped) return;
				if (heldBack) this.recheckHeldBack();
				await this.onIdleCheck?.(heldBack);
				continue;
			}
			const next = this.queue.shift();
			if (!next) return;
			if (next.id <= this.cursor) continue;
			// A gap: what the channel missed is in the tail or the log (published only once durable).
			if (next.id > this.cursor + 1) await this.readLog(next.id - 1, "marked");
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

	/**
	 * Sends what the log has after the cursor now (however it got there), up to the live messages
	 * waiting, in the current pass's scope; resolves to whether the mark held events back.
	 */
	readToEnd(): Promise<boolean> {
		return this.readLog(Number.POSITIVE_INFINITY, this.scope);
	}

	/** Whether live messages wait to be sent. */
	get hasQueued(): boolean {
		return this.queue.length > 0;
	}

	/**
	 * Sends the events after the cursor up to `until` (the log's and the tail's, see `mergePages`),
	 * a page at a time as the socket drains. Resolves to whether the mark held back events the log
	 * has (they come live, or with a read of scope `all`).
	 */
	private async readLog(until: number, scope: ReadScope): Promise<boolean> {
		const log = this.session.events;
		while (!this.stopped) {
			await this.sse.whenWritable();
			if (this.sse.isClosed || this.stopped) return false;
			const cursor = this.cursor;
			const maxBytes = replayPageBytes(this.sse);
			const [logged, tail] = await Promise.all([
				log.read(cursor, REPLAY_PAGE_EVENTS, maxBytes),
				this.tail.read(this.session.id, cursor, REPLAY_PAGE_EVENTS),
			]);
			if (this.stopped || this.sse.isClosed) return false;
			const page = mergePages(cursor, logged, tail, scope, maxBytes);
			const events = page.events;
			if (events.length > 0 && events[0]!.id > cursor + 1 && !(await log.isRetained(cursor))) {
				// The trimmed handler sends a reset snapshot and moves the cursor to it; the next read
				// (a live message, or the periodic re-check) goes on from there.
				this.trimmed();
				return false;
			}
			let progressed = false;
			for (const event of events) {
				// What was read fills only what comes before the live messages waiting: its holes (deltas
				// nothing kept) must not make the reader skip live ones.
				if (event.id > until || (this.queue.length > 0 && event.id >= this.queue[0]!.id)) return false;
				if (event.id <= this.cursor) continue;
				if (!this.emit(event)) return false;
				progressed = true;
			}
			if (!progressed) return page.heldBack;
			if (this.cursor >= until) return false;
		}
		return false;
	}
}

/**
 * Subscribes to the session's channel, then — once the subscription is in place, so nothing
 * published from then on is missed — makes the reader (`start` sends what comes first: the
 * snapshot) and hands it what arrived meanwhile. Returns what ends both (the connection's close
 * calls it).
 */
export function attach(
	deps: ClusterStreamDeps,
	session: LiveSession,
	sse: StreamSink,
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
	open: OpenStreamSink,
	afterId: number | undefined,
): void {
	let reader: ClusterReader | undefined;
	let stop: (() => void) | undefined;
	const sse = open(() => stop?.());
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
			deps.subscriptions.tail,
			sse,
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
	/** The run began with a cut: see `RunPosition.afterCut`. */
	afterCut?: boolean;
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
	open: OpenStreamSink,
	run: ClusterRunPosition,
	afterId: number | undefined,
): void {
	let stop: (() => void) | undefined;
	const sse = open(() => stop?.());
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
			deps.subscriptions.tail,
			sse,
			cursor,
			(event) => {
				if (event.type === "agent_start" && event.id > ownStartId(run)) {
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
		r.onIdleCheck = async (heldBack) => {
			if (heldBack) return; // the log has more than was published: it comes live, or at the re-check
			const record = await session.readRecord();
			if (!record || record.currentRunId !== run.runId || record.status !== "running") {
				// The run may have ended since the log was read, its last events committed with its
				// end: read the log once more, or a short run would end this stream with none of them.
				// Live messages that came meanwhile are sent next (the last of them ends the stream);
				// without any (and nothing held back for its deltas to be published), the log had everything.
				if (await r.readToEnd()) return;
				if (!r.hasQueued) finish();
			}
		};
		return r;
	});
}

/**
 * Follows a session's events after `cursor` for a stream in another protocol (`SessionPort.follow`,
 * the A2A facade's task streams), in id order and each once: the log first, then live. In cluster
 * mode (`cluster`) the session's channel brings them, wherever it runs; on a single node this
 * process's own events do, each once it is durable (`store.sync()`), and the log is re-read every
 * `recheckMs` while nothing comes. Returns what stops it (the sink's close must call it too).
 */
export function followSessionEvents(
	cluster: ClusterStreamDeps | undefined,
	local: { store: { sync(): Promise<void> }; recheckMs: number },
	session: LiveSession,
	sse: StreamSink,
	cursor: number,
	follower: EventFollower,
): () => void {
	const recheckMs = cluster?.recheckMs ?? local.recheckMs;
	const make = () => {
		const tail = cluster ? cluster.subscriptions.tail : NO_TAIL;
		const reader = new ClusterReader(
			session,
			tail,
			sse,
			cursor,
			(event) => follower.event(event),
			() => follower.trimmed(),
			recheckMs,
		);
		// Events above the tail's mark come live (or with the next full read), not from this pass.
		reader.onIdleCheck = (heldBack) => (heldBack ? undefined : follower.idle(reader));
		return reader;
	};
	if (cluster) return attach(cluster, session, sse, make);
	const reader = make();
	/** The barrier of the events appended in this synchronous stretch: one commit for all of them. */
	let barrier: Promise<void> | undefined;
	const unsubscribe = session.observe({
		// An event is sent once it is durable (the barriers resolve in order, so the order holds).
		event({ id, type, data }) {
			barrier ??= Promise.resolve().then(() => {
				barrier = undefined;
				return local.store.sync();
			});
			barrier.then(
				() => reader.live(id, type, data),
				() => reader.resync(),
			);
		},
		// The session is going away (deleted, shutdown): the stream ends, as `/v1`'s do.
		close(reason) {
			sse.end(formatComment(`closing: ${reason}`));
		},
	});
	reader.resync();
	return () => {
		reader.stop();
		unsubscribe();
	};
}
