/**
 * The id of a request: the caller's `x-request-id` when it is a usable one, else a new UUID.
 * It is the Fastify request id, so every log line of the request (`request.log`) carries it as
 * `reqId`, and the response returns it in `x-request-id`.
 */
import { randomUUID } from "node:crypto";
import type { IncomingMessage } from "node:http";

/** Longest `x-request-id` accepted. */
export const MAX_REQUEST_ID_LENGTH = 128;

/** Visible ASCII only: an id goes into log lines and a response header as it is. */
const USABLE_ID = /^[\x21-\x7e]+$/;

/** Fastify's `genReqId`: a caller's id that is 1–128 visible ASCII characters, else a UUID. */
export function requestIdOf(req: IncomingMessage): string {
	const given = req.headers["x-request-id"];
	if (typeof given === "string" && given.length <= MAX_REQUEST_ID_LENGTH && USABLE_ID.test(given)) return given;
	return randomUUID();
}
