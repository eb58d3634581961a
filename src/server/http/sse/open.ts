/**
 * Opens an SSE response on a Fastify reply with the app's stream settings: hijacks the reply,
 * keeps the headers hooks set (CORS, the request id) and wires the connection to the app's write
 * passes and counters. {@link sseSink} wraps it as the opener a route hands to the session port
 * (the runtime's `OpenStreamSink`).
 */
import type { FastifyReply } from "fastify";
import type { OpenStreamSink } from "../../runtime/session/stream-sink.js";
import { SseConnection, type SseStats } from "./connection.js";
import type { WritePasses } from "./write-passes.js";

/** The SSE settings of one app (`app.wheelhouse.stream`). */
export interface StreamSettings {
	heartbeatMs: number;
	retryMs: number;
	maxBufferBytes: number;
	/** How long a subscriber's socket may go without draining before it is dropped (0: never). */
	stallMs: number;
	/** The app's SSE counters (metrics); absent when metrics are off. */
	stats?: SseStats;
	/** The app's write scheduler, with its store's durability barrier. */
	passes: WritePasses;
}

/**
 * Hijacks the reply and opens an SSE response on it (keeping headers hooks set, e.g. CORS).
 * `dropFrame`: the last frame of a subscriber dropped for not keeping up (default `stream_dropped`).
 */
export function openSse(
	reply: FastifyReply,
	settings: StreamSettings,
	onClose?: () => void,
	dropFrame?: (lastEventId: number | undefined) => string,
): SseConnection {
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
		passes: settings.passes,
		headers,
		dropFrame,
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

/**
 * The session port's stream opener for `reply`: the SSE response is opened (the reply hijacked)
 * only when the runtime begins the stream, so a request refused before that (a prompt answered
 * `AGENT_BUSY`, a session that cannot be loaded) still gets its error as JSON.
 */
export function sseSink(reply: FastifyReply, settings: StreamSettings): OpenStreamSink {
	return (onClose) => openSse(reply, settings, onClose);
}
