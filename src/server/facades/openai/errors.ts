/**
 * Errors of the OpenAI-compatible routes in OpenAI's shape, `{ error: { message, type, param, code } }`:
 * what the SDKs read (`error.message`, `error.type`), with the stable Wheelhouse code in `code`,
 * except where OpenAI's own answer is what clients check for (an unknown model). Unknown paths under
 * the prefix answer in the same shape.
 */
import type { FastifyInstance } from "fastify";
import { quote } from "../../http/errors.js";

function errorType(status: number): string {
	if (status === 401) return "authentication_error";
	if (status === 404) return "not_found_error";
	if (status >= 500) return "server_error";
	return "invalid_request_error";
}

/**
 * Errors the facade answers as OpenAI does rather than as `/v1` does: an unknown model is a 404
 * `model_not_found` of type `invalid_request_error` (the SDKs raise `NotFoundError`, LangChain sets
 * its `MODEL_NOT_FOUND` code on a 404).
 */
export const OPENAI_ERRORS: Record<string, { status: number; type: string; code: string }> = {
	UNKNOWN_MODEL: { status: 404, type: "invalid_request_error", code: "model_not_found" },
};

/** Methods a route of the facade may have (for the 405 of a known path). */
const METHODS = ["GET", "POST", "PUT", "PATCH", "DELETE"] as const;

/** Installs the error shape and the not-found handler on the facade's (encapsulated) instance. */
export function installOpenAIErrors(app: FastifyInstance): void {
	// Errors in OpenAI's shape: what the SDKs read (`error.message`, `error.type`), with the stable code.
	app.addHook("preSerialization", async function openaiErrorShape(_request, reply, payload) {
		const error = (payload as { error?: { code?: unknown; message?: unknown; type?: unknown } } | null)?.error;
		// Already in OpenAI's shape (it has a `type`), or no error.
		if (reply.statusCode < 400 || !error || typeof error.code !== "string" || error.type !== undefined) return payload;
		const openai = OPENAI_ERRORS[error.code];
		if (openai) {
			reply.code(openai.status);
			return { error: { message: error.message, type: openai.type, param: null, code: openai.code } };
		}
		return { error: { message: error.message, type: errorType(reply.statusCode), param: null, code: error.code } };
	});

	// An unknown path under the prefix answers in OpenAI's shape too (an SDK reads `error.message`).
	app.setNotFoundHandler(function openaiNotFound(request, reply) {
		const path = request.url.split("?")[0] ?? "";
		const allowed = METHODS.filter((method) => {
			try {
				return app.findRoute({ method, url: path }) !== null;
			} catch {
				return false;
			}
		});
		const status = allowed.length > 0 ? 405 : 404;
		if (status === 405) reply.header("allow", allowed.join(", "));
		const message =
			status === 405
				? `Invalid method ${request.method} for ${quote(path)}: it has ${allowed.join(", ")}.`
				: `Invalid URL (${request.method} ${quote(path)}): the OpenAI-compatible API has GET /models, POST /chat/completions, POST /responses, GET /responses/{id} and POST /responses/{id}/cancel.`;
		return reply.code(status).send({
			error: {
				message,
				type: "invalid_request_error",
				param: null,
				code: status === 405 ? "METHOD_NOT_ALLOWED" : "NOT_FOUND",
			},
		});
	});
}
