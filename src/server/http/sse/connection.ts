/**
 * One open SSE response ({@link SseConnection}): batching through the app's write passes,
 * heartbeats, bounded buffering, the drop of a subscriber that does not keep up, and idempotent
 * cleanup; and the app's SSE counters ({@link SseStats}).
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
import type { SseEventName } from "../../../wire/events.js";
import { formatComment, formatFrame, formatRetry } from "../../../wire/sse-frames.js";
import type { StreamSink } from "../../runtime/session/stream-sink.js";
import { type PassWriter, WritePasses } from "./write-passes.js";

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
	/** Interval of `: heartbeat` comment lines; 0 disables them. */
	heartbeatMs: number;
	/** Sent as a `retry:` line at the start (part of the first event's frame, see frames.ts). */
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
	/**
	 * The app's write scheduler (with its store's durability barrier). Absent: the connection gets
	 * a scheduler of its own, with no barrier (a connection used outside an app).
	 */
	passes?: WritePasses;
	/**
	 * The last frame a dropped subscriber gets, given the id of the last event it was sent. Default:
	 * the `stream_dropped` event. A stream in another protocol (AG-UI) says it in its own terms.
	 */
	dropFrame?: (lastEventId: number | undefined) => string;
}

export type SseCloseReason = "ended" | "client_closed" | "overflow";

const HEARTBEAT = formatComment("heartbeat");

/** How long a dropped or ended subscriber may take to read its last bytes before the socket is destroyed. */
const LINGER_MS = 5_000;

/** The native drop notice: the `stream_dropped` event, with the id to resume after. */
function droppedFrame(lastEventId: number | undefined): string {
	const notice = JSON.stringify({
		type: "stream_dropped",
		reason: "slow_consumer",
		message: "This subscriber fell too far behind and was dropped; reconnect with Last-Event-ID to resume.",
		lastEventId: lastEventId ?? null,
	});
	return formatFrame({ event: "stream_dropped" satisfies SseEventName, data: notice });
}

/**
 * One open SSE response. Frames passed to {@link send} in the same event-loop turn go out in one
 * `write()` (per-write cost, not JSON, is what limits SSE throughput). The session runtime writes
 * to it as its {@link StreamSink}.
 */
export class SseConnection implements PassWriter, StreamSink {
	private readonly passes: WritePasses;
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
	/** Set by {@link cut}: how much of `pending` the next write takes, and the id of its last frame. */
	private cutAt: number | undefined;
	private cutLastId: number | undefined;

	constructor(
		private readonly res: ServerResponse,
		private readonly options: SseConnectionOptions,
	) {
		this.passes = options.passes ?? new WritePasses();
		this.onResClose = this.onResClose.bind(this);
		this.onDrain = this.onDrain.bind(this);
		this.onStall = this.onStall.bind(this);
	}

	/**
	 * Opens the stream: the status line, headers and the `retry:` line go out with the first write
	 * pass, after the write barriers (so the response to a prompt is never sent before its run is
	 * durable). Starts heartbeats. Neither the `retry:` line nor a heartbeat ends with a blank line
	 * (frames.ts says why): no client sees a message that is not an event.
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
		this.sendRaw(formatRetry(this.options.retryMs));
		if (this.options.heartbeatMs > 0) {
			this.heartbeat = setInterval(() => this.sendRaw(HEARTBEAT), this.options.heartbeatMs);
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

	/** The subscriber's buffer budget (`maxBufferBytes` of the options). */
	get maxBufferBytes(): number {
		return this.options.maxBufferBytes;
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

	/** Marks what is pending now as what the next write takes (the barriers about to run cover it). */
	cut(): void {
		this.cutAt = this.pending.length;
		this.cutLastId = this.pendingLastId;
	}

	/**
	 * Writes what is pending — up to the cut, if one was made — in one `write()` (with the response
	 * head the first time), or ends the response if `end()` was called and nothing queued after the
	 * cut remains. Called by the write passes, which have run the write barriers. Frames queued after
	 * the cut go to the next pass. Returns true for a write of a stream in flow (not its head, not its
	 * end): what the passes time.
	 */
	writePending(): boolean {
		this.scheduled = false;
		const upTo = this.cutAt ?? this.pending.length;
		const lastId = this.cutAt === undefined ? this.pendingLastId : this.cutLastId;
		this.cutAt = undefined;
		if (this.closed || this.ending) return false;
		if (this.endRequested && upTo === this.pending.length) {
			const rest = this.pending;
			this.lastSentId = lastId;
			this.pending = "";
			this.finish(rest, "ended");
			return false;
		}
		if (upTo === 0) {
			if (this.pending !== "") this.queueForPass();
			return false;
		}
		const chunk = upTo === this.pending.length ? this.pending : this.pending.slice(0, upTo);
		this.pending = upTo === this.pending.length ? "" : this.pending.slice(upTo);
		this.lastSentId = lastId;
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
		} else if (this.pending !== "" || this.endRequested) {
			this.queueForPass(); // what came after the cut
		} else if (this.drainWaiters.length > 0) this.wakeWaiters();
		return flowing;
	}

	private onDrain(): void {
		this.waitingForDrain = false;
		clearTimeout(this.stallTimer);
		this.stallTimer = undefined;
		// The next write pass (after the write barriers) sends the rest.
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
		const frame = this.options.dropFrame?.(this.lastSentId) ?? droppedFrame(this.lastSentId);
		this.finish(`${formatComment("dropped: slow consumer")}${frame}`, "overflow");
	}

	/**
	 * Sends what is pending plus `finalChunk` with the next write pass (after the write barriers,
	 * like every frame), then ends the response and cleans up. Idempotent.
	 */
	end(finalChunk = ""): void {
		if (this.isClosed) return;
		this.endRequested = true;
		this.stopTimers();
		this.pending += finalChunk;
		if (this.waitingForDrain) {
			// A reader that stopped reading may never drain: end now, after the barriers; the linger
			// timer then bounds how long the socket is kept.
			this.passes.afterBarriers(this, () => this.writePending());
			return;
		}
		this.queueForPass(); // the pass ends it
	}

	/**
	 * Ends the response now with `finalChunk`, discarding every frame not yet handed to the socket,
	 * even after `end()`: the stream's session was lost to another replica, and those frames may
	 * be of events the store refused. Not after the write barriers: `finalChunk` is no event of
	 * the log. Idempotent.
	 */
	abandon(finalChunk: string): void {
		if (this.closed || this.ending) return;
		this.pending = "";
		this.cutAt = undefined;
		this.finish(finalChunk, "ended");
	}

	/** Queues this connection for the next write pass, once. */
	private queueForPass(): void {
		if (this.scheduled) return;
		this.scheduled = true;
		this.passes.add(this);
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
