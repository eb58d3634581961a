/**
 * The AG-UI routes (register with a prefix, e.g. `/agui/v1`, which an `HttpAgent`'s `url` points
 * at): `POST /run` takes a `RunAgentInput` and answers the run as AG-UI events;
 * `GET /threads/:threadId/events` lets a client that lost its stream catch up. They need the
 * server's bearer keys like every route (auth.ts); errors before the stream starts are the error
 * envelope (the client rejects with the status), after it `RUN_ERROR`.
 *
 * A thread is a Wheelhouse session (threads.ts) driven by the same agent loop, tools and
 * durability as `/v1` (run-start.ts says what a request does to it). An AG-UI run is a stretch of
 * the session's run (run-segment.ts): it ends with the Wheelhouse run, or as soon as the model
 * called the client's tools and every call waits for its result. The run then stays open; the
 * client's next `RunAgentInput`, carrying the tool messages, resumes it. Closing the response
 * before its end (`abortRun()`) aborts the run; a run aborted from elsewhere (`POST
 * /v1/sessions/:id/abort`) ends as `RUN_FINISHED` with the `cancelled` outcome. The session of
 * every answer is in `RUN_STARTED.metadata.wheelhouse` and the `x-wheelhouse-session-id` header,
 * for the native API (steering, approvals, its own event stream).
 */
import type { FastifyPluginAsync } from "fastify";
import { apiError } from "../../errors.js";
import { newRunId } from "../../ids.js";
import { responses } from "../../schemas.js";
import type { RunHandle } from "../../session/runs.js";
import type { ToolInteractions } from "../../session/tool-interactions.js";
import type { SseConnection } from "../../sse/connection.js";
import { openSse } from "../../sse/open.js";
import { AguiEncoder } from "./encoder.js";
import { type AguiEvent, aguiFrame } from "./events.js";
import { runInstructions } from "./input.js";
import { forProtocol, protocolOf } from "./protocol.js";
import { createRunStart, type RunInput } from "./run-start.js";
import { AguiStream, CatchUpQuery, RunAgentInputBody, ThreadParams } from "./schemas.js";
import { clientToolNames, droppedFrame, endStream, finalEvent, streamStretch, tokenUsage } from "./stream.js";
import { Threads } from "./threads.js";
import { transcriptMessages } from "./transcript.js";

export interface AguiFacadeOptions {
	/** The client tool mechanism the request's tools go through. */
	interactions: ToolInteractions;
}

const SESSION_HEADER = "x-wheelhouse-session-id";

export const aguiFacade: FastifyPluginAsync<AguiFacadeOptions> = async (app, { interactions }) => {
	const { sessions, catalog, profiles } = app.wheelhouse;
	const threads = new Threads(sessions);
	const begin = createRunStart({ sessions, catalog, profiles, interactions, threads });
	const tags = ["agui"];

	app.post(
		"/run",
		{
			schema: {
				tags,
				summary: "Run the agent of a thread (AG-UI RunAgentInput): the run as AG-UI events",
				body: RunAgentInputBody,
				response: responses({ 200: AguiStream }),
			},
		},
		async function runAgent(request, reply) {
			const input = request.body as RunInput;
			const begun = await begin(request.ownerId, input);
			const { session } = begun;
			app.wheelhouse.streamSlots.hold(request.ownerId, session.id, reply.raw);
			const ids = { threadId: input.threadId, runId: input.runId };
			const abort = new AbortController();
			let sse: SseConnection | undefined;
			const early: string[] = [];
			const encoder = new AguiEncoder({
				write: (frame) => (sse ? sse.send(frame) : early.push(frame)),
				clientTools: clientToolNames(session),
				sentByClient: begun.sentByClient,
				transcriptLength: () => session.agent.state.messages.length,
				// A client that declares no protocol version predates 1.0 (protocol.ts).
				protocol: protocolOf(input.protocolVersion, "0"),
			});
			reply.header(SESSION_HEADER, session.id);
			// The client went away (`abortRun()` closes the connection): its run is aborted.
			const onClose = () => {
				if (!reply.raw.writableFinished) abort.abort();
			};
			reply.raw.on("close", onClose);
			if (begun.resumed) encoder.openTurn();
			let run: RunHandle | undefined;
			let release = () => {};
			try {
				await begun.prepare?.();
				release = threads.instruct(session, runInstructions(input.context ?? [], input.state));
				const { end, usage } = await streamStretch(
					{ session, interactions, encoder, signal: abort.signal },
					async () => {
						run = await begun.start(request.traceContext);
						try {
							await threads.rememberSent(session, begun.sentIds);
						} catch (err) {
							// The run started: ids that could not be stored do not stop it (sent again, such a message is prompted again).
							request.log.warn({ err, sessionId: session.id }, "could not store the AG-UI thread's message ids");
						}
						try {
							await threads.keepState(session, input.state);
						} catch (err) {
							// The run started: a state that could not be kept does not stop it.
							request.log.warn({ err, sessionId: session.id }, "could not keep the AG-UI thread's state");
						}
						sse = openSse(reply, app.wheelhouse.stream, () => abort.abort(), droppedFrame("the run was aborted."));
						const runId = run?.id ?? null;
						sse.send(
							encoder.frame({
								type: "RUN_STARTED",
								...ids,
								metadata: { wheelhouse: { sessionId: session.id, runId } },
							}),
						);
						for (const frame of early.splice(0)) sse.send(frame);
						return run;
					},
				);
				if (sse) endStream(sse, encoder, finalEvent(end, ids, tokenUsage(usage, session)));
				return reply;
			} finally {
				reply.raw.off("close", onClose);
				if (run) void run.done.then(release);
				else release();
			}
		},
	);

	app.get(
		"/threads/:threadId/events",
		{
			schema: {
				tags,
				summary:
					"Catch up on a thread: RUN_STARTED, MESSAGES_SNAPSHOT, STATE_SNAPSHOT, then the run in progress live to its end",
				params: ThreadParams,
				querystring: CatchUpQuery,
				response: responses({ 200: AguiStream }),
			},
		},
		async function threadEvents(request, reply) {
			const { threadId } = request.params as { threadId: string };
			// No body to tell the client's generation by: 1.0 unless the query names an older one.
			const { protocolVersion } = request.query as { protocolVersion?: string };
			const protocol = protocolOf(protocolVersion, "1.0");
			const session = await threads.find(request.ownerId, threadId);
			if (!session) throw apiError("THREAD_NOT_FOUND", `No thread "${threadId}" exists for this API key.`);
			// Closing this stream only stops watching: the run goes on.
			const detach = new AbortController();
			app.wheelhouse.streamSlots.hold(request.ownerId, session.id, reply.raw);
			reply.header(SESSION_HEADER, session.id);
			const sse = openSse(
				reply,
				app.wheelhouse.stream,
				() => detach.abort(),
				droppedFrame("the run goes on: reconnect to catch up."),
			);
			const write = (frame: string) => sse.send(frame);
			const send = (event: AguiEvent) => write(aguiFrame(forProtocol(event, protocol)));
			const runId = session.isBusy ? session.runId : undefined;
			const ids = { threadId, runId: runId ?? newRunId() };
			send({
				type: "RUN_STARTED",
				...ids,
				metadata: { wheelhouse: { sessionId: session.id, runId: runId ?? null } },
			});
			send({ type: "MESSAGES_SNAPSHOT", messages: transcriptMessages(session.agent.state.messages) });
			send({ type: "STATE_SNAPSHOT", snapshot: threads.state(session) });
			send({ type: "CUSTOM", name: "wheelhouse.session", value: session.view() });
			const waiting = interactions
				.pending(session)
				.filter((p) => p.kind === "client_tool" && !p.orphaned)
				.map((p) => p.toolCallId);
			const run = runId ? session.activeRunHandle(runId) : undefined;
			if (!run || (waiting.length > 0 && !session.streamingMessage)) {
				const outcome = waiting.length > 0 ? { type: "success" as const, pendingToolCallIds: waiting } : undefined;
				sse.end(aguiFrame(forProtocol({ type: "RUN_FINISHED", ...ids, ...(outcome ? { outcome } : {}) }, protocol)));
				return reply;
			}
			if (sse.isClosed) return reply;
			const encoder = new AguiEncoder({
				write,
				clientTools: clientToolNames(session),
				sentByClient: new Set(),
				transcriptLength: () => session.agent.state.messages.length,
				protocol,
			});
			encoder.openTurn();
			encoder.inFlight(session.streamingMessage);
			const { end, usage } = await streamStretch(
				{ session, interactions, encoder, signal: new AbortController().signal, detach: detach.signal },
				async () => run,
			);
			if (!detach.signal.aborted) endStream(sse, encoder, finalEvent(end, ids, tokenUsage(usage, session)));
			return reply;
		},
	);
};
