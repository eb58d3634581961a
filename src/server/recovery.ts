/**
 * Startup recovery of the runs a dead process left active: the store marks them interrupted,
 * and each one's session stream is told, with the next event ids, so that every client — one
 * watching the session, or one resuming with `Last-Event-ID` — can settle its state without a
 * second request:
 *
 * 1. `approval_resolved` with `outcome: {kind: "interrupted"}` for each approval that was
 *    waiting (it no longer waits; answering it gets 409 `TOOL_CALL_FINISHED` saying why);
 * 2. for each tool call of the last assistant message without a result: `tool_execution_end`
 *    (an error) and the synthetic tool result as `message_start` / `message_end`, the message
 *    stored in the transcript (so `continue` shows the model what happened);
 * 3. `run_interrupted` `{runId, reason: "server_restart", interruptedAt, message}`: the run is
 *    over and no `agent_end` follows; a message that was streaming was not kept.
 *
 * Durable when it resolves (the store is flushed), before the server serves anything.
 */
import type { AgentEvent, AgentMessage } from "../agent/types.js";
import type { AssistantMessage, ToolCall, ToolResultMessage } from "../ai/types.js";
import type { SessionStore } from "../store/types.js";
import { INTERRUPTED_RESOLUTION } from "../tools/index.js";
import { type ApprovalResolvedEvent, encodeWireData, type RunInterruptedEvent } from "../wire/events.js";
import type { WebhookEvents } from "./webhooks/events.js";

/** How much of the transcript's end is read to find the last assistant message and its results. */
const TAIL = 1000;

/** Marks the runs of a dead process interrupted and announces each on its session's stream. Returns the session ids. */
export async function recoverInterruptedRuns(
	store: SessionStore,
	at: number,
	webhooks?: WebhookEvents,
): Promise<string[]> {
	// The `run.interrupted` deliveries commit with the interruption itself.
	const sessionIds = await store.recoverInterrupted(
		at,
		webhooks && ((sessionId, runId) => webhooks.runInterrupted(sessionId, runId, at)),
	);
	for (const sessionId of sessionIds) await announceInterruption(store, sessionId, at);
	await store.flush();
	return sessionIds;
}

/** Records the interruption of one session's run on its stream (see the module comment); the caller flushes. */
export async function announceInterruption(store: SessionStore, sessionId: string, at: number): Promise<void> {
	const record = await store.getSession(sessionId);
	// Its events and messages are written through the working set, like a run's.
	if (!record || !(await store.openSession(sessionId))) return;
	const agentEvent = (event: AgentEvent) => store.appendEvent(sessionId, event.type, encodeWireData(event), at);
	const serverEvent = (type: string, payload: object) =>
		store.appendEvent(sessionId, type, JSON.stringify({ ...payload, type }), at);

	// 1. What waited for a client waits no more.
	for (const pending of await store.listPending(sessionId)) {
		await store.resolvePending(sessionId, pending.toolCallId, INTERRUPTED_RESOLUTION, at);
		if (pending.kind !== "approval") continue; // a client tool call is settled by its tool_execution_end
		const payload = JSON.parse(pending.payload) as { toolName?: string };
		const resolved: Omit<ApprovalResolvedEvent, "type"> = {
			toolCallId: pending.toolCallId,
			toolName: payload.toolName ?? "",
			outcome: { kind: "interrupted" },
		};
		serverEvent("approval_resolved", resolved);
	}

	// 2. The tool calls cut short get their error results, as the loop gives an aborted call.
	const total = (await store.countMessages(sessionId)) ?? 0;
	const tail =
		(await store.listMessages(sessionId, { offset: Math.max(0, total - TAIL), limit: TAIL }))?.messages ?? [];
	const results = interruptedToolResults(tail);
	if (results.length > 0) store.appendMessages(sessionId, results);
	for (const result of results) {
		agentEvent({
			type: "tool_execution_end",
			toolCallId: result.toolCallId,
			toolName: result.toolName,
			result: { content: result.content, details: {} },
			isError: true,
		});
		agentEvent({ type: "message_start", message: result as AgentMessage });
		agentEvent({ type: "message_end", message: result as AgentMessage });
	}

	// 3. The run is over.
	const interrupted: Omit<RunInterruptedEvent, "type"> = {
		runId: record.currentRunId,
		reason: "server_restart",
		interruptedAt: at,
		message:
			"The server stopped during this run; it will not continue by itself. POST /v1/sessions/:id/continue resumes the session.",
	};
	serverEvent("run_interrupted", interrupted);
}

/** Error results for the tool calls of the last assistant message that have none yet. */
export function interruptedToolResults(messages: AgentMessage[]): ToolResultMessage[] {
	let index = messages.length - 1;
	while (index >= 0 && (messages[index] as { role?: string }).role === "toolResult") index--;
	const assistant = messages[index] as AssistantMessage | undefined;
	if (assistant?.role !== "assistant") return [];
	const answered = new Set(messages.slice(index + 1).map((m) => (m as ToolResultMessage).toolCallId));
	return assistant.content
		.filter((block): block is ToolCall => block.type === "toolCall" && !answered.has(block.id))
		.map((call) => ({
			role: "toolResult",
			toolCallId: call.id,
			toolName: call.name,
			content: [{ type: "text", text: "The tool call was interrupted by a server restart and did not complete." }],
			isError: true,
			timestamp: Date.now(),
		}));
}
