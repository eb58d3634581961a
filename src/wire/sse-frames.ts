/**
 * Server-Sent Events frame encoding, by the rules of WHATWG HTML ("Server-sent events"): every
 * line of `data` becomes its own `data:` line (split on CRLF, CR and LF); `id` and `event` must
 * not contain CR or LF (a caller passing one is a bug, so it throws); a comment line starts with `:`.
 *
 * Only an event frame ends with the blank line that dispatches it. A spec-following client
 * dispatches nothing for a blank line after no `data:`, but lenient ones do:
 * `@microsoft/fetch-event-source` hands `onmessage` an empty message for every blank line. So the
 * lines that are not events — the `retry:` field and comments (heartbeats, closing notes) — are
 * sent as lines without a blank line of their own: they join the next event's frame (where a
 * comment is ignored and `retry:` takes effect as it is read), or end the stream unterminated,
 * which every client discards.
 */
import { SSE_EVENT_NAMES } from "./events.js";

const LINE_BREAK = /\r\n|\r|\n/;

/**
 * The `event:` line and the `data: ` that follows it, for every event name the server sends: a
 * frame is then three pieces joined, not six (each join of a long string is an object to collect,
 * and a stream sends one frame per delta). A constant table, filled once, never written.
 */
const EVENT_LINES: ReadonlyMap<string, string> = new Map(
	SSE_EVENT_NAMES.map((name) => [name, `\nevent: ${name}\ndata: `]),
);

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

/**
 * {@link formatFrame} for the hot path: an event with an integer id and a `data` that is one line
 * of JSON (JSON.stringify output never contains a raw CR or LF). Same bytes as `formatFrame`.
 * An event name the server sends has its lines ready-made; any other is checked every time (a
 * cache of checked names would be state shared by every app of the process). The scan of `data`
 * for line breaks stays even though the server's data is JSON: it flattens a concatenated `data`
 * in place, so a store that keeps the string (the memory store) keeps one flat string, not the
 * tree of pieces it was built from, which the collector would copy and promote object by object.
 */
export function formatEventFrame(id: number, event: string, data: string): string {
	const lines = EVENT_LINES.get(event);
	if (lines === undefined || !Number.isSafeInteger(id) || data.includes("\n") || data.includes("\r")) {
		return formatFrame({ id, event, data });
	}
	return `id: ${id}${lines}${data}\n\n`;
}

/**
 * Comment lines (ignored by clients; a heartbeat keeps proxies from closing an idle stream), with
 * no blank line after them: sent between frames, they never dispatch an (empty) message.
 */
export function formatComment(text: string): string {
	return text
		.split(LINE_BREAK)
		.map((line) => `: ${line}\n`)
		.join("");
}

/**
 * The `retry:` field as a line of its own, with no blank line: the client sets its reconnection
 * delay as it reads the line, and the line belongs to the first event's frame that follows.
 */
export function formatRetry(ms: number): string {
	return `retry: ${Math.max(0, Math.floor(ms))}\n`;
}
