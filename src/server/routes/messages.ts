/**
 * The routes that put messages into a session's runs (prompt, continue, steer, follow-up) and take
 * them out (clear queue, abort).
 */
import { setTimeout as sleep } from "node:timers/promises";
import type { FastifyPluginAsyncTypebox } from "@fastify/type-provider-typebox";
import type { FastifyReply, FastifyRequest } from "fastify";
import type { AgentMessage } from "../../agent/types.js";
import type { ImageContent } from "../../ai/types.js";
import { streamClusterRun } from "../cluster/remote-stream.js";
import { toUserMessage } from "../context.js";
import { apiError } from "../errors.js";
import { IdempotencyKeys, type IdempotentOutcome, type KeyedRequest, parseIdempotencyKey } from "../idempotency.js";
import {
	AbortResult,
	ClearQueueQuery,
	ClearQueueResult,
	IdempotencyHeaders,
	PromptBody,
	QueueBody,
	QueuedAccepted,
	RunAccepted,
	responses,
	SessionParams,
	SseResponse,
} from "../schemas.js";
import type { LiveSession } from "../session/live-session.js";
import type { QueuedAnswer } from "../session/queues.js";
import type { RunHandle } from "../session/runs.js";
import { resumeRunStream, runStreamAttacher } from "../session/stream.js";
import { parseEventId } from "./events.js";

function wantsSse(request: FastifyRequest): boolean {
	const accept = request.headers.accept;
	return typeof accept === "string" && accept.includes("text/event-stream");
}

/** The queue counts left after clearing `kind` (both when absent), from the session as loaded. */
function countsAfterClear(session: LiveSession, kind: "steer" | "followUp" | undefined) {
	const counts = session.queueCounts();
	return {
		steeringCount: kind === undefined || kind === "steer" ? 0 : counts.steeringCount,
		followUpCount: kind === undefined || kind === "followUp" ? 0 : counts.followUpCount,
	};
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
	const keys = new IdempotencyKeys(app.log);

	/** Looks up the request's `Idempotency-Key` (see idempotency.ts); undefined without one. */
	function beginKeyed(request: FastifyRequest, session: LiveSession, operation: string, body: unknown) {
		return keys.begin(session, parseIdempotencyKey(request.headers["idempotency-key"]), operation, body);
	}

	/** Answers a started run: the SSE stream was attached already, or 202 with its first event id. */
	async function answerRun(reply: FastifyReply, run: RunHandle, sse: boolean) {
		if (sse) return reply; // hijacked: the stream answers
		const firstEventId = await run.firstEventId;
		return reply.code(202).send({ status: "started", runId: run.id, firstEventId });
	}

	/**
	 * Answers a repeated request with the first one's outcome: the same status and body, or for a
	 * run asked for as SSE, the run's stream after `Last-Event-ID` (from its beginning without one).
	 */
	function answerRepeat(
		request: FastifyRequest,
		reply: FastifyReply,
		session: LiveSession,
		outcome: IdempotentOutcome,
	) {
		reply.header("idempotent-replayed", "true");
		if (outcome.kind === "response") return reply.code(outcome.status).send(outcome.body);
		if (!wantsSse(request)) {
			return reply.code(202).send({ status: "started", runId: outcome.runId, firstEventId: outcome.firstEventId });
		}
		const header = request.headers["last-event-id"];
		const afterId =
			typeof header === "string" && header.trim() !== "" ? parseEventId(header, "Last-Event-ID") : undefined;
		app.wheelhouse.streamSlots.hold(request.ownerId, session.id, reply.raw);
		const { cluster, stream } = app.wheelhouse;
		// A run not active here may be running on another replica: follow it through the cluster.
		if (cluster && !session.activeRunHandle(outcome.runId)) {
			streamClusterRun(cluster.streams, session, reply, outcome, afterId, stream);
		} else {
			resumeRunStream(session, reply, outcome, afterId, stream);
		}
		return reply;
	}

	/**
	 * In a cluster, a message queued for a session without a run here: stored, then the replica
	 * running it (if any) is told. Undefined when the session has a run here (the local path applies).
	 */
	async function queueInCluster(
		session: LiveSession,
		kind: "steer" | "followUp",
		message: AgentMessage,
		keyed: KeyedRequest | undefined,
	): Promise<QueuedAnswer | undefined> {
		const { cluster, config } = app.wheelhouse;
		if (!cluster || session.isBusy) return undefined;
		if (session.queued.length >= config.maxQueuedMessages) {
			throw apiError(
				"QUEUE_FULL",
				`Session ${session.id} already has ${session.queued.length} queued messages (limit ${config.maxQueuedMessages}); wait for them to drain or DELETE the queue.`,
			);
		}
		session.checkQueueRoom(message);
		const idle = (await cluster.runningElsewhere(session)) === undefined;
		const record = queuedRecord(keyed);
		const stored = await cluster.enqueue(session, kind, message, idle, record);
		if (!stored) throw apiError("SESSION_NOT_FOUND", `Session ${session.id} no longer exists.`);
		return { queue: kind, entryId: stored.entry.id, queueLength: stored.queueLength, idle };
	}

	/**
	 * In a cluster, `ifBusy: "interrupt"` for a run on another replica: it is aborted there, and
	 * this prompt starts here once the store has it ended (or the claim answers busy).
	 */
	async function interruptElsewhere(session: LiveSession): Promise<void> {
		const { cluster } = app.wheelhouse;
		const elsewhere = cluster && (await cluster.runningElsewhere(session));
		if (!cluster || !elsewhere) return;
		if (elsewhere.currentRunId) await cluster.abortElsewhere(session, elsewhere.currentRunId);
		else await cluster.send({ t: "abort", s: session.id });
		const deadline = Date.now() + 10_000;
		while (Date.now() < deadline && (await cluster.runningElsewhere(session))) {
			await sleep(25);
		}
	}

	/** The `attach` of a run: records the key (same commit as the run's start), then attaches the stream. */
	function attachRun(keyed: KeyedRequest | undefined, stream: ((run: RunHandle) => void) | undefined) {
		if (keyed?.kind !== "first") return stream;
		return (run: RunHandle) => {
			keyed.recordRun(run);
			stream?.(run);
		};
	}

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
				response: responses({ 200: SseResponse, 202: { anyOf: [RunAccepted, QueuedAccepted] } as never }),
			},
		},
		async function prompt(request, reply) {
			const session = await app.wheelhouse.sessions.load(request.params.id, request.ownerId);
			const keyed = await beginKeyed(request, session, "prompt", request.body);
			if (keyed?.kind === "repeat") return answerRepeat(request, reply, session, keyed.outcome);
			try {
				const sse = wantsSse(request);
				if (sse) app.wheelhouse.streamSlots.hold(request.ownerId, session.id, reply.raw);
				const message = toUserMessage(request.body.message, request.body.images as ImageContent[] | undefined);
				const ifBusy = request.body.ifBusy ?? "reject";
				if ((ifBusy === "steer" || ifBusy === "followUp") && app.wheelhouse.cluster && !session.isBusy) {
					if (await app.wheelhouse.cluster.runningElsewhere(session)) {
						const queued = await queueInCluster(session, ifBusy, message, keyed);
						if (queued) return reply.code(202).send(queuedBody(queued));
					}
				}
				if (ifBusy === "interrupt" && !session.isBusy) await interruptElsewhere(session);
				const stream = sse ? runStreamAttacher(session, reply, app.wheelhouse.stream) : undefined;
				const result = await session.prompt([message], request.body.ifBusy ?? "reject", {
					attach: attachRun(keyed, stream),
					withKey: queuedRecord(keyed),
					trace: request.traceContext,
				});
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
			const session = await app.wheelhouse.sessions.load(request.params.id, request.ownerId);
			// continue takes no body: the operation alone is the request.
			const keyed = await beginKeyed(request, session, "continue", null);
			if (keyed?.kind === "repeat") return answerRepeat(request, reply, session, keyed.outcome);
			try {
				const sse = wantsSse(request);
				if (sse) app.wheelhouse.streamSlots.hold(request.ownerId, session.id, reply.raw);
				const stream = sse ? runStreamAttacher(session, reply, app.wheelhouse.stream) : undefined;
				const run = await session.continue({ attach: attachRun(keyed, stream), trace: request.traceContext });
				return await answerRun(reply, run, sse);
			} finally {
				keyed?.release();
			}
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
				const session: LiveSession = await app.wheelhouse.sessions.load(request.params.id, request.ownerId);
				const keyed = await beginKeyed(request, session, kind, request.body);
				if (keyed?.kind === "repeat") return answerRepeat(request, reply, session, keyed.outcome);
				try {
					const message = toUserMessage(request.body.message, request.body.images as ImageContent[] | undefined);
					const elsewhere = await queueInCluster(session, kind, message, keyed);
					if (elsewhere) return reply.code(202).send(queuedBody(elsewhere));
					const { entry, queueLength, idle } = await session.enqueue(kind, message, queuedRecord(keyed));
					return reply.code(202).send(queuedBody({ queue: kind, entryId: entry.id, queueLength, idle }));
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
			const session = await app.wheelhouse.sessions.load(request.params.id, request.ownerId);
			const { cluster } = app.wheelhouse;
			if (cluster && !session.isBusy) {
				// Stored, then the replica running it takes the change in (its stream says what was cleared).
				const cleared = await session.store.clearQueue(session.id, request.query.kind);
				await cluster.send({ t: "queue", s: session.id });
				return { cleared, ...countsAfterClear(session, request.query.kind) };
			}
			const cleared = await session.clearQueue(request.query.kind);
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
			const session = await app.wheelhouse.sessions.load(request.params.id, request.ownerId);
			const { cluster } = app.wheelhouse;
			const elsewhere = await cluster?.runningElsewhere(session);
			if (elsewhere && cluster) {
				// Stored before the answer: the replica running it, or the one taking it over, honours it.
				const runId = elsewhere.currentRunId;
				const outcome = runId
					? await cluster.abortElsewhere(session, runId)
					: (await cluster.send({ t: "abort", s: session.id }))
						? "delivered"
						: "not_delivered";
				if (outcome === "gone") throw apiError("SESSION_NOT_FOUND", `Session ${session.id} no longer exists.`);
				if (outcome === "not_delivered") {
					throw apiError(
						"ABORT_NOT_DELIVERED",
						`The abort of run ${runId} of session ${session.id} is stored, but the replica running it could not be told (Redis is unreachable from this replica): the run may go on until that replica finds the stored abort or the run is taken over. Retry the abort.`,
					);
				}
				return { aborted: true, runId };
			}
			const runId = session.runId ?? null;
			return { aborted: session.abort(), runId };
		},
	);
};
