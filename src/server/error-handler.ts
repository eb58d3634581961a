/**
 * The error and not-found handlers: every failure leaves as the envelope of `errors.ts`.
 *
 * - {@link ApiError}: sent as is (its code's status, its message).
 * - Fastify validation errors: 400 `VALIDATION_FAILED`, the message names each field and the fix.
 * - Body parser errors: 413 `PAYLOAD_TOO_LARGE`, 400 `INVALID_JSON`, 415 `UNSUPPORTED_MEDIA_TYPE`.
 * - Anything else: 500 `INTERNAL_ERROR` with a fixed message (never the internal one; Fastify's
 *   default handler would forward it), logged in full with the request id.
 */
import type { FastifyError, FastifyInstance, FastifyReply, FastifyRequest } from "fastify";
import { ApiError, type ErrorCode, type ErrorEnvelope } from "./errors.js";

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

function envelope(code: ErrorCode, message: string, details?: unknown): ErrorEnvelope {
	return { error: { code, message, ...(details === undefined ? {} : { details }) } };
}

function classify(error: FastifyError): { status: number; body: ErrorEnvelope } | undefined {
	if (error instanceof ApiError) return { status: error.statusCode, body: error.toEnvelope() };
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

/** Installs both handlers on the root instance. */
export function installErrorHandling(app: FastifyInstance): void {
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
		return reply
			.code(404)
			.send(envelope("NOT_FOUND", `No route ${request.method} ${request.url.split("?")[0]}; see GET /openapi.json.`));
	});
}
