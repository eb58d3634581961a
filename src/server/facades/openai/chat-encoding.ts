/**
 * Chat Completions response encoding: a finished stretch as a `chat.completion`, and a stretch as
 * it happens as `chat.completion.chunk` frames ending with `data: [DONE]`.
 */
import type { ToolCall, Usage } from "../../../ai/types.js";
import { formatFrame } from "../../../wire/sse-frames.js";
import type { SegmentEnd, ServerToolCall } from "./run-segment.js";

export type ChatFinishReason = "stop" | "length" | "tool_calls";

/** OpenAI's `usage` of a Chat Completion. */
export function chatUsage(usage: Usage) {
	return {
		prompt_tokens: usage.input + usage.cacheRead + usage.cacheWrite,
		completion_tokens: usage.output,
		total_tokens: usage.input + usage.cacheRead + usage.cacheWrite + usage.output,
		prompt_tokens_details: { cached_tokens: usage.cacheRead },
	};
}

export function finishReason(end: SegmentEnd): ChatFinishReason {
	if (end.kind === "tool_calls") return "tool_calls";
	if (end.kind === "stop" && end.reason === "length") return "length";
	return "stop";
}

function chatToolCalls(calls: ToolCall[]) {
	return calls.map((call, index) => ({
		index,
		id: call.id,
		type: "function" as const,
		function: { name: call.name, arguments: JSON.stringify(call.arguments) },
	}));
}

/**
 * A server tool call as the extension field `server_tool_calls` shows it (Chat Completions has no
 * field for tools the server ran, and `tool_calls` would ask the client to run them).
 */
export function serverToolCall(call: ServerToolCall) {
	return {
		id: call.id,
		name: call.name,
		arguments: JSON.stringify(call.arguments ?? {}),
		output: call.output,
		is_error: call.isError,
	};
}

/** A whole `chat.completion` (non-streaming answer); `serverTools` only when the client asked to see them. */
export function chatCompletion(
	id: string,
	model: string,
	created: number,
	text: string,
	end: SegmentEnd,
	usage: Usage,
	serverTools?: ServerToolCall[],
) {
	const toolCalls = end.kind === "tool_calls" ? chatToolCalls(end.calls).map(({ index: _, ...call }) => call) : [];
	return {
		id,
		object: "chat.completion" as const,
		created,
		model,
		choices: [
			{
				index: 0,
				message: {
					role: "assistant" as const,
					content: text === "" && toolCalls.length > 0 ? null : text,
					refusal: null,
					...(toolCalls.length > 0 ? { tool_calls: toolCalls } : {}),
					...(serverTools ? { server_tool_calls: serverTools.map(serverToolCall) } : {}),
				},
				finish_reason: finishReason(end),
				logprobs: null,
			},
		],
		usage: chatUsage(usage),
	};
}

/** Builds the `chat.completion.chunk` frames of one streamed completion. */
export class ChatChunkEncoder {
	constructor(
		private readonly id: string,
		private readonly model: string,
		private readonly created: number,
	) {}

	private frame(choices: unknown[], extra: Record<string, unknown> = {}): string {
		const chunk = {
			id: this.id,
			object: "chat.completion.chunk",
			created: this.created,
			model: this.model,
			choices,
			...extra,
		};
		return formatFrame({ data: JSON.stringify(chunk) });
	}

	/** The first chunk: the assistant role. */
	start(): string {
		return this.frame([{ index: 0, delta: { role: "assistant", content: "" }, finish_reason: null, logprobs: null }]);
	}

	text(delta: string): string {
		return this.frame([{ index: 0, delta: { content: delta }, finish_reason: null, logprobs: null }]);
	}

	/** A server tool call that finished (shown when the client asked to see them). */
	serverTool(call: ServerToolCall): string {
		return this.frame([
			{ index: 0, delta: { server_tool_calls: [serverToolCall(call)] }, finish_reason: null, logprobs: null },
		]);
	}

	/** The tool calls (each whole, in one chunk), the finish reason, the usage chunk when asked, `[DONE]`. */
	finish(end: SegmentEnd, usage: Usage | undefined): string {
		let out = "";
		if (end.kind === "tool_calls") {
			out += this.frame([
				{ index: 0, delta: { tool_calls: chatToolCalls(end.calls) }, finish_reason: null, logprobs: null },
			]);
		}
		out += this.frame([{ index: 0, delta: {}, finish_reason: finishReason(end), logprobs: null }]);
		if (usage) out += this.frame([], { usage: chatUsage(usage) });
		return `${out}data: [DONE]\n\n`;
	}

	/** An error frame: the SDK throws it as an `APIError` with this message. */
	error(code: string, message: string): string {
		return formatFrame({ data: JSON.stringify({ error: { message, type: "server_error", param: null, code } }) });
	}
}
