/**
 * Wheelhouse's agents as an MCP server: Streamable HTTP at `/mcp`, behind the bearer keys like
 * every route (401 without one). `tools/list` has one tool per agent profile (tools.ts);
 * `tools/call` runs the agent on a new session or the one `sessionId` names, sends the answer's
 * text deltas as progress notifications when the call has a progress token (progress.ts), and answers the text
 * with `structuredContent { sessionId, runId, status, usage }`.
 *
 * Stateless: every POST is served by a fresh SDK server and transport, so any replica serves any
 * request and nothing lives in this process between requests. The `Mcp-Session-Id` the server
 * hands out at `initialize` is only a name for the client's requests (never a credential: every
 * request needs its key); a `notifications/cancelled` carrying it and a request id aborts the run
 * that request started, found through the store on whichever replica the notification reaches.
 *
 * An approval the run asks for, or the result of one of the session's client tools, goes to the
 * client's user as an elicitation when the client declared that capability at `initialize` (the
 * session id the server hands out says so, so no request needs state): the elicitation's id names
 * the session and the call, and its answer resolves the wait from whichever replica it reaches
 * (elicitation.ts), while the call waits for the run's end. Without the capability the call ends
 * with `status: "input_required"` and the pending call named (`pending`); the run stays waiting,
 * as `/v1` leaves it, for an answer posted to `/v1/sessions/:id/approvals/:toolCallId` or
 * `.../tool-results/:toolCallId`.
 *
 * Tasks (MCP 2025-11-25): a task-augmented call starts the run and answers the task at once; the
 * task id is the run id, and `tasks/get`, `tasks/result` and `tasks/cancel` read and abort the run
 * through the store from any replica (session-access.ts follows a run cut short to the run that
 * continued it).
 */
import { randomUUID } from "node:crypto";
import type { FastifyPluginAsync, FastifyRequest } from "fastify";
import type { UserMessage } from "../../../ai/types.js";
import { packageVersion } from "../../config/package-version.js";
import { ApiError, apiError, fromSessionError } from "../../http/errors.js";
import { routePlugin } from "../../http/plugins.js";
import { responses } from "../../http/schemas.js";
import { SessionError } from "../../runtime/session/errors.js";
import { ELICITS_SUFFIX, elicitationRequest, isElicitationAnswer, resolutionOf } from "./elicitation.js";
import { ProgressBatcher } from "./progress.js";
import { McpAccepted, McpAnswer } from "./schemas.js";
import {
	type AgentRunResult,
	McpSessionAccess,
	type McpTaskRecord,
	type McpTaskState,
	type PendingCall,
} from "./session-access.js";
import { type AgentTool, agentTools, INPUT_SCHEMA, OUTPUT_SCHEMA } from "./tools.js";

type Json = Record<string, any>;
type Sdk = typeof import("./sdk.js");

const SESSION_HEADER = "mcp-session-id";

/** How long `tasks/result` waits for the run to end. */
const TASK_RESULT_WAIT_MS = 10 * 60_000;
const TERMINAL_TASK_STATES = new Set(["completed", "failed", "cancelled"]);

/** An MCP task of a run (its id is the run id). */
function taskOf(taskId: string, record: McpTaskRecord, state: McpTaskState) {
	return {
		taskId,
		status: state.status,
		ttl: record.ttl,
		createdAt: new Date(record.createdAt).toISOString(),
		lastUpdatedAt: new Date(state.lastUpdatedAt).toISOString(),
		pollInterval: 250,
		...(state.statusMessage ? { statusMessage: state.statusMessage } : {}),
	};
}

function errorResult(text: string) {
	return { content: [{ type: "text" as const, text }], isError: true };
}

/** The tool result of a run. */
function resultOf(run: AgentRunResult) {
	const pendingNote = run.pending
		.map((p) =>
			p.kind === "approval"
				? `The run waits for approval of ${p.toolName} (tool call ${p.toolCallId}): POST /v1/sessions/${run.sessionId}/approvals/${p.toolCallId} with {"approve": true|false}.`
				: `The run waits for the result of client tool ${p.toolName} (tool call ${p.toolCallId}): POST /v1/sessions/${run.sessionId}/tool-results/${p.toolCallId} with {"content": "..."}.`,
		)
		.join("\n");
	const text =
		run.status === "input_required"
			? [run.text, pendingNote].filter((part) => part !== "").join("\n\n")
			: run.status === "error"
				? `The agent's run failed: ${run.errorMessage}`
				: run.status === "aborted"
					? [run.text, "(The run was aborted.)"].filter((part) => part !== "").join("\n\n")
					: run.text;
	return {
		content: [{ type: "text" as const, text }],
		structuredContent: {
			sessionId: run.sessionId,
			runId: run.runId,
			status: run.status,
			usage: run.usage,
			...(run.pending.length > 0 ? { pending: run.pending } : {}),
		},
		...(run.status === "error" ? { isError: true } : {}),
	};
}

/**
 * The body: one JSON-RPC message or a non-empty batch of them. Checked here so that what the SDK
 * would refuse at the HTTP level is the error envelope like every route's.
 */
function checkMessages(body: unknown): Json[] {
	const list = Array.isArray(body) ? body : [body];
	if (list.length === 0) throw apiError("VALIDATION_FAILED", "body: an empty batch has no message to answer");
	list.forEach((message, i) => {
		const where = Array.isArray(body) ? `body[${i}]` : "body";
		if (typeof message !== "object" || message === null || Array.isArray(message))
			throw apiError("VALIDATION_FAILED", `${where}: must be a JSON-RPC 2.0 message (an object)`);
		if ((message as Json).jsonrpc !== "2.0") throw apiError("VALIDATION_FAILED", `${where}.jsonrpc: must be "2.0"`);
	});
	return list as Json[];
}

/** `Accept` and `MCP-Protocol-Version` as the transport wants them, refused as envelopes. */
function checkHeaders(request: FastifyRequest, loaded: Sdk): void {
	const accept = String(request.headers.accept ?? "");
	if (!accept.includes("application/json") || !accept.includes("text/event-stream")) {
		throw apiError(
			"NOT_ACCEPTABLE",
			"Accept: must take both application/json and text/event-stream (MCP Streamable HTTP).",
		);
	}
	const version = request.headers["mcp-protocol-version"];
	if (typeof version === "string" && !loaded.SUPPORTED_PROTOCOL_VERSIONS.includes(version)) {
		throw apiError(
			"VALIDATION_FAILED",
			`MCP-Protocol-Version: ${JSON.stringify(version.slice(0, 40))} is not one this server speaks (${loaded.SUPPORTED_PROTOCOL_VERSIONS.join(", ")}).`,
		);
	}
}

export const mcpFacade: FastifyPluginAsync = routePlugin("wheelhouse-mcp", async (app) => {
	const access = new McpSessionAccess(app);
	const version = packageVersion();
	let sdk: Promise<Sdk> | undefined;
	const tags = ["mcp"];

	/** Resolves what an elicitation asked for with its answer (elicitation.ts). */
	async function answerElicitation(ownerId: string | null, answer: Json): Promise<void> {
		const found = resolutionOf(answer);
		if (found) await access.answer(ownerId, found.sessionId, found.resolution);
	}

	/** One SDK server for one request of `request`'s owner. */
	function serverFor(
		loaded: Sdk,
		request: FastifyRequest,
		mcpSession: string | undefined,
		transport: InstanceType<Sdk["StreamableHTTPServerTransport"]>,
	) {
		const elicits = mcpSession?.endsWith(ELICITS_SUFFIX) === true;
		const tools = agentTools(access.profiles, access.defaultModel);
		const byName = new Map<string, AgentTool>(tools.map((tool) => [tool.name, tool]));
		const server = new loaded.Server(
			{ name: "wheelhouse", version },
			{ capabilities: { tools: {}, tasks: { cancel: {}, requests: { tools: { call: {} } } } } },
		);
		server.setRequestHandler(loaded.ListToolsRequestSchema, async () => ({
			tools: tools.map((tool) => ({
				name: tool.name,
				description: tool.description,
				inputSchema: INPUT_SCHEMA as unknown as Json & { type: "object" },
				outputSchema: OUTPUT_SCHEMA as unknown as Json & { type: "object" },
				execution: { taskSupport: "optional" as const },
			})),
		}));
		server.setRequestHandler(loaded.CallToolRequestSchema, async (call, extra) => {
			const tool = byName.get(call.params.name);
			if (!tool) return errorResult(`Unknown tool "${call.params.name}"; tools/list names the agents.`);
			const args = (call.params.arguments ?? {}) as Json;
			if (typeof args.message !== "string" || args.message === "")
				return errorResult("arguments.message: must be a non-empty string");
			if (args.sessionId !== undefined && typeof args.sessionId !== "string")
				return errorResult("arguments.sessionId: must be a string");
			if (call.params.task) return startTask(loaded, request, tool, args, call.params.task.ttl);
			const progressToken = call.params._meta?.progressToken;
			const progress = new ProgressBatcher(({ progress, message }) => {
				if (progressToken === undefined) return;
				extra
					.sendNotification({ method: "notifications/progress", params: { progressToken, progress, message } })
					.catch(() => undefined);
			});
			try {
				const session = await access.session(request.ownerId, args.sessionId, tool.profile);
				if (!session) return errorResult(`arguments.sessionId: no session "${args.sessionId}" exists for this key.`);
				const message: UserMessage = {
					role: "user",
					content: [{ type: "text", text: args.message }],
					timestamp: Date.now(),
				};
				const run = await access.run(session, message, {
					delta(text) {
						if (progressToken !== undefined) progress.add(text);
					},
					...(elicits
						? {
								ask(pending: PendingCall, sessionId: string) {
									// The answer may reach another replica, which finds the wait in the store: it is asked
									// only once the wait is durable (nothing that is not reaches a client); the barrier
									// waits for every write called before it, the wait's row included.
									app.wheelhouse.sessions.store
										.sync()
										.then(() =>
											transport.send(elicitationRequest(pending, sessionId), {
												relatedRequestId: extra.requestId,
											}),
										)
										.catch(() => undefined);
								},
							}
						: {}),
					async started(runId, sessionId) {
						if (mcpSession) await access.recordCall(sessionId, `${mcpSession}:${String(extra.requestId)}`, runId);
					},
					signal: extra.signal,
					...(request.traceContext ? { trace: request.traceContext } : {}),
				});
				progress.flush();
				await app.wheelhouse.sessions.store.sync();
				return resultOf(run);
			} catch (err) {
				const refusal = err instanceof SessionError ? fromSessionError(err) : err;
				if (refusal instanceof ApiError && refusal.statusCode < 500)
					return errorResult(`${refusal.code}: ${refusal.message}`);
				request.log.error({ err }, "MCP tool call failed");
				return errorResult("The call failed (internal error).");
			} finally {
				progress.flush();
			}
		});
		server.setRequestHandler(loaded.GetTaskRequestSchema, async (get) => {
			const { taskId } = get.params;
			const found = await findTask(loaded, request, taskId);
			return taskOf(taskId, found.record, await access.taskState(found.session, taskId, found.record));
		});
		server.setRequestHandler(loaded.GetTaskPayloadRequestSchema, async (get, extra) => {
			const { taskId } = get.params;
			const found = await findTask(loaded, request, taskId);
			// The result is the run's: wait for its end (the run may go on on another replica).
			let state = await access.taskState(found.session, taskId, found.record);
			await access.waitUntil(
				TASK_RESULT_WAIT_MS,
				async () => {
					state = await access.taskState(found.session, taskId, found.record);
					return TERMINAL_TASK_STATES.has(state.status);
				},
				extra.signal,
			);
			const answer = await access.taskAnswer(found.session, taskId, found.record);
			return {
				...resultOf({
					sessionId: found.session.id,
					runId: taskId,
					text: answer.text,
					usage: answer.usage,
					status:
						state.status === "completed"
							? "completed"
							: state.status === "cancelled"
								? "aborted"
								: state.status === "failed"
									? "error"
									: "input_required",
					...(state.status === "failed" ? { errorMessage: state.statusMessage ?? "The run failed." } : {}),
					pending: [],
				}),
				_meta: { "io.modelcontextprotocol/related-task": { taskId } },
			};
		});
		server.setRequestHandler(loaded.CancelTaskRequestSchema, async (cancel) => {
			const { taskId } = cancel.params;
			const found = await findTask(loaded, request, taskId);
			const before = await access.taskState(found.session, taskId, found.record);
			if (TERMINAL_TASK_STATES.has(before.status)) {
				throw new loaded.McpError(loaded.ErrorCode.InvalidParams, `Task ${taskId} has ended (${before.status}).`);
			}
			await access.abortTask(found.session, taskId);
			return taskOf(taskId, found.record, await access.taskState(found.session, taskId, found.record));
		});
		return server;
	}

	/** The task of `request`'s owner, or the MCP error a client gets for an unknown one. */
	async function findTask(loaded: Sdk, request: FastifyRequest, taskId: string) {
		const found = await access.findTask(request.ownerId, taskId);
		if (!found) throw new loaded.McpError(loaded.ErrorCode.InvalidParams, `No task "${taskId}" exists for this key.`);
		return found;
	}

	/** A task-augmented `tools/call`: the run starts, the task is answered at once. */
	async function startTask(loaded: Sdk, request: FastifyRequest, tool: AgentTool, args: Json, ttl: unknown) {
		try {
			const session = await access.session(request.ownerId, args.sessionId, tool.profile);
			if (!session) {
				throw new loaded.McpError(
					loaded.ErrorCode.InvalidParams,
					`arguments.sessionId: no session "${args.sessionId}" exists for this key.`,
				);
			}
			const message: UserMessage = {
				role: "user",
				content: [{ type: "text", text: args.message }],
				timestamp: Date.now(),
			};
			const started = await access.startTask(
				session,
				message,
				typeof ttl === "number" ? ttl : null,
				request.traceContext,
			);
			await app.wheelhouse.sessions.store.sync();
			return {
				task: taskOf(started.runId, started.record, { status: "working", lastUpdatedAt: started.record.createdAt }),
			};
		} catch (err) {
			const refusal = err instanceof SessionError ? fromSessionError(err) : err;
			if (refusal instanceof ApiError && refusal.statusCode < 500)
				throw new loaded.McpError(loaded.ErrorCode.InvalidRequest, `${refusal.code}: ${refusal.message}`);
			throw err;
		}
	}

	app.post(
		"/mcp",
		{
			schema: {
				tags,
				summary:
					"MCP Streamable HTTP: the agents as tools (JSON-RPC messages in; the answers, or their SSE stream, out)",
				response: responses({ 200: McpAnswer, 202: McpAccepted }),
			},
		},
		async function mcpPost(request, reply) {
			const body = request.body as Json | Json[] | undefined;
			const messages = checkMessages(body);
			sdk ??= import("./sdk.js");
			checkHeaders(request, await sdk);
			const header = request.headers[SESSION_HEADER];
			const mcpSession = typeof header === "string" && header !== "" ? header : undefined;
			// The user's answers to what was asked by elicitation: they reach any replica, and the
			// request's id names the session and the call (no state kept here).
			const answers = messages.filter(isElicitationAnswer);
			for (const answer of answers) await answerElicitation(request.ownerId, answer);
			if (answers.length === messages.length) return reply.code(202).send();
			// A cancellation may reach any replica, and this stateless server keeps no request: the run
			// the request started is found through the store and aborted.
			for (const message of messages) {
				if (message.method === "notifications/cancelled" && mcpSession && message.params?.requestId !== undefined) {
					await access.cancelCall(request.ownerId, `${mcpSession}:${String(message.params.requestId)}`);
				}
			}
			const loaded = await sdk;
			const transport = new loaded.StreamableHTTPServerTransport({ sessionIdGenerator: undefined });
			const server = serverFor(loaded, request, mcpSession, transport);
			await server.connect(transport);
			reply.hijack();
			for (const [name, value] of Object.entries(reply.getHeaders())) {
				if (value !== undefined) reply.raw.setHeader(name, value as string);
			}
			const initialize = messages.find((message) => message.method === "initialize");
			if (initialize) {
				// What the client can do travels in the session id it sends back on every request.
				const elicits = initialize.params?.capabilities?.elicitation !== undefined;
				reply.raw.setHeader(SESSION_HEADER, `mcp_${randomUUID().replaceAll("-", "")}${elicits ? ELICITS_SUFFIX : ""}`);
			}
			reply.raw.once("close", () => {
				void transport.close();
				void server.close();
			});
			await transport.handleRequest(request.raw, reply.raw, body);
			return reply;
		},
	);
});
