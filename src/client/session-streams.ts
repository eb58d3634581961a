/**
 * A session's event streams for a client: the live stream, and a prompt streamed up to its run's
 * end, each resuming after disconnects.
 */
import { newIdempotencyKey } from "./idempotency.js";
import { endsRun, type ReceivedEvent, type StreamEventsOptions, streamEvents } from "./stream-events.js";

export interface SessionStreamOptions extends Omit<StreamEventsOptions, "url" | "init" | "resumeUrl" | "headers"> {
	/** The server's origin, e.g. `http://localhost:3000`. */
	baseUrl: string;
	sessionId: string;
	/** Sent as `Authorization: Bearer …` when set. */
	apiKey?: string;
	headers?: Record<string, string>;
}

export interface StreamPromptOptions extends SessionStreamOptions {
	/** A string or a `UserMessage`. */
	message: unknown;
	/** Other fields of the prompt body (`images`, `ifBusy`). */
	body?: Record<string, unknown>;
	/**
	 * Sent as `Idempotency-Key` (default: a new random key), so the POST may be repeated while it
	 * has had no answer: the server gives the same run's stream instead of starting a second run.
	 */
	idempotencyKey?: string;
}

function eventsUrl(options: SessionStreamOptions): URL {
	return new URL(`/v1/sessions/${encodeURIComponent(options.sessionId)}/events`, options.baseUrl);
}

function headersFor(options: SessionStreamOptions): Record<string, string> {
	const headers = { ...options.headers };
	if (options.apiKey) headers.authorization = `Bearer ${options.apiKey}`;
	return headers;
}

/** The live stream of a session (`GET /v1/sessions/:id/events`), resuming after disconnects until aborted or `until`. */
export function sessionEvents(options: SessionStreamOptions): AsyncGenerator<ReceivedEvent, void, undefined> {
	return streamEvents({ ...options, url: eventsUrl(options), headers: headersFor(options) });
}

/**
 * Runs a prompt and streams its run (`POST /v1/sessions/:id/prompt` with `Accept: text/event-stream`)
 * up to and including its `agent_end`. When the server process died during the run, the stream
 * has its `run_interrupted`: with `willContinue: true` (the session's `onInterrupt` is
 * `"continue"`) the run that continues it follows and the stream goes on to that run's
 * `agent_end`; otherwise it ends at `run_interrupted`. A disconnect resumes on the session's
 * `/events` stream with `Last-Event-ID`; the POST is repeated (same
 * `Idempotency-Key`) only while it has had no answer.
 */
export function streamPrompt(options: StreamPromptOptions): AsyncGenerator<ReceivedEvent, void, undefined> {
	const { message, body, idempotencyKey, ...rest } = options;
	return streamEvents({
		until: endsRun,
		...rest,
		url: new URL(`/v1/sessions/${encodeURIComponent(options.sessionId)}/prompt`, options.baseUrl),
		init: {
			method: "POST",
			headers: { "content-type": "application/json", "idempotency-key": idempotencyKey ?? newIdempotencyKey() },
			body: JSON.stringify({ ...body, message }),
		},
		repeatable: true,
		resumeUrl: eventsUrl(options),
		headers: headersFor(options),
	});
}
