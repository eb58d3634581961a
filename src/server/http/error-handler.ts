/**
 * Every failure leaves as the envelope of `errors.ts`, whichever layer answers it:
 *
 * - Routes and hooks (the error handler): an {@link ApiError} as is (its code's status, its
 *   message); Fastify validation errors as 400 `VALIDATION_FAILED`, the message naming each field
 *   and the fix; body parser errors as 413 `PAYLOAD_TOO_LARGE`, 400 `INVALID_JSON`, 415
 *   `UNSUPPORTED_MEDIA_TYPE`; the store's database unreachable as 503 `STORE_UNAVAILABLE`; anything else as 500 `INTERNAL_ERROR` with a fixed message (never
 *   the internal one; Fastify's default handler would forward it), logged in full with the
 *   request id.
 * - The router: no route is 404 `NOT_FOUND`, or 405 `METHOD_NOT_ALLOWED` with `Allow` when the
 *   path has routes for other methods; a path it cannot decode, or a parameter longer than the
 *   router keeps ({@link frameworkErrors}), 400.
 * - The HTTP parser, before there is a request ({@link clientErrorHandler}): unparsable HTTP,
 *   headers over node's limit, a request that does not arrive in time. These are written on the
 *   socket as a complete response, and the connection is closed (the parser cannot find where
 *   the next request would start). An HTTP/1.1 request without `Host` (which node would answer
 *   with an empty 400) is refused by a hook instead.
 */
import { STATUS_CODES } from "node:http";
import type { Socket } from "node:net";
import type { FastifyError, FastifyInstance, FastifyReply, FastifyRequest } from "fastify";
import { isStoreUnavailable } from "../../store/index.js";
import { SessionError } from "../runtime/session/errors.js";
import { ApiError, boundMessage, ERRORS, type ErrorCode, type ErrorEnvelope, fromSessionError } from "./errors.js";
import { MAX_ID_LENGTH } from "./schemas.js";

interface AjvLikeError {
	instancePath?: string;
	keyword?: string;
	message?: string;
	params?: Record<string, unknown>;
}

const CONTEXT_NAMES: Record<string, string> = {
	body: "body",
	querystring: "query",
	params: "path parameter",
	headers: "header",
};

/** One readable sentence per validation failure, e.g. `body.ifBusy must be one of: reject, steer`. */
export function describeValidation(errors: AjvLikeError[], context: string | undefined): string {
	const prefix = CONTEXT_NAMES[context ?? "body"] ?? context ?? "body";
	const parts = errors.map((e) => {
		const path = (e.instancePath ?? "").split("/").filter(Boolean).join(".");
		const field = path ? `${prefix}.${path}` : prefix;
		switch (e.keyword) {
			case "required":
				return `${prefix}${path ? `.${path}` : ""}.${String(e.params?.missingProperty)} is required`;
			case "additionalProperties":
				return `${field} has an unknown field "${String(e.params?.additionalProperty)}"; remove it`;
			case "enum":
				return `${field} must be one of: ${(e.params?.allowedValues as unknown[] | undefined)?.join(", ")}`;
			default:
				return `${field} ${e.message ?? "is invalid"}`;
		}
	});
	return [...new Set(parts)].join("; ");
}

/** The envelope of a failure; its message is bounded, as it may quote the request (a field name, a parser's snippet). */
function envelope(code: ErrorCode, message: string, details?: unknown): ErrorEnvelope {
	return { error: { code, message: boundMessage(message), ...(details === undefined ? {} : { details }) } };
}

function classify(error: FastifyError): { status: number; body: ErrorEnvelope } | undefined {
	if (error instanceof ApiError) return { status: error.statusCode, body: error.toEnvelope() };
	if (error instanceof SessionError) {
		const mapped = fromSessionError(error);
		return { status: mapped.statusCode, body: mapped.toEnvelope() };
	}
	// The store's database is unreachable: a retryable 503, never a 500 (its message names no secret).
	if (isStoreUnavailable(error)) {
		return {
			status: 503,
			body: envelope(
				"STORE_UNAVAILABLE",
				"The session store's database cannot be reached; nothing was done. Retry later.",
			),
		};
	}
	if (error.validation) {
		const message = describeValidation(error.validation as AjvLikeError[], error.validationContext);
		return { status: 400, body: envelope("VALIDATION_FAILED", message) };
	}
	switch (error.code) {
		case "FST_ERR_CTP_BODY_TOO_LARGE":
			return {
				status: 413,
				body: envelope("PAYLOAD_TOO_LARGE", "The request body is larger than the server accepts."),
			};
		case "FST_ERR_CTP_INVALID_JSON_BODY":
		case "FST_ERR_CTP_EMPTY_JSON_BODY":
			return { status: 400, body: envelope("INVALID_JSON", `The body is not valid JSON: ${error.message}`) };
		case "FST_ERR_CTP_INVALID_MEDIA_TYPE":
			return {
				status: 415,
				body: envelope("UNSUPPORTED_MEDIA_TYPE", "Send the body as JSON with `Content-Type: application/json`."),
			};
	}
	// Other 4xx from Fastify itself (bad URL, bad content-length): their messages are safe to show.
	if (typeof error.statusCode === "number" && error.statusCode >= 400 && error.statusCode < 500) {
		if (error.statusCode === 413) return { status: 413, body: envelope("PAYLOAD_TOO_LARGE", error.message) };
		return { status: 400, body: envelope("VALIDATION_FAILED", error.message) };
	}
	return undefined;
}

/** Methods a path can have; the 405's `Allow` lists those of them that the path has. */
const METHODS = ["GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"] as const;

/** The methods the router has a route for at `url` (empty when the path does not exist at all). */
function allowedMethods(app: FastifyInstance, url: string): string[] {
	return METHODS.filter((method) => {
		try {
			return app.findRoute({ method, url }) !== null;
		} catch {
			return false;
		}
	});
}

/**
 * Fastify's `frameworkErrors` option: errors of the router, raised before any route or hook runs.
 * `maxParamLength` is {@link MAX_ID_LENGTH}, so a longer parameter is the same mistake as one the
 * route's schema refuses.
 */
export function frameworkErrors(error: FastifyError, request: FastifyRequest, reply: FastifyReply): void {
	switch (error.code) {
		case "FST_ERR_BAD_URL":
			reply
				.code(400)
				.send(
					envelope(
						"MALFORMED_REQUEST",
						"The request path is not valid percent-encoding (a `%` must be followed by two hex digits of UTF-8); encode the path parameters with encodeURIComponent.",
					),
				);
			return;
		case "FST_ERR_MAX_PARAM_LENGTH":
			reply
				.code(400)
				.send(
					envelope(
						"VALIDATION_FAILED",
						`A path parameter is longer than ${MAX_ID_LENGTH} characters; ids are at most ${MAX_ID_LENGTH} characters.`,
					),
				);
			return;
		default:
			request.log.error({ err: error }, "router error");
			reply.code(500).send(envelope("INTERNAL_ERROR", `Internal server error (request id ${request.id}).`));
	}
}

/** The answer to an error of node's HTTP parser, by its code. */
function describeClientError(err: NodeJS.ErrnoException): { code: ErrorCode; message: string } {
	switch (err.code) {
		case "HPE_HEADER_OVERFLOW":
			return {
				code: "HEADERS_TOO_LARGE",
				message: "The request line and headers are larger than the server accepts; send fewer or shorter headers.",
			};
		case "ERR_HTTP_REQUEST_TIMEOUT":
			return {
				code: "REQUEST_TIMEOUT",
				message: "The request did not arrive completely within the server's request timeout.",
			};
		default:
			return {
				code: "MALFORMED_REQUEST",
				message: `The request is not valid HTTP/1.1 (${err.code ?? "parse error"}); check the request line, the header syntax and Content-Length / Transfer-Encoding.`,
			};
	}
}

/**
 * Fastify's `clientErrorHandler` option (node's `clientError` event): writes the envelope as a raw
 * HTTP response, then closes the connection. `this` is the Fastify instance.
 */
export function clientErrorHandler(this: FastifyInstance, err: NodeJS.ErrnoException, socket: Socket): void {
	// A reset connection has no one to answer; a socket that is mid-response cannot take another.
	const inResponse = (socket as Socket & { _httpMessage?: { headersSent?: boolean } })._httpMessage?.headersSent;
	if (err.code === "ECONNRESET" || socket.destroyed || !socket.writable || inResponse) {
		socket.destroy();
		return;
	}
	const { code, message } = describeClientError(err);
	const status = ERRORS[code].status;
	const body = JSON.stringify(envelope(code, message));
	this.log.debug({ err }, "client error");
	socket.end(
		`HTTP/1.1 ${status} ${STATUS_CODES[status]}\r\nContent-Type: application/json; charset=utf-8\r\nContent-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`,
	);
}

/** Installs the error and not-found handlers and the `Host` check on the root instance. */
export function installErrorHandling(app: FastifyInstance): void {
	// Runs first: node's own check (`requireHostHeader`) is off so that this answer is the envelope.
	app.addHook("onRequest", async function requireHost(request, reply) {
		if (request.raw.httpVersion === "1.1" && request.headers.host === undefined) {
			reply.header("connection", "close");
			throw new ApiError("MALFORMED_REQUEST", "An HTTP/1.1 request must have a `Host` header.");
		}
	});

	app.setErrorHandler(function handleError(error: FastifyError, request: FastifyRequest, reply: FastifyReply) {
		const known = classify(error);
		if (known) {
			if (known.status >= 500) request.log.error({ err: error }, "request failed");
			return reply.code(known.status).send(known.body);
		}
		request.log.error({ err: error }, "unexpected error");
		return reply
			.code(500)
			.send(
				envelope("INTERNAL_ERROR", `Internal server error (request id ${request.id}); the server log has details.`),
			);
	});

	app.setNotFoundHandler(function handleNotFound(request: FastifyRequest, reply: FastifyReply) {
		const allowed = allowedMethods(app, request.url);
		// A route of this method that found nothing to serve (a static file route) is a 404, not a 405.
		if (allowed.length > 0 && !allowed.includes(request.method)) {
			return reply
				.code(405)
				.header("allow", allowed.join(", "))
				.send(
					envelope(
						"METHOD_NOT_ALLOWED",
						`${request.method} is not a method of ${request.url.split("?")[0]}; it has ${allowed.join(", ")}. See GET /openapi.json.`,
					),
				);
		}
		return reply
			.code(404)
			.send(envelope("NOT_FOUND", `No route ${request.method} ${request.url.split("?")[0]}; see GET /openapi.json.`));
	});
}
