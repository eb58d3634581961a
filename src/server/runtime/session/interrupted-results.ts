/**
 * The results a run's tool calls get when the process running them died before their results
 * were stored: which calls have none, and the error result each one gets (what the model sees).
 */
import type { AgentMessage } from "../../../agent/types.js";
import type { AssistantMessage, ToolCall, ToolResultMessage } from "../../../ai/types.js";
import type { RunInterruptedEvent } from "../../../wire/events.js";

/** Why a run was cut short: its process restarted, or (in a cluster) its replica was lost. */
export type InterruptionReason = RunInterruptedEvent["reason"];

/** The tool calls of the last assistant message that have no result yet. */
export function unansweredToolCalls(messages: AgentMessage[]): ToolCall[] {
	let index = messages.length - 1;
	while (index >= 0 && (messages[index] as { role?: string }).role === "toolResult") index--;
	const assistant = messages[index] as AssistantMessage | undefined;
	if (assistant?.role !== "assistant") return [];
	const answered = new Set(messages.slice(index + 1).map((m) => (m as ToolResultMessage).toolCallId));
	return assistant.content.filter((block): block is ToolCall => block.type === "toolCall" && !answered.has(block.id));
}

/**
 * The error result of a call its run's process died during. `running`: the tool may have run, and
 * may or may not have had its effect; `approval`: it waited for a human, and did not run.
 */
export function interruptedToolResult(
	call: ToolCall,
	reason: InterruptionReason = "server_restart",
	state: "running" | "approval" = "running",
): ToolResultMessage {
	const cause = reason === "server_restart" ? "a server restart" : "the loss of the server replica running it";
	const text =
		state === "approval"
			? `The tool call was interrupted by ${cause} while it waited for approval; the tool did not run. Call it again if it is still needed (approval is asked again).`
			: `The tool call was interrupted by ${cause} before its result was recorded; it may or may not have taken effect.`;
	return {
		role: "toolResult",
		toolCallId: call.id,
		toolName: call.name,
		content: [{ type: "text", text }],
		isError: true,
		timestamp: Date.now(),
	};
}
