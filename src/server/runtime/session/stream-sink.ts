/**
 * Where a session's event stream is written ({@link StreamSink}), and how the runtime opens one
 * ({@link OpenStreamSink}): the runtime's own contract for an open stream, so that it knows nothing
 * of the HTTP layer. The runtime decides what goes out (a snapshot, a replay of the log, live
 * events, a run's events up to its end) and builds the frames (src/wire/sse-frames.ts: each
 * event's frame is built once for all its subscribers); the sink owns the connection: when bytes
 * reach the socket, heartbeats, buffering, the drop of a reader that does not keep up.
 * `SseConnection` (http/sse/connection.ts) implements it over an SSE response; `sseSink`
 * (http/sse/open.ts) is the opener a route hands to the session port.
 */
import type { StoredEvent } from "../../../store/types.js";
import { formatEventFrame } from "../../../wire/sse-frames.js";

/**
 * An open stream to one reader. Contract: nothing queued reaches the reader before what it
 * depends on is durable (the sink runs the store's write barrier before handing bytes to the
 * socket, the stream's head included), and frames go out in the order they were queued.
 */
export interface StreamSink {
	/**
	 * Queues an event's frame (built with `formatEventFrame` / `formatFrame`); `id` is the event's
	 * id, remembered as {@link lastSentId} once the frame is written. Ignored once closed.
	 */
	send(frame: string, id?: number): void;
	/**
	 * Ends the stream after what is queued, with `finalChunk` last (a comment saying why, e.g.
	 * `formatComment("closing: <reason>")`); after the write barrier like every frame. Idempotent.
	 */
	end(finalChunk?: string): void;
	/**
	 * Ends the stream now with `finalChunk`, discarding every frame not yet written (even after
	 * `end`): the session was lost to another replica (lease lost), and those frames may be of
	 * events its store refused. Idempotent.
	 */
	abandon(finalChunk: string): void;
	/** True once the stream ended or is ending (ended, abandoned, the reader gone or dropped): nothing more goes out. */
	readonly isClosed: boolean;
	/** The id of the last event frame written to the reader (where it resumes after an abandon or a drop). */
	readonly lastSentId: number | undefined;
	/** Bytes queued for the reader and not yet taken by it. */
	readonly bufferedBytes: number;
	/**
	 * The reader's buffer budget: a reader with more than this queued while its connection is
	 * behind is dropped (it gets `stream_dropped` and resumes). A producer that can outrun the
	 * socket (a replay of the log) sizes what it queues by it.
	 */
	readonly maxBufferBytes: number;
	/**
	 * Resolves once every queued frame was taken by the connection without it asking to wait (or
	 * the stream closed: check {@link isClosed}). A producer that can outrun the socket waits for
	 * it before queueing more.
	 */
	whenWritable(): Promise<void>;
}

/**
 * Opens the stream; the runtime calls it once, when the stream begins (a run's stream once the
 * run exists: until then the caller may still answer otherwise, e.g. a refused prompt with its
 * error). `onClose` is called once when the stream closes, for any reason.
 */
export type OpenStreamSink = (onClose: () => void) => StreamSink;

/** Queues a stored event's frame on `sink`, under the event's id. */
export function sendStored(sink: StreamSink, event: StoredEvent): void {
	sink.send(formatEventFrame(event.id, event.type, event.data), event.id);
}
