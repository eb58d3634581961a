/**
 * The AG-UI events this server sends (protocol 1.0, as `@ag-ui/core` defines them), and their SSE
 * frames. Defined here, not imported: the server does not depend on the AG-UI packages at run
 * time. Every field is one the protocol describes: the client strips (with a warning) what it does
 * not know, and drops a whole event of a type it does not know.
 *
 * Framing is what `@ag-ui/client` parses: it splits the body on a blank line (LF only) and reads
 * only `data:` lines, so each event is one frame of one `data:` line (JSON has no raw line breaks).
 * Heartbeat comments and the `retry:` line carry no `data:` and are ignored by it.
 */

/** Wheelhouse's own facts, as `CUSTOM` event names (the value is the native event without its `type`). */
export type CustomName =
	| "wheelhouse.queue_update"
	| "wheelhouse.approval_requested"
	| "wheelhouse.approval_resolved"
	| "wheelhouse.session";

/** Token counts of one provider and model; the input and output counts are totals, the others parts of them. */
export interface TokenUsage {
	provider: string;
	model: string;
	inputTokens: number;
	outputTokens: number;
	totalTokens: number;
	cachedInputTokens?: number;
	cacheWriteInputTokens?: number;
}

/** A part of a user or tool message: text, or an image carried inline. */
export type ContentPart =
	| { type: "text"; text: string }
	| { type: "image"; source: { type: "data"; value: string; mimeType: string } };

export interface ToolCallWire {
	id: string;
	type: "function";
	function: { name: string; arguments: string };
}

/** The messages of `MESSAGES_SNAPSHOT` (and of `RunAgentInput.messages`). */
export type AguiMessage =
	| { id: string; role: "user"; content: string | ContentPart[] }
	| { id: string; role: "assistant"; content?: string; toolCalls?: ToolCallWire[] }
	| { id: string; role: "tool"; toolCallId: string; content: string | ContentPart[]; error?: string }
	| { id: string; role: "reasoning"; content: string };

/** How a run that did not fail ended; absent means success. */
export type RunOutcome = { type: "success"; pendingToolCallIds: string[] } | { type: "cancelled" };

export type AguiEvent =
	| {
			type: "RUN_STARTED";
			threadId: string;
			runId: string;
			/** `wheelhouse`: the session and run this AG-UI run drives. */
			metadata?: { wheelhouse: { sessionId: string; runId: string | null } };
	  }
	| { type: "RUN_FINISHED"; threadId: string; runId: string; outcome?: RunOutcome; usage?: TokenUsage[] }
	| { type: "RUN_ERROR"; message: string; code?: string }
	| { type: "STEP_STARTED"; stepName: string }
	| { type: "STEP_FINISHED"; stepName: string }
	| { type: "TEXT_MESSAGE_START"; messageId: string; role: "assistant" | "user" }
	| { type: "TEXT_MESSAGE_CONTENT"; messageId: string; delta: string }
	| { type: "TEXT_MESSAGE_END"; messageId: string }
	| { type: "TOOL_CALL_START"; toolCallId: string; toolCallName: string; parentMessageId: string }
	| { type: "TOOL_CALL_ARGS"; toolCallId: string; delta: string }
	| { type: "TOOL_CALL_END"; toolCallId: string }
	| { type: "TOOL_CALL_RESULT"; messageId: string; toolCallId: string; content: string | ContentPart[]; role: "tool" }
	| { type: "REASONING_START"; messageId: string }
	| { type: "REASONING_MESSAGE_START"; messageId: string; role: "reasoning" }
	| { type: "REASONING_MESSAGE_CONTENT"; messageId: string; delta: string }
	| { type: "REASONING_MESSAGE_END"; messageId: string }
	| { type: "REASONING_END"; messageId: string }
	| { type: "MESSAGES_SNAPSHOT"; messages: AguiMessage[] }
	| { type: "STATE_SNAPSHOT"; snapshot: unknown }
	| { type: "CUSTOM"; name: CustomName; value: unknown };

/** One event as an SSE frame: a single `data:` line and the blank line that dispatches it. */
export function aguiFrame(event: AguiEvent): string {
	return `data: ${JSON.stringify(event)}\n\n`;
}

/**
 * The frame of a text delta, the event of every token: the same bytes as `aguiFrame`, built from
 * a prefix made once per message (`contentPrefix`).
 */
export function contentFrame(prefix: string, delta: string): string {
	return `${prefix}${JSON.stringify(delta)}}\n\n`;
}

/** What `contentFrame` prepends for the deltas of message `messageId` (`TEXT_MESSAGE_CONTENT` or the reasoning one). */
export function contentPrefix(
	type: "TEXT_MESSAGE_CONTENT" | "REASONING_MESSAGE_CONTENT" | "TOOL_CALL_ARGS",
	id: string,
): string {
	const key = type === "TOOL_CALL_ARGS" ? "toolCallId" : "messageId";
	return `data: {"type":"${type}","${key}":${JSON.stringify(id)},"delta":`;
}
