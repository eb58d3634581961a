/**
 * Message, model and streaming-protocol types of the LLM layer.
 *
 * These are structurally compatible with `@mariozechner/pi-ai` 0.73.1, so that pi-ai's own
 * `streamSimple` can be passed to the agent loop as a `StreamFn` unchanged, and our messages can be
 * handed to pi-ai (and back) without conversion.
 *
 * ## The assistant-message event protocol
 *
 * A provider turns one model call into an `AssistantMessageEventStream` (event-stream.ts, with the
 * `StreamFunction` type that returns it):
 *
 * 1. `start` — carries the initial `partial` (empty `content`, zero usage).
 * 2. For each content block, in order: `<kind>_start`, any number of `<kind>_delta`, `<kind>_end`
 *    where kind is `text`, `thinking` or `toolcall`; `contentIndex` is the block's index in
 *    `partial.content`. Every event carries `partial`: the message as accumulated so far.
 * 3. Exactly one terminal event: `done` (reason `stop` | `length` | `toolUse`, with the final
 *    `message`) or `error` (reason `error` | `aborted`, with the final message as `error`, whose
 *    `errorMessage` says what happened). `result()` of the stream resolves to that final message.
 *
 * Contract: a stream function never throws and never returns a rejected promise; every failure
 * (HTTP status, network, timeout, bad chunk, abort) is encoded as an `error` event.
 */
import type { TSchema } from "@sinclair/typebox";

export type KnownApi =
	| "openai-completions"
	| "openai-responses"
	| "anthropic-messages"
	| "google-generative-ai"
	| "faux";
export type Api = KnownApi | (string & {});
export type KnownProvider = "openai" | "anthropic" | "google" | "faux";
export type Provider = KnownProvider | string;

/** Reasoning levels a model call can ask for (`off` is expressed by omitting `reasoning`). */
export type ThinkingLevel = "minimal" | "low" | "medium" | "high" | "xhigh";
export type ModelThinkingLevel = "off" | ThinkingLevel;
export type ThinkingLevelMap = Partial<Record<ModelThinkingLevel, string | null>>;

/** Token budgets per reasoning level, overriding a provider's defaults. */
export interface ThinkingBudgets {
	minimal?: number;
	low?: number;
	medium?: number;
	high?: number;
}

export type CacheRetention = "none" | "short" | "long";
export type Transport = "sse" | "websocket" | "websocket-cached" | "auto";

/** Status and headers of a provider's HTTP response, given to `onResponse`. */
export interface ProviderResponse {
	status: number;
	headers: Record<string, string>;
}

export interface StreamOptions {
	temperature?: number;
	maxTokens?: number;
	/** Aborting ends the stream with `stopReason: "aborted"` (never a throw). */
	signal?: AbortSignal;
	/** Wins over the environment variable of the model's provider. */
	apiKey?: string;
	transport?: Transport;
	cacheRetention?: CacheRetention;
	sessionId?: string;
	/** Sees the request body before it is sent; a non-undefined return value replaces it. */
	onPayload?: (payload: unknown, model: Model<Api>) => unknown | undefined | Promise<unknown | undefined>;
	onResponse?: (response: ProviderResponse, model: Model<Api>) => void | Promise<void>;
	headers?: Record<string, string>;
	/** Idle timeout: no byte from the provider for this long ends the call with an error. */
	timeoutMs?: number;
	/** Retries of a retryable failure before any output was streamed. */
	maxRetries?: number;
	/** Cap on one retry delay (including a provider's `retry-after`). */
	maxRetryDelayMs?: number;
	metadata?: Record<string, unknown>;
}

export type ProviderStreamOptions = StreamOptions & Record<string, unknown>;

export interface SimpleStreamOptions extends StreamOptions {
	reasoning?: ThinkingLevel;
	thinkingBudgets?: ThinkingBudgets;
}

export interface TextContent {
	type: "text";
	text: string;
	textSignature?: string;
}

export interface ThinkingContent {
	type: "thinking";
	thinking: string;
	/** Opaque provider signature (Anthropic `signature`, Responses encrypted reasoning item) replayed on the next call. */
	thinkingSignature?: string;
	redacted?: boolean;
}

export interface ImageContent {
	type: "image";
	/** Base64 without a data: prefix. */
	data: string;
	mimeType: string;
}

export interface ToolCall {
	type: "toolCall";
	id: string;
	name: string;
	arguments: Record<string, any>;
	/** Gemini's thoughtSignature, replayed with the call. */
	thoughtSignature?: string;
}

export interface Usage {
	input: number;
	output: number;
	cacheRead: number;
	cacheWrite: number;
	totalTokens: number;
	cost: {
		input: number;
		output: number;
		cacheRead: number;
		cacheWrite: number;
		total: number;
	};
}

export type StopReason = "stop" | "length" | "toolUse" | "error" | "aborted";

export interface UserMessage {
	role: "user";
	content: string | (TextContent | ImageContent)[];
	timestamp: number;
}

/** Free-form diagnostic a provider may attach (pi-ai keeps these opaque to the loop). */
export interface AssistantMessageDiagnostic {
	type: string;
	[key: string]: unknown;
}

export interface AssistantMessage {
	role: "assistant";
	content: (TextContent | ThinkingContent | ToolCall)[];
	api: Api;
	provider: Provider;
	model: string;
	responseModel?: string;
	responseId?: string;
	diagnostics?: AssistantMessageDiagnostic[];
	usage: Usage;
	stopReason: StopReason;
	errorMessage?: string;
	timestamp: number;
}

export interface ToolResultMessage<TDetails = any> {
	role: "toolResult";
	toolCallId: string;
	toolName: string;
	content: (TextContent | ImageContent)[];
	details?: TDetails;
	isError: boolean;
	timestamp: number;
}

export type Message = UserMessage | AssistantMessage | ToolResultMessage;

export interface Tool<TParameters extends TSchema = TSchema> {
	name: string;
	description: string;
	/** A TypeBox schema or any plain JSON Schema object describing the arguments. */
	parameters: TParameters;
}

export interface Context {
	systemPrompt?: string;
	messages: Message[];
	tools?: Tool[];
}

export type AssistantMessageEvent =
	| { type: "start"; partial: AssistantMessage }
	| { type: "text_start"; contentIndex: number; partial: AssistantMessage }
	| { type: "text_delta"; contentIndex: number; delta: string; partial: AssistantMessage }
	| { type: "text_end"; contentIndex: number; content: string; partial: AssistantMessage }
	| { type: "thinking_start"; contentIndex: number; partial: AssistantMessage }
	| { type: "thinking_delta"; contentIndex: number; delta: string; partial: AssistantMessage }
	| { type: "thinking_end"; contentIndex: number; content: string; partial: AssistantMessage }
	| { type: "toolcall_start"; contentIndex: number; partial: AssistantMessage }
	| { type: "toolcall_delta"; contentIndex: number; delta: string; partial: AssistantMessage }
	| { type: "toolcall_end"; contentIndex: number; toolCall: ToolCall; partial: AssistantMessage }
	| { type: "done"; reason: Extract<StopReason, "stop" | "length" | "toolUse">; message: AssistantMessage }
	| { type: "error"; reason: Extract<StopReason, "aborted" | "error">; error: AssistantMessage };

/** Known differences of OpenAI-compatible Chat Completions servers (Ollama, vLLM, llama.cpp, OpenRouter, Groq, ...). */
export interface OpenAICompletionsCompat {
	supportsStore?: boolean;
	supportsDeveloperRole?: boolean;
	supportsReasoningEffort?: boolean;
	supportsUsageInStreaming?: boolean;
	maxTokensField?: "max_completion_tokens" | "max_tokens";
	requiresToolResultName?: boolean;
	requiresAssistantAfterToolResult?: boolean;
	requiresThinkingAsText?: boolean;
	requiresReasoningContentOnAssistantMessages?: boolean;
	thinkingFormat?: "openai" | "openrouter" | "deepseek" | "zai" | "qwen" | "qwen-chat-template";
	supportsStrictMode?: boolean;
	supportsLongCacheRetention?: boolean;
}

export interface OpenAIResponsesCompat {
	sendSessionIdHeader?: boolean;
	supportsLongCacheRetention?: boolean;
}

export interface AnthropicMessagesCompat {
	supportsEagerToolInputStreaming?: boolean;
	supportsLongCacheRetention?: boolean;
}

export interface Model<TApi extends Api> {
	id: string;
	name: string;
	api: TApi;
	provider: Provider;
	baseUrl: string;
	reasoning: boolean;
	thinkingLevelMap?: ThinkingLevelMap;
	input: ("text" | "image")[];
	/** Prices in USD per million tokens. */
	cost: {
		input: number;
		output: number;
		cacheRead: number;
		cacheWrite: number;
	};
	contextWindow: number;
	maxTokens: number;
	headers?: Record<string, string>;
	/**
	 * Idle timeout for calls to this model, in ms: no byte from the provider for this long (while
	 * waiting for the response headers or between body chunks) ends the call with an error; 0 = none.
	 * A call's own `timeoutMs` wins; default: the driver's (5 min), or what the application sets.
	 */
	idleTimeoutMs?: number;
	compat?: TApi extends "openai-completions"
		? OpenAICompletionsCompat
		: TApi extends "openai-responses"
			? OpenAIResponsesCompat
			: TApi extends "anthropic-messages"
				? AnthropicMessagesCompat
				: never;
}
