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
 * client's next `RunAgentInput`, carrying the tool messages, resumes it (on another replica too:
 * the results go to the run's replica through the session port, no session is built here, and the
 * stretch is read back from the store). Closing the response
 * before its end (`abortRun()`) aborts the run; a run aborted from elsewhere (`POST
 * /v1/sessions/:id/abort`) ends as `RUN_FINISHED` with the `cancelled` outcome. The session of
 * every answer is in `RUN_STARTED.metadata.wheelhouse` and the `x-wheelhouse-session-id` header,
 * for the native API (steering, approvals, its own event stream).
 */
import type { FastifyPluginAsync } from "fastify";
import type { AgentEvent, AgentMessage } from "../../../agent/types.js";
import { apiError } from "../../http/errors.js";
import { routePlugin } from "../../http/plugins.js";
import { responses } from "../../http/schemas.js";
import type { SseConnection } from "../../http/sse/connection.js";
import { openSse } from "../../http/sse/open.js";
import { newRunId } from "../../runtime/ids.js";
import type { RunHandle } from "../../runtime/session/runs.js";
import type { ToolInteractions } from "../../runtime/session/tool-interactions.js";
import { remoteStretch } from "../openai/remote-stretch.js";
import { AguiEncoder } from "./encoder.js";
import { type AguiEvent, aguiFrame } from "./events.js";
import { runInstructions } from "./input.js";
import { forProtocol, protocolOf } from "./protocol.js";
import { createRunStart, type RunInput, storedModel } from "./run-start.js";
import { AguiStream, CatchUpQuery, RunAgentInputBody, ThreadParams } from "./schemas.js";
import { clientToolNames, droppedFrame, endStream, finalEvent, streamStretch, tokenUsage } from "./stream.js";
import { Threads } from "./threads.js";
import { transcriptMessages, wholeTranscript } from "./transcript.js";

export interface AguiFacadeOptions {
	/** The client tool mechanism the request's tools go through. */
	interactions: ToolInteractions;
}

const SESSION_HEADER = "x-wheelhouse-session-id";

/** A user message's role and content, to know a stored copy of one the client sent. */
function contentKey(message: AgentMessage): string {
	const { role, content } = message as { role?: string; content?: unknown };
	return role === "user" ? JSON.stringify(content) : "";
}

export const aguiFacade: FastifyPluginAsync<AguiFacadeOptions> = routePlugin(
	"wheelhouse-agui",
	async (app, { interactions }) => {
		const { sessions, catalog, profiles } = app.wheelhouse;
		const threads = new Threads(sessions);
		const begin = createRunStart({
			sessions,
			catalog,
			profiles,
			interactions,
			threads,
			...(app.wheelhouse.admission ? { admission: app.wheelhouse.admission } : {}),
		});
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
				const { sessionId } = begun;
				app.wheelhouse.streamSlots.hold(request.ownerId, sessionId, reply.raw);
				const ids = { threadId: input.threadId, runId: input.runId };
				const abort = new AbortController();
				let sse: SseConnection | undefined;
				const early: string[] = [];
				/** The transcript's length as a stretch read back from the store has it (the run is elsewhere). */
				let remoteLength: number | undefined;
				const encoder = new AguiEncoder({
					write: (frame) => (sse ? sse.send(frame) : early.push(frame)),
					clientTools: begun.clientTools,
					sentByClient: begun.sentByClient,
					transcriptLength: () => remoteLength ?? begun.session?.messageCount ?? 0,
					// A client that declares no protocol version predates 1.0 (protocol.ts).
					protocol: protocolOf(input.protocolVersion, "0"),
				});
				reply.header(SESSION_HEADER, sessionId);
				// The client went away (`abortRun()` closes the connection): its run is aborted.
				const onClose = () => {
					if (!reply.raw.writableFinished) abort.abort();
				};
				reply.raw.on("close", onClose);
				if (begun.resumed) encoder.openTurn();
				let run: RunHandle | undefined;
				let release: () => Promise<void> | void = () => {};
				/** Opens the stream with `RUN_STARTED` and what was encoded before it. */
				const openStream = (runId: string | null) => {
					sse = openSse(reply, app.wheelhouse.stream, () => abort.abort(), droppedFrame("the run was aborted."));
					sse.send(encoder.frame({ type: "RUN_STARTED", ...ids, metadata: { wheelhouse: { sessionId, runId } } }));
					for (const frame of early.splice(0)) sse.send(frame);
				};
				try {
					await begun.prepare?.();
					if (begun.remote) {
						// The run waits on another replica: the results go there, the stretch is read back.
						const { port, results } = begun.remote;
						// The transcript as the port's open read it: the run there waits, so nothing was added since.
						remoteLength = port.record.messageCount;
						// The client's own messages come back from the store as copies: known by their content.
						const sent = [...begun.sentByClient].map(contentKey);
						const sink = {
							event: (event: AgentEvent) => {
								const own =
									(event.type === "message_start" || event.type === "message_end") &&
									sent.includes(contentKey(event.message));
								if (!own) encoder.agentEvent(event);
								if (event.type !== "message_end") return;
								remoteLength = (remoteLength ?? 0) + 1;
								if (own) sent.splice(sent.indexOf(contentKey(event.message)), 1);
							},
						};
						const options = {
							store: sessions.store,
							port,
							results,
							clientTools: begun.clientTools,
							after: remoteLength,
						};
						// The steering first, as the local resume does: the run takes it in before it goes on.
						await begun.start(request.traceContext);
						const { end, usage } = await remoteStretch(options, sink, abort.signal, async () => {
							await threads.rememberSent(sessionId, begun.sentIds);
							openStream(port.record.currentRunId ?? null);
						});
						if (sse) endStream(sse, encoder, finalEvent(end, ids, tokenUsage(usage, begun.model())));
						return reply;
					}
					const { session } = begun;
					release = await threads.instruct(
						app.wheelhouse.sessions.portOf(session),
						runInstructions(input.context ?? [], input.state),
					);
					const { end, usage } = await streamStretch(
						{ session, interactions, encoder, signal: abort.signal },
						async () => {
							run = await begun.start(request.traceContext, abort.signal);
							try {
								await threads.rememberSent(sessionId, begun.sentIds);
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
							openStream(run?.id ?? null);
							return run;
						},
					);
					if (sse) endStream(sse, encoder, finalEvent(end, ids, tokenUsage(usage, begun.model())));
					return reply;
				} finally {
					reply.raw.off("close", onClose);
					if (run) void run.done.then(release);
					else void release();
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
				const port = await threads.open(request.ownerId, threadId);
				if (!port) throw apiError("THREAD_NOT_FOUND", `No thread "${threadId}" exists for this API key.`);
				// The session in this process (its run is here; on a single node, every session): read live.
				// Otherwise (cluster mode) everything is read through the port from the store: nothing is
				// built here for a read, and every replica without the run answers the same.
				const session = port.where === "local" ? sessions.inMemory(port.id) : undefined;
				// Read before the stream opens: from here to the snapshot nothing waits, so it is the state now.
				const transcript = session ? await session.wholeTranscript() : await wholeTranscript(port);
				const { record } = port;
				const elsewhere = !session && record.status === "running" ? port : undefined;
				const waitingElsewhere = elsewhere ? await elsewhere.waitingToolCalls() : [];
				const view = await port.readView();
				// Closing this stream only stops watching: the run goes on.
				const detach = new AbortController();
				app.wheelhouse.streamSlots.hold(request.ownerId, port.id, reply.raw);
				reply.header(SESSION_HEADER, port.id);
				const sse = openSse(
					reply,
					app.wheelhouse.stream,
					() => detach.abort(),
					droppedFrame("the run goes on: reconnect to catch up."),
				);
				const write = (frame: string) => sse.send(frame);
				const send = (event: AguiEvent) => write(aguiFrame(forProtocol(event, protocol)));
				const runId = session?.isBusy ? session.runId : (elsewhere?.record.currentRunId ?? undefined);
				const ids = { threadId, runId: runId ?? newRunId() };
				send({
					type: "RUN_STARTED",
					...ids,
					metadata: { wheelhouse: { sessionId: port.id, runId: runId ?? null } },
				});
				send({ type: "MESSAGES_SNAPSHOT", messages: transcriptMessages(transcript) });
				send({ type: "STATE_SNAPSHOT", snapshot: threads.state(session?.config ?? record) });
				send({ type: "CUSTOM", name: "wheelhouse.session", value: view });
				const waiting = session
					? interactions
							.pending(session)
							.filter((p) => p.kind === "client_tool" && !p.orphaned)
							.map((p) => p.toolCallId)
					: waitingElsewhere;
				const run = runId && session ? session.activeRunHandle(runId) : undefined;
				if ((!run && !elsewhere) || (waiting.length > 0 && !session?.streamingMessage)) {
					const outcome = waiting.length > 0 ? { type: "success" as const, pendingToolCallIds: waiting } : undefined;
					sse.end(aguiFrame(forProtocol({ type: "RUN_FINISHED", ...ids, ...(outcome ? { outcome } : {}) }, protocol)));
					return reply;
				}
				if (sse.isClosed) return reply;
				const clientTools = clientToolNames(session?.config ?? record);
				/** The index of the message a stretch read back from the store starts (the run is elsewhere). */
				let encoderLength: number | undefined;
				const encoder = new AguiEncoder({
					write,
					clientTools,
					sentByClient: new Set(),
					transcriptLength: () => encoderLength ?? session?.messageCount ?? transcript.length,
					protocol,
				});
				encoder.openTurn();
				if (!session) {
					// Read back from the store after the snapshot's messages, each message whole, to the run's end.
					let length = transcript.length;
					const stretch = { store: sessions.store, port, results: [], clientTools };
					const { end, usage } = await remoteStretch(
						{ ...stretch, after: length, detach: detach.signal },
						{
							event: (event: AgentEvent) => {
								if (event.type === "message_start") encoderLength = length;
								encoder.agentEvent(event);
								if (event.type === "message_end") length++;
							},
						},
						new AbortController().signal,
						async () => {},
					);
					const model = storedModel(catalog, record.model);
					if (!detach.signal.aborted) endStream(sse, encoder, finalEvent(end, ids, tokenUsage(usage, model)));
					return reply;
				}
				encoder.inFlight(session.streamingMessage);
				const { end, usage } = await streamStretch(
					{ session, interactions, encoder, signal: new AbortController().signal, detach: detach.signal },
					async () => run,
				);
				if (!detach.signal.aborted) endStream(sse, encoder, finalEvent(end, ids, tokenUsage(usage, session.model)));
				return reply;
			},
		);
	},
);
