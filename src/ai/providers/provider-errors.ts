/**
 * What a provider call's failures are and how the driver reads them: {@link ProviderError} (the
 * failure handlers throw), the parsers of error bodies and `retry-after` headers, and the
 * classification of any failure into aborted / retryable / final with the message the caller sees.
 * Apart from the driver (provider-stream.ts) so each wire API can use the error type and parsers
 * without the request loop.
 */
import type { Model } from "../types.js";

/** The provider's own error, as parsed from a body or an error event. */
export interface ParsedProviderError {
	message: string;
	/** Provider error type/code, e.g. `overloaded_error`, `rate_limit_exceeded`, `RESOURCE_EXHAUSTED`. */
	type?: string;
	/** True when the type says "try again later" (overload, rate limit, server error). */
	retryable?: boolean;
	/** A delay the body asked for (Gemini `RetryInfo.retryDelay`). */
	retryAfterMs?: number;
}

/** A failure with retry information, thrown by handlers or created by the driver. */
export class ProviderError extends Error {
	readonly status?: number;
	readonly retryable: boolean;
	readonly retryAfterMs?: number;
	readonly type?: string;

	constructor(
		message: string,
		options: { status?: number; retryable?: boolean; retryAfterMs?: number; type?: string } = {},
	) {
		super(message);
		this.name = "ProviderError";
		this.status = options.status;
		this.retryable = options.retryable ?? false;
		this.retryAfterMs = options.retryAfterMs;
		this.type = options.type;
	}
}

const RETRYABLE_TYPE = /overloaded|rate_?limit|resource_exhausted|unavailable|server_error|internal|timeout/i;

/** True for HTTP statuses worth retrying: 408, 409, 429 and every 5xx. */
export function isRetryableStatus(status: number): boolean {
	return status === 408 || status === 409 || status === 429 || status >= 500;
}

/** True for provider error types/codes that mean "try again later" (`overloaded_error`, `rate_limit_exceeded`, ...). */
export function isRetryableErrorType(type: string | undefined): boolean {
	return !!type && RETRYABLE_TYPE.test(type);
}

/**
 * Parses the JSON error bodies of the supported APIs (and most gateways):
 * OpenAI `{error: {message, type, code}}`, Anthropic `{type: "error", error: {type, message}}`,
 * Gemini `{error: {code, message, status, details}}` (also wrapped in an array), and plain
 * `{message}` / `{error: "text"}`. Non-JSON bodies are returned trimmed (cut at 1,000 chars).
 */
export function parseErrorBody(_status: number, body: string): ParsedProviderError {
	const text = body.trim();
	let json: any;
	try {
		json = JSON.parse(text);
	} catch {
		return { message: text.length > 1000 ? `${text.slice(0, 1000)}…` : text };
	}
	if (Array.isArray(json)) json = json[0];
	const err = json?.error ?? json;
	if (typeof err === "string") return { message: err };
	const message =
		typeof err?.message === "string" ? err.message : typeof json?.message === "string" ? json.message : text;
	const type = [err?.type, err?.code, err?.status].find((value) => typeof value === "string") as string | undefined;
	let retryAfterMs: number | undefined;
	if (Array.isArray(err?.details)) {
		for (const detail of err.details) {
			if (typeof detail?.retryDelay === "string") retryAfterMs = parseDurationMs(detail.retryDelay);
		}
	}
	return { message, type, retryable: isRetryableErrorType(type), retryAfterMs };
}

/** Reads `retry-after-ms`, then `retry-after` (seconds or an HTTP date); undefined when absent or unparseable. */
export function parseRetryAfter(
	headers: Record<string, string | string[] | undefined>,
	now = Date.now(),
): number | undefined {
	const ms = headerValue(headers, "retry-after-ms");
	if (ms !== undefined) {
		const value = Number(ms);
		if (Number.isFinite(value) && value >= 0) return value;
	}
	const after = headerValue(headers, "retry-after");
	if (after === undefined) return undefined;
	const seconds = Number(after);
	if (after.trim() !== "" && Number.isFinite(seconds)) return seconds >= 0 ? seconds * 1000 : undefined;
	const date = Date.parse(after);
	return Number.isNaN(date) ? undefined : Math.max(0, date - now);
}

function parseDurationMs(value: string): number | undefined {
	const match = /^([\d.]+)s$/.exec(value.trim());
	return match ? Number(match[1]) * 1000 : undefined;
}

function headerValue(headers: Record<string, string | string[] | undefined>, name: string): string | undefined {
	const value = headers[name];
	return Array.isArray(value) ? value[0] : value;
}

/** No byte from the provider for the idle timeout, while waiting for headers or body. */
export class TimeoutError extends Error {
	constructor(readonly idleMs: number) {
		super(`Request timed out: no data from the provider for ${idleMs} ms`);
	}
}

/** A failure as the driver acts on it. */
export interface Failure {
	aborted: boolean;
	retryable: boolean;
	message: string;
	status?: number;
	type?: string;
	retryAfterMs?: number;
}

const CONNECTION_CODES = new Set([
	"ECONNRESET",
	"ECONNREFUSED",
	"EPIPE",
	"ETIMEDOUT",
	"ENOTFOUND",
	"EAI_AGAIN",
	"UND_ERR_SOCKET",
	"UND_ERR_CLOSED",
	"UND_ERR_CONNECT_TIMEOUT",
]);

/** Sorts any failure of an attempt into aborted, retryable or final, with the message to report. */
export function classify(error: unknown, signal: AbortSignal | undefined, _idleMs: number, model: Model<any>): Failure {
	if (signal?.aborted) return { aborted: true, retryable: false, message: "Request was aborted" };
	if (error instanceof TimeoutError) return { aborted: false, retryable: false, message: error.message };
	if (error instanceof ProviderError) {
		return {
			aborted: false,
			retryable: error.retryable,
			message: error.message,
			status: error.status,
			type: error.type,
			retryAfterMs: error.retryAfterMs,
		};
	}
	const code = errorCode(error);
	if (code && CONNECTION_CODES.has(code)) {
		return {
			aborted: false,
			retryable: true,
			message: `Connection error (${code}) talking to ${safeOrigin(model.baseUrl)}: ${errorText(error)}`,
		};
	}
	return { aborted: false, retryable: false, message: errorText(error) };
}

function errorCode(error: unknown): string | undefined {
	let current: any = error;
	for (let depth = 0; current && depth < 4; depth++) {
		if (typeof current.code === "string") return current.code;
		current = current.cause;
	}
	return undefined;
}

/** An error's message, with its cause's when that says more. */
export function errorText(error: unknown): string {
	if (error instanceof Error) {
		const cause = (error as any).cause;
		return cause instanceof Error && cause.message !== error.message
			? `${error.message} (${cause.message})`
			: error.message;
	}
	return String(error);
}

function safeOrigin(url: string): string {
	try {
		return new URL(url).origin;
	} catch {
		return String(url);
	}
}
