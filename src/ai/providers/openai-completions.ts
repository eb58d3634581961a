/**
 * OpenAI Chat Completions wire API (`api: "openai-completions"`, `POST {baseUrl}/chat/completions`,
 * `stream: true`), for OpenAI itself and the OpenAI-compatible servers people run locally or reach
 * through gateways: Ollama, vLLM, llama.cpp server, LM Studio, OpenRouter, Groq, DeepSeek, Together.
 *
 * Their known differences live in the per-model `compat` record ({@link OpenAICompletionsCompat});
 * {@link resolveCompat} fills what the model does not say from its provider and `baseUrl`.
 *
 * Stream: `choices[0].delta` carries `content` (text), `refusal` (text), a reasoning field
 * (`reasoning_content` / `reasoning` / `reasoning_text`, depending on the server: thinking) and
 * `tool_calls` (keyed by `index`, arguments streamed as JSON text); `finish_reason` gives the stop
 * reason; usage arrives in a last chunk with `choices: []` (`stream_options.include_usage`); an
 * `{error}` payload mid-stream (OpenRouter, vLLM) fails the call. Other choices (`n > 1`) are ignored.
 * A stream that ends with neither a `finish_reason` nor `data: [DONE]` was cut short and fails.
 */

import type { AssistantMessageEventStream } from "../event-stream.js";
import type {
	AssistantMessage,
	Context,
	ImageContent,
	Message,
	Model,
	OpenAICompletionsCompat,
	SimpleStreamOptions,
	StopReason,
	StreamOptions,
	TextContent,
	ThinkingLevel,
	Tool,
} from "../types.js";
import { imageDataUrl, openAIRequestTarget, openAITokenCounts, withReasoningEffort } from "./openai-shared.js";
import type { OutputBuilder, TokenCounts } from "./output-builder.js";
import { isRetryableErrorType, ProviderError } from "./provider-errors.js";
import { streamProvider, type WireHandler } from "./provider-stream.js";
import { isSameModel, normalizeToolCallId, toolResultParts, transformMessages } from "./transform-messages.js";

/** Options of {@link streamOpenAICompletions}; `streamSimple` derives them from `SimpleStreamOptions`. */
export interface OpenAICompletionsOptions extends StreamOptions {
	toolChoice?: "auto" | "none" | "required" | { type: "function"; function: { name: string } };
	/** Reasoning effort sent as the compat's reasoning knob; omitted = the server's default (or "off" where mapped). */
	reasoningEffort?: ThinkingLevel | (string & {});
}

/** `compat` with every field decided. */
export type ResolvedOpenAICompletionsCompat = Required<OpenAICompletionsCompat>;

/** Reasoning fields servers use in `delta` (first non-empty wins). */
const REASONING_FIELDS = ["reasoning_content", "reasoning", "reasoning_text"] as const;

/**
 * What a Chat Completions thinking block keeps in `thinkingSignature` for replay: the name of the
 * field its text came in (a plain string such as `"reasoning_content"`), or, when the server also
 * sent OpenRouter `reasoning_details`, JSON `{"v":1,"field":…,"details":[…]}`.
 */
export function encodeReasoningSignature(field: string | undefined, details: Record<string, any>[]): string {
	return JSON.stringify({ v: 1, ...(field ? { field } : {}), details });
}

export function decodeReasoningSignature(
	signature: string | undefined,
): { field?: string; details?: Record<string, any>[] } | undefined {
	if (!signature) return undefined;
	if ((REASONING_FIELDS as readonly string[]).includes(signature)) return { field: signature };
	if (!signature.startsWith("{")) return undefined;
	try {
		const parsed = JSON.parse(signature);
		const field = (REASONING_FIELDS as readonly string[]).includes(parsed?.field)
			? (parsed.field as string)
			: undefined;
		return { field, details: Array.isArray(parsed?.details) ? parsed.details : undefined };
	} catch {
		return undefined;
	}
}

/**
 * The compat record for `model`: its own `compat` fields win; the rest is detected.
 *
 * Detection: `api.openai.com` (and Azure) is full OpenAI (developer role for reasoning models,
 * `store: false`, `max_completion_tokens`). Any other server gets the conservative defaults most
 * compatible servers accept: `system` role, no `store`, `max_tokens`, `stream_options` usage, and
 * `reasoning_effort` only for models marked `reasoning`. OpenRouter gets its `reasoning` object,
 * DeepSeek its `thinking` switch and `reasoning_content` replay.
 */
export function resolveCompat(model: Model<any>): ResolvedOpenAICompletionsCompat {
	const url = (model.baseUrl ?? "").toLowerCase();
	const provider = String(model.provider);
	const isOpenAI = provider === "openai" || url.includes("api.openai.com") || url.includes(".openai.azure.com");
	const isOpenRouter = provider === "openrouter" || url.includes("openrouter.ai");
	const isDeepSeek = provider === "deepseek" || url.includes("deepseek.com");
	const isGroq = provider === "groq" || url.includes("groq.com");
	const detected: ResolvedOpenAICompletionsCompat = {
		supportsStore: isOpenAI,
		supportsDeveloperRole: isOpenAI,
		supportsReasoningEffort: !isDeepSeek,
		supportsUsageInStreaming: true,
		maxTokensField: isOpenAI || isGroq ? "max_completion_tokens" : "max_tokens",
		requiresToolResultName: false,
		requiresAssistantAfterToolResult: false,
		requiresThinkingAsText: false,
		requiresReasoningContentOnAssistantMessages: isDeepSeek,
		thinkingFormat: isOpenRouter ? "openrouter" : isDeepSeek ? "deepseek" : "openai",
		supportsStrictMode: isOpenAI,
		supportsLongCacheRetention: isOpenAI,
	};
	const own = (model.compat ?? {}) as OpenAICompletionsCompat;
	const resolved = { ...detected };
	for (const key of Object.keys(own) as (keyof OpenAICompletionsCompat)[]) {
		if (own[key] !== undefined) (resolved as any)[key] = own[key];
	}
	return resolved;
}

/** Streams one Chat Completions call. Never throws; see `streamProvider` for failures and retries. */
export function streamOpenAICompletions(
	model: Model<"openai-completions">,
	context: Context,
	options: OpenAICompletionsOptions = {},
): AssistantMessageEventStream {
	return streamProvider({
		model,
		options,
		buildRequest: () => {
			return {
				...openAIRequestTarget(model, "chat/completions", options.apiKey),
				body: buildParams(model, context, options),
			};
		},
		createHandler: (out) => createCompletionsHandler(out),
	});
}

/** `streamSimple` entry: `reasoning` → `reasoningEffort` (through the model's `thinkingLevelMap`). */
export function streamSimpleOpenAICompletions(
	model: Model<"openai-completions">,
	context: Context,
	options: SimpleStreamOptions = {},
): AssistantMessageEventStream {
	return streamOpenAICompletions(model, context, withReasoningEffort<OpenAICompletionsOptions>(model, options));
}

/** The request body (before `onPayload`). */
export function buildParams(
	model: Model<"openai-completions">,
	context: Context,
	options: OpenAICompletionsOptions = {},
	compat: ResolvedOpenAICompletionsCompat = resolveCompat(model),
): Record<string, unknown> {
	const params: Record<string, unknown> = {
		model: model.id,
		messages: convertMessages(model, context, compat),
		stream: true,
	};
	if (compat.supportsUsageInStreaming) params.stream_options = { include_usage: true };
	if (compat.supportsStore) params.store = false;
	if (options.maxTokens) params[compat.maxTokensField] = options.maxTokens;
	if (options.temperature !== undefined) params.temperature = options.temperature;
	if (context.tools && context.tools.length > 0) {
		params.tools = convertTools(context.tools, compat);
		if (options.toolChoice) params.tool_choice = options.toolChoice;
	}
	// OpenAI routes a session's calls to the same cache shard with this key.
	if (options.sessionId && compat.supportsStore && options.cacheRetention !== "none") {
		params.prompt_cache_key = options.sessionId;
		if (options.cacheRetention === "long" && compat.supportsLongCacheRetention) params.prompt_cache_retention = "24h";
	}
	applyReasoning(params, model, options.reasoningEffort, compat);
	return params;
}

function applyReasoning(
	params: Record<string, unknown>,
	model: Model<any>,
	effort: string | undefined,
	compat: ResolvedOpenAICompletionsCompat,
): void {
	if (!model.reasoning) return;
	const off = model.thinkingLevelMap?.off;
	switch (compat.thinkingFormat) {
		case "openrouter":
			if (effort) params.reasoning = { effort };
			else if (typeof off === "string") params.reasoning = { effort: off };
			return;
		case "deepseek":
			params.thinking = { type: effort ? "enabled" : "disabled" };
			return;
		case "zai":
			params.thinking = { type: effort ? "enabled" : "disabled" };
			return;
		case "qwen":
			params.enable_thinking = !!effort;
			return;
		case "qwen-chat-template":
			params.chat_template_kwargs = { enable_thinking: !!effort };
			return;
		default:
			if (!compat.supportsReasoningEffort) return;
			if (effort) params.reasoning_effort = effort;
			else if (typeof off === "string") params.reasoning_effort = off;
	}
}

/**
 * The `messages` array: system prompt (as `developer` for reasoning models where supported), user
 * text and images (`image_url` data URLs), assistant text + `tool_calls` (+ reasoning replayed in
 * the field it came in, for the same model), `tool` results (their images follow in a user
 * message: tool messages are text-only), per the compat record.
 */
export function convertMessages(
	model: Model<"openai-completions">,
	context: Context,
	compat: ResolvedOpenAICompletionsCompat = resolveCompat(model),
): Record<string, unknown>[] {
	const out: Record<string, unknown>[] = [];
	if (context.systemPrompt) {
		out.push({
			role: model.reasoning && compat.supportsDeveloperRole ? "developer" : "system",
			content: context.systemPrompt,
		});
	}
	// OpenAI caps tool-call ids at 40 characters; ids from other APIs may be longer.
	const messages = transformMessages(context.messages, model, (id) => normalizeToolCallId(id, 40));
	let pendingImages: ImageContent[] = [];
	const flushImages = () => {
		if (pendingImages.length === 0) return;
		out.push({
			role: "user",
			content: [{ type: "text", text: "Images returned by the tool calls above:" }, ...pendingImages.map(imagePart)],
		});
		pendingImages = [];
	};
	let previous: Message["role"] | undefined;
	for (const message of messages) {
		if (message.role !== "toolResult") flushImages();
		if (message.role === "user") {
			if (compat.requiresAssistantAfterToolResult && previous === "toolResult") {
				out.push({ role: "assistant", content: "I have processed the tool results." });
			}
			out.push({ role: "user", content: userContent(message.content) });
		} else if (message.role === "assistant") {
			const converted = convertAssistant(message, model, compat);
			if (converted) out.push(converted);
		} else {
			const { text, images } = toolResultParts(message.content);
			const tool: Record<string, unknown> = {
				role: "tool",
				tool_call_id: message.toolCallId,
				content: text || (images.length > 0 ? "(see the attached image)" : ""),
			};
			if (compat.requiresToolResultName) tool.name = message.toolName;
			out.push(tool);
			if (model.input.includes("image")) pendingImages.push(...images);
		}
		previous = message.role;
	}
	flushImages();
	return out;
}

function convertAssistant(
	message: AssistantMessage,
	model: Model<any>,
	compat: ResolvedOpenAICompletionsCompat,
): Record<string, unknown> | undefined {
	const text = message.content
		.filter((block): block is TextContent => block.type === "text" && block.text.trim() !== "")
		.map((block) => block.text)
		.join("\n\n");
	const thinking = message.content.filter((block) => block.type === "thinking" && block.thinking.trim() !== "");
	const toolCalls = message.content.filter((block) => block.type === "toolCall");
	const converted: Record<string, unknown> = { role: "assistant", content: text || null };
	const signed = message.content.find((block) => block.type === "thinking" && block.thinkingSignature);
	const signature = signed?.type === "thinking" ? decodeReasoningSignature(signed.thinkingSignature) : undefined;
	if (thinking.length > 0) {
		const thinkingText = thinking.map((block) => (block.type === "thinking" ? block.thinking : "")).join("\n\n");
		if (compat.requiresThinkingAsText) {
			converted.content = text ? `${thinkingText}\n\n${text}` : thinkingText;
		} else if (signature?.field && isSameModel(message, model)) {
			// Replay reasoning in the field the server sent it in (DeepSeek, llama.cpp, vLLM need it back with tools).
			converted[signature.field] = thinkingText;
		}
	}
	if (signature?.details && !compat.requiresThinkingAsText && isSameModel(message, model)) {
		converted.reasoning_details = signature.details;
	}
	if (toolCalls.length > 0) {
		converted.tool_calls = toolCalls.map((call) =>
			call.type === "toolCall"
				? {
						id: call.id,
						type: "function",
						function: { name: call.name, arguments: JSON.stringify(call.arguments ?? {}) },
					}
				: undefined,
		);
	}
	if (
		compat.requiresReasoningContentOnAssistantMessages &&
		model.reasoning &&
		converted.reasoning_content === undefined
	) {
		converted.reasoning_content = "";
	}
	if (!converted.content && toolCalls.length === 0) return undefined;
	if (converted.content === null && compat.requiresAssistantAfterToolResult) converted.content = "";
	return converted;
}

function userContent(content: string | (TextContent | ImageContent)[]): unknown {
	if (typeof content === "string") return content;
	if (content.length === 1 && content[0]!.type === "text") return content[0]!.text;
	return content.map((block) => (block.type === "text" ? { type: "text", text: block.text } : imagePart(block)));
}

function imagePart(image: ImageContent): Record<string, unknown> {
	return { type: "image_url", image_url: { url: imageDataUrl(image) } };
}

/** Tools as `{type: "function", function: {name, description, parameters}}`. */
export function convertTools(tools: Tool[], compat?: ResolvedOpenAICompletionsCompat): Record<string, unknown>[] {
	return tools.map((tool) => ({
		type: "function",
		function: {
			name: tool.name,
			description: tool.description,
			parameters: tool.parameters,
			...(compat?.supportsStrictMode ? { strict: false } : {}),
		},
	}));
}

/**
 * `finish_reason` → stop reason: `stop`/`end_turn` → stop, `length` → length, `tool_calls` /
 * `function_call` → toolUse, `content_filter` → error; anything unknown → stop.
 */
export function mapStopReason(reason: string | null | undefined): StopReason {
	switch (reason) {
		case "length":
		case "max_tokens":
			return "length";
		case "tool_calls":
		case "function_call":
			return "toolUse";
		case "content_filter":
			return "error";
		default:
			return "stop";
	}
}

/** Maps Chat Completions chunks onto the output builder (one attempt). */
export function createCompletionsHandler(out: OutputBuilder): WireHandler {
	let textIndex = -1;
	let thinkingIndex = -1;
	/** wire tool-call index → content index */
	const toolIndex = new Map<number, number>();
	let finishReason: string | null | undefined;
	let chunks = 0;
	/** The field reasoning text came in, and OpenRouter's `reasoning_details`, merged by index. */
	let reasoningField: string | undefined;
	const details: Record<string, any>[] = [];

	const openThinking = (field?: string) => {
		if (field) reasoningField ??= field;
		if (thinkingIndex >= 0 && out.isOpen(thinkingIndex)) return;
		if (textIndex >= 0) {
			out.endBlock(textIndex);
			textIndex = -1;
		}
		thinkingIndex = out.startThinking(field ? { signature: field } : {});
	};

	const closeThinking = () => {
		if (thinkingIndex < 0) return;
		if (details.length > 0 && out.isOpen(thinkingIndex)) {
			out.setThinkingSignature(thinkingIndex, encodeReasoningSignature(reasoningField, details));
		}
		out.endBlock(thinkingIndex);
		thinkingIndex = -1;
	};

	const closeTextAndThinking = () => {
		if (textIndex >= 0) out.endBlock(textIndex);
		closeThinking();
		textIndex = -1;
	};

	const appendContent = (text: string) => {
		if (textIndex < 0 || !out.isOpen(textIndex)) {
			closeThinking();
			textIndex = out.startText();
		}
		out.appendText(textIndex, text);
	};

	const mergeDetails = (incoming: unknown[]) => {
		for (const item of incoming) {
			if (!item || typeof item !== "object") continue;
			const detail = item as Record<string, any>;
			const existing = typeof detail.index === "number" ? details.find((d) => d.index === detail.index) : undefined;
			if (!existing) {
				details.push({ ...detail });
				continue;
			}
			for (const key of ["text", "summary", "data"] as const) {
				if (typeof detail[key] === "string") existing[key] = (existing[key] ?? "") + detail[key];
			}
			for (const [key, value] of Object.entries(detail)) {
				if (key !== "text" && key !== "summary" && key !== "data" && value !== undefined && value !== null)
					existing[key] = value;
			}
		}
	};

	return {
		onEvent(chunk: any) {
			chunks++;
			if (chunk?.error) {
				const error = chunk.error;
				const type =
					typeof error.type === "string" ? error.type : typeof error.code === "string" ? error.code : undefined;
				const numeric = typeof error.code === "number" ? error.code : undefined;
				throw new ProviderError(typeof error.message === "string" ? error.message : JSON.stringify(error), {
					type,
					status: numeric,
					retryable: isRetryableErrorType(type) || (numeric !== undefined && (numeric === 429 || numeric >= 500)),
				});
			}
			if (chunk.id) out.setResponseId(chunk.id);
			if (chunk.model) out.setResponseModel(chunk.model);
			if (chunk.usage) out.setUsage(mapUsage(chunk.usage));
			const choice = Array.isArray(chunk.choices) ? chunk.choices.find((c: any) => (c?.index ?? 0) === 0) : undefined;
			if (!choice) return;
			const delta = choice.delta ?? {};

			for (const field of REASONING_FIELDS) {
				const value = delta[field];
				if (typeof value === "string" && value !== "") {
					openThinking(field);
					out.appendThinking(thinkingIndex, value);
					break;
				}
			}
			if (Array.isArray(delta.reasoning_details) && delta.reasoning_details.length > 0) {
				// OpenRouter: opaque reasoning (signatures, encrypted data) to send back with the next call.
				openThinking();
				mergeDetails(delta.reasoning_details);
			}

			const text =
				(typeof delta.content === "string" ? delta.content : "") +
				(typeof delta.refusal === "string" ? delta.refusal : "");
			if (text !== "") appendContent(text);

			if (Array.isArray(delta.tool_calls)) {
				for (const call of delta.tool_calls) {
					const wireIndex = typeof call.index === "number" ? call.index : toolIndex.size;
					let index = toolIndex.get(wireIndex);
					const id = typeof call.id === "string" && call.id !== "" ? call.id : undefined;
					// Some servers reuse index 0 for every call; a new id means a new call.
					if (index !== undefined && id && out.message.content[index]?.type === "toolCall") {
						const existing = out.message.content[index] as { id: string };
						if (existing.id && existing.id !== id) index = undefined;
					}
					if (index === undefined) {
						closeTextAndThinking();
						for (const open of toolIndex.values()) out.endBlock(open);
						index = out.startToolCall(id ?? `call_${wireIndex}_${Date.now().toString(36)}`, call.function?.name ?? "");
						toolIndex.set(wireIndex, index);
					} else {
						if (id) out.updateToolCall(index, { id });
						if (call.function?.name) {
							const current = out.message.content[index] as { name: string };
							if (!current.name) out.updateToolCall(index, { name: call.function.name });
						}
					}
					const args = call.function?.arguments;
					if (typeof args === "string") out.appendToolArgs(index, args);
					else if (args && typeof args === "object") out.setToolArgsObject(index, args);
				}
			}

			if (choice.finish_reason) finishReason = choice.finish_reason;
		},
		// A proxy that cuts the stream ends it cleanly; only a finish_reason or [DONE] says the answer is whole.
		finished: (done) => done || finishReason !== undefined,
		finishSignal: "finish_reason or [DONE]",
		onEnd() {
			closeThinking();
			if (chunks === 0) {
				// Nothing at all (a proxy closing early): safe to retry, nothing was shown.
				throw new ProviderError("The server ended the stream without sending any chunk", { retryable: true });
			}
			const reason = mapStopReason(finishReason);
			if (reason === "error") {
				throw new ProviderError(`The provider stopped the response: finish_reason "${finishReason}"`);
			}
			if (reason !== "aborted") out.setStopReason(reason);
		},
	};
}

/** Chat Completions usage → our usage: `input` excludes cached prompt tokens (`cacheRead`). */
export function mapUsage(usage: any): TokenCounts {
	// DeepSeek reports cache hits in its own field.
	const details = usage.prompt_tokens_details?.cached_tokens;
	const cached = Number.isFinite(details) && details !== 0 ? details : usage.prompt_cache_hit_tokens;
	return openAITokenCounts(usage.prompt_tokens, cached, usage.completion_tokens, usage.total_tokens);
}
