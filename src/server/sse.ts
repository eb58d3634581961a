/**
 * Server-Sent Events writing: frame encoding by the rules, and one {@link SseConnection} per
 * subscriber with batching, heartbeats, bounded buffering and idempotent cleanup.
 *
 * Frame rules (WHATWG HTML, "Server-sent events"): every line of `data` becomes its own `data:`
 * line (split on CRLF, CR and LF); `id` and `event` must not contain CR or LF (a caller passing
 * one is a bug, so it throws); a comment line starts with `:`.
 *
 * Backpressure: while the socket has not drained its last write, new frames wait here. A
 * subscriber is dropped when the bytes it has not taken — frames waiting here plus what the socket
 * was handed and has not flushed — pass `maxBufferBytes` while the socket is behind, or when the
 * socket has not drained for `stallMs` (a peer that stopped reading with less than its budget
 * outstanding, or a replay waiting for room). Memory per subscriber is thus bounded by its budget
 * (an event larger than the budget still goes out, alone). Producers that can produce faster than
 * any socket (a replay of the log) wait for {@link SseConnection.whenWritable} and size what they
 * queue by {@link SseConnection.bufferedBytes}, so they are held to the same budget as live events.
 * The dropped subscriber gets a final `stream_dropped` event naming the reason and the last id it
 * was sent, the response ends, and the socket is destroyed if the peer still does not read. The
 * client resumes with `Last-Event-ID`; the run is never affected.
 */
import type { ServerResponse } from "node:http";
import type { Socket } from "node:net";
import type { SseEventName } from "../wire/events.js";

const LINE_BREAK = /\r\n|\r|\n/;

function assertField(name: string, value: string): void {
	if (value.includes("\n") || value.includes("\r")) {
		throw new TypeError(
			`SSE ${name} must not contain CR or LF (got ${JSON.stringify(value)}); strip line breaks first`,
		);
	}
}

/** One SSE frame, ending with the blank line that dispatches it. */
export function formatFrame(frame: { id?: string | number; event?: string; data: string; retry?: number }): string {
	let out = "";
	if (frame.id !== undefined) {
		const id = String(frame.id);
		assertField("id", id);
		out += `id: ${id}\n`;
	}
	if (frame.event !== undefined) {
		assertField("event", frame.event);
		out += `event: ${frame.event}\n`;
	}
	if (frame.retry !== undefined) out += `retry: ${Math.max(0, Math.floor(frame.retry))}\n`;
	// JSON never contains raw line breaks, so the common case is a single line.
	if (frame.data.includes("\n") || frame.data.includes("\r")) {
		for (const line of frame.data.split(LINE_BREAK)) out += `data: ${line}\n`;
	} else {
		out += `data: ${frame.data}\n`;
	}
	return `${out}\n`;
}

/** Event names already checked by {@link formatEventFrame} (a handful: the event types). */
const checkedEvents = new Set<string>();

/**
 * {@link formatFrame} for the hot path: an event with an integer id and a `data` that is one line
 * of JSON (JSON.stringify output never contains a raw CR or LF). Same bytes as `formatFrame`.
 */
export function formatEventFrame(id: number, event: string, data: string): string {
	if (!checkedEvents.has(event)) {
		assertField("event", event);
		if (checkedEvents.size < 1024) checkedEvents.add(event);
	}
	if (!Number.isSafeInteger(id) || data.includes("\n") || data.includes("\r")) return formatFrame({ id, event, data });
	return `id: ${id}\nevent: ${event}\ndata: ${data}\n\n`;
}

/** A comment frame (ignored by clients; keeps proxies from closing an idle stream). */
export function formatComment(text: string): string {
	return text
		.split(LINE_BREAK)
		.map((line) => `: ${line}\n`)
		.join("")
		.concat("\n");
}

/**
 * What the SSE connections of one app count, read when /metrics is scraped. Plain numbers on
 * purpose: `events` is bumped per frame on the hottest path of the server. Bytes are not counted
 * per write (measuring a string's UTF-8 length scans it): they are the sockets' own byte counts,
 * summed over the open connections at scrape time and added to `closedBytes` when one closes.
 */
export interface SseStats {
	/** Open connections. */
	readonly connections: Set<SseConnection>;
	/** Event frames queued to subscribers (replayed and live, snapshots included). */
	events: number;
	/** Bytes written by connections that have closed (response heads included). */
	closedBytes: number;
	/** Subscribers dropped for not keeping up (buffer over budget, or a stalled socket). */
	dropped: number;
}

/** Every byte the app's SSE responses wrote so far, heads included. */
export function sseBytesWritten(stats: SseStats): number {
	let bytes = stats.closedBytes;
	for (const connection of stats.connections) bytes += connection.bytesWritten;
	return bytes;
}

export interface SseConnectionOptions {
	/** Interval of `: heartbeat` comments; 0 disables them. */
	heartbeatMs: number;
	/** Sent as `retry:` at the start. */
	retryMs: number;
	/** Most bytes queued for this subscriber, here or in its socket, before it is dropped while behind. */
	maxBufferBytes: number;
	/** How long the socket may go without draining before the subscriber is dropped; 0 disables. */
	stallMs: number;
	/** Extra response headers (CORS headers a hook set before the reply was hijacked). */
	headers?: Record<string, string | string[] | number | undefined>;
	/** Called once when the connection closes for any reason (peer gone, dropped, ended). */
	onClose?: (reason: SseCloseReason) => void;
	/** The app's SSE counters (metrics), bumped per frame and per write; absent when metrics are off. */
	stats?: SseStats;
}

export type SseCloseReason = "ended" | "client_closed" | "overflow";

/**
 * Write scheduling, shared by every connection of the process. Per-write cost (a syscall that also
 * wakes the reader), not JSON, is what limits SSE throughput: a write costs as much as producing
 * a few dozen events. So writes go out in *passes*: one pass writes every connection that has
 * frames waiting, one `write()` each. A connection whose frames arrive after a quiet spell is
 * written at the end of the current event-loop turn (no added latency); while events keep coming,
 * passes are spaced so that writing takes at most about a tenth of the time: the gap after a
 * pass is WRITE_SPACING times the passes' duration (a moving average of the writes of streams in
 * flow), at least MIN_GAP_MS and at most MAX_GAP_MS.
 * One stream then gets a write per millisecond; a hundred busy streams (a pass of ~100 writes at
 * ~7 µs each) get one write each per ~7 ms instead of one per event, and the added latency stays
 * below MAX_GAP_MS. (bench/sse, 100 sessions: server CPU per event 7.2–7.9 µs with a tenth, against
 * 8.1–11.1 µs with a quarter.)
 *
 * A pass first runs the pre-write hooks (the store's `sync()`: a commit when writes wait for one).
 * While they have work waiting and frames keep coming, passes are up to COMMIT_GAP_MS apart, so
 * that under load many sessions' run starts, completed messages and run ends share one commit
 * instead of one pass each (bench/sse, 100 sessions, SQLite: ~30 runs per commit instead of ~1).
 * Once no frame has been queued for QUIET_MS the pass runs: a quiet server (or the last stream of
 * a burst) still commits and writes at once.
 */
const MIN_GAP_MS = 1;
const MAX_GAP_MS = 16;
const WRITE_SPACING = 9;
const COMMIT_GAP_MS = 8;
const QUIET_MS = 1;
/** Weight of the latest pass in the moving average of pass durations. */
const PASS_AVERAGING = 0.25;

/** Frames queued on any connection so far (the write passes tell a busy server from a quiet one by it). */
let framesQueued = 0;

class WritePasses {
	private readonly waiting = new Set<SseConnection>();
	private scheduled = false;
	private lastPassAt = Number.NEGATIVE_INFINITY;
	private lastCommitAt = Number.NEGATIVE_INFINITY;
	private gapMs = MIN_GAP_MS;
	/** Moving average of the passes' durations (ms). */
	private passMs = 0;
	/** `framesQueued` when the scheduled pass last looked. */
	private framesSeen = 0;

	constructor() {
		this.run = this.run.bind(this);
	}

	/** Queues `connection` for the next pass (scheduling one if needed). */
	add(connection: SseConnection): void {
		this.waiting.add(connection);
		if (this.scheduled) return;
		this.scheduled = true;
		this.schedule(performance.now());
	}

	/** While a commit waits: milliseconds until the commit spacing is over (0: not waiting). */
	private commitWait(now: number): number {
		return hooksPending() ? this.lastCommitAt + COMMIT_GAP_MS - now : 0;
	}

	/**
	 * Runs the pass when the write spacing is over; while a commit waits, and as long as frames keep
	 * coming, up to the commit spacing (looking again every QUIET_MS).
	 */
	private schedule(now: number): void {
		const writeWait = this.lastPassAt + this.gapMs - now;
		if (writeWait > 0) {
			setTimeout(this.run, writeWait);
			return;
		}
		const commitWait = this.commitWait(now);
		if (commitWait > 0) this.lookAgain(commitWait);
		else setImmediate(this.run);
	}

	/** Notes the frames queued so far and runs the pass again in QUIET_MS (or when the commit spacing is over). */
	private lookAgain(commitWait: number): void {
		this.framesSeen = framesQueued;
		setTimeout(this.run, Math.min(commitWait, QUIET_MS));
	}

	private run(): void {
		const start = performance.now();
		const commitWait = this.commitWait(start);
		if (commitWait > 0 && framesQueued !== this.framesSeen) {
			this.lookAgain(commitWait);
			return;
		}
		this.scheduled = false;
		// Connections queued by a write's side effects (a close handler) go to the next pass.
		const batch = [...this.waiting];
		this.waiting.clear();
		if (hooksPending()) this.lastCommitAt = start;
		runBeforeWriteHooks(); // once for the whole pass
		// Only the writes of streams in flow count: a stream's head and its end are one-offs (~0.7 ms for
		// a head and the first frames) that would otherwise hold the next frames of every stream.
		let took = 0;
		for (const connection of batch) {
			const t0 = performance.now();
			if (connection.writePending()) took += performance.now() - t0;
		}
		this.lastPassAt = start;
		// Averaged, so one slow pass (a garbage collection) does not hold an interactive session's next
		// frames for up to MAX_GAP_MS; sustained load converges to the rule.
		this.passMs += (took - this.passMs) * PASS_AVERAGING;
		this.gapMs = Math.min(MAX_GAP_MS, Math.max(MIN_GAP_MS, this.passMs * (1 + WRITE_SPACING)));
	}
}

const passes = new WritePasses();

/** What runs before any frame is handed to a socket (see {@link beforeSseWrites}). */
export interface WriteBarrier {
	/** Makes what the frames depend on durable (the store's `sync()`). */
	run(): void;
	/** True while `run` has work to do (a commit waits). */
	readonly pending: boolean;
}

const barriers = new Set<WriteBarrier>();

/**
 * Registers `barrier` to run before frames are written to any SSE socket of the process (the
 * response head of a stream included): the server registers its store's `sync()`, so the writes
 * an event depends on (its run's start, its message, its run's end) are committed before any
 * client can see it. Returns the function that removes it.
 */
export function beforeSseWrites(barrier: WriteBarrier): () => void {
	barriers.add(barrier);
	return () => barriers.delete(barrier);
}

function runBeforeWriteHooks(): void {
	for (const barrier of barriers) barrier.run();
}

function hooksPending(): boolean {
	for (const barrier of barriers) if (barrier.pending) return true;
	return false;
}

/** How long a dropped or ended subscriber may take to read its last bytes before the socket is destroyed. */
const LINGER_MS = 5_000;

/**
 * One open SSE response. Frames passed to {@link send} in the same event-loop turn go out in one
 * `write()` (per-write cost, not JSON, is what limits SSE throughput).
 */
export class SseConnection {
	/** Frames not yet handed to the socket, concatenated. */
	private pending = "";
	private scheduled = false;
	private waitingForDrain = false;
	private heartbeat: NodeJS.Timeout | undefined;
	/** Runs while the socket is behind; drops the subscriber when it has not drained for `stallMs`. */
	private stallTimer: NodeJS.Timeout | undefined;
	private closed = false;
	/** The socket, kept (node detaches it from the response when the response finishes). */
	private socket: Socket | null = null;
	/** The socket's byte count when this response began (a kept-alive socket carried others before). */
	private bytesAtOpen = 0;
	private ending = false;
	/** `end()` was called: the next write pass sends what is pending and ends the response. */
	private endRequested = false;
	/** The id of the last frame written to the socket (the drop notice tells the client to resume from it). */
	lastSentId: number | undefined;
	private pendingLastId: number | undefined;

	constructor(
		private readonly res: ServerResponse,
		private readonly options: SseConnectionOptions,
	) {
		this.onResClose = this.onResClose.bind(this);
		this.onDrain = this.onDrain.bind(this);
		this.onStall = this.onStall.bind(this);
	}

	/**
	 * Opens the stream: the status line, headers and `retry:` go out with the first write pass,
	 * after the pre-write hooks (so the response to a prompt is never sent before its run is
	 * durable). Starts heartbeats.
	 */
	open(): void {
		if (this.options.stats) {
			this.socket = this.res.socket;
			this.bytesAtOpen = this.socket?.bytesWritten ?? 0;
			this.options.stats.connections.add(this);
		}
		this.res.on("close", this.onResClose);
		this.res.on("drain", this.onDrain);
		this.res.socket?.setNoDelay(true);
		this.sendRaw(`retry: ${this.options.retryMs}\n\n`);
		if (this.options.heartbeatMs > 0) {
			this.heartbeat = setInterval(() => this.sendRaw(": heartbeat\n\n"), this.options.heartbeatMs);
			this.heartbeat.unref();
		}
	}

	/** Writes the status line and headers, once (before the first bytes of the body). */
	private writeHead(): void {
		if (this.res.headersSent) return;
		const headers: Record<string, string | string[] | number> = {};
		for (const [k, v] of Object.entries(this.options.headers ?? {})) if (v !== undefined) headers[k] = v;
		this.res.writeHead(200, {
			...headers,
			"content-type": "text/event-stream; charset=utf-8",
			"cache-control": "no-cache, no-transform",
			connection: "keep-alive",
			"x-accel-buffering": "no",
		});
	}

	/** Bytes this response has written to its socket so far (its head included). */
	get bytesWritten(): number {
		return (this.socket?.bytesWritten ?? this.bytesAtOpen) - this.bytesAtOpen;
	}

	get isClosed(): boolean {
		return this.closed || this.ending || this.endRequested;
	}

	/** Queues an event frame (built with {@link formatFrame}); `id` is remembered for the drop notice. */
	send(frame: string, id?: number): void {
		if (this.isClosed) return;
		if (id !== undefined) this.pendingLastId = id;
		if (this.options.stats) this.options.stats.events++;
		this.sendRaw(frame);
	}

	/**
	 * Bytes queued for this subscriber and not yet flushed: frames waiting here plus what the socket
	 * was handed and has not passed on (`writableLength`). What the budget bounds.
	 */
	get bufferedBytes(): number {
		return this.pending.length + this.res.writableLength;
	}

	private drainWaiters: (() => void)[] = [];

	/**
	 * Resolves once every queued frame has been handed to a socket that took it without asking to
	 * wait (or the connection closed — check {@link isClosed}). A producer that can outrun the
	 * socket (a replay) waits for this before queueing more; while it waits, the stall rule applies.
	 */
	whenWritable(): Promise<void> {
		if (this.isClosed || this.isWritable) return Promise.resolve();
		return new Promise((resolve) => this.drainWaiters.push(resolve));
	}

	private get isWritable(): boolean {
		return !this.waitingForDrain && this.pending === "";
	}

	private wakeWaiters(): void {
		for (const resolve of this.drainWaiters.splice(0)) resolve();
	}

	private sendRaw(chunk: string): void {
		if (this.isClosed) return;
		framesQueued++;
		this.pending += chunk;
		// Frames pile up here only while the socket has not drained its last write: that backlog, with
		// what the socket holds unflushed, is what a slow reader costs, so that is what the limit bounds.
		if (this.waitingForDrain && this.bufferedBytes > this.options.maxBufferBytes) {
			this.drop();
			return;
		}
		if (!this.waitingForDrain) {
			this.queueForPass();
		}
	}

	/**
	 * Writes what is pending in one `write()` (with the response head the first time), or ends the
	 * response if `end()` was called. Called by the write passes, which have run the pre-write hooks.
	 * Returns true for a write of a stream in flow (not its head, not its end): what the passes time.
	 */
	writePending(): boolean {
		this.scheduled = false;
		if (this.closed || this.ending) return false;
		if (this.endRequested) {
			const rest = this.pending;
			this.lastSentId = this.pendingLastId;
			this.pending = "";
			this.finish(rest, "ended");
			return false;
		}
		if (this.pending === "") return false;
		const chunk = this.pending;
		this.pending = "";
		this.lastSentId = this.pendingLastId;
		// Corked around the write, so the syscall happens here rather than in a nextTick (which is
		// what node:http does on its own): a write pass then knows how long its writes took.
		const socket = this.res.socket;
		socket?.cork();
		const flowing = this.res.headersSent;
		this.writeHead();
		const ok = this.res.write(chunk);
		socket?.uncork();
		if (!ok) {
			this.waitingForDrain = true;
			if (this.options.stallMs > 0) this.stallTimer = setTimeout(this.onStall, this.options.stallMs).unref();
		} else if (this.drainWaiters.length > 0) this.wakeWaiters();
		return flowing;
	}

	private onDrain(): void {
		this.waitingForDrain = false;
		clearTimeout(this.stallTimer);
		this.stallTimer = undefined;
		// The next write pass (after the pre-write hooks) sends the rest.
		if (this.pending !== "" || this.endRequested) this.queueForPass();
		else this.wakeWaiters();
	}

	/** The socket has not drained for `stallMs`: the peer is not reading (fast enough) — drop it. */
	private onStall(): void {
		this.stallTimer = undefined;
		if (this.waitingForDrain) this.drop();
	}

	/**
	 * Drops a subscriber that does not keep up: discards what it has not been sent, tells it why
	 * and where to resume, and ends the response.
	 */
	private drop(): void {
		if (this.isClosed) return;
		this.pending = "";
		const notice = JSON.stringify({
			type: "stream_dropped",
			reason: "slow_consumer",
			message: "This subscriber fell too far behind and was dropped; reconnect with Last-Event-ID to resume.",
			lastEventId: this.lastSentId ?? null,
		});
		this.finish(
			`${formatComment("dropped: slow consumer")}${formatFrame({ event: "stream_dropped" satisfies SseEventName, data: notice })}`,
			"overflow",
		);
	}

	/**
	 * Sends what is pending plus `finalChunk` with the next write pass (after the pre-write hooks,
	 * like every frame), then ends the response and cleans up. Idempotent.
	 */
	end(finalChunk = ""): void {
		if (this.isClosed) return;
		this.endRequested = true;
		this.stopTimers();
		this.pending += finalChunk;
		if (this.waitingForDrain) {
			// A reader that stopped reading may never drain: end now, after the hooks; the linger
			// timer then bounds how long the socket is kept.
			runBeforeWriteHooks();
			this.writePending();
			return;
		}
		this.queueForPass(); // the pass ends it
	}

	/** Queues this connection for the next write pass, once. */
	private queueForPass(): void {
		if (this.scheduled) return;
		this.scheduled = true;
		passes.add(this);
	}

	private finish(chunk: string, reason: SseCloseReason): void {
		this.ending = true;
		this.stopTimers();
		const res = this.res;
		if (!res.writableEnded) this.writeHead();
		// A dropped subscriber's connection is closed once its last bytes are flushed (it must
		// reconnect anyway); a normally ended stream keeps its keep-alive connection.
		const onFinished = () => {
			clearTimeout(linger);
			if (reason === "overflow") res.socket?.end();
		};
		if (!res.writableEnded) res.end(chunk, onFinished);
		// A peer that never reads would keep the socket (and its buffer) forever.
		const linger = setTimeout(() => res.destroy(), LINGER_MS);
		linger.unref();
		this.cleanup(reason);
	}

	private onResClose(): void {
		this.cleanup("client_closed");
	}

	private stopTimers(): void {
		if (this.heartbeat) clearInterval(this.heartbeat);
		this.heartbeat = undefined;
		clearTimeout(this.stallTimer);
		this.stallTimer = undefined;
	}

	private cleanup(reason: SseCloseReason): void {
		if (this.closed) return;
		this.closed = true;
		this.stopTimers();
		this.pending = "";
		this.res.off("drain", this.onDrain);
		this.wakeWaiters();
		const stats = this.options.stats;
		if (stats?.connections.delete(this)) {
			stats.closedBytes += this.bytesWritten;
			if (reason === "overflow") stats.dropped++;
		}
		this.options.onClose?.(reason);
	}
}
