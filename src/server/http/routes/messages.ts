/**
 * The routes that put messages into a session's runs (prompt, continue, steer, follow-up) and take
 * them out (clear queue, abort).
 */
import type { FastifyPluginAsyncTypebox } from "@fastify/type-provider-typebox";
import type { FastifyReply, FastifyRequest } from "fastify";
import type { ImageContent } from "../../../ai/types.js";
import type { SessionPort } from "../../runtime/session/port.js";
import type { QueuedAnswer } from "../../runtime/session/queues.js";
import { toUserMessage } from "../../runtime/session/user-message.js";
import type { IdempotentOutcome, KeyedRequest } from "../idempotency.js";
import { routePlugin } from "../plugins.js";
import {
	AbortResult,
	ClearQueueQuery,
	ClearQueueResult,
	IdempotencyHeaders,
	PromptBody,
	QueueBody,
	QueuedAccepted,
	RunAccepted,
	RunWaiting,
	responses,
	SessionParams,
	SseResponse,
} from "../schemas.js";
import { sseSink } from "../sse/open.js";
import {
	answerRepeat as answerRepeatedRequest,
	answerRun,
	beginKeyed as beginKeyedRequest,
	recordRun,
	startKeyedRun,
	wantsSse,
} from "./keyed-requests.js";

function queuedNote(idle: boolean, kind: "steer" | "followUp"): string {
	if (idle) return "No run is active: the message waits in the queue for the next run (prompt or continue).";
	return kind === "steer"
		? "Delivered after the current tool batch, before the next model call."
		: "Delivered when the agent would otherwise stop.";
}

/** Prompt, continue, steer, follow-up, clear queue, abort: each an operation of the session port. */
export const messageRoutes: FastifyPluginAsyncTypebox = routePlugin("wheelhouse-messages", async (app) => {
	const tags = ["runs"];
	/** Looks up the request's `Idempotency-Key` (see keyed-requests.ts); undefined without one. */
	const beginKeyed = (request: FastifyRequest, session: SessionPort, operation: string, body: unknown) =>
		beginKeyedRequest(app, request, session, operation, body);
	const answerRepeat = (
		request: FastifyRequest,
		reply: FastifyReply,
		session: SessionPort,
		outcome: IdempotentOutcome,
	) => answerRepeatedRequest(app, request, reply, session, outcome);

	/** The 202 body of a queued message. */
	function queuedBody(q: QueuedAnswer) {
		return {
			status: "queued" as const,
			queue: q.queue,
			queuedId: q.entryId,
			queueLength: q.queueLength,
			idle: q.idle,
			note: queuedNote(q.idle, q.queue),
		};
	}

	/** The 202 body of a run waiting for a slot (admission). */
	function waitingBody(w: { position: number; admissionId: number }) {
		return {
			status: "waiting" as const,
			queued: true as const,
			position: w.position,
			admissionId: w.admissionId,
			note: "Every run slot of your tenant or API key is taken: the run starts when one frees. Follow it on GET /v1/sessions/:id/events (run_queued, then agent_start).",
		};
	}

	/**
	 * The `withKey` of a message queued under a key: the store keeps the answer's record in the
	 * message's own commit. Undefined without a key.
	 */
	function queuedRecord(keyed: KeyedRequest | undefined) {
		if (keyed?.kind !== "first") return undefined;
		return (q: QueuedAnswer) => keyed.recordOf({ kind: "response", status: 202, body: queuedBody(q) });
	}

	app.post(
		"/v1/sessions/:id/prompt",
		{
			schema: {
				tags,
				summary: "Start a run with a user message (SSE with Accept: text/event-stream, else 202)",
				params: SessionParams,
				headers: IdempotencyHeaders,
				body: PromptBody,
				response: responses({ 200: SseResponse, 202: { anyOf: [RunAccepted, QueuedAccepted, RunWaiting] } as never }),
			},
		},
		async function prompt(request, reply) {
			const session = await app.wheelhouse.sessions.open(request.params.id, request.ownerId);
			const keyed = await beginKeyed(request, session, "prompt", request.body);
			if (keyed?.kind === "repeat") return answerRepeat(request, reply, session, keyed.outcome);
			try {
				const sse = wantsSse(request);
				if (sse) app.wheelhouse.streamSlots.hold(request.ownerId, session.id, reply.raw);
				const message = toUserMessage(request.body.message, request.body.images as ImageContent[] | undefined);
				const ifBusy = request.body.ifBusy ?? "reject";
				const options = {
					onRun: recordRun(keyed),
					...(sse ? { stream: sseSink(reply, app.wheelhouse.stream) } : {}),
					withKey: queuedRecord(keyed),
					trace: request.traceContext,
				};
				const admission = app.wheelhouse.admission;
				const result = admission
					? await admission.prompt(session, [message], ifBusy, options)
					: await session.prompt([message], ifBusy, options);
				if (result.kind === "waiting") {
					const body = waitingBody(result);
					// A repeat gets the same answer (not a 409 for the run that waits already).
					if (keyed?.kind === "first") await keyed.record({ kind: "response", status: 202, body });
					return reply.code(202).send(body);
				}
				if (result.kind === "queued") return reply.code(202).send(queuedBody(result));
				return await answerRun(reply, result.run, sse);
			} finally {
				keyed?.release();
			}
		},
	);

	app.post(
		"/v1/sessions/:id/continue",
		{
			schema: {
				tags,
				summary: "Continue from the transcript (the reference's continue rules)",
				params: SessionParams,
				headers: IdempotencyHeaders,
				response: responses({ 200: SseResponse, 202: RunAccepted }),
			},
		},
		async function continueRun(request, reply) {
			const session = await app.wheelhouse.sessions.open(request.params.id, request.ownerId);
			// continue takes no body: the operation alone is the request.
			const keyed = await beginKeyed(request, session, "continue", null);
			return startKeyedRun(app, request, reply, session, keyed, (options) => session.continue(options));
		},
	);

	for (const [path, kind] of [
		["steer", "steer"],
		["follow-up", "followUp"],
	] as const) {
		app.post(
			`/v1/sessions/:id/${path}`,
			{
				schema: {
					tags,
					summary:
						kind === "steer"
							? "Queue a steering message (delivered after the current tool batch)"
							: "Queue a follow-up message (delivered when the agent would stop)",
					params: SessionParams,
					headers: IdempotencyHeaders,
					body: QueueBody,
					response: responses({ 202: QueuedAccepted }),
				},
			},
			async function queueMessage(request, reply) {
				const session = await app.wheelhouse.sessions.open(request.params.id, request.ownerId);
				const keyed = await beginKeyed(request, session, kind, request.body);
				if (keyed?.kind === "repeat") return answerRepeat(request, reply, session, keyed.outcome);
				try {
					const message = toUserMessage(request.body.message, request.body.images as ImageContent[] | undefined);
					return reply.code(202).send(queuedBody(await session.enqueue(kind, message, queuedRecord(keyed))));
				} finally {
					keyed?.release();
				}
			},
		);
	}

	app.delete(
		"/v1/sessions/:id/queue",
		{
			schema: {
				tags,
				summary: "Clear the steering and follow-up queues (or one, with ?kind=)",
				params: SessionParams,
				querystring: ClearQueueQuery,
				response: responses({ 200: ClearQueueResult }),
			},
		},
		async function clearQueue(request) {
			const session = await app.wheelhouse.sessions.open(request.params.id, request.ownerId);
			return session.clearQueue(request.query.kind);
		},
	);

	app.post(
		"/v1/sessions/:id/abort",
		{
			schema: {
				tags,
				summary: "Abort the active run (it ends with its agent_end); queued messages stay",
				params: SessionParams,
				response: responses({ 200: AbortResult }),
			},
		},
		async function abortRun(request) {
			const session = await app.wheelhouse.sessions.open(request.params.id, request.ownerId);
			return session.abort();
		},
	);
});
