/**
 * OpenAI Responses wire API (`api: "openai-responses"`, `POST {baseUrl}/responses`, `stream: true`).
 *
 * Request: stateless (`store: false`); for reasoning models `include: ["reasoning.encrypted_content"]`
 * so each reasoning item comes back encrypted and is replayed verbatim on the next call (kept as the
 * thinking block's `thinkingSignature`, the item as JSON) — that is what lets multi-turn reasoning
 * with tools work without server-side state. Messages are input items: user `input_text` /
 * `input_image`, assistant `message` items (id and `phase` kept in `textSignature`),
 * `function_call` items (our tool-call id is `call_id|item_id`), `function_call_output` items
 * (with images as `input_image` parts).
 *
 * Stream: `response.output_item.added|done` open and close blocks (reasoning → thinking, message →
 * text, function_call → toolCall; other item types such as web_search_call are skipped), deltas
 * (`reasoning_summary_text`, `reasoning_text`, `output_text`, `refusal`,
 * `function_call_arguments`) fill them, `response.completed|incomplete` carry usage and the stop
 * reason, `response.failed` and `error` fail the call.
 */

import type { AssistantMessageEventStream } from "../event-stream.js";
import type {
	AssistantMessage,
	Context,
	ImageContent,
	Model,
	SimpleStreamOptions,
	StopReason,
	StreamOptions,
	ThinkingLevel,
	Tool,
} from "../types.js";
import { imageDataUrl, openAIRequestTarget, openAITokenCounts, withReasoningEffort } from "./openai-shared.js";
import type { OutputBuilder, TokenCounts } from "./output-builder.js";
import { isRetryableErrorType, ProviderError } from "./provider-errors.js";
import { streamProvider, type WireHandler } from "./provider-stream.js";
import { isSameModel, normalizeToolCallId, toolResultParts, transformMessages } from "./transform-messages.js";

/** Options of {@link streamOpenAIResponses}; `streamSimple` derives them from `SimpleStreamOptions`. */
export interface OpenAIResponsesOptions extends StreamOptions {
	reasoningEffort?: ThinkingLevel | (string & {});
	/** Reasoning summary detail; default `auto` when reasoning is on. `null` = none. */
	reasoningSummary?: "auto" | "detailed" | "concise" | null;
	serviceTier?: "auto" | "default" | "flex" | "priority";
	toolChoice?: "auto" | "none" | "required" | { type: "function"; name: string };
}

/** Streams one Responses call. Never throws; see `streamProvider` for failures and retries. */
export function streamOpenAIResponses(
	model: Model<"openai-responses">,
	context: Context,
	options: OpenAIResponsesOptions = {},
): AssistantMessageEventStream {
	return streamProvider({
		model,
		options,
		buildRequest: () => {
			const { url, headers } = openAIRequestTarget(model, "responses", options.apiKey);
			if (options.sessionId && model.compat && (model.compat as any).sendSessionIdHeader)
				headers.session_id = options.sessionId;
			return { url, headers, body: buildParams(model, context, options) };
		},
		createHandler: (out) => createResponsesHandler(out),
	});
}

/** `streamSimple` entry: `reasoning` → `reasoningEffort` (through the model's `thinkingLevelMap`). */
export function streamSimpleOpenAIResponses(
	model: Model<"openai-responses">,
	context: Context,
	options: SimpleStreamOptions = {},
): AssistantMessageEventStream {
	return streamOpenAIResponses(model, context, withReasoningEffort<OpenAIResponsesOptions>(model, options));
}

/** The request body (before `onPayload`). */
export function buildParams(
	model: Model<"openai-responses">,
	context: Context,
	options: OpenAIResponsesOptions = {},
): Record<string, unknown> {
	const params: Record<string, unknown> = {
		model: model.id,
		input: convertMessages(model, context),
		stream: true,
		store: false,
	};
	if (options.maxTokens) params.max_output_tokens = options.maxTokens;
	if (options.temperature !== undefined) params.temperature = options.temperature;
	if (context.tools && context.tools.length > 0) {
		params.tools = convertTools(context.tools);
		if (options.toolChoice) params.tool_choice = options.toolChoice;
	}
	if (options.sessionId && options.cacheRetention !== "none") {
		params.prompt_cache_key = options.sessionId;
		if (options.cacheRetention === "long") params.prompt_cache_retention = "24h";
	}
	if (options.serviceTier) params.service_tier = options.serviceTier;
	if (options.metadata) params.metadata = stringMetadata(options.metadata);
	if (model.reasoning) {
		params.include = ["reasoning.encrypted_content"];
		const effort = options.reasoningEffort ?? offEffort(model);
		if (effort) {
			const reasoning: Record<string, unknown> = { effort };
			const summary = options.reasoningSummary === undefined ? "auto" : options.reasoningSummary;
			if (summary && effort !== "none") reasoning.summary = summary;
			params.reasoning = reasoning;
		}
	}
	return params;
}

function offEffort(model: Model<any>): string | undefined {
	const off = model.thinkingLevelMap?.off;
	return typeof off === "string" ? off : undefined;
}

/** Responses metadata values must be strings (at most 16 keys). */
function stringMetadata(metadata: Record<string, unknown>): Record<string, string> {
	const out: Record<string, string> = {};
	for (const [key, value] of Object.entries(metadata).slice(0, 16)) {
		if (value === undefined || value === null) continue;
		out[key] = (typeof value === "string" ? value : JSON.stringify(value)).slice(0, 512);
	}
	return out;
}

/** Decoded `textSignature` of a Responses message: the item id and its `phase`. */
export interface TextSignature {
	id: string;
	phase?: string;
}

export function encodeTextSignature(id: string, phase?: string | null): string {
	return JSON.stringify(phase ? { v: 1, id, phase } : { v: 1, id });
}

export function decodeTextSignature(signature: string | undefined): TextSignature | undefined {
	if (!signature) return undefined;
	if (signature.startsWith("{")) {
		try {
			const parsed = JSON.parse(signature);
			if (typeof parsed?.id === "string")
				return typeof parsed.phase === "string" ? { id: parsed.id, phase: parsed.phase } : { id: parsed.id };
		} catch {
			return undefined;
		}
	}
	return { id: signature };
}

/** The `input` items (system prompt first, as `developer` for reasoning models). */
export function convertMessages(model: Model<"openai-responses">, context: Context): Record<string, unknown>[] {
	const items: Record<string, unknown>[] = [];
	if (context.systemPrompt) {
		items.push({ role: model.reasoning ? "developer" : "system", content: context.systemPrompt });
	}
	// call_id: at most 64 chars of [a-zA-Z0-9_-]; ids from other APIs are normalised, ours keep their `|item` suffix.
	const messages = transformMessages(context.messages, model, (id) => normalizeCallId(id));
	for (const message of messages) {
		if (message.role === "user") {
			const content =
				typeof message.content === "string"
					? [{ type: "input_text", text: message.content }]
					: message.content.map((block) =>
							block.type === "text" ? { type: "input_text", text: block.text } : inputImage(block),
						);
			items.push({ role: "user", content });
		} else if (message.role === "assistant") {
			items.push(...convertAssistant(message, model));
		} else {
			const [callId] = splitToolCallId(message.toolCallId);
			const { text, images } = toolResultParts(message.content);
			const output =
				images.length > 0 && model.input.includes("image")
					? [...(text ? [{ type: "input_text", text }] : []), ...images.map(inputImage)]
					: text;
			items.push({ type: "function_call_output", call_id: callId, output });
		}
	}
	return items;
}

function convertAssistant(message: AssistantMessage, model: Model<any>): Record<string, unknown>[] {
	const items: Record<string, unknown>[] = [];
	const same = isSameModel(message, model);
	for (const block of message.content) {
		if (block.type === "thinking") {
			// Only our own reasoning items can be replayed (transformMessages turned others into text).
			if (same && block.thinkingSignature) {
				try {
					items.push(JSON.parse(block.thinkingSignature));
				} catch {
					// Not a reasoning item (e.g. from an older format): nothing to replay.
				}
			}
		} else if (block.type === "text") {
			const signature = same ? decodeTextSignature(block.textSignature) : undefined;
			const item: Record<string, unknown> = {
				type: "message",
				role: "assistant",
				content: [{ type: "output_text", text: block.text, annotations: [] }],
				status: "completed",
			};
			if (signature?.id?.startsWith("msg_")) item.id = signature.id;
			if (signature?.phase) item.phase = signature.phase;
			items.push(item);
		} else {
			const [callId, itemId] = splitToolCallId(block.id);
			const item: Record<string, unknown> = {
				type: "function_call",
				call_id: callId,
				name: block.name,
				arguments: JSON.stringify(block.arguments ?? {}),
			};
			if (same && itemId?.startsWith("fc_")) item.id = itemId;
			items.push(item);
		}
	}
	return items;
}

function inputImage(image: ImageContent): Record<string, unknown> {
	return { type: "input_image", detail: "auto", image_url: imageDataUrl(image) };
}

/** Our tool-call id for Responses is `call_id|item_id`; other ids have no item part. */
export function splitToolCallId(id: string): [string, string | undefined] {
	const bar = id.indexOf("|");
	return bar < 0 ? [id, undefined] : [id.slice(0, bar), id.slice(bar + 1)];
}

function normalizeCallId(id: string): string {
	const [callId, itemId] = splitToolCallId(id);
	const clean = normalizeToolCallId(callId, 64);
	return itemId ? `${clean}|${itemId}` : clean;
}

/** Tools as `{type: "function", name, description, parameters, strict: false}`. */
export function convertTools(tools: Tool[]): Record<string, unknown>[] {
	return tools.map((tool) => ({
		type: "function",
		name: tool.name,
		description: tool.description,
		parameters: tool.parameters,
		strict: false,
	}));
}

/**
 * Response status (+ `incomplete_details.reason`) → stop reason: `completed` → stop (toolUse when
 * there are function calls), `incomplete` for `max_output_tokens` → length, for `content_filter` →
 * error, `failed`/`cancelled` → error; anything unknown → stop.
 */
export function mapStopReason(status: string | undefined, incompleteReason?: string): StopReason {
	switch (status) {
		case "incomplete":
			return incompleteReason === "content_filter" ? "error" : "length";
		case "failed":
		case "cancelled":
			return "error";
		default:
			return "stop";
	}
}

/** Maps Responses events onto the output builder (one attempt). */
export function createResponsesHandler(out: OutputBuilder): WireHandler {
	/** output_index → content index */
	const blocks = new Map<number, number>();
	/** reasoning output_index → number of summary parts seen */
	const summaryParts = new Map<number, number>();
	let completed = false;

	const blockFor = (event: any): number | undefined => blocks.get(event.output_index);

	return {
		onEvent(event: any, name) {
			const type: string = event?.type ?? name;
			switch (type) {
				case "response.created":
				case "response.in_progress":
					out.setResponseId(event.response?.id);
					out.setResponseModel(event.response?.model);
					return;
				case "response.output_item.added": {
					const item = event.item ?? {};
					let index: number | undefined;
					if (item.type === "reasoning") index = out.startThinking();
					else if (item.type === "message") index = out.startText();
					else if (item.type === "function_call") {
						index = out.startToolCall(item.id ? `${item.call_id}|${item.id}` : item.call_id, item.name ?? "");
						if (item.arguments) out.appendToolArgs(index, item.arguments);
					}
					if (index !== undefined) blocks.set(event.output_index, index);
					return;
				}
				case "response.reasoning_summary_part.added": {
					const index = blockFor(event);
					const seen = summaryParts.get(event.output_index) ?? 0;
					summaryParts.set(event.output_index, seen + 1);
					if (index !== undefined && seen > 0) out.appendThinking(index, "\n\n");
					return;
				}
				case "response.reasoning_summary_text.delta":
				case "response.reasoning_text.delta": {
					const index = blockFor(event);
					if (index !== undefined && typeof event.delta === "string") out.appendThinking(index, event.delta);
					return;
				}
				case "response.output_text.delta":
				case "response.refusal.delta": {
					const index = blockFor(event);
					if (index !== undefined && typeof event.delta === "string") out.appendText(index, event.delta);
					return;
				}
				case "response.function_call_arguments.delta": {
					const index = blockFor(event);
					if (index !== undefined && typeof event.delta === "string") out.appendToolArgs(index, event.delta);
					return;
				}
				case "response.function_call_arguments.done": {
					const index = blockFor(event);
					if (index !== undefined && typeof event.arguments === "string") out.setToolArgs(index, event.arguments);
					return;
				}
				case "response.output_item.done": {
					const index = blockFor(event);
					const item = event.item ?? {};
					if (index === undefined || !out.isOpen(index)) return;
					if (item.type === "reasoning") {
						const block = out.message.content[index];
						// Summary text arrives in deltas; an item without them still carries its summary.
						if (block?.type === "thinking" && block.thinking === "" && Array.isArray(item.summary)) {
							out.appendThinking(index, item.summary.map((part: any) => part?.text ?? "").join("\n\n"));
						}
						out.setThinkingSignature(index, JSON.stringify(item));
					} else if (item.type === "message") {
						const block = out.message.content[index];
						const full = Array.isArray(item.content)
							? item.content.map((part: any) => (part?.type === "refusal" ? part.refusal : (part?.text ?? ""))).join("")
							: "";
						if (block?.type === "text" && full.startsWith(block.text))
							out.appendText(index, full.slice(block.text.length));
						if (item.id) out.setTextSignature(index, encodeTextSignature(item.id, item.phase));
					} else if (item.type === "function_call") {
						if (typeof item.arguments === "string") out.setToolArgs(index, item.arguments);
					}
					out.endBlock(index);
					return;
				}
				case "response.completed":
				case "response.incomplete": {
					const response = event.response ?? {};
					out.setResponseId(response.id);
					if (response.usage) out.setUsage(mapUsage(response.usage));
					const reason = mapStopReason(response.status, response.incomplete_details?.reason);
					if (reason === "error") {
						throw new ProviderError(
							`The provider stopped the response: ${response.incomplete_details?.reason ?? response.status}`,
						);
					}
					if (reason === "stop" || reason === "length" || reason === "toolUse") out.setStopReason(reason);
					completed = true;
					return true;
				}
				case "response.failed": {
					const error = event.response?.error;
					throw providerError(error, `Response failed (${event.response?.status ?? "failed"})`);
				}
				case "error":
					throw providerError(event.error ?? event, "Stream error");
				default:
					return;
			}
		},
		finished: () => completed,
		finishSignal: "response.completed",
	};
}

function providerError(error: any, fallback: string): ProviderError {
	const code = typeof error?.code === "string" ? error.code : typeof error?.type === "string" ? error.type : undefined;
	const message = typeof error?.message === "string" ? error.message : fallback;
	return new ProviderError(code ? `${code}: ${message}` : message, {
		type: code,
		retryable: isRetryableErrorType(code),
	});
}

/** Responses usage → our usage: `input` excludes cached input tokens (`cacheRead`). */
export function mapUsage(usage: any): TokenCounts {
	return openAITokenCounts(
		usage.input_tokens,
		usage.input_tokens_details?.cached_tokens,
		usage.output_tokens,
		usage.total_tokens,
	);
}
