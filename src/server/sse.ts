/**
 * Server-Sent Events writing: frame encoding by the rules, and one {@link SseConnection} per
 * subscriber with batching, heartbeats, bounded buffering and idempotent cleanup.
 *
 * Frame rules (WHATWG HTML, "Server-sent events"): every line of `data` becomes its own `data:`
 * line (split on CRLF, CR and LF); `id` and `event` must not contain CR or LF (a caller passing
 * one is a bug, so it throws); a comment line starts with `:`.
 *
 * Backpressure: while the socket has not drained its last write, new frames wait here; when more
 * than `maxBufferBytes` wait, the subscriber is dropped (memory per subscriber is bounded by that
 * plus the one batch the socket holds). The dropped subscriber
 * gets a final `stream_dropped` event naming the reason and the last id it was sent, the
 * response ends, and the socket is destroyed if the peer still does not read. The client
 * resumes with `Last-Event-ID`; the run is never affected.
 */
import type { ServerResponse } from "node:http";

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

/** A comment frame (ignored by clients; keeps proxies from closing an idle stream). */
export function formatComment(text: string): string {
	return text
		.split(LINE_BREAK)
		.map((line) => `: ${line}\n`)
		.join("")
		.concat("\n");
}

export interface SseConnectionOptions {
	/** Interval of `: heartbeat` comments; 0 disables them. */
	heartbeatMs: number;
	/** Sent as `retry:` at the start. */
	retryMs: number;
	/** Most unsent bytes held for this subscriber before it is dropped. */
	maxBufferBytes: number;
	/** Extra response headers (CORS headers a hook set before the reply was hijacked). */
	headers?: Record<string, string | string[] | number | undefined>;
	/** Called once when the connection closes for any reason (peer gone, dropped, ended). */
	onClose?: (reason: SseCloseReason) => void;
}

export type SseCloseReason = "ended" | "client_closed" | "overflow";

/** Minimum spacing of writes while events stream continuously (bounds added latency to 1 ms). */
const COALESCE_MS = 1;

/** How long a dropped or ended subscriber may take to read its last bytes before the socket is destroyed. */
const LINGER_MS = 5_000;

/**
 * One open SSE response. Frames passed to {@link send} in the same event-loop turn go out in one
 * `write()` (per-write cost, not JSON, is what limits SSE throughput).
 */
export class SseConnection {
	private pending: string[] = [];
	private pendingBytes = 0;
	private scheduled = false;
	private waitingForDrain = false;
	private heartbeat: NodeJS.Timeout | undefined;
	private closed = false;
	private ending = false;
	/** The id of the last frame written to the socket (the drop notice tells the client to resume from it). */
	lastSentId: number | undefined;
	private pendingLastId: number | undefined;
	private lastWriteAt = Number.NEGATIVE_INFINITY;

	constructor(
		private readonly res: ServerResponse,
		private readonly options: SseConnectionOptions,
	) {
		this.onResClose = this.onResClose.bind(this);
		this.flush = this.flush.bind(this);
		this.onDrain = this.onDrain.bind(this);
	}

	/** Writes the status line and headers and `retry:`; starts heartbeats. */
	open(): void {
		const headers: Record<string, string | string[] | number> = {};
		for (const [k, v] of Object.entries(this.options.headers ?? {})) if (v !== undefined) headers[k] = v;
		this.res.writeHead(200, {
			...headers,
			"content-type": "text/event-stream; charset=utf-8",
			"cache-control": "no-cache, no-transform",
			connection: "keep-alive",
			"x-accel-buffering": "no",
		});
		this.res.on("close", this.onResClose);
		this.res.on("drain", this.onDrain);
		this.res.socket?.setNoDelay(true);
		this.res.write(`retry: ${this.options.retryMs}\n\n`);
		if (this.options.heartbeatMs > 0) {
			this.heartbeat = setInterval(() => this.sendRaw(": heartbeat\n\n"), this.options.heartbeatMs);
			this.heartbeat.unref();
		}
	}

	get isClosed(): boolean {
		return this.closed || this.ending;
	}

	/** Queues an event frame (built with {@link formatFrame}); `id` is remembered for the drop notice. */
	send(frame: string, id?: number): void {
		if (this.isClosed) return;
		if (id !== undefined) this.pendingLastId = id;
		this.sendRaw(frame);
	}

	/** Bytes queued here or in the socket and not yet sent. */
	get bufferedBytes(): number {
		return this.pendingBytes + this.res.writableLength;
	}

	/** True when the socket is behind (a replay reader should wait for {@link whenDrained}). */
	get isBackedUp(): boolean {
		return this.waitingForDrain || this.bufferedBytes > this.options.maxBufferBytes / 2;
	}

	private drainWaiters: (() => void)[] = [];

	/** Resolves when the socket has drained (or the connection closed). */
	whenDrained(): Promise<void> {
		if (!this.isBackedUp || this.isClosed) return Promise.resolve();
		return new Promise((resolve) => this.drainWaiters.push(resolve));
	}

	private sendRaw(chunk: string): void {
		if (this.isClosed) return;
		this.pending.push(chunk);
		this.pendingBytes += chunk.length;
		// Frames pile up here only while the socket has not drained its last write: that backlog is
		// what a slow reader costs, so that is what the limit bounds (the socket itself holds at most
		// one flushed batch).
		if (this.waitingForDrain && this.pendingBytes > this.options.maxBufferBytes) {
			this.drop();
			return;
		}
		if (!this.scheduled && !this.waitingForDrain) {
			this.scheduled = true;
			// Per-write cost (a syscall that wakes the reader), not JSON, limits SSE throughput. A
			// sparse event goes out at the end of this turn; while events keep coming, writes are
			// spaced COALESCE_MS apart so each one carries everything that arrived meanwhile.
			const sinceWrite = performance.now() - this.lastWriteAt;
			if (sinceWrite >= COALESCE_MS) setImmediate(this.flush);
			else setTimeout(this.flush, COALESCE_MS - sinceWrite);
		}
	}

	private flush(): void {
		this.scheduled = false;
		if (this.closed || this.pending.length === 0) return;
		const chunk = this.pending.length === 1 ? this.pending[0] : this.pending.join("");
		this.pending = [];
		this.pendingBytes = 0;
		this.lastSentId = this.pendingLastId;
		this.lastWriteAt = performance.now();
		if (!this.res.write(chunk)) this.waitingForDrain = true;
	}

	private onDrain(): void {
		this.waitingForDrain = false;
		if (this.pending.length > 0) this.flush();
		if (!this.isBackedUp) {
			for (const resolve of this.drainWaiters.splice(0)) resolve();
		}
	}

	/**
	 * Drops a subscriber that does not keep up: discards what it has not been sent, tells it why
	 * and where to resume, and ends the response.
	 */
	private drop(): void {
		if (this.isClosed) return;
		this.pending = [];
		this.pendingBytes = 0;
		const notice = JSON.stringify({
			type: "stream_dropped",
			reason: "slow_consumer",
			message: "This subscriber fell too far behind and was dropped; reconnect with Last-Event-ID to resume.",
			lastEventId: this.lastSentId ?? null,
		});
		this.finish(
			`${formatComment("dropped: slow consumer")}${formatFrame({ event: "stream_dropped", data: notice })}`,
			"overflow",
		);
	}

	/** Sends what is pending plus `finalChunk`, ends the response, and cleans up. Idempotent. */
	end(finalChunk = ""): void {
		if (this.isClosed) return;
		const rest = this.pending.join("") + finalChunk;
		this.lastSentId = this.pendingLastId;
		this.pending = [];
		this.pendingBytes = 0;
		this.finish(rest, "ended");
	}

	private finish(chunk: string, reason: SseCloseReason): void {
		this.ending = true;
		this.stopTimers();
		const res = this.res;
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
	}

	private cleanup(reason: SseCloseReason): void {
		if (this.closed) return;
		this.closed = true;
		this.stopTimers();
		this.pending = [];
		this.pendingBytes = 0;
		this.res.off("drain", this.onDrain);
		for (const resolve of this.drainWaiters.splice(0)) resolve();
		this.options.onClose?.(reason);
	}
}
