import type { FastifyPluginAsyncTypebox } from "@fastify/type-provider-typebox";
import type { FastifyReply, FastifyRequest } from "fastify";
import type { ImageContent } from "../../ai/types.js";
import { toUserMessage } from "../context.js";
import type { LiveSession, RunHandle } from "../live-session.js";
import {
	AbortResult,
	ClearQueueQuery,
	ClearQueueResult,
	PromptBody,
	QueueBody,
	QueuedAccepted,
	RunAccepted,
	responses,
	SessionParams,
	SseResponse,
} from "../schemas.js";
import { runStreamAttacher } from "../session-stream.js";

function wantsSse(request: FastifyRequest): boolean {
	const accept = request.headers.accept;
	return typeof accept === "string" && accept.includes("text/event-stream");
}

function queuedNote(idle: boolean, kind: "steer" | "followUp"): string {
	if (idle) return "No run is active: the message waits in the queue for the next run (prompt or continue).";
	return kind === "steer"
		? "Delivered after the current tool batch, before the next model call."
		: "Delivered when the agent would otherwise stop.";
}

/** Prompt, continue, steer, follow-up, clear queue, abort. */
export const messageRoutes: FastifyPluginAsyncTypebox = async (app) => {
	const tags = ["runs"];

	/** Answers a started run: the SSE stream was attached already, or 202 with its first event id. */
	async function answerRun(reply: FastifyReply, run: RunHandle, sse: boolean) {
		if (sse) return reply; // hijacked: the stream answers
		const firstEventId = await run.firstEventId;
		return reply.code(202).send({ status: "started", runId: run.id, firstEventId });
	}

	app.post(
		"/v1/sessions/:id/prompt",
		{
			schema: {
				tags,
				summary: "Start a run with a user message (SSE with Accept: text/event-stream, else 202)",
				params: SessionParams,
				body: PromptBody,
				response: responses({ 200: SseResponse, 202: { anyOf: [RunAccepted, QueuedAccepted] } as never }),
			},
		},
		async function prompt(request, reply) {
			const session = app.wheelhouse.sessions.get(request.params.id, request.ownerId);
			const sse = wantsSse(request);
			const message = toUserMessage(request.body.message, request.body.images as ImageContent[] | undefined);
			const attach = sse ? runStreamAttacher(session, reply, app.wheelhouse.stream) : undefined;
			const result = await session.prompt([message], request.body.ifBusy ?? "reject", attach);
			if (result.kind === "queued") {
				return reply.code(202).send({
					status: "queued",
					queue: result.queue,
					queuedId: result.entryId,
					queueLength: result.queueLength,
					idle: result.idle,
					note: queuedNote(result.idle, result.queue),
				});
			}
			return answerRun(reply, result.run, sse);
		},
	);

	app.post(
		"/v1/sessions/:id/continue",
		{
			schema: {
				tags,
				summary: "Continue from the transcript (the reference's continue rules)",
				params: SessionParams,
				response: responses({ 200: SseResponse, 202: RunAccepted }),
			},
		},
		async function continueRun(request, reply) {
			const session = app.wheelhouse.sessions.get(request.params.id, request.ownerId);
			const sse = wantsSse(request);
			const attach = sse ? runStreamAttacher(session, reply, app.wheelhouse.stream) : undefined;
			const run = await session.continue(attach);
			return answerRun(reply, run, sse);
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
					body: QueueBody,
					response: responses({ 202: QueuedAccepted }),
				},
			},
			async function queueMessage(request, reply) {
				const session: LiveSession = app.wheelhouse.sessions.get(request.params.id, request.ownerId);
				const message = toUserMessage(request.body.message, request.body.images as ImageContent[] | undefined);
				const { entry, queueLength, idle } = session.enqueue(kind, message);
				return reply.code(202).send({
					status: "queued",
					queue: kind,
					queuedId: entry.id,
					queueLength,
					idle,
					note: queuedNote(idle, kind),
				});
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
			const session = app.wheelhouse.sessions.get(request.params.id, request.ownerId);
			const cleared = session.clearQueue(request.query.kind);
			return { cleared, ...session.queueCounts() };
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
			const session = app.wheelhouse.sessions.get(request.params.id, request.ownerId);
			const runId = session.runId ?? null;
			return { aborted: session.abort(), runId };
		},
	);
};
