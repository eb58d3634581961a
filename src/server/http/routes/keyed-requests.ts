/**
 * The route side of `Idempotency-Key` (src/server/http/idempotency.ts holds the rules): looking a
 * request's key up, answering a repeat with the first request's outcome, recording what a first
 * request came to, and starting a run under a key. Shared by the routes that start runs or queue
 * messages (messages.ts) and the branching routes (branches.ts), through the server's one
 * {@link IdempotencyKeys}.
 */
import type { FastifyInstance, FastifyReply, FastifyRequest } from "fastify";
import { startAdmitted, targetOf, whenGone } from "../../runtime/session/admission.js";
import type { PortRunOptions, SessionPort } from "../../runtime/session/port.js";
import type { RunHandle } from "../../runtime/session/runs.js";
import { type IdempotentOutcome, type KeyedRequest, parseIdempotencyKey } from "../idempotency.js";
import { sseSink } from "../sse/open.js";
import { parseEventId } from "./events.js";

export function wantsSse(request: FastifyRequest): boolean {
	const accept = request.headers.accept;
	return typeof accept === "string" && accept.includes("text/event-stream");
}

/**
 * Looks up the request's `Idempotency-Key` for `operation` with `body` (what makes two requests
 * the same), scoped to the session and the caller. Undefined without the header.
 */
export function beginKeyed(
	app: FastifyInstance,
	request: FastifyRequest,
	session: SessionPort,
	operation: string,
	body: unknown,
): Promise<KeyedRequest | undefined> {
	return app.wheelhouse.idempotencyKeys.begin(
		session,
		parseIdempotencyKey(request.headers["idempotency-key"]),
		operation,
		body,
		request.ownerId,
	);
}

/**
 * Answers a repeated request with the first one's outcome: the same status and body, or for a
 * run asked for as SSE, the run's stream after `Last-Event-ID` (from its beginning without one).
 */
export async function answerRepeat(
	app: FastifyInstance,
	request: FastifyRequest,
	reply: FastifyReply,
	session: SessionPort,
	outcome: IdempotentOutcome,
) {
	reply.header("idempotent-replayed", "true");
	if (outcome.kind === "response") return reply.code(outcome.status).send(outcome.body);
	// Recorded only by the rewind route, which answers its own repeats; the operation check in
	// `begin` keeps it from reaching any other route.
	if (outcome.kind === "rewound") throw new Error("a rewind's idempotency record reached another route");
	if (!wantsSse(request)) {
		return reply.code(202).send({ status: "started", runId: outcome.runId, firstEventId: outcome.firstEventId });
	}
	const header = request.headers["last-event-id"];
	const afterId =
		typeof header === "string" && header.trim() !== "" ? parseEventId(header, "Last-Event-ID") : undefined;
	app.wheelhouse.streamSlots.hold(request.ownerId, session.id, reply.raw);
	await session.streamRun(sseSink(reply, app.wheelhouse.stream), outcome, afterId);
	return reply;
}

/**
 * The `onRun` of a run started under a key: records the key (same commit as the run's start).
 * `afterCut` for a regenerate's or an edit's run, whose first event is its cut.
 */
export function recordRun(keyed: KeyedRequest | undefined, afterCut = false) {
	if (keyed?.kind !== "first") return undefined;
	return (run: RunHandle, firstEventId: number) => keyed.recordRun(run, firstEventId, afterCut);
}

/** Answers a started run: the SSE stream was attached already, or 202 with its first event id. */
export async function answerRun(reply: FastifyReply, run: RunHandle, sse: boolean) {
	if (sse) return reply; // hijacked: the stream answers
	const firstEventId = await run.firstEventId;
	return reply.code(202).send({ status: "started", runId: run.id, firstEventId });
}

/**
 * Starts a run with `start` under the request's key (a repeat gets the first request's answer):
 * its SSE stream on `reply` with `Accept: text/event-stream`, else 202 with its first event id.
 * `afterCut` as for {@link recordRun}.
 */
export async function startKeyedRun(
	app: FastifyInstance,
	request: FastifyRequest,
	reply: FastifyReply,
	session: SessionPort,
	keyed: KeyedRequest | undefined,
	start: (options: PortRunOptions) => Promise<RunHandle>,
	afterCut = false,
) {
	if (keyed?.kind === "repeat") return answerRepeat(app, request, reply, session, keyed.outcome);
	try {
		const sse = wantsSse(request);
		if (sse) app.wheelhouse.streamSlots.hold(request.ownerId, session.id, reply.raw);
		// Past a run limit under `admission: "queue"` the request waits for a slot (bounded).
		const run = await startAdmitted(
			app.wheelhouse.admission,
			targetOf(session),
			() =>
				start({
					onRun: recordRun(keyed, afterCut),
					...(sse ? { stream: sseSink(reply, app.wheelhouse.stream) } : {}),
					trace: request.traceContext,
				}),
			(started) => started,
			{ signal: whenGone(reply.raw) },
		);
		return await answerRun(reply, run, sse);
	} finally {
		keyed?.release();
	}
}
