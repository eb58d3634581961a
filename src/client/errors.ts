/** The errors a Wheelhouse server's answers become on the client side. */
import type { components } from "./api-types.js";

/** Every stable error `code` the server sends (docs/errors.md), from the OpenAPI document. */
export type ErrorCode = components["schemas"]["ErrorCode"];

/** A non-2xx answer; `code` and `message` come from the `{ error: { code, message } }` envelope when present. */
export class WheelhouseHttpError extends Error {
	constructor(
		readonly status: number,
		readonly code: string | undefined,
		message: string,
		readonly body: unknown,
	) {
		super(message);
		this.name = "WheelhouseHttpError";
	}
}

/**
 * A server's refusal, with its stable `code` to branch on (`SESSION_NOT_FOUND`, `AGENT_BUSY`,
 * `UNAUTHORIZED`…) and the envelope's `details`. Every error answer the client reads is one, so
 * `instanceof WheelhouseHttpError` keeps matching as well.
 */
export class WheelhouseError extends WheelhouseHttpError {
	declare readonly code: ErrorCode | undefined;
	/** The envelope's `details` (e.g. the failing fields of a `VALIDATION_FAILED`). */
	readonly details: unknown;
	/** The `Retry-After` header in seconds, when the server sent one (429, 503). */
	readonly retryAfterSeconds: number | undefined;

	constructor(status: number, code: string | undefined, message: string, body: unknown, retryAfter?: string | null) {
		super(status, code, message, body);
		this.name = "WheelhouseError";
		this.details = (body as { error?: { details?: unknown } } | undefined)?.error?.details;
		const seconds = retryAfter ? Number(retryAfter) : Number.NaN;
		this.retryAfterSeconds = Number.isFinite(seconds) ? seconds : undefined;
	}
}

/** Reads a non-2xx (or otherwise unexpected) response into a {@link WheelhouseError}. */
export async function errorFromResponse(response: Response): Promise<WheelhouseError> {
	const text = await response.text().catch(() => "");
	let body: unknown = text;
	try {
		body = JSON.parse(text);
	} catch {}
	const envelope = (body as { error?: { code?: string; message?: string } } | undefined)?.error;
	const message = envelope?.message ?? `HTTP ${response.status}${text ? `: ${text.slice(0, 200)}` : ""}`;
	return new WheelhouseError(response.status, envelope?.code, message, body, response.headers.get("retry-after"));
}
