/**
 * Google Gemini wire API (`api: "google-generative-ai"`,
 * `POST {baseUrl}/models/{id}:streamGenerateContent?alt=sse`, auth `x-goog-api-key`).
 *
 * Request: `systemInstruction`, `contents` with `user`/`model` roles, images as `inlineData`,
 * assistant history replayed part by part with each part's `thoughtSignature` (text →
 * `textSignature`, thought summary → `thinkingSignature`, function call → `ToolCall.thoughtSignature`),
 * tool results as `functionResponse` parts (images inside them for Gemini 3+, else in a following
 * user turn), tools as `functionDeclarations` with `parametersJsonSchema` (full JSON Schema), and
 * `generationConfig.thinkingConfig` (`thinkingBudget` for 2.5, `thinkingLevel` for 3).
 *
 * Stream: see {@link createGeminiHandler}.
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
import { type GeminiPartialArg, StreamedArgs } from "./google-gemini-args.js";
import type { OutputBuilder } from "./output-builder.js";
import { isRetryableErrorType, ProviderError } from "./provider-errors.js";
import { type DriverOptions, streamProvider, type WireHandler } from "./provider-stream.js";
import { sanitizeText } from "./sanitize-text.js";
import { buildBaseOptions, clampReasoning } from "./simple-options.js";
import { normalizeToolCallId, toolResultParts, transformMessages } from "./transform-messages.js";

export type GeminiThinkingLevel = "MINIMAL" | "LOW" | "MEDIUM" | "HIGH";

/** Options of {@link streamGoogleGemini}; `streamSimple` derives them from {@link SimpleStreamOptions}. */
export interface GoogleGeminiOptions extends StreamOptions {
	toolChoice?: "auto" | "none" | "any";
	/**
	 * `enabled: true` sends `includeThoughts` with `level` (Gemini 3) or `budgetTokens` (2.5; -1 =
	 * dynamic); `enabled: false` sends the model's "as little as possible" config; absent sends nothing.
	 */
	thinking?: { enabled: boolean; budgetTokens?: number; level?: GeminiThinkingLevel };
}

// ---- wire types (the subset we send and read) ----

export interface GeminiPart {
	text?: string;
	thought?: boolean;
	thoughtSignature?: string;
	inlineData?: { mimeType: string; data: string };
	functionCall?: {
		name?: string;
		args?: Record<string, unknown>;
		id?: string;
		partialArgs?: GeminiPartialArg[];
		willContinue?: boolean;
	};
	functionResponse?: {
		name: string;
		response: Record<string, unknown>;
		parts?: { inlineData: { mimeType: string; data: string } }[];
		id?: string;
	};
	executableCode?: { language?: string; code?: string };
	codeExecutionResult?: { outcome?: string; output?: string };
	[key: string]: unknown;
}

export interface GeminiContent {
	role: "user" | "model";
	parts: GeminiPart[];
}

export interface GeminiFunctionDeclaration {
	name: string;
	description: string;
	parametersJsonSchema?: unknown;
	parameters?: unknown;
}

export interface GeminiParams {
	contents: GeminiContent[];
	systemInstruction?: { parts: { text: string }[] };
	tools?: { functionDeclarations: GeminiFunctionDeclaration[] }[];
	toolConfig?: { functionCallingConfig: { mode: "AUTO" | "NONE" | "ANY" } };
	generationConfig?: {
		temperature?: number;
		maxOutputTokens?: number;
		thinkingConfig?: { includeThoughts?: boolean; thinkingBudget?: number; thinkingLevel?: GeminiThinkingLevel };
	};
}

// ---- request ----

/**
 * The request body. `thinkingConfig` goes inside `generationConfig` (REST shape); it is only sent to
 * reasoning models. `sessionId` and `metadata` have no Gemini counterpart and are not sent.
 */
export function buildParams(
	model: Model<"google-generative-ai">,
	context: Context,
	options: GoogleGeminiOptions = {},
): GeminiParams {
	const params: GeminiParams = { contents: convertMessages(model, context.messages) };
	if (context.systemPrompt) params.systemInstruction = { parts: [{ text: sanitizeText(context.systemPrompt) }] };
	if (context.tools && context.tools.length > 0) {
		params.tools = convertTools(context.tools);
		if (options.toolChoice) {
			params.toolConfig = { functionCallingConfig: { mode: options.toolChoice.toUpperCase() as "AUTO" } };
		}
	}
	const generationConfig: NonNullable<GeminiParams["generationConfig"]> = {};
	if (options.temperature !== undefined) generationConfig.temperature = options.temperature;
	if (options.maxTokens !== undefined) generationConfig.maxOutputTokens = options.maxTokens;
	if (model.reasoning && options.thinking?.enabled) {
		const { level, budgetTokens } = options.thinking;
		generationConfig.thinkingConfig = {
			includeThoughts: true,
			...(level !== undefined
				? { thinkingLevel: level }
				: budgetTokens !== undefined && { thinkingBudget: budgetTokens }),
		};
	} else if (model.reasoning && options.thinking?.enabled === false) {
		const off = disabledThinkingConfig(model.id);
		if (off) generationConfig.thinkingConfig = off;
	}
	if (Object.keys(generationConfig).length > 0) params.generationConfig = generationConfig;
	return params;
}

/** Request headers, lowest precedence first: ours, then model.headers, then options.headers. */
export function buildHeaders(
	model: Model<"google-generative-ai">,
	apiKey: string,
	options: GoogleGeminiOptions = {},
): Record<string, string> {
	return {
		"content-type": "application/json",
		accept: "text/event-stream",
		"x-goog-api-key": apiKey,
		...model.headers,
		...options.headers,
	};
}

/**
 * `{baseUrl}/models/{id}:streamGenerateContent?alt=sse`. A bare host (no path) gets `/v1beta`
 * (the version that has thinking and `parametersJsonSchema`); a base URL with a path is used as is.
 */
export function streamUrl(baseUrl: string, modelId: string): string {
	let base = baseUrl.replace(/\/+$/, "");
	if (new URL(base).pathname === "/" || new URL(base).pathname === "") base = `${base}/v1beta`;
	const id = modelId.startsWith("models/") ? modelId.slice("models/".length) : modelId;
	return `${base}/models/${encodeURIComponent(id)}:streamGenerateContent?alt=sse`;
}

/** Gemini models that need explicit ids on function calls and responses (Claude / gpt-oss served by Google). */
export function requiresToolCallId(modelId: string): boolean {
	return modelId.startsWith("claude-") || modelId.startsWith("gpt-oss-");
}

function geminiMajorVersion(modelId: string): number | undefined {
	const match = /^gemini(?:-live)?-(\d+)/.exec(modelId.toLowerCase());
	return match ? Number.parseInt(match[1], 10) : undefined;
}

/** Images inside `functionResponse.parts` are accepted from Gemini 3 on. */
function supportsMultimodalFunctionResponse(modelId: string): boolean {
	const major = geminiMajorVersion(modelId);
	return major === undefined || major >= 3;
}

const BASE64 = /^[A-Za-z0-9+/]+={0,2}$/;

/** A thought signature is replayed only to the model that made it, and only if it is real base64. */
function replayableSignature(sameModel: boolean, signature: string | undefined): string | undefined {
	return sameModel && signature && signature.length % 4 === 0 && BASE64.test(signature) ? signature : undefined;
}

function convertUserParts(content: (TextContent | ImageContent)[]): GeminiPart[] {
	return content.map((item) =>
		item.type === "text"
			? { text: sanitizeText(item.text) }
			: { inlineData: { mimeType: item.mimeType, data: item.data } },
	);
}

/**
 * Our messages → Gemini `contents`, after `transformMessages`. Parts keep their own
 * signatures (never moved between parts); consecutive tool results share one `user` content.
 */
export function convertMessages(model: Model<"google-generative-ai">, messages: Message[]): GeminiContent[] {
	const contents: GeminiContent[] = [];
	const withIds = requiresToolCallId(model.id);
	const normalizeId = withIds ? (id: string) => normalizeToolCallId(id, 64) : undefined;
	for (const msg of transformMessages(messages, model, normalizeId)) {
		if (msg.role === "user") {
			const parts =
				typeof msg.content === "string" ? [{ text: sanitizeText(msg.content) }] : convertUserParts(msg.content);
			if (parts.length > 0) contents.push({ role: "user", parts });
		} else if (msg.role === "assistant") {
			const sameModel = msg.provider === model.provider && msg.model === model.id;
			const parts: GeminiPart[] = [];
			for (const block of msg.content) {
				if (block.type === "text") {
					const thoughtSignature = replayableSignature(sameModel, block.textSignature);
					// An empty text part still matters when it carries the turn's signature.
					if (block.text.trim() === "" && !thoughtSignature) continue;
					parts.push({ text: sanitizeText(block.text), ...(thoughtSignature && { thoughtSignature }) });
				} else if (block.type === "thinking") {
					const thoughtSignature = replayableSignature(sameModel, block.thinkingSignature);
					if (block.thinking.trim() === "" && !thoughtSignature) continue;
					parts.push({
						thought: true,
						text: sanitizeText(block.thinking),
						...(thoughtSignature && { thoughtSignature }),
					});
				} else {
					const thoughtSignature = replayableSignature(sameModel, block.thoughtSignature);
					parts.push({
						functionCall: { name: block.name, args: block.arguments ?? {}, ...(withIds && { id: block.id }) },
						...(thoughtSignature && { thoughtSignature }),
					});
				}
			}
			if (parts.length > 0) contents.push({ role: "model", parts });
		} else {
			const { text, images } = toolResultParts(msg.content);
			const imageParts = images.map((img) => ({ inlineData: { mimeType: img.mimeType, data: img.data } }));
			const inline = images.length > 0 && supportsMultimodalFunctionResponse(model.id);
			const value = text.length > 0 ? sanitizeText(text) : images.length > 0 ? "(see attached image)" : "";
			const part: GeminiPart = {
				functionResponse: {
					name: msg.toolName,
					response: msg.isError ? { error: value } : { output: value },
					...(inline && { parts: imageParts }),
					...(withIds && { id: msg.toolCallId }),
				},
			};
			const last = contents[contents.length - 1];
			if (last?.role === "user" && last.parts.some((p) => p.functionResponse)) last.parts.push(part);
			else contents.push({ role: "user", parts: [part] });
			if (images.length > 0 && !inline) {
				contents.push({ role: "user", parts: [{ text: "Tool result image:" }, ...imageParts] });
			}
		}
	}
	return contents;
}

const SCHEMA_META_KEYS = new Set([
	"$schema",
	"$id",
	"$anchor",
	"$dynamicAnchor",
	"$vocabulary",
	"$comment",
	"$defs",
	"definitions",
]);

/** Removes JSON Schema meta keywords that the OpenAPI-subset `parameters` field rejects. */
export function sanitizeSchemaForParameters(schema: unknown): unknown {
	if (Array.isArray(schema)) return schema.map(sanitizeSchemaForParameters);
	if (typeof schema !== "object" || schema === null) return schema;
	const out: Record<string, unknown> = {};
	for (const [key, value] of Object.entries(schema)) {
		if (!SCHEMA_META_KEYS.has(key)) out[key] = sanitizeSchemaForParameters(value);
	}
	return out;
}

/**
 * Tools → one `functionDeclarations` group. Default `parametersJsonSchema` takes full JSON Schema
 * (anyOf, const, $ref...); `useParameters` sends the OpenAPI-subset `parameters` field instead,
 * sanitized, for gateways that only know it.
 */
export function convertTools(
	tools: Tool[],
	useParameters = false,
): { functionDeclarations: GeminiFunctionDeclaration[] }[] {
	return [
		{
			functionDeclarations: tools.map((tool) => ({
				name: tool.name,
				description: tool.description,
				...(useParameters
					? { parameters: sanitizeSchemaForParameters(tool.parameters) }
					: { parametersJsonSchema: JSON.parse(JSON.stringify(tool.parameters)) }),
			})),
		},
	];
}

/**
 * Gemini `finishReason` → our stop reason. `STOP` with function calls is turned into `toolUse` by the
 * stream (Gemini has no separate reason). Safety, recitation, malformed calls and the like end the
 * call as an error; an unknown future value too (we cannot tell the output is complete).
 */
export function mapStopReason(reason: string | undefined): StopReason {
	switch (reason) {
		case "STOP":
			return "stop";
		case "MAX_TOKENS":
			return "length";
		default:
			return "error";
	}
}

// ---- simple options ----

function isGemini3Pro(id: string): boolean {
	return /gemini-3(?:\.\d+)?-pro/.test(id.toLowerCase());
}
function isGemini3Flash(id: string): boolean {
	return /gemini-3(?:\.\d+)?-flash/.test(id.toLowerCase());
}

/** The lowest thinking a model allows: 2.5 Pro cannot turn thinking off, so nothing is sent for it. */
function disabledThinkingConfig(
	id: string,
): { thinkingBudget?: number; thinkingLevel?: GeminiThinkingLevel } | undefined {
	if (isGemini3Pro(id)) return { thinkingLevel: "LOW" };
	if (isGemini3Flash(id)) return { thinkingLevel: "MINIMAL" };
	if (id.includes("2.5-pro")) return undefined;
	return { thinkingBudget: 0 };
}

const BUDGETS_25: Record<string, Record<Exclude<ThinkingLevel, "xhigh">, number>> = {
	"2.5-pro": { minimal: 128, low: 2048, medium: 8192, high: 32768 },
	"2.5-flash-lite": { minimal: 512, low: 2048, medium: 8192, high: 24576 },
	"2.5-flash": { minimal: 128, low: 2048, medium: 8192, high: 24576 },
};

/**
 * {@link SimpleStreamOptions} → {@link GoogleGeminiOptions}: a level named by the model's
 * `thinkingLevelMap` is sent as `thinkingLevel`; else Gemini 3 gets a `thinkingLevel` (3 Pro only has
 * LOW/HIGH), other models a `thinkingBudget` from `thinkingBudgets`, else the per-model
 * defaults for 2.5, else -1 (dynamic). `xhigh` is treated as `high`.
 */
export function toGeminiOptions(model: Model<any>, options: SimpleStreamOptions = {}): GoogleGeminiOptions {
	const { maxTokens, ...base } = buildBaseOptions(model, options);
	const { reasoning, thinkingBudgets } = options;
	if (!reasoning) return { ...base, maxTokens, thinking: { enabled: false } };
	const level = clampReasoning(reasoning)!;
	// A model's thinkingLevelMap names the API level for a reasoning level (null: not offered, use ours).
	const mapped = model.thinkingLevelMap?.[reasoning];
	if (typeof mapped === "string") {
		return { ...base, maxTokens, thinking: { enabled: true, level: mapped.toUpperCase() as GeminiThinkingLevel } };
	}
	if (isGemini3Pro(model.id)) {
		return {
			...base,
			maxTokens,
			thinking: { enabled: true, level: level === "minimal" || level === "low" ? "LOW" : "HIGH" },
		};
	}
	if (isGemini3Flash(model.id)) {
		return { ...base, maxTokens, thinking: { enabled: true, level: level.toUpperCase() as GeminiThinkingLevel } };
	}
	const family = Object.keys(BUDGETS_25).find(
		(key) => model.id.includes(key) && !(key === "2.5-flash" && model.id.includes("lite")),
	);
	const budget = thinkingBudgets?.[level] ?? (family ? BUDGETS_25[family][level] : -1);
	return { ...base, maxTokens, thinking: { enabled: true, budgetTokens: budget } };
}

// ---- stream ----

/**
 * Streams one Gemini call through the shared driver (retries, timeout, abort, HTTP errors). Never
 * throws: a missing key, an HTTP error (`HTTP 429: Resource has been exhausted...`), an error chunk,
 * a blocked prompt, a non-STOP/MAX_TOKENS finish or a cut stream all end in an `error` event.
 */
export function streamGoogleGemini(
	model: Model<"google-generative-ai">,
	context: Context,
	options: GoogleGeminiOptions & DriverOptions = {},
): AssistantMessageEventStream {
	return streamProvider({
		model,
		options,
		buildRequest: () => {
			const apiKey = resolveApiKey(model.provider, options.apiKey);
			if (!apiKey) throw new ProviderError(missingApiKeyMessage(model.provider));
			return {
				url: streamUrl(model.baseUrl, model.id),
				headers: buildHeaders(model, apiKey, options),
				body: buildParams(model, context, options),
			};
		},
		createHandler: (out) => createGeminiHandler(out),
	});
}

/** The `streamSimple` entry point: {@link toGeminiOptions} then {@link streamGoogleGemini}. */
export function streamSimpleGoogleGemini(
	model: Model<"google-generative-ai">,
	context: Context,
	options?: SimpleStreamOptions,
): AssistantMessageEventStream {
	return streamGoogleGemini(model, context, toGeminiOptions(model, options));
}

interface UsageMetadata {
	promptTokenCount?: number;
	candidatesTokenCount?: number;
	thoughtsTokenCount?: number;
	cachedContentTokenCount?: number;
	toolUsePromptTokenCount?: number;
	totalTokenCount?: number;
}

let toolCallCounter = 0;

/**
 * Maps Gemini `GenerateContentResponse` chunks (first candidate only) onto the output builder:
 *
 * - Consecutive `text` parts extend one text block, `thought: true` parts one thinking block; a change
 *   of kind, a function call, or a second signed part starts a new block. A part's `thoughtSignature` is kept on the block it
 *   belongs to (`textSignature` / `thinkingSignature` / `ToolCall.thoughtSignature`), never moved; an
 *   empty text part carrying only a signature (Gemini 3 sends one last) is kept for that reason.
 * - A complete `functionCall` (`name` + `args`) is one tool call, start/delta/end at once. A Vertex
 *   streamed call (`streamFunctionCallArguments`) starts with `name` + `willContinue`, grows from
 *   `partialArgs` (jsonPath + value pieces, turned into JSON text so `arguments` grows like any other
 *   provider's) and ends at an empty `functionCall`. Ids: the call's own `id`, else generated.
 * - `executableCode`, `codeExecutionResult`, `inlineData` (generated images) and unknown parts are not
 *   representable as our content: each is recorded as a `{type: "gemini_part", kind, value,
 *   thoughtSignature?}` diagnostic (code and output kept, image data replaced by its size) and the
 *   text around them continues. They are not replayed on the next call.
 * - Usage: the last `usageMetadata` counts. input = prompt − cached + tool-use prompt, output =
 *   candidates + thoughts, cacheRead = cached, total = totalTokenCount.
 * - `STOP` (turned into `toolUse` when the message has tool calls) and `MAX_TOKENS` end normally; any
 *   other finish (SAFETY, MALFORMED_FUNCTION_CALL, ...), a blocked prompt, an `error` chunk or a stream
 *   without a finishReason fail the call.
 */
export function createGeminiHandler(out: OutputBuilder): WireHandler {
	let current: { kind: "text" | "thinking"; index: number; signed: boolean } | undefined;
	let streaming: { index: number; args: StreamedArgs } | undefined;
	const seenIds = new Set<string>();
	let finishReason: string | undefined;
	let finishMessage: string | undefined;
	let blockReason: string | undefined;

	const closeCurrent = () => {
		if (current) out.endBlock(current.index);
		current = undefined;
	};
	const closeStreaming = () => {
		if (!streaming) return;
		out.appendToolArgs(streaming.index, streaming.args.finish());
		if (!streaming.args.consistent) out.setToolArgsObject(streaming.index, streaming.args.value);
		out.endBlock(streaming.index);
		streaming = undefined;
	};
	const newId = (provided: string | undefined, name: string) => {
		const id =
			provided && !seenIds.has(provided)
				? provided
				: `${name || "call"}_${Date.now().toString(36)}_${++toolCallCounter}`;
		seenIds.add(id);
		return id;
	};

	const onText = (part: GeminiPart) => {
		const kind = part.thought === true ? "thinking" : "text";
		const text = part.text ?? "";
		const signature = part.thoughtSignature || undefined;
		if (text === "" && !signature) return;
		closeStreaming();
		// A second signed part starts its own block, so each signature stays with the text it came with.
		if (current?.kind !== kind || (signature && current.signed)) {
			closeCurrent();
			current = { kind, index: kind === "text" ? out.startText() : out.startThinking(), signed: false };
		}
		if (signature) current.signed = true;
		if (kind === "text") {
			out.appendText(current.index, text);
			if (signature) out.setTextSignature(current.index, signature);
		} else {
			out.appendThinking(current.index, text);
			if (signature) out.setThinkingSignature(current.index, signature);
		}
	};

	const onFunctionCall = (part: GeminiPart) => {
		const call = part.functionCall!;
		const signature = part.thoughtSignature || undefined;
		if (call.partialArgs || (call.willContinue && !call.name)) {
			// A piece of the open streamed call.
			if (!streaming) return;
			for (const piece of call.partialArgs ?? []) out.appendToolArgs(streaming.index, streaming.args.add(piece));
			if (signature) out.updateToolCall(streaming.index, { thoughtSignature: signature });
			return;
		}
		closeCurrent();
		closeStreaming();
		if (!call.name) return; // The empty functionCall ending a streamed call.
		const index = out.startToolCall(newId(call.id, call.name), call.name, { thoughtSignature: signature });
		if (call.willContinue && call.args === undefined) {
			streaming = { index, args: new StreamedArgs() };
			return;
		}
		out.setToolArgsObject(index, call.args ?? {});
		out.endBlock(index);
	};

	const onOtherPart = (part: GeminiPart) => {
		for (const [kind, value] of Object.entries(part)) {
			if (kind === "thoughtSignature" || kind === "thought") continue;
			const detail =
				kind === "inlineData" && value && typeof value === "object"
					? { mimeType: (value as any).mimeType, bytes: Math.floor((String((value as any).data ?? "").length * 3) / 4) }
					: value;
			out.addDiagnostic({
				type: "gemini_part",
				kind,
				value: detail,
				...(part.thoughtSignature && { thoughtSignature: part.thoughtSignature }),
			});
		}
	};

	return {
		onEvent(chunk: any) {
			if (chunk?.error) {
				const err = chunk.error;
				const status: string | undefined = err.status;
				throw new ProviderError(
					`Gemini stream error${status ? ` (${status})` : ""}: ${err.message ?? JSON.stringify(err)}`,
					{
						type: status,
						status: typeof err.code === "number" ? err.code : undefined,
						retryable: isRetryableErrorType(status) || err.code === 429 || err.code >= 500,
					},
				);
			}
			out.setResponseId(chunk.responseId);
			out.setResponseModel(chunk.modelVersion);
			if (chunk.promptFeedback?.blockReason) blockReason = chunk.promptFeedback.blockReason;
			const candidate = chunk.candidates?.[0];
			for (const part of (candidate?.content?.parts ?? []) as GeminiPart[]) {
				if (part.functionCall) onFunctionCall(part);
				else if (typeof part.text === "string") onText(part);
				else onOtherPart(part);
			}
			if (candidate?.finishReason) {
				finishReason = candidate.finishReason;
				if (typeof candidate.finishMessage === "string") finishMessage = candidate.finishMessage;
			}
			const usage: UsageMetadata | undefined = chunk.usageMetadata;
			if (usage && (usage.promptTokenCount !== undefined || usage.totalTokenCount !== undefined)) {
				const cached = usage.cachedContentTokenCount ?? 0;
				out.setUsage({
					input: (usage.promptTokenCount ?? 0) - cached + (usage.toolUsePromptTokenCount ?? 0),
					output: (usage.candidatesTokenCount ?? 0) + (usage.thoughtsTokenCount ?? 0),
					cacheRead: cached,
					totalTokens: usage.totalTokenCount,
				});
			}
		},
		// Gemini has no end event: the chunk with a finishReason (or a blocked prompt's feedback) is the last word.
		finished: () => finishReason !== undefined || blockReason !== undefined,
		finishSignal: "finishReason",
		onEnd() {
			closeStreaming();
			closeCurrent();
			if (!finishReason) throw new ProviderError(`Gemini blocked the prompt: ${blockReason}`, { type: blockReason });
			const mapped = mapStopReason(finishReason);
			if (mapped === "error") {
				throw new ProviderError(
					`Gemini stopped with finishReason ${finishReason}${finishMessage ? `: ${finishMessage}` : ""}`,
					{ type: finishReason },
				);
			}
			if (mapped === "stop" || mapped === "length" || mapped === "toolUse") out.setStopReason(mapped);
		},
	};
}
