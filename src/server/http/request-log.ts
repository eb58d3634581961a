/**
 * What the request log records of a request: Fastify's default fields, with the stream token
 * of the query string redacted (a token in a log line would open the session's stream to anyone
 * who reads the log until it expires).
 */
import type { FastifyRequest } from "fastify";
import { STREAM_TOKEN_PARAM } from "./stream-token.js";

/** Fastify's `req` log serializer with {@link redactQueryToken} applied to the URL. */
export function serializeRequest(request: FastifyRequest): Record<string, unknown> {
	return {
		method: request.method,
		url: redactQueryToken(request.url),
		version: request.headers?.["accept-version"],
		host: request.host,
		remoteAddress: request.ip,
		remotePort: request.socket?.remotePort,
	};
}

/**
 * `url` with the value of every stream-token query parameter replaced. Keys are compared decoded,
 * as the query parser sees them, so `?%74oken=` is redacted too.
 */
export function redactQueryToken(url: string): string {
	const mark = url.indexOf("?");
	if (mark === -1) return url;
	const query = url
		.slice(mark + 1)
		.split("&")
		.map((pair) => {
			const eq = pair.indexOf("=");
			const key = eq === -1 ? pair : pair.slice(0, eq);
			return decodeKey(key) === STREAM_TOKEN_PARAM ? `${key}=[redacted]` : pair;
		});
	return `${url.slice(0, mark)}?${query.join("&")}`;
}

function decodeKey(key: string): string {
	try {
		return decodeURIComponent(key.replaceAll("+", " "));
	} catch {
		return key;
	}
}
