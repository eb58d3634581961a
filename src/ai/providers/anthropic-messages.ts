/**
 * Anthropic Messages wire API (`api: "anthropic-messages"`, `POST {baseUrl}/v1/messages`, `stream: true`).
 *
 * Request: system prompt as a cached text block, user text/images, assistant history with thinking
 * blocks replayed with their `signature` (redacted thinking as `redacted_thinking` with its `data`),
 * tool calls as `tool_use`, consecutive tool results folded into one user message of `tool_result`
 * blocks (images allowed inside), tools with `input_schema`, extended thinking (`budget_tokens`, or
 * adaptive thinking with an effort for the models that only support that).
 *
 * Stream: see {@link createAnthropicHandler} for how each wire event becomes protocol events.
 */
import { missingApiKeyMessage, resolveApiKey } from "../env-keys.js";
import type { AssistantMessageEventStream } from "../event-stream.js";
import type {
	Context,
	ImageContent,
	Message,
	Model,
	SimpleStreamOptions,
	StopReason,
	StreamOptions,
	TextContent,
	ThinkingLevel,
	Tool,
} from "../types.js";
import type { OutputBuilder } from "./output-builder.js";
import { isRetryableErrorType, ProviderError } from "./provider-errors.js";
import { type DriverOptions, streamProvider, type WireHandler } from "./provider-stream.js";
import { sanitizeText } from "./sanitize-text.js";
import { adjustMaxTokensForThinking, buildBaseOptions, clampReasoning } from "./simple-options.js";
import { normalizeToolCallId, toolResultParts, transformMessages } from "./transform-messages.js";

export type AnthropicEffort = "low" | "medium" | "high" | "xhigh" | "max";

/** Options of {@link streamAnthropicMessages}; `streamSimple` derives them from {@link SimpleStreamOptions}. */
export interface AnthropicMessagesOptions extends StreamOptions {
	/**
	 * Extended thinking on (`true`), off (`false`: `{type: "disabled"}`, or no `thinking` field for the
	 * adaptive-thinking models, which reject `disabled`), or left to the API (undefined).
	 */
	thinkingEnabled?: boolean;
	/** `budget_tokens` for budget-based thinking (default 1024, the API's minimum). */
	thinkingBudgetTokens?: number;
	/** `output_config.effort` for adaptive thinking (Claude 4.6 and later, see {@link supportsAdaptiveThinking}). */
	effort?: AnthropicEffort;
	/** `thinking.display`; omitted unless set (the API's default applies). */
	thinkingDisplay?: "summarized" | "omitted";
	/** Sends the interleaved-thinking beta header with budget-based thinking (default true). */
	interleavedThinking?: boolean;
	toolChoice?: "auto" | "any" | "none" | { type: "tool"; name: string };
}

// ---- wire types (the subset we send and read) ----

export type AnthropicCacheControl = { type: "ephemeral"; ttl?: "1h" };

export type AnthropicContentBlockParam =
	| { type: "text"; text: string; cache_control?: AnthropicCacheControl }
	| {
			type: "image";
			source: { type: "base64"; media_type: string; data: string };
			cache_control?: AnthropicCacheControl;
	  }
	| { type: "thinking"; thinking: string; signature: string }
	| { type: "redacted_thinking"; data: string }
	| { type: "tool_use"; id: string; name: string; input: Record<string, unknown> }
	| {
			type: "tool_result";
			tool_use_id: string;
			content: string | AnthropicContentBlockParam[];
			is_error?: boolean;
			cache_control?: AnthropicCacheControl;
	  };

export interface AnthropicMessageParam {
	role: "user" | "assistant";
	content: string | AnthropicContentBlockParam[];
}

export interface AnthropicToolParam {
	name: string;
	description: string;
	input_schema: Record<string, unknown>;
	eager_input_streaming?: boolean;
	cache_control?: AnthropicCacheControl;
}

export interface AnthropicMessagesParams {
	model: string;
	max_tokens: number;
	messages: AnthropicMessageParam[];
	stream: true;
	system?: { type: "text"; text: string; cache_control?: AnthropicCacheControl }[];
	temperature?: number;
	tools?: AnthropicToolParam[];
	tool_choice?: { type: "auto" | "any" | "none" } | { type: "tool"; name: string };
	thinking?:
		| { type: "enabled"; budget_tokens: number; display?: string }
		| { type: "adaptive"; display?: string }
		| { type: "disabled" };
	output_config?: { effort: AnthropicEffort };
	metadata?: { user_id: string };
}

export const ANTHROPIC_VERSION = "2023-06-01";
const INTERLEAVED_THINKING_BETA = "interleaved-thinking-2025-05-14";
const FINE_GRAINED_TOOL_STREAMING_BETA = "fine-grained-tool-streaming-2025-05-14";

// ---- request ----

/**
 * The models that take `thinking: {type: "adaptive"}` with an effort instead of a token budget:
 * Claude 4.6 and later (4.7 and the 5 family reject `budget_tokens` with a 400), and the unnumbered
 * Mythos/Fable previews. The version is the first number(s) of the id, ignoring a trailing date:
 * `claude-sonnet-4-6` → 4.6, `claude-opus-5` → 5, `claude-3-7-sonnet-20250219` → 3.7.
 */
export function supportsAdaptiveThinking(modelId: string): boolean {
	const id = modelId.toLowerCase().replace(/-\d{8}$/, "");
	const version = /(?:^|[-.@/])(\d+)(?:[-.](\d{1,2}))?(?=$|[-.@/])/.exec(id.replace(/^.*claude-/, "-"));
	if (!version) return /mythos|fable/.test(id);
	const major = Number(version[1]);
	const minor = Number(version[2] ?? 0);
	return major > 4 || (major === 4 && minor >= 6);
}

function cacheControlFor(model: Model<"anthropic-messages">, retention: StreamOptions["cacheRetention"]) {
	const resolved = retention ?? "short";
	if (resolved === "none") return undefined;
	const longOk = model.compat?.supportsLongCacheRetention ?? true;
	const control: AnthropicCacheControl = { type: "ephemeral" };
	if (resolved === "long" && longOk) control.ttl = "1h";
	return control;
}

/**
 * The request body. `cacheRetention` (default `short`) puts `cache_control` on the system prompt,
 * the last tool and the last block of the last user message, so a conversation's prefix is cached
 * turn after turn. `temperature` is dropped while thinking is on (the API rejects the pair).
 * `metadata.user_id` (a string) is sent as `metadata.user_id`; other metadata keys and `sessionId`
 * have no Anthropic counterpart and are not sent.
 */
export function buildParams(
	model: Model<"anthropic-messages">,
	context: Context,
	options: AnthropicMessagesOptions = {},
): AnthropicMessagesParams {
	const cacheControl = cacheControlFor(model, options.cacheRetention);
	const params: AnthropicMessagesParams = {
		model: model.id,
		max_tokens: options.maxTokens ?? defaultMaxTokens(model),
		messages: convertMessages(context.messages, model, cacheControl),
		stream: true,
	};
	if (context.systemPrompt) {
		params.system = [
			{ type: "text", text: sanitizeText(context.systemPrompt), ...(cacheControl && { cache_control: cacheControl }) },
		];
	}
	const thinkingOn = model.reasoning && options.thinkingEnabled === true;
	if (options.temperature !== undefined && !thinkingOn) params.temperature = options.temperature;
	if (context.tools && context.tools.length > 0) {
		params.tools = convertTools(context.tools, model, cacheControl);
	}
	if (thinkingOn) {
		const display = options.thinkingDisplay && { display: options.thinkingDisplay };
		if (supportsAdaptiveThinking(model.id)) {
			params.thinking = { type: "adaptive", ...display };
			if (options.effort) params.output_config = { effort: options.effort };
		} else {
			params.thinking = { type: "enabled", budget_tokens: options.thinkingBudgetTokens || 1024, ...display };
		}
	} else if (model.reasoning && options.thinkingEnabled === false && !supportsAdaptiveThinking(model.id)) {
		// Adaptive-only models reject `disabled` (400); leaving `thinking` out is valid everywhere.
		params.thinking = { type: "disabled" };
	}
	const userId = options.metadata?.user_id;
	if (typeof userId === "string") params.metadata = { user_id: userId };
	if (options.toolChoice) {
		params.tool_choice = typeof options.toolChoice === "string" ? { type: options.toolChoice } : options.toolChoice;
	}
	return params;
}

function defaultMaxTokens(model: Model<any>): number {
	return model.maxTokens > 0 ? Math.min(model.maxTokens, 32000) : 4096;
}

/** Request headers (auth, version, betas), lowest precedence first: ours, then model.headers, then options.headers. */
export function buildHeaders(
	model: Model<"anthropic-messages">,
	context: Context,
	apiKey: string,
	options: AnthropicMessagesOptions = {},
): Record<string, string> {
	const betas: string[] = [];
	const hasTools = (context.tools?.length ?? 0) > 0;
	if (hasTools && model.compat?.supportsEagerToolInputStreaming === false) betas.push(FINE_GRAINED_TOOL_STREAMING_BETA);
	const thinking = model.reasoning && options.thinkingEnabled;
	if (thinking && (options.interleavedThinking ?? true) && !supportsAdaptiveThinking(model.id)) {
		betas.push(INTERLEAVED_THINKING_BETA);
	}
	return {
		"content-type": "application/json",
		accept: "text/event-stream",
		"x-api-key": apiKey,
		"anthropic-version": ANTHROPIC_VERSION,
		...(betas.length > 0 && { "anthropic-beta": betas.join(",") }),
		...model.headers,
		...options.headers,
	};
}

/** `{baseUrl}/v1/messages`, tolerating a base URL that already ends in `/v1`. */
export function messagesUrl(baseUrl: string): string {
	const base = baseUrl.replace(/\/+$/, "");
	return base.endsWith("/v1") ? `${base}/messages` : `${base}/v1/messages`;
}

function convertUserContent(content: (TextContent | ImageContent)[]): AnthropicContentBlockParam[] {
	const blocks: AnthropicContentBlockParam[] = [];
	for (const item of content) {
		if (item.type === "text") {
			// The API rejects empty text blocks.
			if (item.text.trim().length > 0) blocks.push({ type: "text", text: sanitizeText(item.text) });
		} else {
			blocks.push({ type: "image", source: { type: "base64", media_type: item.mimeType, data: item.data } });
		}
	}
	return blocks;
}

function convertToolResultContent(content: (TextContent | ImageContent)[]): string | AnthropicContentBlockParam[] {
	if (!content.some((c) => c.type === "image")) return sanitizeText(toolResultParts(content).text);
	const blocks = convertUserContent(content);
	if (!blocks.some((b) => b.type === "text")) blocks.unshift({ type: "text", text: "(see attached image)" });
	return blocks;
}

/**
 * Our messages → Anthropic `messages`. Applies `transformMessages` first (drops failed turns, answers
 * orphaned tool calls, downgrades foreign thinking, makes foreign tool-call ids match
 * `^[a-zA-Z0-9_-]{1,64}$`). A thinking block without a signature (an aborted stream) is sent as
 * plain text, since the API rejects unsigned thinking.
 */
export function convertMessages(
	messages: Message[],
	model: Model<"anthropic-messages">,
	cacheControl?: AnthropicCacheControl,
): AnthropicMessageParam[] {
	const out: AnthropicMessageParam[] = [];
	const prepared = transformMessages(messages, model, (id) => normalizeToolCallId(id, 64));
	for (let i = 0; i < prepared.length; i++) {
		const msg = prepared[i];
		if (msg.role === "user") {
			if (typeof msg.content === "string") {
				if (msg.content.trim().length > 0) out.push({ role: "user", content: sanitizeText(msg.content) });
				continue;
			}
			const blocks = convertUserContent(msg.content);
			if (blocks.length > 0) out.push({ role: "user", content: blocks });
		} else if (msg.role === "assistant") {
			const blocks: AnthropicContentBlockParam[] = [];
			for (const block of msg.content) {
				if (block.type === "text") {
					if (block.text.trim().length > 0) blocks.push({ type: "text", text: sanitizeText(block.text) });
				} else if (block.type === "thinking") {
					if (block.redacted) {
						if (block.thinkingSignature) blocks.push({ type: "redacted_thinking", data: block.thinkingSignature });
					} else if (block.thinkingSignature && block.thinkingSignature.trim().length > 0) {
						// A signed block is replayed even when its text is empty (display "omitted").
						blocks.push({
							type: "thinking",
							thinking: sanitizeText(block.thinking),
							signature: block.thinkingSignature,
						});
					} else if (block.thinking.trim().length > 0) {
						blocks.push({ type: "text", text: sanitizeText(block.thinking) });
					}
				} else if (block.type === "toolCall") {
					blocks.push({ type: "tool_use", id: block.id, name: block.name, input: block.arguments ?? {} });
				}
			}
			if (blocks.length > 0) out.push({ role: "assistant", content: blocks });
		} else if (msg.role === "toolResult") {
			// All consecutive tool results go into one user message (some Anthropic-compatible servers require it).
			const results: AnthropicContentBlockParam[] = [];
			let j = i;
			for (; j < prepared.length; j++) {
				const next = prepared[j];
				if (next.role !== "toolResult") break;
				results.push({
					type: "tool_result",
					tool_use_id: next.toolCallId,
					content: convertToolResultContent(next.content),
					is_error: next.isError,
				});
			}
			i = j - 1;
			out.push({ role: "user", content: results });
		}
	}
	if (cacheControl) addCacheControlToLastUserBlock(out, cacheControl);
	return out;
}

function addCacheControlToLastUserBlock(params: AnthropicMessageParam[], cacheControl: AnthropicCacheControl): void {
	const last = params[params.length - 1];
	if (last?.role !== "user") return;
	if (typeof last.content === "string") {
		last.content = [{ type: "text", text: last.content, cache_control: cacheControl }];
		return;
	}
	const block = last.content[last.content.length - 1];
	if (block && (block.type === "text" || block.type === "image" || block.type === "tool_result")) {
		block.cache_control = cacheControl;
	}
}

/**
 * Tools → Anthropic `tools`. The schema is sent whole (TypeBox schemas are plain JSON Schema; their
 * symbol keys vanish in JSON); `type: "object"` is forced since `input_schema` must be an object schema.
 */
export function convertTools(
	tools: Tool[],
	model: Model<"anthropic-messages">,
	cacheControl?: AnthropicCacheControl,
): AnthropicToolParam[] {
	const eager = model.compat?.supportsEagerToolInputStreaming ?? true;
	return tools.map((tool, index) => {
		const schema = { ...(tool.parameters as Record<string, unknown>) };
		delete schema.$schema;
		return {
			name: tool.name,
			description: tool.description,
			input_schema: { ...schema, type: "object", properties: schema.properties ?? {} },
			...(eager && { eager_input_streaming: true }),
			...(cacheControl && index === tools.length - 1 && { cache_control: cacheControl }),
		};
	});
}

/**
 * Anthropic `stop_reason` → our stop reason. `refusal` and `sensitive` end the call as an error
 * (the message carries whatever was streamed); `pause_turn` (a server tool paused a long turn) and
 * `stop_sequence` end it normally. An unknown value is kept as a normal stop, since the content
 * streamed so far is complete.
 */
export function mapStopReason(reason: string | null | undefined): StopReason {
	switch (reason) {
		case "end_turn":
		case "pause_turn":
		case "stop_sequence":
			return "stop";
		case "max_tokens":
		case "model_context_window_exceeded":
			return "length";
		case "tool_use":
			return "toolUse";
		case "refusal":
		case "sensitive":
			return "error";
		default:
			return "stop";
	}
}

// ---- simple options ----

function effortFor(model: Model<any>, level: ThinkingLevel): AnthropicEffort {
	const mapped = model.thinkingLevelMap?.[level];
	if (typeof mapped === "string") return mapped as AnthropicEffort;
	if (level === "minimal" || level === "low") return "low";
	if (level === "medium") return "medium";
	if (level === "xhigh") return /opus-4[.-]7/.test(model.id) ? "xhigh" : "high";
	return "high";
}

/**
 * {@link SimpleStreamOptions} → {@link AnthropicMessagesOptions}: `reasoning` becomes adaptive
 * thinking with an effort on the models that need it, else a `budget_tokens` from `thinkingBudgets`
 * (defaults minimal 1024, low 2048, medium 8192, high/xhigh 16384) added on top of `maxTokens`
 * (capped at the model's limit, keeping at least 1024 output tokens); no `reasoning` turns thinking off.
 */
export function toAnthropicOptions(model: Model<any>, options: SimpleStreamOptions = {}): AnthropicMessagesOptions {
	const base = buildBaseOptions(model, options);
	const maxTokens = base.maxTokens ?? defaultMaxTokens(model);
	// A model without reasoning gets neither thinking nor the budget added to max_tokens.
	const reasoning = model.reasoning ? options.reasoning : undefined;
	if (!reasoning) return { ...base, maxTokens, thinkingEnabled: false };
	if (supportsAdaptiveThinking(model.id)) {
		return { ...base, maxTokens, thinkingEnabled: true, effort: effortFor(model, reasoning) };
	}
	const adjusted = adjustMaxTokensForThinking(
		maxTokens,
		model.maxTokens,
		clampReasoning(reasoning)!,
		options.thinkingBudgets,
	);
	return {
		...base,
		maxTokens: adjusted.maxTokens,
		thinkingEnabled: true,
		thinkingBudgetTokens: adjusted.thinkingBudget,
	};
}

// ---- stream ----

/**
 * Streams one Anthropic Messages call through the shared driver (retries, timeout, abort, HTTP
 * errors). Never throws: a missing API key, an HTTP error (`HTTP 529: Overloaded`), a mid-stream
 * `event: error`, a refusal or a cut stream all end in an `error` event.
 */
export function streamAnthropicMessages(
	model: Model<"anthropic-messages">,
	context: Context,
	options: AnthropicMessagesOptions & DriverOptions = {},
): AssistantMessageEventStream {
	return streamProvider({
		model,
		options,
		buildRequest: () => {
			const apiKey = resolveApiKey(model.provider, options.apiKey);
			if (!apiKey) throw new ProviderError(missingApiKeyMessage(model.provider));
			return {
				url: messagesUrl(model.baseUrl),
				headers: buildHeaders(model, context, apiKey, options),
				body: buildParams(model, context, options),
			};
		},
		createHandler: (out) => createAnthropicHandler(out),
	});
}

/** The `streamSimple` entry point: {@link toAnthropicOptions} then {@link streamAnthropicMessages}. */
export function streamSimpleAnthropicMessages(
	model: Model<"anthropic-messages">,
	context: Context,
	options?: SimpleStreamOptions,
): AssistantMessageEventStream {
	return streamAnthropicMessages(model, context, toAnthropicOptions(model, options));
}

interface WireUsage {
	input_tokens?: number | null;
	output_tokens?: number | null;
	cache_read_input_tokens?: number | null;
	cache_creation_input_tokens?: number | null;
}

/**
 * Maps Anthropic's SSE events onto the output builder. Wire block `index` → our content index:
 *
 * - `text` → text block; `thinking` → thinking block whose `signature_delta`s build
 *   `thinkingSignature`; `redacted_thinking` → a thinking block with `redacted: true`, empty text and
 *   the opaque `data` as `thinkingSignature` (replayed as `redacted_thinking`); `tool_use` → tool call
 *   whose `input_json_delta` pieces are parsed incrementally (the start's `input` is used when no
 *   delta comes).
 * - Server-side tool blocks (`server_tool_use`, `web_search_tool_result`, ...) and unknown block types
 *   are not content: Anthropic ran them, so they are neither executed nor replayed by us. Each is
 *   recorded as a `{type: "anthropic_server_block"}` diagnostic (block type, name, input); the text
 *   around them is kept. `citations_delta` is ignored (the cited text itself arrives as text).
 * - Usage: `message_start.usage` is provisional, `message_delta.usage` cumulative (fields it omits
 *   keep their earlier value); total = input + output + cacheRead + cacheWrite.
 * - `event: error` (e.g. `overloaded_error`) fails the call; it is retried only when nothing was
 *   streamed yet (the driver's rule). `refusal`/`sensitive` stops fail it with the refusal
 *   explanation. A stream that ends without `message_stop` fails as cut short.
 */
export function createAnthropicHandler(out: OutputBuilder): WireHandler {
	const blocks = new Map<number, { kind: "content"; index: number; input?: unknown } | { kind: "skipped" }>();
	const usage = { input: 0, output: 0, cacheRead: 0, cacheWrite: 0 };
	let stopReason: string | undefined;
	let stopDetails: any;
	let stopped = false;

	const applyUsage = (wire: WireUsage | undefined) => {
		if (!wire) return;
		if (wire.input_tokens != null) usage.input = wire.input_tokens;
		if (wire.output_tokens != null) usage.output = wire.output_tokens;
		if (wire.cache_read_input_tokens != null) usage.cacheRead = wire.cache_read_input_tokens;
		if (wire.cache_creation_input_tokens != null) usage.cacheWrite = wire.cache_creation_input_tokens;
		out.setUsage(usage);
	};

	const startBlock = (wireIndex: number, block: any) => {
		switch (block?.type) {
			case "text":
				blocks.set(wireIndex, { kind: "content", index: out.startText(block.text ?? "") });
				return;
			case "thinking":
				blocks.set(wireIndex, {
					kind: "content",
					index: out.startThinking({ text: block.thinking ?? "", signature: block.signature || undefined }),
				});
				return;
			case "redacted_thinking":
				blocks.set(wireIndex, {
					kind: "content",
					index: out.startThinking({ redacted: true, signature: block.data ?? "" }),
				});
				return;
			case "tool_use":
				blocks.set(wireIndex, {
					kind: "content",
					index: out.startToolCall(String(block.id ?? ""), String(block.name ?? "")),
					input: block.input,
				});
				return;
			default:
				blocks.set(wireIndex, { kind: "skipped" });
				out.addDiagnostic({
					type: "anthropic_server_block",
					blockType: String(block?.type),
					...(block?.name !== undefined && { name: block.name }),
					...(block?.id !== undefined && { id: block.id }),
					...(block?.input !== undefined && Object.keys(block.input).length > 0 && { input: block.input }),
				});
		}
	};

	const applyDelta = (wireIndex: number, delta: any) => {
		const entry = blocks.get(wireIndex);
		if (!entry || entry.kind === "skipped") return;
		switch (delta?.type) {
			case "text_delta":
				out.appendText(entry.index, delta.text ?? "");
				return;
			case "thinking_delta":
				out.appendThinking(entry.index, delta.thinking ?? "");
				return;
			case "signature_delta":
				out.setThinkingSignature(entry.index, delta.signature ?? "", true);
				return;
			case "input_json_delta":
				out.appendToolArgs(entry.index, delta.partial_json ?? "");
				return;
			default:
				// citations_delta and future delta kinds carry nothing we keep.
				return;
		}
	};

	const stopBlock = (wireIndex: number) => {
		const entry = blocks.get(wireIndex);
		if (!entry || entry.kind === "skipped") return;
		if (entry.input && typeof entry.input === "object" && out.toolArgsText(entry.index) === "") {
			if (Object.keys(entry.input).length > 0) out.setToolArgsObject(entry.index, entry.input as Record<string, any>);
		}
		out.endBlock(entry.index);
	};

	return {
		onEvent(data: any, event: string | undefined) {
			const type = data?.type ?? event;
			switch (type) {
				case "message_start":
					out.setResponseId(data.message?.id);
					out.setResponseModel(data.message?.model);
					applyUsage(data.message?.usage);
					return;
				case "content_block_start":
					startBlock(data.index, data.content_block);
					return;
				case "content_block_delta":
					applyDelta(data.index, data.delta);
					return;
				case "content_block_stop":
					stopBlock(data.index);
					return;
				case "message_delta":
					if (data.delta?.stop_reason) {
						stopReason = data.delta.stop_reason;
						stopDetails = data.delta.stop_details;
					}
					applyUsage(data.usage);
					return;
				case "message_stop":
					stopped = true;
					return true;
				case "error": {
					const errorType: string | undefined = data.error?.type;
					const message: string = data.error?.message ?? JSON.stringify(data);
					throw new ProviderError(`Anthropic stream error${errorType ? ` (${errorType})` : ""}: ${message}`, {
						type: errorType,
						retryable: isRetryableErrorType(errorType),
					});
				}
				default:
					// ping and future event types.
					return;
			}
		},
		finished: () => stopped,
		finishSignal: "message_stop",
		onEnd() {
			const mapped = mapStopReason(stopReason);
			if (mapped === "error") {
				const explanation = typeof stopDetails?.explanation === "string" ? `: ${stopDetails.explanation}` : "";
				throw new ProviderError(`Anthropic stopped with stop_reason "${stopReason}"${explanation}`, {
					type: stopReason,
				});
			}
			if (mapped === "length" || mapped === "toolUse" || mapped === "stop") out.setStopReason(mapped);
		},
	};
}
