/**
 * What a `SendMessage` / `SendStreamingMessage` does, decided before anything is answered (a
 * refusal is a JSON-RPC error):
 *
 * 1. `message.taskId` names a task whose run waits for input (an approval, a client tool's
 *    result): the message's data parts (or a plain yes/no for a single approval) answer it, and
 *    the same task goes on.
 * 2. `message.taskId` names a task whose run is working: the message is **steered** into it
 *    (delivered after the current tool batch, before the next model call), and the answer is the
 *    same task. Steering rather than a follow-up: a client that writes to a task in progress is
 *    correcting the work under way, and a follow-up would only be read once the agent stopped.
 * 3. `message.taskId` names a finished task: refused (`UnsupportedOperation`); a task ends for
 *    good, the next message without `taskId` in the same context starts the next task.
 * 4. No `taskId`: the context's session (made when the context is new, from the profile in
 *    `metadata.profile` or the server's defaults) starts a run: a new task. A context whose run
 *    is working gets the message steered into it, as in 2; one whose run waits for input is
 *    refused (answer with that task's id).
 */
import type { Context as TraceContext } from "@opentelemetry/api";
import type { UserMessage } from "../../../ai/types.js";
import type { PendingInteraction } from "../../../store/types.js";
import { storedRequest } from "../../../tools/index.js";
import type { A2aSessionAccess, ContextSession, TaskRecord } from "./session-access.js";
import { contentOfParts, invalidParams, type Message, type Part, RPC_ERRORS, RpcError } from "./wire.js";

type Json = Record<string, any>;

/** The task a message went to, and how its stream starts. */
export interface Sent {
	session: ContextSession;
	taskId: string;
	record: TaskRecord;
	/** Calls the message answered (their resolution may not be in the log yet). */
	answered: Set<string>;
	/** The stream's snapshot point: the run's start for a new task; undefined (now) otherwise. */
	cursor: number | undefined;
}

const YES = /^\s*(yes|y|approve|approved|ok|allow)\b/i;
const NO = /^\s*(no|n|deny|denied|reject|refuse)\b/i;

function isObject(value: unknown): value is Json {
	return typeof value === "object" && value !== null && !Array.isArray(value);
}

/** Checks the message's shape; throws `InvalidParams` naming the field. */
export function checkMessage(message: unknown): Message {
	if (!isObject(message)) throw invalidParams("message", "is required (an A2A Message)");
	if (typeof message.messageId !== "string" || message.messageId === "")
		throw invalidParams("message.messageId", "must be a non-empty string");
	if (message.role !== "ROLE_USER" && message.role !== "user")
		throw invalidParams("message.role", 'must be "ROLE_USER" (a message to the agent)');
	if (!Array.isArray(message.parts) || message.parts.length === 0)
		throw invalidParams("message.parts", "must be a non-empty array of parts");
	for (const key of ["contextId", "taskId"] as const) {
		if (message[key] !== undefined && (typeof message[key] !== "string" || message[key].length > 256))
			throw invalidParams(`message.${key}`, "must be a string of at most 256 characters");
	}
	return message as Message;
}

function userMessage(message: Message): UserMessage {
	return {
		role: "user",
		content: contentOfParts(message.parts as Part[], "params.message.parts"),
		timestamp: Date.now(),
	};
}

function pendingTool(p: PendingInteraction): string {
	return storedRequest(p, false).toolName;
}

export class MessageIntake {
	constructor(private readonly access: A2aSessionAccess) {}

	/** The profile the request names (`metadata.profile` of the request or of the message). */
	private profileOf(params: Json, message: Message) {
		const name = params.metadata?.profile ?? message.metadata?.profile;
		if (name === undefined) return undefined;
		const profile = typeof name === "string" ? this.access.profiles.get(name) : undefined;
		if (!profile) {
			throw invalidParams(
				"metadata.profile",
				`unknown profile ${JSON.stringify(name)}; the agent card's skills name the profiles (${[...this.access.profiles.keys()].join(", ") || "none configured"})`,
			);
		}
		return { name: name as string, profile };
	}

	/** Carries out the message (see the file comment). */
	async send(ownerId: string | null, params: Json, trace?: TraceContext, signal?: AbortSignal): Promise<Sent> {
		const message = checkMessage(params.message);
		const profile = this.profileOf(params, message);
		if (message.taskId !== undefined) return this.toTask(ownerId, message);
		let session: ContextSession | undefined;
		let contextId = message.contextId;
		if (contextId !== undefined) session = await this.access.findContext(ownerId, contextId);
		if (!session) {
			const made = await this.access.createContext(ownerId, contextId, profile);
			if (!made)
				throw invalidParams("message.contextId", `no session ${JSON.stringify(contextId)} exists for this key`);
			session = made.session;
			contextId = made.contextId;
		}
		const running = await this.access.runningRun(session);
		if (running !== undefined) {
			const record = await this.access.taskRecord(session, running);
			const pending = await this.access.pending(session);
			if (!record || pending.length > 0) {
				throw new RpcError(
					RPC_ERRORS.UNSUPPORTED_OPERATION,
					pending.length > 0
						? `Task ${running} of this context waits for input: answer it with message.taskId "${running}".`
						: `The context's session ${session.id} is running a run this facade did not start; wait for it to end.`,
					{ taskId: running },
				);
			}
			await this.access.steer(session, userMessage(message));
			return { session, taskId: running, record, answered: new Set(), cursor: undefined };
		}
		const started = await this.access.prompt(session, userMessage(message), trace, signal);
		const record: TaskRecord = {
			contextId: contextId as string,
			offset: started.offset,
			firstEventId: started.firstEventId,
			createdAt: Date.now(),
		};
		await this.access.putTask(started.session, started.runId, record);
		return {
			session: started.session,
			taskId: started.runId,
			record,
			answered: new Set(),
			cursor: started.firstEventId - 1,
		};
	}

	/** A message to a task (1–3 of the file comment). */
	private async toTask(ownerId: string | null, message: Message): Promise<Sent> {
		const taskId = message.taskId as string;
		const found = await this.access.findTask(ownerId, taskId);
		if (!found) throw new RpcError(RPC_ERRORS.TASK_NOT_FOUND, `No task "${taskId}" exists for this key.`);
		const { session, record } = found;
		if (message.contextId !== undefined && message.contextId !== record.contextId) {
			throw invalidParams("message.contextId", `task ${taskId} belongs to context ${JSON.stringify(record.contextId)}`);
		}
		if ((await this.access.runningRun(session)) !== taskId) {
			throw new RpcError(
				RPC_ERRORS.UNSUPPORTED_OPERATION,
				`Task ${taskId} has ended and takes no more messages: send the message without taskId (contextId "${record.contextId}") to start the next task.`,
			);
		}
		const pending = await this.access.pending(session);
		if (pending.length === 0) {
			await this.access.steer(session, userMessage(message));
			return { session, taskId, record, answered: new Set(), cursor: undefined };
		}
		const answered = await this.answer(session, message, pending);
		return { session, taskId, record, answered, cursor: undefined };
	}

	/** Answers what the run waits for from the message's parts. Returns the answered call ids. */
	private async answer(session: ContextSession, message: Message, pending: PendingInteraction[]): Promise<Set<string>> {
		const answers: { toolCallId: string; kind: "approval" | "client_tool"; value: Json }[] = [];
		const only = pending.length === 1 ? pending[0] : undefined;
		message.parts.forEach((part, i) => {
			if (isObject(part.data)) {
				const toolCallId = part.data.toolCallId ?? only?.toolCallId;
				const target = pending.find((p) => p.toolCallId === toolCallId);
				if (!target) {
					throw invalidParams(
						`message.parts[${i}].data.toolCallId`,
						`name the call to answer: one of ${pending.map((p) => `"${p.toolCallId}"`).join(", ")}`,
					);
				}
				if (target.kind === "approval") {
					if (typeof part.data.approve !== "boolean")
						throw invalidParams(`message.parts[${i}].data.approve`, "must be true or false");
					answers.push({ toolCallId: target.toolCallId, kind: "approval", value: part.data });
				} else {
					if (part.data.result === undefined)
						throw invalidParams(`message.parts[${i}].data.result`, "is required (the tool's result)");
					answers.push({ toolCallId: target.toolCallId, kind: "client_tool", value: part.data });
				}
			} else if (typeof part.text === "string" && only?.kind === "approval" && answers.length === 0) {
				if (YES.test(part.text))
					answers.push({ toolCallId: only.toolCallId, kind: "approval", value: { approve: true } });
				else if (NO.test(part.text))
					answers.push({
						toolCallId: only.toolCallId,
						kind: "approval",
						value: { approve: false, reason: part.text.trim() },
					});
			}
		});
		if (answers.length === 0) {
			const asked = pending.map((p) => `${p.kind} of ${pendingTool(p)} ("${p.toolCallId}")`).join(", ");
			throw invalidParams(
				"message.parts",
				`the task waits for input (${asked}): answer with a data part {"approve": true|false} or {"toolCallId": ..., "result": ...}`,
			);
		}
		const answered = new Set<string>();
		for (const answer of answers) {
			const outcome =
				answer.kind === "approval"
					? await this.access.resolveApproval(session, answer.toolCallId, {
							approve: answer.value.approve as boolean,
							...(typeof answer.value.reason === "string" ? { reason: answer.value.reason } : {}),
						})
					: await this.access.resolveToolResult(session, answer.toolCallId, {
							content:
								typeof answer.value.result === "string" ? answer.value.result : JSON.stringify(answer.value.result),
							isError: answer.value.isError === true,
						});
			if (outcome !== "resolved") {
				throw new RpcError(
					RPC_ERRORS.UNSUPPORTED_OPERATION,
					`The call ${answer.toolCallId} no longer waits for an answer (${outcome}).`,
				);
			}
			answered.add(answer.toolCallId);
		}
		return answered;
	}
}
