/** Shared pieces of the agent tests: a scripted model that records its calls, and small builders. */
import { Type } from "@sinclair/typebox";
import type { AgentEvent, AgentTool, AgentToolResult, StreamFn } from "../../src/agent/types.js";
import type { AssistantMessageEventStream } from "../../src/ai/event-stream.js";
import { AssistantMessageEventStream as Stream } from "../../src/ai/event-stream.js";
import { type ScriptedTurn, streamScriptedTurn } from "../../src/ai/providers/faux.js";
import type {
	AssistantMessage,
	AssistantMessageEvent,
	Context,
	Model,
	SimpleStreamOptions,
	ToolCall,
	UserMessage,
} from "../../src/ai/types.js";

export const model: Model<"faux"> = {
	id: "test-model",
	name: "Test",
	api: "faux",
	provider: "test-provider",
	baseUrl: "http://localhost:0",
	reasoning: true,
	input: ["text"],
	cost: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0 },
	contextWindow: 1000,
	maxTokens: 100,
};

export interface RecordedCall {
	context: Context;
	options: SimpleStreamOptions | undefined;
}

export type Step = ScriptedTurn | ((context: Context, options?: SimpleStreamOptions) => AssistantMessageEventStream);

/** A `StreamFn` playing `steps` in order (an exhausted script answers with an error turn), recording each call. */
export function scripted(steps: Step[]): StreamFn & { calls: RecordedCall[]; remaining: () => number } {
	const queue = [...steps];
	const calls: RecordedCall[] = [];
	const fn = ((m: Model<any>, context: Context, options?: SimpleStreamOptions) => {
		calls.push({ context: { ...context, messages: [...context.messages] }, options });
		const step = queue.shift() ?? { content: [], stopReason: "error", errorMessage: "script exhausted" };
		if (typeof step === "function") return step(context, options);
		return streamScriptedTurn(m, step, { signal: options?.signal });
	}) as StreamFn & { calls: RecordedCall[]; remaining: () => number };
	fn.calls = calls;
	fn.remaining = () => queue.length;
	return fn;
}

/** A stream emitting exactly `events` (synchronously queued), for protocol edge cases. */
export function rawStream(events: AssistantMessageEvent[]): AssistantMessageEventStream {
	const stream = new Stream();
	for (const event of events) stream.push(event);
	return stream;
}

export function assistant(
	content: AssistantMessage["content"],
	extra: Partial<AssistantMessage> = {},
): AssistantMessage {
	return {
		role: "assistant",
		content,
		api: "faux",
		provider: "test-provider",
		model: "test-model",
		usage: {
			input: 0,
			output: 0,
			cacheRead: 0,
			cacheWrite: 0,
			totalTokens: 0,
			cost: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0, total: 0 },
		},
		stopReason: "stop",
		timestamp: 1,
		...extra,
	};
}

export function user(text: string): UserMessage {
	return { role: "user", content: text, timestamp: 1 };
}

export function call(name: string, args: Record<string, any>, id = `${name}-id`): ToolCall {
	return { type: "toolCall", id, name, arguments: args };
}

export function textResult(text: string, extra: Partial<AgentToolResult<any>> = {}): AgentToolResult<any> {
	return { content: [{ type: "text", text }], details: {}, ...extra };
}

/** A tool taking `{ value: string }` that runs `run` (default: echoes the value). */
export function tool(
	name: string,
	run: AgentTool<any>["execute"] = async (_id, params) => textResult(`${name}:${params.value}`),
	extra: Partial<AgentTool<any>> = {},
): AgentTool<any> {
	return {
		name,
		label: name,
		description: `the ${name} tool`,
		parameters: Type.Object({ value: Type.String() }),
		execute: run,
		...extra,
	};
}

export interface Deferred<T = void> {
	promise: Promise<T>;
	resolve: (value: T) => void;
}

export function deferred<T = void>(): Deferred<T> {
	let resolve!: (value: T) => void;
	const promise = new Promise<T>((r) => {
		resolve = r;
	});
	return { promise, resolve };
}

/**
 * A compact trace of events: `type` plus the role, tool call id or assistant event type, so
 * orderings can be compared as string arrays.
 */
export function trace(events: AgentEvent[]): string[] {
	return events.map((event) => {
		switch (event.type) {
			case "message_start":
			case "message_end":
				return `${event.type}:${event.message.role}`;
			case "message_update":
				return `update:${event.assistantMessageEvent.type}`;
			case "tool_execution_start":
			case "tool_execution_update":
			case "tool_execution_end":
				return `${event.type}:${event.toolCallId}`;
			case "turn_end":
				return `turn_end:${event.toolResults.length}`;
			default:
				return event.type;
		}
	});
}

/** Drops `message_update` entries, which vary with chunking. */
export function coarse(events: AgentEvent[]): string[] {
	return trace(events).filter((entry) => !entry.startsWith("update:"));
}

/** Identity conversion for tests whose transcripts hold only LLM messages. */
export const identity = (messages: any[]) => messages as any;
