/**
 * The agent contract: the same names, shapes and semantics as `@mariozechner/pi-agent-core` 0.73.1.
 *
 * Rule that shapes everything here: loop callbacks and the `StreamFn` never throw. Failures are
 * encoded as events, as error tool results, or as an assistant message with `stopReason: "error"`.
 */
import type { Static, TSchema } from "@sinclair/typebox";
import type { AssistantMessageEventStream, StreamFunction } from "../ai/event-stream.js";
import type {
	AssistantMessage,
	AssistantMessageEvent,
	ImageContent,
	Message,
	Model,
	SimpleStreamOptions,
	TextContent,
	Tool,
	ToolResultMessage,
} from "../ai/types.js";

/**
 * The function the loop calls for each model request (`streamSimple` by default).
 *
 * Contract: must not throw or return a rejected promise. It returns (or resolves to) an
 * `AssistantMessageEventStream`; request, model and runtime failures are encoded in that stream
 * as an `error` event whose final message has `stopReason` `"error"` or `"aborted"` and an
 * `errorMessage`.
 */
export type StreamFn = (
	...args: Parameters<StreamFunction<any, SimpleStreamOptions>>
) => AssistantMessageEventStream | Promise<AssistantMessageEventStream>;

/**
 * How the tool calls of one assistant message run.
 *
 * - `"sequential"`: each call is prepared, executed and finalized before the next starts.
 * - `"parallel"` (default): calls are prepared one by one, then the allowed ones execute
 *   concurrently; `tool_execution_end` is emitted in completion order, the tool-result messages
 *   afterwards in the assistant message's source order.
 */
export type ToolExecutionMode = "sequential" | "parallel";

/** One tool-call content block of an assistant message. */
export type AgentToolCall = Extract<AssistantMessage["content"][number], { type: "toolCall" }>;

/**
 * Returned by `beforeToolCall`. `{ block: true }` keeps the tool from running; the loop emits an
 * error tool result whose text is `reason` (or a default blocked message).
 */
export interface BeforeToolCallResult {
	block?: boolean;
	reason?: string;
}

/**
 * Returned by `afterToolCall`: a field-by-field override of the executed result. Each provided
 * field replaces the original in full (no deep merge); omitted fields keep their values.
 */
export interface AfterToolCallResult {
	content?: (TextContent | ImageContent)[];
	details?: unknown;
	isError?: boolean;
	/** Replaces the early-termination hint (see {@link AgentToolResult.terminate}). */
	terminate?: boolean;
}

/** Given to `beforeToolCall`. */
export interface BeforeToolCallContext {
	/** The assistant message that requested the call. */
	assistantMessage: AssistantMessage;
	/** The raw tool-call block from `assistantMessage.content`. */
	toolCall: AgentToolCall;
	/** The validated arguments. */
	args: unknown;
	/** The agent context at the time the call is prepared. */
	context: AgentContext;
}

/** Given to `afterToolCall`. */
export interface AfterToolCallContext {
	assistantMessage: AssistantMessage;
	toolCall: AgentToolCall;
	args: unknown;
	/** The executed result before any override. */
	result: AgentToolResult<any>;
	/** Whether the executed result currently counts as an error. */
	isError: boolean;
	context: AgentContext;
}

/** Given to `shouldStopAfterTurn`. */
export interface ShouldStopAfterTurnContext {
	/** The assistant message that completed the turn. */
	message: AssistantMessage;
	/** The tool results passed to that turn's `turn_end`. */
	toolResults: ToolResultMessage[];
	/** The context after the turn's assistant message and tool results were appended. */
	context: AgentContext;
	/** What the loop would return if it exited now (prompt runs include the prompts; continue runs do not include pre-existing messages). */
	newMessages: AgentMessage[];
}

export interface AgentLoopConfig extends SimpleStreamOptions {
	model: Model<any>;
	/**
	 * Converts the transcript to LLM messages before each model call; filters out messages the
	 * model must not see (UI-only notes) and maps custom roles to user/assistant/toolResult.
	 *
	 * Runs once per model call, after `transformContext`.
	 * Contract: must not throw or reject; return a safe fallback instead.
	 */
	convertToLlm: (messages: AgentMessage[]) => Message[] | Promise<Message[]>;
	/**
	 * Transforms the transcript before `convertToLlm` (pruning, injected context).
	 * Default: identity. Contract: must not throw or reject; return the input as a fallback.
	 */
	transformContext?: (messages: AgentMessage[], signal?: AbortSignal) => Promise<AgentMessage[]>;
	/**
	 * Resolves the API key for `provider` before each model call; a returned key wins over
	 * `apiKey`. Contract: must not throw; return undefined when no key is available.
	 */
	getApiKey?: (provider: string) => Promise<string | undefined> | string | undefined;
	/**
	 * Runs after each turn's `turn_end`. Returning true ends the run (`agent_end`) without polling
	 * the steering or follow-up queues. Default: never stop early. Contract: must not throw.
	 */
	shouldStopAfterTurn?: (context: ShouldStopAfterTurnContext) => boolean | Promise<boolean>;
	/**
	 * Steering messages to inject mid-run. Polled once before the first model call and after each
	 * `turn_end` (after the whole tool batch; tool calls are not skipped). Returned messages are
	 * added before the next model call. Contract: must not throw; return [] when there are none.
	 */
	getSteeringMessages?: () => Promise<AgentMessage[]>;
	/**
	 * Follow-up messages, polled only when the agent would otherwise stop (no tool calls left, no
	 * steering). Returned messages continue the run with another turn.
	 * Contract: must not throw; return [] when there are none.
	 */
	getFollowUpMessages?: () => Promise<AgentMessage[]>;
	/** Default: `"parallel"`. A tool with `executionMode: "sequential"` makes its whole batch sequential. */
	toolExecution?: ToolExecutionMode;
	/**
	 * Runs after argument validation, before execution. `{ block: true }` → error tool result.
	 * Receives the run's abort signal and must honour it. A throw becomes an error tool result.
	 */
	beforeToolCall?: (context: BeforeToolCallContext, signal?: AbortSignal) => Promise<BeforeToolCallResult | undefined>;
	/**
	 * Runs after execution, before `tool_execution_end`; its result overrides fields of the
	 * executed result. Receives the abort signal. A throw becomes an error tool result.
	 */
	afterToolCall?: (context: AfterToolCallContext, signal?: AbortSignal) => Promise<AfterToolCallResult | undefined>;
}

/** Reasoning level of the agent; `"off"` sends no reasoning option. */
export type ThinkingLevel = "off" | "minimal" | "low" | "medium" | "high" | "xhigh";

/**
 * Custom message kinds of an application, added by declaration merging:
 *
 * ```ts
 * declare module "wheelhouse" {
 *   interface CustomAgentMessages { note: { role: "note"; text: string; timestamp: number } }
 * }
 * ```
 *
 * `convertToLlm` receives them and decides what the model sees.
 */
// biome-ignore lint/suspicious/noEmptyInterface: extended by declaration merging
export interface CustomAgentMessages {}

/** An LLM message or any custom message an application declared. */
export type AgentMessage = Message | CustomAgentMessages[keyof CustomAgentMessages];

/**
 * The public state of an {@link Agent}.
 *
 * `tools` and `messages` are accessors: assigning an array stores a copy of the top-level array.
 */
export interface AgentState {
	systemPrompt: string;
	model: Model<any>;
	thinkingLevel: ThinkingLevel;
	set tools(tools: AgentTool<any>[]);
	get tools(): AgentTool<any>[];
	set messages(messages: AgentMessage[]);
	get messages(): AgentMessage[];
	/** True while a run is active, until the awaited `agent_end` listeners have settled. */
	readonly isStreaming: boolean;
	/** The partial assistant message being streamed, if any. */
	readonly streamingMessage?: AgentMessage;
	/** Ids of the tool calls executing now. */
	readonly pendingToolCalls: ReadonlySet<string>;
	/** Error message of the most recent failed or aborted assistant turn. */
	readonly errorMessage?: string;
}

/** A tool's final or partial result. */
export interface AgentToolResult<T> {
	/** What the model sees. */
	content: (TextContent | ImageContent)[];
	/** Structured details for logs and UIs (not sent to the model). */
	details: T;
	/** Asks to end the run after this batch; it ends only when every finalized result in the batch sets it. */
	terminate?: boolean;
}

/** Tools call this to stream partial results; each call becomes a `tool_execution_update`. */
export type AgentToolUpdateCallback<T = any> = (partialResult: AgentToolResult<T>) => void;

/** A tool the agent can run. */
export interface AgentTool<TParameters extends TSchema = TSchema, TDetails = any> extends Tool<TParameters> {
	/** Human-readable name for UIs. */
	label: string;
	/** Optional shim applied to raw arguments before validation; must return arguments matching the schema. */
	prepareArguments?: (args: unknown) => Static<TParameters>;
	/** Runs the call. Throw on failure (the loop turns it into an error result); do not encode errors in `content`. */
	execute: (
		toolCallId: string,
		params: Static<TParameters>,
		signal?: AbortSignal,
		onUpdate?: AgentToolUpdateCallback<TDetails>,
	) => Promise<AgentToolResult<TDetails>>;
	/** Per-tool override; `"sequential"` makes the whole batch that calls it sequential. */
	executionMode?: ToolExecutionMode;
}

/** The context snapshot handed to the low-level loop. */
export interface AgentContext {
	systemPrompt: string;
	messages: AgentMessage[];
	tools?: AgentTool<any>[];
}

/**
 * Lifecycle events of a run, in this order:
 * `agent_start`, then per turn `turn_start`, messages (`message_start` / `message_update`* /
 * `message_end`), tool executions (`tool_execution_start` / `_update`* / `_end`), `turn_end`; and
 * last `agent_end` with the messages the run added. Awaited `Agent.subscribe()` listeners of
 * `agent_end` are part of the run: the agent is idle only after they settle.
 */
export type AgentEvent =
	| { type: "agent_start" }
	| { type: "agent_end"; messages: AgentMessage[] }
	| { type: "turn_start" }
	| { type: "turn_end"; message: AgentMessage; toolResults: ToolResultMessage[] }
	| { type: "message_start"; message: AgentMessage }
	| { type: "message_update"; message: AgentMessage; assistantMessageEvent: AssistantMessageEvent }
	| { type: "message_end"; message: AgentMessage }
	| { type: "tool_execution_start"; toolCallId: string; toolName: string; args: any }
	| { type: "tool_execution_update"; toolCallId: string; toolName: string; args: any; partialResult: any }
	| { type: "tool_execution_end"; toolCallId: string; toolName: string; result: any; isError: boolean };
