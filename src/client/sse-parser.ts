/**
 * Reads SSE messages from a byte stream, in Node and in browsers.
 */
import { createParser, type EventSourceMessage, type ParseError } from "eventsource-parser";

/** One SSE message as parsed (`event` defaults to `"message"`, as in a browser's EventSource). */
export interface SseMessage {
	id: string | undefined;
	event: string;
	data: string;
}

export interface ReadSseOptions {
	/** Called with the server's `retry:` value (ms). */
	onRetry?: (ms: number) => void;
	/** Called for each malformed line (unknown field, bad retry); parsing goes on. Default: ignored. */
	onError?: (error: ParseError) => void;
	/** Called for each comment line (heartbeats). */
	onComment?: (comment: string) => void;
}

/**
 * Reads SSE messages from a byte stream (a fetch `Response.body` in Node or a browser), using
 * eventsource-parser for the framing rules (CR/LF/CRLF, multi-line data, BOM, `retry`).
 *
 * Ends when the stream ends; a message cut off by the end is dropped (the SSE rule), so a client
 * that resumes after the last complete id loses nothing. Errors of the stream (a reset socket)
 * propagate to the caller's loop.
 */
export async function* readSse(
	body: ReadableStream<Uint8Array>,
	options: ReadSseOptions = {},
): AsyncGenerator<SseMessage, void, undefined> {
	const ready: SseMessage[] = [];
	const parser = createParser({
		onEvent(message: EventSourceMessage) {
			ready.push({ id: message.id, event: message.event ?? "message", data: message.data });
		},
		onRetry: options.onRetry,
		onError: options.onError,
		onComment: options.onComment,
	});
	const decoder = new TextDecoder();
	// getReader() rather than async iteration: Safari's ReadableStream is not async-iterable.
	const reader = body.getReader();
	try {
		for (;;) {
			const { done, value } = await reader.read();
			if (done) break;
			parser.feed(decoder.decode(value, { stream: true }));
			for (let i = 0; i < ready.length; i++) yield ready[i];
			ready.length = 0;
		}
	} finally {
		// Cancels the body when the consumer stops early (break / return), freeing the socket.
		await reader.cancel().catch(() => {});
		reader.releaseLock();
	}
}
