/**
 * The OpenAI-compatible routes (register with a prefix, e.g. `/openai/v1`, which an SDK's
 * `baseURL` points at): `GET /models`, `POST /chat/completions`, `POST /responses`,
 * `GET /responses/:id`, `POST /responses/:id/cancel`. They need the server's bearer keys like
 * every route (auth.ts), and answer errors in OpenAI's shape.
 *
 * Each request drives a Wheelhouse session (run-segment.ts), none is a second agent:
 * - Chat Completions is stateless: a request's `messages` become a new session (system messages
 *   its system prompt, the earlier turns its transcript) and the trailing user message its prompt.
 * - A response belongs to a session, named in its id: `previous_response_id` continues that session
 *   (durable like the session itself). Without it, `input` is the whole conversation and starts a
 *   new session, as Chat Completions does. Cancelling a response aborts its run, also the run that
 *   waits for the outputs of its function calls.
 * - A request that ends with the results of the client tools an earlier answer returned (`tool`
 *   messages, `function_call_output` items) resumes the run that waits for them, found by the tool
 *   call ids whether or not `previous_response_id` is sent (the AI SDK, LangChain and the Agents
 *   SDK send the whole conversation again without it): no second session, no run left waiting.
 *   When that run is gone (the wait timed out, the server restarted) the conversation starts a new
 *   session that continues from the results.
 * - What a later request must find again — the session of each client tool call an answer
 *   returned, the response objects and their output items (`item_reference` input items name
 *   them) — is stored with the session (records.ts), so a restarted server finds it too.
 * - `model` is a model (`provider/id`) or an agent profile (profiles.ts): a session made with a
 *   profile gets its settings, with the request's system text after the profile's system prompt.
 * The session of every answer is in the `x-wheelhouse-session-id` header, for the native API
 * (`/v1/sessions/:id/...`: events, transcript, steering). In a cluster any replica serves any of
 * these requests: tool results and cancels reach a run on another replica (remote-stretch.ts).
 */
import { randomBytes } from "node:crypto";
import { setTimeout as sleep } from "node:timers/promises";
import type { Context as TraceContext } from "@opentelemetry/api";
import type { FastifyPluginAsync, FastifyReply, FastifyRequest } from "fastify";
import type { AgentMessage } from "../../../agent/types.js";
import type { Model, ToolResultMessage } from "../../../ai/types.js";
import type { SessionRecord } from "../../../store/types.js";
import { ApiError, apiError, quote } from "../../http/errors.js";
import { routePlugin } from "../../http/plugins.js";
import type { SseConnection } from "../../http/sse/connection.js";
import { openSse } from "../../http/sse/open.js";
import { type AgentProfile, profileSettings } from "../../runtime/profiles.js";
import { startAdmitted } from "../../runtime/session/admission.js";
import { isSessionNotFound, SessionError, unlessNotFound } from "../../runtime/session/errors.js";
import type { LiveSession } from "../../runtime/session/live-session.js";
import type { NewSessionInput } from "../../runtime/session/manager.js";
import type { SessionPort } from "../../runtime/session/port.js";
import type { RunHandle } from "../../runtime/session/runs.js";
import { toolCallsOf } from "../../runtime/session/tool-calls.js";
import type { ToolInteractions } from "../../runtime/session/tool-interactions.js";
import { deliverToolResults } from "../client-tool-results.js";
import { ChatChunkEncoder, chatCompletion } from "./chat-encoding.js";
import { forkAtDivergence } from "./divergence.js";
import { installOpenAIErrors } from "./errors.js";
import { resolveItemReferences } from "./item-references.js";
import { type MappedConversation, mapChatMessages, mapFunctionTools, mapResponsesInput } from "./messages.js";
import { OpenAIRecords } from "./records.js";
import { answersEveryCall, remoteStretch, waitsElsewhere } from "./remote-stretch.js";
import { ResponseBuilder, type ResponseHead, type ResponseObject, responseObject } from "./responses-encoding.js";
import { runSegment, type SegmentResult, type SegmentSink } from "./run-segment.js";
import {
	ChatCompletion,
	ChatCompletionBody,
	ModelListSchema,
	openaiResponses,
	ResponseCreateBody,
	ResponseObjectSchema,
	ResponseParams,
	SseStream,
} from "./schemas.js";

export interface OpenAIFacadeOptions {
	/** The client tool mechanism the facade's function tools go through. */
	interactions: ToolInteractions;
}

/** How long a cancel waits for the run of a response in progress to end (its stretch stores the response). */
const CANCEL_WAIT_MS = 10_000;
const CANCEL_POLL_MS = 20;
/** How many of the transcript's last messages are read for the tool calls an output may answer (run elsewhere). */
const KNOWN_CALLS_WINDOW = 200;

const SESSION_HEADER = "x-wheelhouse-session-id";
/** `owned_by` of the agent profiles in `GET /models`. */
const PROFILE_OWNER = "wheelhouse-profile";
/** `visible`: the answer shows the server tools that ran inside the request (hidden by default). */
const SERVER_TOOLS_HEADER = "x-wheelhouse-server-tools";

function showsServerTools(request: FastifyRequest): boolean {
	return request.headers[SERVER_TOOLS_HEADER] === "visible";
}

/** A response id names its session: `resp_<the session id's hex>_<random>`. */
function newResponseId(sessionId: string): string {
	return `resp_${sessionId.replace(/^ses_/, "")}_${randomBytes(8).toString("hex")}`;
}

function sessionOfResponse(responseId: string): string | undefined {
	const match = /^resp_([0-9a-f]{32})_[0-9a-f]+$/.exec(responseId);
	return match ? `ses_${match[1]}` : undefined;
}

/** Why `GET /responses/:id` or its cancel finds no response, when the session it names exists. */
function notKept(id: string): string {
	return `No response "${id}" is stored for its session (a session keeps its latest 1000 responses). previous_response_id still continues its session, whose transcript is GET /v1/sessions/${sessionOfResponse(id)}/messages.`;
}

/** What a request's `model` names: a model, or an agent profile (and its model). */
interface Target {
	model: Model<any>;
	profile?: { name: string; profile: AgentProfile };
}

/** The settings a session gets for `target` with the request's system text, in config-patch form. */
function settingsFor(target: Target, spec: string, system: string | undefined, facade: string): NewSessionInput {
	if (!target.profile) return { model: spec, systemPrompt: system, metadata: { facade } };
	const settings = profileSettings(target.profile.name, target.profile.profile, system);
	return { ...settings, metadata: { ...settings.metadata, facade } };
}

/** What a request's stretch starts with: a new run, or the results the active run waits for. */
interface Start {
	/** The session: its id and its stored config. */
	session: { readonly id: string; readonly config: SessionRecord };
	/** The session in this process, for the local stretch; absent with `segment`. */
	live?: LiveSession;
	/**
	 * Starts (or resumes) the run; `trace`: the request's trace context, the parent of a new run's
	 * spans; `signal`: aborted when the client went away (a run waiting for a slot gives its place up);
	 * `onQueued`: told the position while a new run waits for a slot, and each time it changes.
	 */
	start(
		trace?: TraceContext,
		signal?: AbortSignal,
		onQueued?: (position: number) => void,
	): Promise<RunHandle | undefined>;
	/**
	 * Instead of `start` and the local stretch: a stretch of a run on another replica (cluster
	 * mode), which calls `started` once it has begun.
	 */
	segment?(sink: SegmentSink, signal: AbortSignal, started: () => Promise<void>): Promise<SegmentResult>;
}

/** Thrown by `drive` once a failure was written on a stream it had opened: the answer is sent. */
class StreamEnded extends Error {}

export const openaiFacade: FastifyPluginAsync<OpenAIFacadeOptions> = routePlugin(
	"wheelhouse-openai",
	async (app, { interactions }) => {
		const { sessions, catalog, profiles } = app.wheelhouse;
		const tags = ["openai"];
		const records = new OpenAIRecords(sessions.store);
		installOpenAIErrors(app);

		function resolveModel(spec: string): Model<any> {
			const problem = catalog.problem(spec);
			if (problem?.code === "UNKNOWN_MODEL") {
				throw apiError(
					"UNKNOWN_MODEL",
					`The model ${quote(spec)} does not exist: use "provider/id" of a model, or the name of an agent profile; GET /openai/v1/models lists both.`,
				);
			}
			if (problem) throw apiError(problem.code, `model: ${problem.message}`);
			return catalog.resolve(spec) as Model<any>;
		}

		/** A name without `/` is an agent profile's. */
		function resolveTarget(spec: string): Target {
			if (spec.includes("/")) return { model: resolveModel(spec) };
			const profile = profiles.get(spec);
			if (!profile) {
				throw apiError(
					"UNKNOWN_MODEL",
					`The model ${quote(spec)} does not exist: it is neither a model ("provider/id") nor an agent profile; GET /openai/v1/models lists both.`,
				);
			}
			return { model: resolveModel(profile.model), profile: { name: spec, profile } };
		}

		/**
		 * Resumes the active run that waits for these tool results: of `known`, or of one of the key's
		 * sessions whose answers returned these calls (the store's records, so the latest answer wins
		 * when a model reused a call id), here or (cluster mode) on another replica; undefined when
		 * none waits for them. Throws `VALIDATION_FAILED` when the run waits for more results than these.
		 */
		async function resumeWaiting(
			results: ToolResultMessage[],
			ownerId: string | null,
			knownId?: string,
		): Promise<Start | undefined> {
			const first = results[0];
			if (!first) return undefined;
			const candidates = knownId ? [knownId] : await records.sessionsOfCall(first.toolCallId, ownerId);
			for (const sessionId of candidates) {
				let session: LiveSession;
				try {
					// A run on another replica that waits for every one of these results gets them there.
					const port = await sessions.open(sessionId, ownerId);
					if (await waitsElsewhere(port, results)) return resumeElsewhere(port, results);
					// No run here: none here waits for them (a session loaded here would have none).
					if (port.where === "remote") continue;
					session = await sessions.load(sessionId, ownerId);
				} catch (err) {
					if (isSessionNotFound(err)) continue; // deleted since
					throw err;
				}
				// A wait a previous process left (orphaned) can no longer be answered.
				const waits = interactions.pending(session).filter((p) => p.kind === "client_tool" && !p.orphaned);
				const waiting = waits.map((p) => p.toolCallId);
				if (!answersEveryCall(waiting, results)) continue;
				return resumeWith(session, results);
			}
			return undefined;
		}

		/** Delivers tool results to the run that waits for them on another replica, and reads its stretch back. */
		function resumeElsewhere(port: SessionPort, results: ToolResultMessage[]): Start {
			const clientTools = new Set(port.record.clientTools.map((tool) => tool.name));
			return {
				session: { id: port.id, config: port.record },
				start: async () => undefined,
				segment: (sink, signal, started) =>
					remoteStretch({ store: sessions.store, port, results, clientTools }, sink, signal, started),
			};
		}

		/** Delivers tool results to the run that waits for them; the stretch goes on in that run. */
		function resumeWith(session: LiveSession, results: ToolResultMessage[]): Start {
			return {
				session,
				live: session,
				async start() {
					const runId = session.runId;
					deliverToolResults(interactions, session, results, { instead: "send the conversation again without it" });
					return runId ? session.activeRunHandle(runId) : undefined;
				},
			};
		}

		/** A new run of `session`: prompting with the trailing user turn, or continuing from tool results. */
		function runOf(session: LiveSession, conversation: MappedConversation): Start {
			return {
				session,
				live: session,
				// Past a run limit under `admission: "queue"` the request waits for a slot (bounded).
				start: (trace, signal, onQueued) =>
					startAdmitted(
						app.wheelhouse.admission,
						{ sessionId: session.id, ownerId: session.ownerId, running: session.runId !== undefined },
						async () => {
							// Through the session's port, as `/v1` starts a run.
							const port = sessions.portOf(session);
							if (conversation.prompt.length === 0) return port.continue({ trace });
							const result = await port.prompt(conversation.prompt, "reject", { trace });
							return result.kind === "started" ? result.run : undefined;
						},
						(run) => run,
						{ ...(signal ? { signal } : {}), ...(onQueued ? { onQueued } : {}) },
					),
			};
		}

		/**
		 * Runs a stretch for `reply`: as SSE (the sink `sinkFor` builds writes frames) or collected. The SSE
		 * response opens once the stretch started (and `started` resolved), so a refused start is an
		 * ordinary error answer. With `queued` (a protocol that says a response waits for a run slot),
		 * a streamed run that must wait opens the stream at once with what `queued.told` writes; a start
		 * that then fails is written by `queued.failed` and the stream ends ({@link StreamEnded}).
		 */
		async function drive(
			reply: FastifyReply,
			begun: Start,
			clientTools: Set<string>,
			stream: boolean,
			sinkFor: (write: (frame: string) => void) => SegmentSink,
			abort = new AbortController(),
			started?: () => Promise<void>,
			queued?: { told(position: number): void; failed(err: unknown): void },
		): Promise<{ result: SegmentResult; sse?: SseConnection }> {
			let sse: SseConnection | undefined;
			const early: string[] = [];
			const write = (frame: string) => {
				if (sse) sse.send(frame);
				else early.push(frame);
			};
			if (stream) app.wheelhouse.streamSlots.hold(reply.request.ownerId, begun.session.id, reply.raw);
			reply.header(SESSION_HEADER, begun.session.id);
			// The client went away: its run is aborted (the SDK's AbortController closes the connection).
			const onClose = () => {
				if (!reply.raw.writableFinished) abort.abort();
			};
			reply.raw.on("close", onClose);
			const open = () => {
				sse ??= openSse(reply, app.wheelhouse.stream, () => abort.abort());
				for (const frame of early.splice(0)) sse.send(frame);
			};
			const opened = async () => {
				await started?.();
				if (stream) open();
			};
			/** The stream opened while the run waited for a slot, and the run has not started yet. */
			let waiting = false;
			const onQueued =
				stream && queued
					? (position: number) => {
							queued.told(position);
							open();
							waiting = true;
						}
					: undefined;
			try {
				const live = begun.live;
				const result = begun.segment
					? await begun.segment(sinkFor(write), abort.signal, opened)
					: await runSegment(
							{ session: live as LiveSession, interactions, clientTools, sink: sinkFor(write), signal: abort.signal },
							async () => {
								const run = await begun.start(reply.request.traceContext, abort.signal, onQueued);
								waiting = false;
								await opened();
								return run;
							},
						);
				return { result, sse };
			} catch (err) {
				// The stream opened while the run waited for a slot: the failure goes on it.
				if (!waiting || !sse || !queued) throw err;
				queued.failed(err);
				sse.end();
				throw new StreamEnded();
			} finally {
				reply.raw.off("close", onClose);
			}
		}

		app.get(
			"/models",
			{
				schema: {
					tags,
					summary: "The models, in OpenAI's list shape",
					response: openaiResponses({ 200: ModelListSchema }),
				},
			},
			async function listModels() {
				return {
					object: "list" as const,
					data: catalog
						.list()
						.filter((model) => model.available)
						.map((model) => ({ id: model.id, object: "model" as const, created: 0, owned_by: model.provider }))
						.concat(
							[...profiles.keys()].map((id) => ({ id, object: "model" as const, created: 0, owned_by: PROFILE_OWNER })),
						),
				};
			},
		);

		/**
		 * A conversation sent again with the session of an earlier answer named (`x-wheelhouse-session-id`)
		 * forks that session where the conversation leaves it (divergence.ts); undefined without the
		 * header or when nothing is shared. A named session the caller may not see is a 404.
		 */
		async function editedHistory(request: FastifyRequest, history: AgentMessage[]) {
			const named = request.headers[SESSION_HEADER];
			if (typeof named !== "string" || named === "" || history.length === 0) return undefined;
			return forkAtDivergence(await sessions.open(named, request.ownerId), history);
		}

		app.post(
			"/chat/completions",
			{
				schema: {
					tags,
					summary: "Chat Completions over a session (stream: true for SSE chunks)",
					body: ChatCompletionBody,
					response: openaiResponses({ 200: { anyOf: [ChatCompletion, SseStream] } }),
				},
			},
			async function chatCompletions(request, reply) {
				const body = request.body as {
					model: string;
					messages: Record<string, any>[];
					stream?: boolean;
					stream_options?: { include_usage?: boolean };
					tools?: unknown[];
				};
				const target = resolveTarget(body.model);
				const conversation = mapChatMessages(body.messages, target.model);
				const clientToolSpecs = mapFunctionTools(body.tools, "body.tools");
				const resumed =
					conversation.toolResults.length > 0
						? await resumeWaiting(conversation.toolResults, request.ownerId)
						: undefined;
				const settings = settingsFor(target, body.model, conversation.systemPrompt, "openai.chat.completions");
				const forked = resumed ? undefined : await editedHistory(request, conversation.history);
				const begun =
					resumed ??
					runOf(
						await sessions.create(request.ownerId, {
							...settings,
							messages: forked?.messages ?? conversation.history,
							clientTools: clientToolSpecs,
							...(forked ? { metadata: { ...settings.metadata, ...forked.metadata } } : {}),
						}),
						conversation,
					);
				// The session's declarations: a run resumed by tool results keeps the tools it started with.
				const clientTools = new Set(begun.session.config.clientTools.map((tool) => tool.name));
				const id = `chatcmpl-${randomBytes(12).toString("hex")}`;
				const created = Math.floor(Date.now() / 1000);
				const encoder = new ChatChunkEncoder(id, body.model, created);
				const stream = body.stream === true;
				const visible = showsServerTools(request);
				const { result, sse } = await drive(reply, begun, clientTools, stream, (write) => {
					write(encoder.start());
					return {
						textDelta: (delta) => write(encoder.text(delta)),
						...(visible ? { serverTool: (call) => write(encoder.serverTool(call)) } : {}),
					};
				});
				// Stored before the answer leaves: the request with their results finds the run by them.
				await records.putAnswer(
					begun.session.id,
					result.end.kind === "tool_calls" ? result.end.calls.map((call) => call.id) : [],
				);
				if (sse) {
					if (result.end.kind === "error") sse.end(encoder.error("MODEL_ERROR", result.end.message));
					else sse.end(encoder.finish(result.end, body.stream_options?.include_usage ? result.usage : undefined));
					return reply;
				}
				if (result.end.kind === "error") throw apiError("MODEL_ERROR", result.end.message);
				return chatCompletion(
					id,
					body.model,
					created,
					result.text,
					result.end,
					result.usage,
					visible ? result.serverTools : undefined,
				);
			},
		);

		/**
		 * The session a response id names, if this key may see it: `open` gives its port (nothing is
		 * built for a session whose run is on another replica), `load` the session here.
		 */
		async function sessionOfKnownResponse<T>(
			responseId: string,
			ownerId: string | null,
			field: string,
			get: (sessionId: string, ownerId: string | null) => Promise<T>,
		): Promise<T> {
			const sessionId = sessionOfResponse(responseId);
			const session = sessionId ? await unlessNotFound(get(sessionId, ownerId)) : undefined;
			if (session !== undefined) return session;
			throw apiError("RESPONSE_NOT_FOUND", `${field}: no response "${responseId}" (or its session was deleted).`);
		}

		const open = (sessionId: string, ownerId: string | null) => sessions.open(sessionId, ownerId);
		const load = (sessionId: string, ownerId: string | null) => sessions.load(sessionId, ownerId);

		/** The tool calls of the end of a session's stored transcript (what a tool output may answer). */
		async function recentCalls(port: SessionPort): Promise<Map<string, string>> {
			const total = port.record.messageCount;
			const { messages } = await port.messages(Math.max(0, total - KNOWN_CALLS_WINDOW), KNOWN_CALLS_WINDOW);
			return toolCallsOf(messages);
		}

		/** True while the session's run waits for the outputs of `response`'s function calls (wherever it runs). */
		async function waitsForOutputs(port: SessionPort, response: ResponseObject): Promise<boolean> {
			const calls = new Set(response.output.map((item) => (item.type === "function_call" ? item.call_id : undefined)));
			return (await port.waitingToolCalls()).some((id) => calls.has(id));
		}

		app.post(
			"/responses",
			{
				schema: {
					tags,
					summary: "Responses over a session: previous_response_id continues it (stream: true for semantic events)",
					body: ResponseCreateBody,
					response: openaiResponses({ 200: { anyOf: [ResponseObjectSchema, SseStream] } }),
				},
			},
			async function createResponse(request, reply) {
				const body = request.body as {
					model: string;
					input: unknown;
					instructions?: string | null;
					previous_response_id?: string | null;
					stream?: boolean;
					tools?: unknown[];
					metadata?: Record<string, string>;
				};
				const target = resolveTarget(body.model);
				const clientToolSpecs = mapFunctionTools(body.tools, "body.tools");
				const previous = body.previous_response_id ?? null;
				const input = await resolveItemReferences(body.input, (id) => records.item(id, request.ownerId));
				let begun: Start;
				if (previous) {
					const field = "body.previous_response_id";
					const port = await sessionOfKnownResponse(previous, request.ownerId, field, open);
					// Its run is on another replica: decided through the port, nothing of it is built here.
					const elsewhere = port.where === "remote" && port.record.status === "running";
					const session = elsewhere ? undefined : await sessionOfKnownResponse(previous, request.ownerId, field, load);
					const conversation = mapResponsesInput(
						input,
						body.instructions ?? undefined,
						target.model,
						session ? toolCallsOf(session.messages) : await recentCalls(port),
					);
					if (conversation.toolResults.length > 0 && conversation.prompt.length === 0) {
						const resumed = await resumeWaiting(conversation.toolResults, request.ownerId, port.id);
						if (!resumed) {
							const cancelled = (await records.response(port.id, previous))?.status === "cancelled";
							throw apiError(
								"TOOL_CALL_FINISHED",
								cancelled
									? `body.input: ${previous} was cancelled, and the run that waited for the outputs of its function calls with it; send a new message instead.`
									: `body.input: the run of ${previous} no longer waits for these function call outputs (it timed out, was aborted, or the server restarted); send a new message instead.`,
							);
						}
						begun = resumed;
					} else {
						// A new turn while the run goes on elsewhere is refused as on its replica, nothing changed.
						if (!session) {
							throw apiError(
								"AGENT_BUSY",
								`Session ${port.id} is running; wait for its run to end (or steer it with POST /v1/sessions/${port.id}/steer).`,
							);
						}
						// A new turn of the same session: what the request changes applies from it.
						if (!session.isBusy) {
							const system = conversation.systemPrompt ?? body.instructions ?? undefined;
							const settings = target.profile
								? settingsFor(target, body.model, system, session.config.metadata.facade ?? "openai.responses")
								: { model: body.model, ...(system !== undefined ? { systemPrompt: system } : {}) };
							await sessions.update(session, {
								...settings,
								...(settings.metadata ? { metadata: { ...session.config.metadata, ...settings.metadata } } : {}),
								...(body.tools !== undefined ? { clientTools: clientToolSpecs } : {}),
							});
						}
						begun = runOf(session, {
							...conversation,
							prompt: [...conversation.history, ...conversation.prompt],
							history: [],
						});
					}
				} else {
					const conversation = mapResponsesInput(input, body.instructions ?? undefined, target.model);
					const resumed =
						conversation.toolResults.length > 0
							? await resumeWaiting(conversation.toolResults, request.ownerId)
							: undefined;
					begun =
						resumed ??
						runOf(
							await sessions.create(request.ownerId, {
								...settingsFor(target, body.model, conversation.systemPrompt, "openai.responses"),
								messages: conversation.history,
								clientTools: clientToolSpecs,
							}),
							conversation,
						);
				}
				const session = begun.session;
				const clientTools = new Set(session.config.clientTools.map((tool) => tool.name));
				const head: ResponseHead = {
					id: newResponseId(session.id),
					model: body.model,
					createdAt: Math.floor(Date.now() / 1000),
					previousResponseId: previous,
					instructions: body.instructions ?? null,
					tools: body.tools ?? [],
					metadata: body.metadata ?? {},
				};
				let builder!: ResponseBuilder;
				let driven: Awaited<ReturnType<typeof drive>>;
				try {
					driven = await drive(
						reply,
						begun,
						clientTools,
						body.stream === true,
						(write) => {
							builder = new ResponseBuilder(head, body.stream === true ? write : undefined);
							return {
								textDelta: (delta) => builder.textDelta(delta),
								messageEnd: () => builder.messageEnd(),
								...(showsServerTools(request) ? { serverTool: (call) => builder.serverTool(call) } : {}),
							};
						},
						new AbortController(),
						// In progress from its start, for GET and cancel from any process.
						async () => {
							await records.putAnswer(session.id, [], responseObject(head, "in_progress", []));
							builder.begin();
						},
						// Waiting for a run slot (admission): `response.queued`, as OpenAI's background responses say it.
						{
							told: (position) => builder.queued(position),
							failed: (err) => {
								const known = err instanceof ApiError || err instanceof SessionError;
								builder.error(
									known ? err.code : "INTERNAL_ERROR",
									known ? err.message : "The run could not start (internal error).",
								);
							},
						},
					);
				} catch (err) {
					if (err instanceof StreamEnded) return reply;
					throw err;
				}
				const { result, sse } = driven;
				// The calls are stored before their items go out (a client may act on an item before the
				// response ends), the response before its end: their outputs, GET and cancel find them.
				await records.putAnswer(
					session.id,
					result.end.kind === "tool_calls" ? result.end.calls.map((call) => call.id) : [],
				);
				const response = builder.finish(result.end, result.usage);
				await records.putAnswer(session.id, [], response);
				builder.announce(response);
				if (sse) {
					sse.end();
					return reply;
				}
				if (result.end.kind === "error") throw apiError("MODEL_ERROR", result.end.message);
				return response;
			},
		);

		/** The response `id` as stored, or 404. */
		async function storedResponse(session: { id: string }, id: string): Promise<ResponseObject> {
			const response = await records.response(session.id, id);
			if (!response) throw apiError("RESPONSE_NOT_FOUND", notKept(id));
			return response;
		}

		/**
		 * Cancels a response: aborts its run while the response is in progress (its stretch then stores
		 * it as cancelled), or while the run waits for the outputs of its function calls. A finished
		 * response is returned as it is. The run may be on another replica: the session port aborts it
		 * there as `/v1`'s abort does, and says when it ended.
		 */
		async function cancel(port: SessionPort, id: string): Promise<ResponseObject> {
			let response = await storedResponse(port, id);
			const abortRun = async () => {
				await port.abort();
				await port.runEnded(CANCEL_WAIT_MS);
			};
			if (response.status === "in_progress" && port.record.status === "running") {
				await abortRun();
				await until(async () => {
					response = await storedResponse(port, id);
					return response.status !== "in_progress";
				});
			} else if (await waitsForOutputs(port, response)) {
				await abortRun();
				response = { ...response, status: "cancelled" };
				await records.putAnswer(port.id, [], response);
			}
			return response;
		}

		/** Polls `done` until it is true, at most {@link CANCEL_WAIT_MS}. */
		async function until(done: () => Promise<boolean>): Promise<void> {
			for (const deadline = Date.now() + CANCEL_WAIT_MS; Date.now() < deadline; await sleep(CANCEL_POLL_MS)) {
				if (await done()) return;
			}
		}

		app.get(
			"/responses/:id",
			{
				schema: {
					tags,
					summary: "A response this server answered (stored with its session: the latest 1000 of each)",
					params: ResponseParams,
					response: openaiResponses({ 200: ResponseObjectSchema }),
				},
			},
			async function getResponse(request) {
				const { id } = request.params as { id: string };
				return storedResponse(await sessionOfKnownResponse(id, request.ownerId, "id", open), id);
			},
		);

		app.post(
			"/responses/:id/cancel",
			{
				schema: {
					tags,
					summary:
						"Cancel a response: aborts its run while it is in progress, or while the run waits for the outputs of its function calls (a finished response is returned as it is)",
					params: ResponseParams,
					response: openaiResponses({ 200: ResponseObjectSchema }),
				},
			},
			async function cancelResponse(request) {
				const { id } = request.params as { id: string };
				return cancel(await sessionOfKnownResponse(id, request.ownerId, "id", open), id);
			},
		);
	},
);
