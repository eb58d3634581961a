/**
 * Tasks as the store has them, for `GetTask`, `ListTasks`, `CancelTask` and the answer of a
 * blocking `SendMessage`: a task is a run the facade started, its state the run's record (and
 * the interactions it waits for), its history and answer the run's messages in the transcript.
 *
 * | run | task |
 * |---|---|
 * | `running`, nothing pending | `TASK_STATE_WORKING` |
 * | `running`, an approval or client tool call pending | `TASK_STATE_INPUT_REQUIRED` |
 * | `completed` | `TASK_STATE_COMPLETED` |
 * | `aborted` | `TASK_STATE_CANCELED` |
 * | `error`, `interrupted` | `TASK_STATE_FAILED` (the error in the status message) |
 *
 * A run's messages start at the transcript length the task's record noted when it started, and
 * end where the session's next task starts, or with the first message made after the run ended
 * (a run started over `/v1` in between), or at the end of the transcript.
 */
import type { AgentMessage } from "../../../agent/types.js";
import type { PendingInteraction, RunRecord } from "../../../store/types.js";
import { storedRequest } from "../../../tools/index.js";
import { textOf } from "../text.js";
import type { A2aSessionAccess, ContextSession, TaskRecord } from "./session-access.js";
import { answerArtifacts, inputMessage, type TaskIds, textMessage, type WaitingCall } from "./task-tracker.js";
import { MESSAGE_SEPARATOR, type Message, partsOfContent, type Task, type TaskState, timestamp } from "./wire.js";

type Json = Record<string, any>;

/** The task's state for a run and what its session waits for. */
export function stateOf(run: RunRecord | undefined, pending: readonly PendingInteraction[]): TaskState {
	switch (run?.status) {
		case undefined:
			return "TASK_STATE_SUBMITTED";
		case "running":
			// An MCP server's elicitation is answered over /v1 only: the task works on meanwhile.
			return pending.some((p) => p.kind !== "elicitation") ? "TASK_STATE_INPUT_REQUIRED" : "TASK_STATE_WORKING";
		case "completed":
			return "TASK_STATE_COMPLETED";
		case "aborted":
			return "TASK_STATE_CANCELED";
		default:
			return "TASK_STATE_FAILED";
	}
}

/** The calls the run waits for, as the task's status message shows them (elicitations are not). */
export function waitingCalls(pending: readonly PendingInteraction[]): WaitingCall[] {
	return pending.flatMap((p) => {
		if (p.kind === "elicitation") return [];
		const { toolName, args } = storedRequest(p, false);
		return [{ kind: p.kind, toolCallId: p.toolCallId, toolName, args }];
	});
}

/** The answer's text: every assistant message's text, in order, separated as the stream separates them. */
export function answerText(messages: readonly AgentMessage[]): string {
	const texts: string[] = [];
	for (const message of messages as readonly Json[]) {
		if (message.role !== "assistant" || !Array.isArray(message.content)) continue;
		const text = textOf(message.content);
		if (text !== "") texts.push(text);
	}
	return texts.join(MESSAGE_SEPARATOR);
}

/** The run's user and assistant messages as A2A history (the last `limit` of them). */
function historyOf(ids: TaskIds, messages: readonly AgentMessage[], limit: number | undefined): Message[] {
	const history: Message[] = [];
	(messages as readonly Json[]).forEach((message, i) => {
		if (message.role !== "user" && message.role !== "assistant") return;
		const parts = partsOfContent(message.content ?? "");
		if (parts.length === 0) return;
		history.push({
			messageId: `${ids.taskId}.m${i}`,
			contextId: ids.contextId,
			taskId: ids.taskId,
			role: message.role === "user" ? "ROLE_USER" : "ROLE_AGENT",
			parts,
		});
	});
	return limit === undefined ? history : limit <= 0 ? [] : history.slice(-limit);
}

/**
 * The messages of an ended run among `messages` (which start with its prompt): a run made over
 * `/v1` after it, before the session's next task, starts with a message made after it ended.
 */
function ownMessages(messages: AgentMessage[], run: RunRecord | undefined): AgentMessage[] {
	const endedAt = run?.endedAt;
	if (endedAt === null || endedAt === undefined || run?.status === "interrupted") return messages;
	const later = messages.findIndex(
		(message, i) => i > 0 && ((message as { timestamp?: number }).timestamp ?? 0) > endedAt,
	);
	return later < 0 ? messages : messages.slice(0, later);
}

export class TaskReader {
	constructor(private readonly access: A2aSessionAccess) {}

	/**
	 * The task `taskId` of `session` as the store has it now. `historyLength`: how many messages
	 * of its history to include (all when absent).
	 */
	async task(
		session: ContextSession,
		taskId: string,
		record: TaskRecord,
		options: { historyLength?: number; runs?: RunRecord[] } = {},
	): Promise<Task> {
		const runs = options.runs ?? (await this.access.runs(session));
		const index = runs.findIndex((run) => run.id === taskId);
		const run = runs[index];
		const pending = run?.status === "running" ? await this.access.pending(session) : [];
		const ids: TaskIds = { taskId, contextId: record.contextId, sessionId: session.id };
		const state = stateOf(run, pending);
		let end: number | undefined;
		for (const later of index < 0 ? [] : runs.slice(index + 1)) {
			const next = await this.access.taskRecord(session, later.id);
			if (next) {
				end = next.offset;
				break;
			}
		}
		const read = await this.access.messages(session, record.offset, end === undefined ? 1000 : end - record.offset);
		const messages = ownMessages(read, run);
		const task: Task = {
			id: taskId,
			contextId: record.contextId,
			status: {
				state,
				timestamp: timestamp(run?.endedAt ?? run?.startedAt ?? record.createdAt),
				...(state === "TASK_STATE_INPUT_REQUIRED" ? { message: inputMessage(ids, waitingCalls(pending)) } : {}),
				...(state === "TASK_STATE_FAILED"
					? {
							message: textMessage(
								ids,
								"status",
								run?.errorMessage ??
									(run?.status === "interrupted" ? "The run was interrupted (its process died)." : "The run failed."),
							),
						}
					: {}),
			},
			artifacts: answerArtifacts(answerText(messages)),
			history: historyOf(ids, messages, options.historyLength),
			metadata: { wheelhouse: { sessionId: session.id, runId: taskId, firstEventId: record.firstEventId } },
		};
		return task;
	}

	/** The facade's tasks of a session, newest first. */
	async list(session: ContextSession, options: { historyLength?: number; state?: TaskState }): Promise<Task[]> {
		const runs = await this.access.runs(session);
		const tasks: Task[] = [];
		for (const run of [...runs].reverse()) {
			const record = await this.access.taskRecord(session, run.id);
			if (!record) continue;
			const task = await this.task(session, run.id, record, { ...options, runs });
			if (options.state === undefined || task.status.state === options.state) tasks.push(task);
		}
		return tasks;
	}
}
