/**
 * A task as its run's events make it: the session's native events in (from the run's
 * `agent_start`, in id order), the task's state and A2A stream responses out.
 *
 * | native event | task |
 * |---|---|
 * | assistant `text_delta` | `artifactUpdate` of the `answer` artifact (appended after the first chunk) |
 * | assistant `message_end` | the part of its text no delta carried; after missing deltas, the whole answer (`append` false: it replaces the artifact) |
 * | `approval_requested`, `tool_result_requested` | `statusUpdate` `TASK_STATE_INPUT_REQUIRED`, the call in the status message |
 * | `approval_resolved`, a waiting client tool's `tool_execution_end` (the last one waiting) | `statusUpdate` `TASK_STATE_WORKING` |
 * | `agent_end` | `statusUpdate` `COMPLETED`, `FAILED` or `CANCELED` |
 * | `run_interrupted`, the next run's `agent_start` | `statusUpdate` `TASK_STATE_FAILED` |
 *
 * The state is a function of the events only, so a reader that resumes after event N (the
 * `Last-Event-ID` of the event-id extension) rebuilds it by reading the events up to N without
 * sending them, and then sends exactly what an uninterrupted stream sent after N: no chunk twice.
 * Where the log lacks deltas before N (another replica's store keeps a streaming message's deltas
 * only in its own buffer), the reader cannot know that text: its chunks after N are appended, and
 * the message's end replaces the artifact with the whole answer, so a client that applies
 * `append` as A2A defines it ends with the exact text.
 */
import type { StoredEvent } from "../../../store/types.js";
import {
	ANSWER_ARTIFACT,
	type Artifact,
	MESSAGE_SEPARATOR,
	type Message,
	type StreamResponse,
	type Task,
	type TaskState,
	type TaskStatus,
	TERMINAL_STATES,
	timestamp,
} from "./wire.js";

/** A call the run waits for, as the task's status message shows it. */
export interface WaitingCall {
	kind: "approval" | "client_tool";
	toolCallId: string;
	toolName: string;
	args: unknown;
}

export interface TaskIds {
	taskId: string;
	contextId: string;
	sessionId: string;
}

type Json = Record<string, any>;

function textOfContent(content: unknown): string {
	if (typeof content === "string") return content;
	if (!Array.isArray(content)) return "";
	let text = "";
	for (const block of content as Json[])
		if (block?.type === "text" && typeof block.text === "string") text += block.text;
	return text;
}

/** The status message of a task that waits for input: what is asked, and how to answer. */
export function inputMessage(ids: TaskIds, calls: readonly WaitingCall[]): Message {
	const asks = calls.map((call) =>
		call.kind === "approval"
			? `Approve the call to ${call.toolName}? Reply on this task with a data part {"approve": true} or {"approve": false, "reason": "..."} (add "toolCallId" when several calls wait).`
			: `The tool ${call.toolName} runs on your side: reply on this task with a data part {"toolCallId": "${call.toolCallId}", "result": "..."}.`,
	);
	return {
		messageId: `${ids.taskId}.input.${calls[0]?.toolCallId ?? ""}`,
		contextId: ids.contextId,
		taskId: ids.taskId,
		role: "ROLE_AGENT",
		parts: [{ text: asks.join("\n") }, ...calls.map((call) => ({ data: { ...call } }))],
	};
}

/** A status message with text (why a task failed). */
export function textMessage(ids: TaskIds, suffix: string, text: string): Message {
	return {
		messageId: `${ids.taskId}.${suffix}`,
		contextId: ids.contextId,
		taskId: ids.taskId,
		role: "ROLE_AGENT",
		parts: [{ text }],
	};
}

/** The `answer` artifact with `text` (none when there is no text). */
export function answerArtifacts(text: string): Artifact[] {
	return text === "" ? [] : [{ artifactId: ANSWER_ARTIFACT, name: "answer", parts: [{ text }] }];
}

export class TaskTracker {
	/** The answer's text so far. */
	text = "";
	state: TaskState = "TASK_STATE_WORKING";
	private status: TaskStatus = { state: "TASK_STATE_WORKING" };
	/** Text of the assistant message that streams, so far. */
	private messageText = "";
	/** An assistant message streams (between its `message_start` and `message_end`). */
	private inMessage = false;
	/** The answer's text when the streaming message started. */
	private textBefore = "";
	/**
	 * Deltas of the streaming message are missing (ids skipped: a log that does not keep them, a
	 * live channel that lost some): its end replaces the artifact with the whole answer.
	 */
	private incomplete = false;
	private lastStop: string | undefined;
	private lastError: string | undefined;
	private readonly waiting = new Map<string, WaitingCall>();
	/** The id of the last event applied. */
	lastEventId = 0;

	/**
	 * `firstEventId`: the run's `agent_start`. `answered`: calls the request that opens this stream
	 * just answered (their `approval_resolved` may not be in the log yet).
	 */
	constructor(
		private readonly ids: TaskIds,
		private readonly firstEventId: number,
		private readonly answered: ReadonlySet<string> = new Set(),
	) {}

	get isFinal(): boolean {
		return TERMINAL_STATES.has(this.state);
	}

	/** The task as the events so far make it. */
	task(): Task {
		return {
			id: this.ids.taskId,
			contextId: this.ids.contextId,
			status: this.status,
			artifacts: answerArtifacts(this.text),
			metadata: this.metadata(),
		};
	}

	private metadata(): Record<string, unknown> {
		return { wheelhouse: { sessionId: this.ids.sessionId, runId: this.ids.taskId, eventId: this.lastEventId } };
	}

	/** An update's metadata: the event id only (the task's carries the rest). */
	private eventMetadata(): Record<string, unknown> {
		return { wheelhouse: { eventId: this.lastEventId } };
	}

	/** Marks every event up to `id` as applied (the log has no more of them: ids it does not keep). */
	advanceTo(id: number): void {
		if (id <= this.lastEventId) return;
		if (this.inMessage) this.incomplete = true;
		this.lastEventId = id;
	}

	/** Applies one event; returns the stream responses it makes (in order). */
	apply(event: StoredEvent): StreamResponse[] {
		if (event.id <= this.lastEventId || this.isFinal) return [];
		if (this.inMessage && event.id > this.lastEventId + 1) this.incomplete = true;
		this.lastEventId = event.id;
		const out: StreamResponse[] = [];
		switch (event.type) {
			case "agent_start":
				// A later run's start: this one ended without its agent_end (its process died).
				if (event.id > this.firstEventId)
					this.finish(out, "TASK_STATE_FAILED", "The run ended without its last event.");
				break;
			case "message_start": {
				if ((JSON.parse(event.data) as Json).message?.role !== "assistant") break;
				this.messageText = "";
				this.inMessage = true;
				this.incomplete = false;
				this.textBefore = this.text;
				break;
			}
			case "message_update": {
				const update = (JSON.parse(event.data) as Json).assistantMessageEvent as Json | undefined;
				if (update?.type === "text_delta" && typeof update.delta === "string" && update.delta !== "") {
					this.chunk(out, update.delta);
				}
				break;
			}
			case "message_end": {
				const message = (JSON.parse(event.data) as Json).message as Json | undefined;
				if (message?.role !== "assistant") break;
				const full = textOfContent(message.content);
				if (this.incomplete) this.replace(out, full);
				else if (full.length > this.messageText.length && full.startsWith(this.messageText)) {
					this.chunk(out, full.slice(this.messageText.length));
				}
				this.messageText = "";
				this.inMessage = false;
				this.incomplete = false;
				this.lastStop = message.stopReason;
				this.lastError = typeof message.errorMessage === "string" ? message.errorMessage : undefined;
				break;
			}
			case "approval_requested":
			case "tool_result_requested": {
				const data = JSON.parse(event.data) as Json;
				if (this.answered.has(data.toolCallId)) break;
				this.waiting.set(data.toolCallId, {
					kind: event.type === "approval_requested" ? "approval" : "client_tool",
					toolCallId: data.toolCallId,
					toolName: data.toolName,
					args: data.args,
				});
				this.setStatus(out, {
					state: "TASK_STATE_INPUT_REQUIRED",
					message: inputMessage(this.ids, [...this.waiting.values()]),
				});
				break;
			}
			case "approval_resolved":
				this.endWait(out, (JSON.parse(event.data) as Json).toolCallId, "approval");
				break;
			case "tool_execution_end":
				// A client tool's wait ends with its call, however it ended (a result, a timeout, an abort).
				this.endWait(out, (JSON.parse(event.data) as Json).toolCallId, "client_tool");
				break;
			case "run_interrupted": {
				const data = JSON.parse(event.data) as Json;
				this.finish(out, "TASK_STATE_FAILED", String(data.message ?? "The run was interrupted."));
				break;
			}
			case "agent_end":
				if (this.lastStop === "aborted") this.finish(out, "TASK_STATE_CANCELED");
				else if (this.lastStop === "error" || this.lastStop === undefined)
					this.finish(out, "TASK_STATE_FAILED", this.lastError ?? "The run ended without an answer.");
				else this.finish(out, "TASK_STATE_COMPLETED");
				break;
		}
		return out;
	}

	/**
	 * Ends the task from what the store says of its run (a run whose last events never reached the
	 * log: its process died). Returns the responses to send.
	 */
	settle(state: TaskState, why?: string): StreamResponse[] {
		if (this.isFinal) return [];
		const out: StreamResponse[] = [];
		this.finish(out, state, why);
		return out;
	}

	/**
	 * The run waits for `calls` that no event announced (a run of an older build, during a rolling
	 * update, announces a client tool's wait in the store only): those not answered nor known yet
	 * put the task in input-required. Returns the responses to send.
	 */
	waitFor(calls: readonly WaitingCall[]): StreamResponse[] {
		const fresh = calls.filter((call) => !this.answered.has(call.toolCallId) && !this.waiting.has(call.toolCallId));
		if (this.isFinal || fresh.length === 0) return [];
		for (const call of fresh) this.waiting.set(call.toolCallId, call);
		const out: StreamResponse[] = [];
		this.setStatus(out, {
			state: "TASK_STATE_INPUT_REQUIRED",
			message: inputMessage(this.ids, [...this.waiting.values()]),
		});
		return out;
	}

	/** The wait of kind `kind` for call `toolCallId` ended: the task works again once none is left. */
	private endWait(out: StreamResponse[], toolCallId: unknown, kind: WaitingCall["kind"]): void {
		if (typeof toolCallId !== "string" || this.waiting.get(toolCallId)?.kind !== kind) return;
		this.waiting.delete(toolCallId);
		if (this.waiting.size === 0) this.setStatus(out, { state: "TASK_STATE_WORKING" });
		else
			this.setStatus(out, {
				state: "TASK_STATE_INPUT_REQUIRED",
				message: inputMessage(this.ids, [...this.waiting.values()]),
			});
	}

	private chunk(out: StreamResponse[], delta: string): void {
		const first = this.messageText === "" && !this.incomplete;
		const text = first && this.text !== "" ? MESSAGE_SEPARATOR + delta : delta;
		// A message joined halfway (its first deltas missing) is appended to what the client has.
		const append = this.text !== "" || this.incomplete;
		this.messageText += delta;
		this.text += text;
		out.push({
			artifactUpdate: {
				taskId: this.ids.taskId,
				contextId: this.ids.contextId,
				artifact: { artifactId: ANSWER_ARTIFACT, ...(append ? {} : { name: "answer" }), parts: [{ text }] },
				...(append ? { append: true } : {}),
				metadata: this.eventMetadata(),
			},
		});
	}

	/** Replaces the artifact with the whole answer: the text before the message and all of `full`. */
	private replace(out: StreamResponse[], full: string): void {
		const text =
			full === "" ? this.textBefore : this.textBefore === "" ? full : this.textBefore + MESSAGE_SEPARATOR + full;
		this.text = text;
		if (text === "") return;
		out.push({
			artifactUpdate: {
				taskId: this.ids.taskId,
				contextId: this.ids.contextId,
				artifact: { artifactId: ANSWER_ARTIFACT, name: "answer", parts: [{ text }] },
				metadata: this.eventMetadata(),
			},
		});
	}

	private setStatus(out: StreamResponse[], status: Omit<TaskStatus, "timestamp">): void {
		this.state = status.state;
		this.status = { ...status, timestamp: timestamp() };
		out.push({
			statusUpdate: {
				taskId: this.ids.taskId,
				contextId: this.ids.contextId,
				status: this.status,
				metadata: this.eventMetadata(),
			},
		});
	}

	private finish(out: StreamResponse[], state: TaskState, why?: string): void {
		this.waiting.clear();
		this.setStatus(out, { state, ...(why ? { message: textMessage(this.ids, "status", why) } : {}) });
	}
}
