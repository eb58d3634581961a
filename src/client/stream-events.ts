/** Reads a Wheelhouse SSE response as parsed events, and the error a non-2xx answer becomes. */
import type { WireEvent } from "../wire/events.js";
import { errorFromResponse, WheelhouseError, WheelhouseHttpError } from "./errors.js";
import { readSse } from "./sse-parser.js";

/** One event received from a Wheelhouse SSE stream. */
export interface ReceivedEvent<T = WireEvent> {
	/** The per-session sequence number (`id:`), if the frame had one. */
	id: number | undefined;
	/** The SSE `event:` name: the AgentEvent type or a server-level event name. */
	type: string;
	/** The parsed `data:` JSON. */
	data: T;
}

export { WheelhouseHttpError };

export interface StreamEventsOptions {
	/** The first request: `GET …/events`, or `POST …/prompt` with `init` carrying the body. */
	url: string | URL;
	/** Method, body, extra headers of the first request only. */
	init?: RequestInit;
	/**
	 * Where to reconnect after a disconnect (with `Last-Event-ID`). Default: `url` when the first
	 * request is a GET; a POST is never repeated, so give the session's `/events` URL for it.
	 */
	resumeUrl?: string | URL;
	/** Sent with every request (e.g. `{ authorization: "Bearer …" }`). */
	headers?: Record<string, string>;
	/** Resume after this id (sent as `Last-Event-ID` on the first request too). */
	lastEventId?: number;
	/** Iteration ends after the first event for which this is true (e.g. `agent_end`). */
	until?: (event: ReceivedEvent) => boolean;
	/**
	 * The first request may be sent again (it carries an `Idempotency-Key`, so a repeat gets the
	 * same run rather than a second one): while it has had no event-stream answer (a network
	 * error, a 5xx), a reconnect repeats it instead of going to `resumeUrl`. Default false.
	 */
	repeatable?: boolean;
	/** Reconnect when the stream ends or fails before `until` (default true). */
	reconnect?: boolean;
	/** Consecutive failed reconnects before giving up with the last error (default 5). */
	maxRetries?: number;
	/** Wait before a reconnect; default: the server's `retry:` value, else 1000 ms. */
	retryDelayMs?: number;
	/** Aborting ends the iteration quietly. */
	signal?: AbortSignal;
	/** Default: `globalThis.fetch`. */
	fetch?: typeof fetch;
	/**
	 * Called for each malformed SSE line (unknown field, bad `retry:`); the stream goes on.
	 * Default: `console.warn`, since a Wheelhouse server never sends one.
	 */
	onParseError?: (error: Error) => void;
	/** Observes each reconnect (after a disconnect, before the new request). */
	onReconnect?: (info: { attempt: number; lastEventId: number | undefined; error?: unknown }) => void;
}

/**
 * Streams the events of a Wheelhouse SSE endpoint over fetch, resuming with `Last-Event-ID` after
 * any disconnect, so the caller sees every event exactly once, in order (ids at or below the last
 * one seen are dropped should a server resend them).
 *
 * Throws {@link WheelhouseHttpError} for a 4xx answer (bad request, unknown session, auth) and,
 * after `maxRetries` consecutive failures, the last network or 5xx error. A `data:` line that is
 * not JSON is a server bug and throws.
 */
/**
 * The last event of a run's stream: its `agent_end`, or a `run_interrupted` no run continues
 * (`willContinue` not true).
 */
export function endsRun(event: ReceivedEvent): boolean {
	return (
		event.type === "agent_end" ||
		(event.type === "run_interrupted" && (event.data as { willContinue?: boolean }).willContinue !== true)
	);
}

export async function* streamEvents(options: StreamEventsOptions): AsyncGenerator<ReceivedEvent, void, undefined> {
	const doFetch = options.fetch ?? globalThis.fetch;
	const firstMethod = (options.init?.method ?? "GET").toUpperCase();
	const resumeUrl = options.resumeUrl ?? (firstMethod === "GET" ? options.url : undefined);
	const reconnect = options.reconnect ?? true;
	const maxRetries = options.maxRetries ?? 5;
	let lastEventId = options.lastEventId;
	let serverRetryMs: number | undefined;
	let failures = 0;
	let first = true;

	for (;;) {
		if (options.signal?.aborted) return;
		let failure: unknown;
		try {
			const headers: Record<string, string> = { accept: "text/event-stream", ...options.headers };
			if (first) Object.assign(headers, headersOf(options.init?.headers));
			if (lastEventId !== undefined) headers["last-event-id"] = String(lastEventId);
			const url = first ? options.url : resumeUrl!;
			const response = await doFetch(url, {
				...(first ? options.init : {}),
				method: first ? firstMethod : "GET",
				headers,
				signal: options.signal,
			});
			if (!options.repeatable) first = false;
			if (!response.ok || !response.body) {
				const error = await httpError(response);
				if (response.status < 500) throw error;
				failure = error;
			} else if (!(response.headers.get("content-type") ?? "").includes("text/event-stream")) {
				const error = await httpError(response);
				throw new WheelhouseError(
					response.status,
					error.code,
					`expected a text/event-stream answer, got ${response.headers.get("content-type")}: ${error.message}`,
					error.body,
				);
			} else {
				first = false;
				const sse = readSse(response.body, {
					onRetry: (ms) => {
						serverRetryMs = ms;
					},
					onError: options.onParseError ?? warnParseError,
				});
				for await (const message of sse) {
					const id = message.id === undefined || message.id === "" ? undefined : Number(message.id);
					if (id !== undefined && lastEventId !== undefined && id <= lastEventId) continue;
					if (id !== undefined && Number.isSafeInteger(id)) lastEventId = id;
					failures = 0;
					const event: ReceivedEvent = { id, type: message.event, data: parseData(message.data, message.event) };
					yield event;
					if (options.until?.(event)) return;
				}
			}
		} catch (error) {
			if (options.signal?.aborted) return;
			if (error instanceof WheelhouseHttpError && error.status < 500) throw error;
			if (error instanceof SyntaxError && error.message.startsWith("Wheelhouse")) throw error;
			failure = error;
		}
		if (!options.repeatable) first = false;
		if (!reconnect) {
			if (failure) throw failure;
			return;
		}
		if (!first && resumeUrl === undefined) {
			throw new Error(
				"streamEvents: the stream ended before `until` and cannot resume a POST; pass `resumeUrl` (the session's /events URL)",
			);
		}
		failures++;
		if (failures > maxRetries) throw failure ?? new Error(`streamEvents: stream ended ${failures} times in a row`);
		options.onReconnect?.({ attempt: failures, lastEventId, error: failure });
		await delay(options.retryDelayMs ?? serverRetryMs ?? 1000, options.signal);
	}
}

function warnParseError(error: Error): void {
	console.warn(`wheelhouse-agents/client: malformed SSE line ignored: ${error.message}`);
}

function parseData(data: string, event: string): any {
	try {
		return JSON.parse(data);
	} catch {
		throw new SyntaxError(`Wheelhouse SSE event "${event}" has a data line that is not JSON: ${data.slice(0, 200)}`);
	}
}

function headersOf(init: RequestInit["headers"]): Record<string, string> {
	const out: Record<string, string> = {};
	if (!init) return out;
	new Headers(init).forEach((value, key) => {
		out[key] = value;
	});
	return out;
}

function httpError(response: Response): Promise<WheelhouseError> {
	return errorFromResponse(response);
}

function delay(ms: number, signal: AbortSignal | undefined): Promise<void> {
	return new Promise((resolve) => {
		if (ms <= 0 || signal?.aborted) return resolve();
		const timer = setTimeout(done, ms);
		signal?.addEventListener("abort", done, { once: true });
		function done() {
			clearTimeout(timer);
			signal?.removeEventListener("abort", done);
			resolve();
		}
	});
}
