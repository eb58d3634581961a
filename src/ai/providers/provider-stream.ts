/**
 * The driver every wire-API provider runs on: one HTTP request per attempt, the SSE body decoded
 * and handed to the provider's {@link WireHandler}, with retries, the idle timeout and abort. What
 * a failure is and how it is classified lives in provider-errors.ts.
 */
import { STATUS_CODES } from "node:http";
import { createParser, type EventSourceMessage } from "eventsource-parser";
import { AssistantMessageEventStream } from "../event-stream.js";
import { getHttpDispatcher, undici } from "../http.js";
import type { Model, StreamOptions } from "../types.js";
import { OutputBuilder } from "./output-builder.js";
import {
	classify,
	errorText,
	isRetryableStatus,
	type ParsedProviderError,
	ProviderError,
	parseErrorBody,
	parseRetryAfter,
	TimeoutError,
} from "./provider-errors.js";

/**
 * The shared driver every wire-API provider runs on.
 *
 * ```ts
 * export function streamMyApi(model, context, options) {
 *   return streamProvider({
 *     model, options,
 *     buildRequest: () => ({ url: `${model.baseUrl}/v1/chat`, headers: { authorization: `Bearer ${key}` }, body }),
 *     createHandler: (out) => ({
 *       onEvent(data, event) { ...map one SSE payload to out.startText()/appendText()/endBlock()...;
 *                              return true when the protocol's end marker was seen },
 *       finished: () => stopReasonSeen, finishSignal: "stop_reason",
 *       onEnd() { ...set the stop reason, or throw a ProviderError for a refusal },
 *     }),
 *   });
 * }
 * ```
 *
 * What the driver does, in order, for one call:
 *
 * 1. Returns an {@link AssistantMessageEventStream} synchronously; the rest runs asynchronously.
 * 2. `buildRequest()` once; `options.onPayload(body, model)` may replace the body. Headers are
 *    merged (names lower-cased): `content-type: application/json`, `accept: text/event-stream`,
 *    then the request's, then `model.headers`, then `options.headers` (later wins).
 * 3. POSTs with undici through the keep-alive dispatcher, and through the proxy set in
 *    `HTTPS_PROXY` / `HTTP_PROXY` minus `NO_PROXY` ({@link getHttpDispatcher}).
 * 4. Calls `options.onResponse({status, headers}, model)` for every response.
 * 5. Status ≥ 400: reads the body and fails with `HTTP <status>: <the provider's own message>`
 *    (parsed from the JSON error shapes of OpenAI, Anthropic and Gemini by {@link parseErrorBody}).
 *    A 2xx with a JSON content type (a server that ignored `stream: true`) fails too.
 * 6. 2xx: emits `start`, then decodes the body with a streaming `TextDecoder` (chunks may split
 *    anywhere, even inside a multi-byte character), parses SSE with eventsource-parser (LF, CR and
 *    CRLF framing), `JSON.parse`s each event's data (invalid JSON is an error; empty data is
 *    skipped; `[DONE]` ends the stream) and hands it to the handler's `onEvent(data, eventName)`.
 * 7. At the end of the body (or when `onEvent` returned `true`, or on `[DONE]`): the handler's
 *    `finished()` decides whether the provider completed the response — a body that ended before
 *    fails (retryable while nothing was streamed); then `onEnd()`, then `done` with the stop reason
 *    the handler set (`stop` by default; `stop` with tool calls becomes `toolUse`). The rest of the
 *    body is drained in the background so the connection is reused.
 *
 * Failure, never thrown — each ends the stream with one `error` event whose message carries
 * `errorMessage` and the content streamed so far:
 * - abort (`options.signal`, before or during the call, or while waiting to retry) → `stopReason:
 *   "aborted"`;
 * - idle timeout: no byte for `options.timeoutMs`, else the model's `idleTimeoutMs`, else
 *   {@link DEFAULT_IDLE_TIMEOUT_MS} (0 = none), while waiting for headers or body — one timer for
 *   both, re-armed by every chunk; not retried (a provider that stalls once usually stalls again);
 * - HTTP status, connection reset/refused, invalid JSON, a {@link ProviderError} (or any error)
 *   thrown by the handler, e.g. for a mid-stream error event;
 * - an invalid proxy variable (`HttpProxyConfigError`, naming it; not retried).
 *
 * Retries: a failure is retried when it is retryable — HTTP 408/409/429/5xx, an error body or
 * `ProviderError` marked retryable (e.g. `overloaded_error`), a connection error — and no content
 * block was emitted yet (`out.hasOutput` is false; after output, never). At most
 * `options.maxRetries` retries (default {@link DEFAULT_MAX_RETRIES}); the delay before retry n
 * (0-based) is `retry-after-ms` / `retry-after` (seconds or an HTTP date) when the provider sent
 * one, else exponential backoff with jitter: uniform in [½, 1] × `retryBaseDelayMs` × 2ⁿ
 * (base default {@link DEFAULT_RETRY_BASE_DELAY_MS}; `retryBaseDelayMs` may be passed in options);
 * either way capped by `options.maxRetryDelayMs` (default {@link DEFAULT_MAX_RETRY_DELAY_MS};
 * 0 = no cap). The handler is recreated and the partial message reset for each attempt; `start` is
 * emitted only once. Retries made are listed in a `{ type: "retries" }` diagnostic.
 */
export function streamProvider<TOptions extends StreamOptions>(
	call: ProviderCall<TOptions>,
): AssistantMessageEventStream {
	const stream = new AssistantMessageEventStream();
	const out = new OutputBuilder(call.model, stream);
	void run(call, out).catch((err) => {
		// Unreachable by design (run keeps one try/catch around the request); the last guard of "never throws".
		out.fail("error", `Internal provider error: ${errorText(err)}`);
	});
	return stream;
}

/** Retries of a retryable failure before any output (3 attempts in all). */
export const DEFAULT_MAX_RETRIES = 2;
/** First backoff step; doubles per retry, with jitter. */
export const DEFAULT_RETRY_BASE_DELAY_MS = 1_000;
/** Cap on one retry delay, including a provider's retry-after. */
export const DEFAULT_MAX_RETRY_DELAY_MS = 60_000;
/** Idle timeout: reasoning models can think silently for minutes, so this is generous. */
export const DEFAULT_IDLE_TIMEOUT_MS = 300_000;

/** Driver knobs beyond `StreamOptions` (accepted in any provider's options). */
export interface DriverOptions {
	/** First backoff step in ms (default {@link DEFAULT_RETRY_BASE_DELAY_MS}); tests make it tiny. */
	retryBaseDelayMs?: number;
}

/** What a provider gives the driver. */
export interface ProviderCall<TOptions extends StreamOptions = StreamOptions> {
	model: Model<any>;
	options?: TOptions & DriverOptions;
	/**
	 * Builds the request (called once, before the first attempt). May throw (or return a rejected
	 * promise) for a problem found before I/O, e.g. a missing API key: the call ends in `error`.
	 */
	buildRequest(): ProviderRequest | Promise<ProviderRequest>;
	/** Creates the wire-event handler for one attempt (fresh state per retry). */
	createHandler(out: OutputBuilder): WireHandler;
	/** Extracts the provider's error from an HTTP error body; default {@link parseErrorBody}. */
	parseErrorBody?(status: number, body: string): ParsedProviderError;
}

export interface ProviderRequest {
	url: string;
	headers?: Record<string, string>;
	/** JSON-serialisable body; `onPayload` sees it first. */
	body: unknown;
	method?: "POST" | "GET";
}

/**
 * Maps one API's SSE payloads onto the {@link OutputBuilder}.
 *
 * Contract: may throw to fail the call (throw a {@link ProviderError} to set retryability or the
 * status; any other error is a non-retryable failure with its message).
 */
export interface WireHandler {
	/** One SSE event: `data` is the parsed JSON payload, `event` the `event:` field if any. Return `true` at the protocol's end marker. */
	// biome-ignore lint/suspicious/noConfusingVoidType: a handler that never ends early returns nothing
	onEvent(data: any, event: string | undefined): boolean | undefined | void;
	/**
	 * Whether the provider said the response is complete: asked once the stream ended (body end,
	 * `[DONE]`, or `onEvent` returned true), before `onEnd`; `done` is true when the stream carried
	 * `data: [DONE]`. When false, the body was cut short (a proxy or load balancer closed it
	 * cleanly) and the call fails with "The stream ended before the provider finished the
	 * response" — a truncated answer never passes for a whole one. Default: the end marker was
	 * seen (`onEvent` returned true, or `[DONE]`).
	 */
	finished?(done: boolean): boolean;
	/** What a finished stream carries, named in that error (e.g. `message_stop`). */
	readonly finishSignal?: string;
	/** The stream ended whole (`finished` said so); throw to fail the call, e.g. for a refusal stop reason. */
	onEnd?(): void;
}

type Outcome = { kind: "done" } | { kind: "failed"; error: unknown };

interface Attempt {
	readonly controller: AbortController;
	timedOut: boolean;
	timer: NodeJS.Timeout | undefined;
}

async function run<TOptions extends StreamOptions>(call: ProviderCall<TOptions>, out: OutputBuilder): Promise<void> {
	const { model } = call;
	const options: StreamOptions & DriverOptions = call.options ?? {};
	const signal = options.signal;
	const maxRetries = nonNegative(options.maxRetries, DEFAULT_MAX_RETRIES);
	const maxDelay = nonNegative(options.maxRetryDelayMs, DEFAULT_MAX_RETRY_DELAY_MS);
	const baseDelay = nonNegative(options.retryBaseDelayMs, DEFAULT_RETRY_BASE_DELAY_MS);
	const idleMs = nonNegative(options.timeoutMs, nonNegative(model.idleTimeoutMs, DEFAULT_IDLE_TIMEOUT_MS));
	const retries: { attempt: number; error: string; status?: number; delayMs: number }[] = [];

	let prepared:
		| { url: string; method: "POST" | "GET"; headers: Record<string, string>; body: string | undefined }
		| undefined;
	for (let attempt = 0; ; attempt++) {
		let outcome: Outcome;
		try {
			if (signal?.aborted) throw signal.reason ?? new Error("aborted");
			prepared ??= await prepare(call, options);
			outcome = await attemptOnce(call, out, prepared, idleMs);
		} catch (error) {
			outcome = { kind: "failed", error };
		}

		if (outcome.kind === "done") {
			if (retries.length) out.addDiagnostic({ type: "retries", retries });
			out.finish();
			return;
		}

		// Phase: classify the failure, then either retry or end the stream.
		const failure = classify(outcome.error, signal, idleMs, model);
		if (failure.aborted) {
			if (retries.length) out.addDiagnostic({ type: "retries", retries });
			out.fail("aborted", "Request was aborted");
			return;
		}
		if (failure.retryable && !out.hasOutput && attempt < maxRetries) {
			const backoff = baseDelay * 2 ** attempt * (0.5 + Math.random() * 0.5);
			const wanted = failure.retryAfterMs ?? backoff;
			const delayMs = Math.round(maxDelay > 0 ? Math.min(wanted, maxDelay) : wanted);
			retries.push({ attempt: attempt + 1, error: failure.message, status: failure.status, delayMs });
			const slept = await sleep(delayMs, signal);
			if (!slept) {
				out.addDiagnostic({ type: "retries", retries });
				out.fail("aborted", "Request was aborted");
				return;
			}
			out.resetForRetry();
			continue;
		}
		if (retries.length) out.addDiagnostic({ type: "retries", retries });
		if (failure.status !== undefined)
			out.addDiagnostic({ type: "http_error", status: failure.status, errorType: failure.type });
		out.fail("error", failure.message);
		return;
	}
}

async function prepare(
	call: ProviderCall<any>,
	options: StreamOptions,
): Promise<{ url: string; method: "POST" | "GET"; headers: Record<string, string>; body: string | undefined }> {
	const req = await call.buildRequest();
	let body = req.body;
	if (options.onPayload) {
		const replaced = await options.onPayload(body, call.model);
		if (replaced !== undefined) body = replaced;
	}
	const headers: Record<string, string> = { "content-type": "application/json", accept: "text/event-stream" };
	for (const source of [req.headers, call.model.headers, options.headers]) {
		if (!source) continue;
		for (const [name, value] of Object.entries(source)) {
			if (value !== undefined && value !== null) headers[name.toLowerCase()] = String(value);
		}
	}
	const method = req.method ?? "POST";
	return { url: req.url, method, headers, body: method === "GET" ? undefined : JSON.stringify(body) };
}

async function attemptOnce(
	call: ProviderCall<any>,
	out: OutputBuilder,
	prepared: { url: string; method: "POST" | "GET"; headers: Record<string, string>; body: string | undefined },
	idleMs: number,
): Promise<Outcome> {
	const { model, options } = call;
	const signal: AbortSignal | undefined = options?.signal;
	const attempt: Attempt = { controller: new AbortController(), timedOut: false, timer: undefined };
	const onAbort = () => attempt.controller.abort(signal?.reason);
	signal?.addEventListener("abort", onAbort, { once: true });
	const armTimer = () => {
		if (idleMs <= 0) return;
		if (attempt.timer) attempt.timer.refresh();
		else
			attempt.timer = setTimeout(() => {
				attempt.timedOut = true;
				attempt.controller.abort(new Error("idle timeout"));
			}, idleMs);
	};
	let body: (AsyncIterable<Buffer> & { destroy(err?: Error): void; text(): Promise<string> }) | undefined;
	let iterator: AsyncIterator<Buffer> | undefined;
	let drainRest = false;
	try {
		// Before the idle timer: loading undici (the process's first request does) is not the provider's silence.
		const { request } = undici();
		const dispatcher = getHttpDispatcher(prepared.url);
		armTimer();
		const response = await request(prepared.url, {
			method: prepared.method,
			headers: prepared.headers,
			body: prepared.body,
			dispatcher,
			signal: attempt.controller.signal,
		});
		body = response.body as unknown as typeof body;
		const headers = flattenHeaders(response.headers);
		if (options?.onResponse) await options.onResponse({ status: response.statusCode, headers }, model);

		// Step 5: HTTP error.
		if (response.statusCode >= 400) {
			armTimer();
			const text = await body!.text();
			const parsed = (call.parseErrorBody ?? parseErrorBody)(response.statusCode, text);
			const status = response.statusCode;
			const message = parsed.message || STATUS_CODES[status] || "request failed";
			throw new ProviderError(`HTTP ${status}: ${message}`, {
				status,
				type: parsed.type,
				retryable: isRetryableStatus(status) || !!parsed.retryable,
				retryAfterMs: parseRetryAfter(response.headers) ?? parsed.retryAfterMs,
			});
		}

		// A 2xx JSON body instead of a stream: a server that ignored `stream: true`, or an error in disguise.
		if (/^application\/(problem\+)?json/i.test(headers["content-type"] ?? "")) {
			armTimer();
			const text = await body!.text();
			const parsed = (call.parseErrorBody ?? parseErrorBody)(response.statusCode, text);
			throw new ProviderError(`Expected an event stream, got a JSON body: ${parsed.message.slice(0, 500)}`, {
				type: parsed.type,
				retryable: !!parsed.retryable,
			});
		}

		// Step 6: stream.
		out.start();
		const handler = call.createHandler(out);
		let ended = false;
		let sawDone = false;
		let handlerError: unknown;
		const onMessage = (message: EventSourceMessage) => {
			if (ended || handlerError !== undefined) return;
			const data = message.data;
			if (data === "" || data === undefined) return;
			if (data === "[DONE]") {
				ended = true;
				sawDone = true;
				return;
			}
			try {
				let json: unknown;
				try {
					json = JSON.parse(data);
				} catch {
					throw new ProviderError(
						`Invalid JSON in stream event: ${data.length > 200 ? `${data.slice(0, 200)}…` : data}`,
					);
				}
				if (handler.onEvent(json, message.event) === true) ended = true;
			} catch (err) {
				handlerError = err;
			}
		};
		const parser = createParser({ onEvent: onMessage });
		const decoder = new TextDecoder("utf-8");
		// Iterated by hand: leaving a for-await loop would destroy the body (and its connection).
		iterator = body![Symbol.asyncIterator]();
		for (;;) {
			const next = await iterator.next();
			if (next.done) break;
			const chunk = next.value;
			armTimer();
			// Decoded in pieces: see MAX_DECODE_BYTES.
			for (let start = 0; start < chunk.length; start += MAX_DECODE_BYTES) {
				const end = start + MAX_DECODE_BYTES;
				parser.feed(
					decoder.decode(start === 0 && end >= chunk.length ? chunk : chunk.subarray(start, end), STREAM_DECODE),
				);
				if (handlerError !== undefined || ended) break;
			}
			if (handlerError !== undefined) throw handlerError;
			if (ended) break;
		}
		if (!ended) {
			const rest = decoder.decode();
			if (rest) parser.feed(rest);
			// A last event without its blank line is still an event.
			parser.reset({ consume: true });
			if (handlerError !== undefined) throw handlerError;
		} else {
			drainRest = true;
		}
		// Step 7: a clean end of the body is not a finished response; the provider says when it is done.
		if (!(handler.finished ? handler.finished(sawDone) : ended)) {
			throw new ProviderError(
				`The stream ended before the provider finished the response (no ${handler.finishSignal ?? "end marker"}); the answer is incomplete`,
				{ retryable: true },
			);
		}
		handler.onEnd?.();
		return { kind: "done" };
	} catch (error) {
		if (attempt.timedOut) return { kind: "failed", error: new TimeoutError(idleMs) };
		return { kind: "failed", error };
	} finally {
		if (attempt.timer) clearTimeout(attempt.timer);
		signal?.removeEventListener("abort", onAbort);
		if (body) {
			if (drainRest && iterator) void drain(body, iterator);
			else if (!(body as any).readableEnded) discard(body);
		}
	}
}

const STREAM_DECODE = { stream: true };

/**
 * Largest piece of a body chunk decoded and fed to the SSE parser at once. undici hands over up to
 * 64 KiB per chunk; with any non-Latin-1 character in it (an emoji, an em dash) V8 decodes it to a
 * two-byte string of ~128 KB, past its regular-object limit, and the parser's join of the partial
 * line before it with the new text makes another. Each such string is a fresh large-object page
 * (mmap, page faults on first touch, munmap), which made decoding whole chunks slower
 * (bench/providers/results.md). The floor row of `bench/providers/index.ts` decodes in the same pieces.
 */
const MAX_DECODE_BYTES = 16_384;

/** Reads what is left of a body after the end marker, so the keep-alive connection can be reused. */
async function drain(body: { destroy(err?: Error): void }, iterator: AsyncIterator<Buffer>): Promise<void> {
	const timer = setTimeout(() => discard(body), 5_000);
	try {
		while (!(await iterator.next()).done) {
			// discard
		}
	} catch {
		// The call already finished; nothing to report.
	} finally {
		clearTimeout(timer);
	}
}

/**
 * Destroys an unread body. undici reports destroying an unfinished body as an `error` event;
 * nobody listens any more, so swallow it rather than crash the process with an uncaught error.
 */
function discard(body: { destroy(err?: Error): void }): void {
	(body as unknown as NodeJS.EventEmitter).on?.("error", () => undefined);
	body.destroy();
}

function flattenHeaders(headers: Record<string, string | string[] | undefined>): Record<string, string> {
	const flat: Record<string, string> = {};
	for (const [name, value] of Object.entries(headers)) {
		if (value !== undefined) flat[name] = Array.isArray(value) ? value.join(", ") : value;
	}
	return flat;
}

function nonNegative(value: unknown, fallback: number): number {
	return typeof value === "number" && Number.isFinite(value) && value >= 0 ? value : fallback;
}

/** Resolves true after `ms`, or false as soon as `signal` aborts. */
function sleep(ms: number, signal: AbortSignal | undefined): Promise<boolean> {
	if (signal?.aborted) return Promise.resolve(false);
	return new Promise((resolve) => {
		const onAbort = () => {
			clearTimeout(timer);
			resolve(false);
		};
		const timer = setTimeout(() => {
			signal?.removeEventListener("abort", onAbort);
			resolve(true);
		}, ms);
		signal?.addEventListener("abort", onAbort, { once: true });
	});
}
