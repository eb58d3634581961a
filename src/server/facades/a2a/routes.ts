/**
 * The A2A v1.0 server (JSON-RPC binding): the agent card at `/.well-known/agent-card.json` (open)
 * and the JSON-RPC endpoint (`POST /a2a/v1`, the bearer key as on `/v1`). A task is a run, a
 * context is a session (session-access.ts), so keys, budgets, run limits, approvals and the
 * cluster apply as they do on `/v1`.
 *
 * Methods: `SendMessage` (blocking until the task ends or waits for input, unless
 * `configuration.returnImmediately`), `SendStreamingMessage`, `GetTask`, `ListTasks` (of a
 * context), `CancelTask` (aborts the run), `SubscribeToTask` (the task, then live; `Last-Event-ID`
 * resumes after that event), and the push-config methods (`CreateTaskPushNotificationConfig`,
 * `GetTaskPushNotificationConfig`, `ListTaskPushNotificationConfigs`,
 * `DeleteTaskPushNotificationConfig`; delivered through the webhook outbox, see push.ts).
 *
 * Errors are JSON-RPC errors with HTTP 200, as the binding has it: the A2A codes where one fits
 * (`TaskNotFound` -32001, `TaskNotCancelable` -32002, `UnsupportedOperation` -32004,
 * `InvalidParams` -32602), otherwise `InternalError` -32603 with the Wheelhouse error code and
 * status in `data` (a budget, a run limit, a busy session). A missing or wrong key is the usual
 * 401 envelope, before any JSON-RPC.
 */
import type { FastifyPluginAsync, FastifyReply, FastifyRequest } from "fastify";
import { packageVersion } from "../../config/package-version.js";
import { ApiError, fromSessionError } from "../../http/errors.js";
import { routePlugin } from "../../http/plugins.js";
import { responses } from "../../http/schemas.js";
import { whenGone } from "../../runtime/session/admission.js";
import { SessionError } from "../../runtime/session/errors.js";
import type { ToolInteractions } from "../../runtime/session/tool-interactions.js";
import { agentCard } from "./card.js";
import { MessageIntake } from "./messages.js";
import type { A2aPushReporter } from "./push.js";
import { PushConfigMethods } from "./push-methods.js";
import { A2aAnswer, AgentCardBody } from "./schemas.js";
import { A2aSessionAccess } from "./session-access.js";
import { streamTask } from "./task-stream.js";
import { TaskReader } from "./tasks.js";
import { A2A_VERSION, RPC_ERRORS, RpcError, type TaskState } from "./wire.js";

export interface A2aFacadeOptions {
	interactions: ToolInteractions;
	/** Puts a task's push notifications in the outbox with its state changes (push.ts). */
	push?: A2aPushReporter;
	/** Has the outbox sent what was just put in it. */
	wakeOutbox?: () => void;
	/** Where the JSON-RPC endpoint is (default `/a2a/v1`). */
	path?: string;
}

type Json = Record<string, any>;
type RpcId = string | number | null;

/** The methods that answer with a stream. */
const STREAMING = new Set(["SendStreamingMessage", "SubscribeToTask"]);
const STATES = new Set<string>([
	"TASK_STATE_SUBMITTED",
	"TASK_STATE_WORKING",
	"TASK_STATE_COMPLETED",
	"TASK_STATE_FAILED",
	"TASK_STATE_CANCELED",
	"TASK_STATE_INPUT_REQUIRED",
	"TASK_STATE_REJECTED",
]);
/** The longest a blocking `SendMessage` waits for its task (then it answers the task as it is). */
const BLOCKING_WAIT_MS = 10 * 60_000;

function rpcResult(id: RpcId, result: unknown) {
	return { jsonrpc: "2.0", id, result };
}

/** An error thrown by a method as the JSON-RPC error object (5xx messages masked). */
function rpcError(err: unknown): { code: number; message: string; data?: unknown } {
	if (err instanceof RpcError) return { code: err.code, message: err.message, ...(err.data ? { data: err.data } : {}) };
	if (err instanceof SessionError) return rpcError(fromSessionError(err));
	if (err instanceof ApiError) {
		const invalid = err.statusCode === 400 || err.statusCode === 404 || err.statusCode === 422;
		return {
			code: invalid ? RPC_ERRORS.INVALID_PARAMS : RPC_ERRORS.INTERNAL_ERROR,
			message: err.statusCode >= 500 ? "Internal error." : err.message,
			data: { code: err.code, status: err.statusCode },
		};
	}
	return { code: RPC_ERRORS.INTERNAL_ERROR, message: "Internal error." };
}

function stringParam(params: Json, field: string): string {
	const value = params[field];
	if (typeof value !== "string" || value === "")
		throw new RpcError(RPC_ERRORS.INVALID_PARAMS, `params.${field}: must be a non-empty string`);
	return value;
}

function optionalCount(params: Json, field: string): number | undefined {
	const value = params[field];
	if (value === undefined) return undefined;
	if (!Number.isInteger(value) || value < 0)
		throw new RpcError(RPC_ERRORS.INVALID_PARAMS, `params.${field}: must be a non-negative integer`);
	return value;
}

/** The `Last-Event-ID` of a `SubscribeToTask` (the event-id extension), or undefined. */
function lastEventId(request: FastifyRequest): number | undefined {
	const header = request.headers["last-event-id"];
	if (typeof header !== "string" || header.trim() === "") return undefined;
	if (!/^\d{1,15}$/.test(header.trim()))
		throw new RpcError(RPC_ERRORS.INVALID_PARAMS, "Last-Event-ID: must be an event id (a non-negative integer)");
	return Number(header.trim());
}

export const a2aFacade: FastifyPluginAsync<A2aFacadeOptions> = routePlugin("wheelhouse-a2a", async (app, options) => {
	const path = options.path ?? "/a2a/v1";
	const access = new A2aSessionAccess(
		app,
		options.interactions,
		options.push ? { wake: options.wakeOutbox ?? (() => {}) } : undefined,
	);
	const pushMethods = new PushConfigMethods(access);
	const reader = new TaskReader(access);
	const intake = new MessageIntake(access);
	const tags = ["a2a"];
	const version = packageVersion();

	app.get(
		"/.well-known/agent-card.json",
		{
			config: { public: true },
			schema: {
				tags,
				summary: "The A2A agent card (open: it says how to authenticate)",
				response: responses({ 200: AgentCardBody }),
			},
		},
		async function getAgentCard(request) {
			return agentCard({
				url: `${request.protocol}://${request.host}${path}`,
				profiles: access.profiles,
				defaultModel: access.defaultModel,
				auth: app.wheelhouse.config.apiKeys.length > 0,
				push: options.push !== undefined,
				version,
			});
		},
	);

	/** Waits (blocking `SendMessage`) until the task ends or waits for input other than what was answered. */
	function settled(sent: Awaited<ReturnType<MessageIntake["send"]>>, signal: AbortSignal): Promise<void> {
		return access.settled(sent.session, sent.taskId, sent.answered, BLOCKING_WAIT_MS, signal);
	}

	/** Runs one method that answers with JSON. */
	async function call(request: FastifyRequest, reply: FastifyReply, method: string, params: Json): Promise<unknown> {
		const owner = request.ownerId;
		switch (method) {
			case "SendMessage": {
				const sent = await intake.send(owner, params, request.traceContext, whenGone(reply.raw));
				if (params.configuration?.returnImmediately !== true) {
					const gone = new AbortController();
					reply.raw.once("close", () => gone.abort());
					await settled(sent, gone.signal);
				}
				const historyLength = optionalCount(params.configuration ?? {}, "historyLength");
				return {
					task: await reader.task(
						sent.session,
						sent.taskId,
						sent.record,
						historyLength === undefined ? {} : { historyLength },
					),
				};
			}
			case "GetTask": {
				const found = await access.findTask(owner, stringParam(params, "id"));
				if (!found) throw new RpcError(RPC_ERRORS.TASK_NOT_FOUND, `No task "${params.id}" exists for this key.`);
				const historyLength = optionalCount(params, "historyLength");
				return reader.task(
					found.session,
					found.taskId,
					found.record,
					historyLength === undefined ? {} : { historyLength },
				);
			}
			case "ListTasks": {
				const contextId = stringParam(params, "contextId");
				const state = params.status;
				if (state !== undefined && state !== "TASK_STATE_UNSPECIFIED" && !STATES.has(state))
					throw new RpcError(RPC_ERRORS.INVALID_PARAMS, "params.status: must be a TASK_STATE_* value");
				const pageSize = optionalCount(params, "pageSize") || 50;
				const start = params.pageToken ? Number(params.pageToken) : 0;
				if (!Number.isInteger(start) || start < 0)
					throw new RpcError(RPC_ERRORS.INVALID_PARAMS, "params.pageToken: not a token this server issued");
				const session = await access.findContext(owner, contextId);
				const historyLength = optionalCount(params, "historyLength");
				const tasks = session
					? await reader.list(session, {
							...(historyLength === undefined ? {} : { historyLength }),
							...(state && state !== "TASK_STATE_UNSPECIFIED" ? { state: state as TaskState } : {}),
						})
					: [];
				const page = tasks.slice(start, start + pageSize);
				const next = start + pageSize < tasks.length ? String(start + pageSize) : "";
				return { tasks: page, nextPageToken: next, pageSize: page.length, totalSize: tasks.length };
			}
			case "CancelTask": {
				const found = await access.findTask(owner, stringParam(params, "id"));
				if (!found) throw new RpcError(RPC_ERRORS.TASK_NOT_FOUND, `No task "${params.id}" exists for this key.`);
				if ((await access.runningRun(found.session)) !== found.taskId) {
					const task = await reader.task(found.session, found.taskId, found.record);
					throw new RpcError(
						RPC_ERRORS.TASK_NOT_CANCELABLE,
						`Task ${found.taskId} has ended (${task.status.state}); only a task in progress can be canceled.`,
					);
				}
				await access.abort(found.session, found.taskId);
				return reader.task(found.session, found.taskId, found.record);
			}
			case "GetExtendedAgentCard":
				throw new RpcError(RPC_ERRORS.EXTENDED_CARD_NOT_CONFIGURED, "This server has no extended agent card.");
			case "CreateTaskPushNotificationConfig":
			case "GetTaskPushNotificationConfig":
			case "ListTaskPushNotificationConfigs":
			case "DeleteTaskPushNotificationConfig": {
				if (!options.push)
					throw new RpcError(
						RPC_ERRORS.PUSH_NOTIFICATION_NOT_SUPPORTED,
						"Push notifications are not supported by this server (the agent card says so); stream or poll the task instead.",
					);
				if (method === "CreateTaskPushNotificationConfig") return pushMethods.create(owner, params);
				if (method === "GetTaskPushNotificationConfig") return pushMethods.get(owner, params);
				if (method === "ListTaskPushNotificationConfigs") return pushMethods.list(owner, params);
				return pushMethods.delete(owner, params);
			}
			default:
				throw new RpcError(RPC_ERRORS.METHOD_NOT_FOUND, `Method not found: ${method}`);
		}
	}

	/** Opens the stream of a streaming method. */
	async function openStream(request: FastifyRequest, reply: FastifyReply, method: string, params: Json, id: RpcId) {
		const owner = request.ownerId;
		if (method === "SendStreamingMessage") {
			const sent = await intake.send(owner, params, request.traceContext, whenGone(reply.raw));
			app.wheelhouse.streamSlots.hold(owner, sent.session.id, reply.raw);
			streamTask(reply, app.wheelhouse.stream, access, reader, { ...sent, rpcId: id });
			return;
		}
		const cursor = lastEventId(request);
		const found = await access.findTask(owner, stringParam(params, "id"));
		if (!found) throw new RpcError(RPC_ERRORS.TASK_NOT_FOUND, `No task "${params.id}" exists for this key.`);
		app.wheelhouse.streamSlots.hold(owner, found.session.id, reply.raw);
		streamTask(reply, app.wheelhouse.stream, access, reader, {
			session: found.session,
			taskId: found.taskId,
			record: found.record,
			answered: new Set(),
			cursor,
			rpcId: id,
		});
	}

	app.post(
		path,
		{
			schema: {
				tags,
				summary:
					"A2A v1.0 JSON-RPC: SendMessage, SendStreamingMessage, GetTask, ListTasks, CancelTask, SubscribeToTask, and the TaskPushNotificationConfig methods",
				response: responses({ 200: A2aAnswer }),
			},
		},
		async function a2aRpc(request, reply) {
			const body = request.body as Json | undefined;
			const id: RpcId =
				body && (typeof body.id === "string" || typeof body.id === "number") ? (body.id as string | number) : null;
			if (
				!body ||
				typeof body !== "object" ||
				Array.isArray(body) ||
				body.jsonrpc !== "2.0" ||
				typeof body.method !== "string"
			) {
				return {
					jsonrpc: "2.0",
					id,
					error: {
						code: RPC_ERRORS.INVALID_REQUEST,
						message:
							'A JSON-RPC 2.0 request object is expected ({"jsonrpc": "2.0", "id", "method", "params"}; no batches).',
					},
				};
			}
			const version = request.headers["a2a-version"];
			if (
				typeof version === "string" &&
				version.trim() !== "" &&
				version.trim().split(".")[0] !== A2A_VERSION.split(".")[0]
			) {
				return {
					jsonrpc: "2.0",
					id,
					error: {
						code: RPC_ERRORS.VERSION_NOT_SUPPORTED,
						message: `A2A-Version ${version}: this server speaks ${A2A_VERSION}.`,
					},
				};
			}
			const params = (body.params ?? {}) as Json;
			try {
				if (typeof params !== "object" || Array.isArray(params))
					throw new RpcError(RPC_ERRORS.INVALID_PARAMS, "params: must be an object");
				if (STREAMING.has(body.method)) {
					await openStream(request, reply, body.method, params, id);
					return reply;
				}
				return rpcResult(id, await call(request, reply, body.method, params));
			} catch (err) {
				if (!(err instanceof RpcError) && !(err instanceof ApiError) && !(err instanceof SessionError))
					request.log.error({ err }, "A2A method failed");
				if (reply.sent) return reply;
				return { jsonrpc: "2.0", id, error: rpcError(err) };
			}
		},
	);
});
