/**
 * The scripted model (`api: "faux"`, `provider: "faux"`) for tests and demos.
 *
 * A script is a queue of turns; each model call takes the next one and streams it with the exact
 * event protocol of a real provider (`start`, `<kind>_start` / `_delta` / `_end` per block, then
 * `done` or `error`, every event carrying a snapshot `partial`). It honours the abort signal
 * (ending with `stopReason: "aborted"`) and never throws: an empty queue or a throwing response
 * factory ends the call with an `error` event.
 *
 * `streamScriptedTurn` is the low-level part, usable on its own to build other scripted models
 * (e.g. a model that decides its turn from the context).
 */
import { setImmediate, setTimeout as sleep } from "node:timers/promises";
import { createAssistantMessage } from "../assistant-message.js";
import { AssistantMessageEventStream } from "../event-stream.js";
import { parseStreamingJson } from "../partial-json.js";
import { getApiProvider, registerApiProvider, unregisterApiProvider } from "../registry.js";
import type {
	AssistantMessage,
	Context,
	Model,
	SimpleStreamOptions,
	StopReason,
	StreamOptions,
	TextContent,
	ThinkingContent,
	ToolCall,
	Usage,
} from "../types.js";
import { zeroUsage } from "../usage.js";

export type FauxContentBlock = TextContent | ThinkingContent | ToolCall;

/**
 * How text is cut into deltas: `"word"` (one delta per word, whitespace kept with the word), a
 * number of characters, or a function returning the pieces (their concatenation must be the text).
 * Tool-call arguments are streamed as JSON text; `"word"` cuts that JSON into 8-character pieces.
 */
export type FauxChunking = "word" | number | ((text: string) => string[]);

/** One scripted model turn. */
export interface ScriptedTurn {
	content: string | FauxContentBlock | FauxContentBlock[];
	/** Default: `"toolUse"` when the content has a tool call, else `"stop"`. `"error"`/`"aborted"` end with an `error` event after the content. */
	stopReason?: StopReason;
	/** Set on the final message (meant for `stopReason: "error"`). */
	errorMessage?: string;
	responseId?: string;
	/** Overrides the estimated usage. */
	usage?: Usage;
	/** Default: the provider's (`"word"`). */
	chunk?: FauxChunking;
	/** Pause before each delta in ms. Even 0 yields to the event loop (setImmediate). Default: the provider's (0). */
	delayMs?: number;
}

export interface ScriptedTurnOptions {
	signal?: AbortSignal;
	onResponse?: StreamOptions["onResponse"];
	/** Used to estimate input tokens for `usage`. */
	context?: Context;
	/** Defaults for turns that do not set them. */
	chunk?: FauxChunking;
	delayMs?: number;
}

/** The `errorMessage` of a scripted turn ended by the abort signal. */
export const ABORTED_MESSAGE = "Request was aborted";
const TOOL_JSON_PIECE = 8;

let idCounter = 0;

export function fauxText(text: string): TextContent {
	return { type: "text", text };
}

export function fauxThinking(thinking: string): ThinkingContent {
	return { type: "thinking", thinking };
}

export function fauxToolCall(name: string, arguments_: ToolCall["arguments"], options: { id?: string } = {}): ToolCall {
	return { type: "toolCall", id: options.id ?? `faux_call_${++idCounter}`, name, arguments: arguments_ };
}

function normalizeContent(content: ScriptedTurn["content"]): FauxContentBlock[] {
	if (typeof content === "string") return [fauxText(content)];
	return Array.isArray(content) ? content : [content];
}

/** A complete assistant message (as pi-ai's helper); usable as a script step. */
export function fauxAssistantMessage(
	content: string | FauxContentBlock | FauxContentBlock[],
	options: { stopReason?: StopReason; errorMessage?: string; responseId?: string; timestamp?: number } = {},
): AssistantMessage {
	return {
		...createAssistantMessage({ api: "faux", provider: "faux", id: "faux-1" }),
		content: normalizeContent(content),
		stopReason: options.stopReason ?? "stop",
		errorMessage: options.errorMessage,
		responseId: options.responseId,
		timestamp: options.timestamp ?? Date.now(),
	};
}

function estimateTokens(text: string): number {
	return Math.ceil(text.length / 4);
}

/** The scripted model's usage estimate: ~4 characters a token, of the output blocks and of the context's messages. */
export function estimateUsage(blocks: readonly FauxContentBlock[], context?: Context): Usage {
	const output = estimateTokens(JSON.stringify(blocks));
	const input = context ? estimateTokens(JSON.stringify(context.messages)) : 0;
	return { ...zeroUsage(), input, output, totalTokens: input + output };
}

function splitText(text: string, chunk: FauxChunking): string[] {
	if (text === "") return [];
	if (typeof chunk === "function") return chunk(text);
	if (chunk === "word") return text.match(/\s*\S+\s*/g) ?? [text];
	const size = Math.max(1, Math.floor(chunk));
	const pieces: string[] = [];
	for (let i = 0; i < text.length; i += size) pieces.push(text.slice(i, i + size));
	return pieces;
}

/** Resolves after `ms` (or on the next macrotask for 0), or as soon as `signal` aborts. */
async function pause(ms: number, signal: AbortSignal | undefined): Promise<void> {
	// Even without a delay, yield a macrotask so a long script never monopolises the event loop.
	if (ms <= 0 || signal?.aborted) return void (await setImmediate());
	// An abort rejects the wait; the caller reads `signal.aborted` itself.
	await sleep(ms, undefined, { signal }).catch(() => undefined);
}

function isAssistantMessage(step: unknown): step is AssistantMessage {
	return typeof step === "object" && step !== null && (step as { role?: unknown }).role === "assistant";
}

function errorMessageOf(error: unknown): string {
	return error instanceof Error ? error.message : String(error);
}

/**
 * Streams one scripted turn as `model`'s response. Returns at once; events follow asynchronously.
 * Never throws; abort ends the stream with `stopReason: "aborted"` and the content streamed so far.
 */
export function streamScriptedTurn(
	model: Model<any>,
	turn: ScriptedTurn | AssistantMessage,
	options: ScriptedTurnOptions = {},
): AssistantMessageEventStream {
	const stream = new AssistantMessageEventStream();
	void runScriptedTurn(stream, model, turn, options);
	return stream;
}

async function runScriptedTurn(
	stream: AssistantMessageEventStream,
	model: Model<any>,
	turn: ScriptedTurn | AssistantMessage,
	options: ScriptedTurnOptions,
): Promise<void> {
	const { signal } = options;
	const blocks = normalizeContent(turn.content);
	const chunk = (!isAssistantMessage(turn) && turn.chunk) || options.chunk || "word";
	const delayMs = (!isAssistantMessage(turn) ? turn.delayMs : undefined) ?? options.delayMs ?? 0;
	const stopReason: StopReason =
		turn.stopReason ?? (blocks.some((block) => block.type === "toolCall") ? "toolUse" : "stop");

	let partial: AssistantMessage = createAssistantMessage(model);
	if (turn.responseId) partial.responseId = turn.responseId;
	// Each event gets its own snapshot: blocks are replaced, never mutated, once handed out.
	const snapshot = () => ({ ...partial, content: partial.content.slice() });
	const setBlock = (index: number, block: FauxContentBlock) => {
		const content = partial.content.slice();
		content[index] = block;
		partial = { ...partial, content };
	};
	const abortIfNeeded = (): boolean => {
		if (!signal?.aborted) return false;
		const aborted = { ...snapshot(), stopReason: "aborted" as const, errorMessage: ABORTED_MESSAGE };
		stream.push({ type: "error", reason: "aborted", error: aborted });
		return true;
	};

	try {
		await options.onResponse?.({ status: 200, headers: {} }, model);
		if (abortIfNeeded()) return;
		stream.push({ type: "start", partial: snapshot() });

		for (let index = 0; index < blocks.length; index++) {
			const block = blocks[index] as FauxContentBlock;
			if (block.type === "text" || block.type === "thinking") {
				const kind = block.type;
				const full = block.type === "text" ? block.text : block.thinking;
				const withText = (text: string): FauxContentBlock =>
					block.type === "text" ? { ...block, text } : { ...block, thinking: text };
				setBlock(index, withText(""));
				stream.push({ type: `${kind}_start`, contentIndex: index, partial: snapshot() });
				let soFar = "";
				for (const delta of splitText(full, chunk)) {
					await pause(delayMs, signal);
					if (abortIfNeeded()) return;
					soFar += delta;
					setBlock(index, withText(soFar));
					stream.push({ type: `${kind}_delta`, contentIndex: index, delta, partial: snapshot() });
				}
				setBlock(index, block);
				stream.push({ type: `${kind}_end`, contentIndex: index, content: full, partial: snapshot() });
				continue;
			}
			setBlock(index, { ...block, arguments: {} });
			stream.push({ type: "toolcall_start", contentIndex: index, partial: snapshot() });
			const json = JSON.stringify(block.arguments ?? {});
			let soFar = "";
			for (const delta of splitText(json, chunk === "word" ? TOOL_JSON_PIECE : chunk)) {
				await pause(delayMs, signal);
				if (abortIfNeeded()) return;
				soFar += delta;
				setBlock(index, { ...block, arguments: parseStreamingJson(soFar) });
				stream.push({ type: "toolcall_delta", contentIndex: index, delta, partial: snapshot() });
			}
			setBlock(index, block);
			stream.push({ type: "toolcall_end", contentIndex: index, toolCall: block, partial: snapshot() });
		}
		if (abortIfNeeded()) return;

		const usage: Usage = turn.usage ?? estimateUsage(blocks, options.context);
		const final: AssistantMessage = {
			...snapshot(),
			usage,
			stopReason,
			...(turn.errorMessage !== undefined ? { errorMessage: turn.errorMessage } : {}),
			timestamp: Date.now(),
		};
		if (stopReason === "error" || stopReason === "aborted") {
			if (final.errorMessage === undefined) final.errorMessage = stopReason === "aborted" ? ABORTED_MESSAGE : "error";
			stream.push({ type: "error", reason: stopReason, error: final });
		} else {
			stream.push({ type: "done", reason: stopReason, message: final });
		}
	} catch (error) {
		const failed: AssistantMessage = {
			...snapshot(),
			stopReason: signal?.aborted ? "aborted" : "error",
			errorMessage: errorMessageOf(error),
		};
		stream.push({ type: "error", reason: failed.stopReason as "error" | "aborted", error: failed });
	}
}

export interface FauxModelDefinition {
	id: string;
	name?: string;
	reasoning?: boolean;
	input?: ("text" | "image")[];
	cost?: { input: number; output: number; cacheRead: number; cacheWrite: number };
	contextWindow?: number;
	maxTokens?: number;
}

/** Decides a turn from the request; may be async. A throw ends that call with an `error` event. */
export type FauxResponseFactory = (
	context: Context,
	options: SimpleStreamOptions | undefined,
	state: { callCount: number },
	model: Model<string>,
) => AssistantMessage | ScriptedTurn | Promise<AssistantMessage | ScriptedTurn>;

export type FauxResponseStep = AssistantMessage | ScriptedTurn | FauxResponseFactory;

export interface RegisterFauxProviderOptions {
	/** Default `"faux"`. A later registration for the same api replaces the earlier one. */
	api?: string;
	/** Default `"faux"`. */
	provider?: string;
	/** Default: one model `faux-1`. */
	models?: FauxModelDefinition[];
	/** Default chunking of every turn (default `"word"`). */
	chunk?: FauxChunking;
	/** Default pause before each delta in ms (default 0, which still yields to the event loop). */
	delayMs?: number;
}

export interface FauxProviderRegistration {
	api: string;
	models: [Model<string>, ...Model<string>[]];
	getModel(): Model<string>;
	getModel(modelId: string): Model<string> | undefined;
	/** `callCount` counts model calls, including ones that found the script empty. */
	state: { callCount: number };
	/** The stream function itself, usable as a `StreamFn` without the registry. */
	stream: (model: Model<any>, context: Context, options?: SimpleStreamOptions) => AssistantMessageEventStream;
	setResponses: (responses: FauxResponseStep[]) => void;
	appendResponses: (responses: FauxResponseStep[]) => void;
	getPendingResponseCount: () => number;
	/** Removes the api from the registry if this registration still owns it. */
	unregister: () => void;
}

/** Registers the scripted model under `options.api` (default `"faux"`) and returns its controls. */
export function registerFauxProvider(options: RegisterFauxProviderOptions = {}): FauxProviderRegistration {
	const api = options.api ?? "faux";
	const provider = options.provider ?? "faux";
	const definitions: FauxModelDefinition[] = options.models?.length
		? options.models
		: [{ id: "faux-1", name: "Faux Model" }];
	const models = definitions.map(
		(definition): Model<string> => ({
			id: definition.id,
			name: definition.name ?? definition.id,
			api,
			provider,
			baseUrl: "http://localhost:0",
			reasoning: definition.reasoning ?? false,
			input: definition.input ?? ["text", "image"],
			cost: definition.cost ?? { input: 0, output: 0, cacheRead: 0, cacheWrite: 0 },
			contextWindow: definition.contextWindow ?? 128_000,
			maxTokens: definition.maxTokens ?? 16_384,
		}),
	) as [Model<string>, ...Model<string>[]];
	let pending: FauxResponseStep[] = [];
	const state = { callCount: 0 };

	const stream = (model: Model<any>, context: Context, streamOptions?: SimpleStreamOptions) => {
		state.callCount++;
		const step = pending.shift();
		const turnOptions: ScriptedTurnOptions = {
			signal: streamOptions?.signal,
			onResponse: streamOptions?.onResponse,
			context,
			chunk: options.chunk,
			delayMs: options.delayMs,
		};
		if (step === undefined) {
			return streamScriptedTurn(
				model,
				{ content: [], stopReason: "error", errorMessage: "No more faux responses queued" },
				turnOptions,
			);
		}
		if (typeof step !== "function") return streamScriptedTurn(model, step, turnOptions);
		// A factory decides the turn; its result (or failure) is streamed through a relay.
		const relay = new AssistantMessageEventStream();
		void (async () => {
			let turn: AssistantMessage | ScriptedTurn;
			try {
				turn = await step(context, streamOptions, state, model);
			} catch (error) {
				turn = { content: [], stopReason: "error", errorMessage: errorMessageOf(error) };
			}
			for await (const event of streamScriptedTurn(model, turn, turnOptions)) relay.push(event);
		})();
		return relay;
	};

	registerApiProvider(api, stream);

	function getModel(): Model<string>;
	function getModel(modelId: string): Model<string> | undefined;
	function getModel(modelId?: string): Model<string> | undefined {
		return modelId === undefined ? models[0] : models.find((model) => model.id === modelId);
	}

	return {
		api,
		models,
		getModel,
		state,
		stream,
		setResponses(responses) {
			pending = [...responses];
		},
		appendResponses(responses) {
			pending.push(...responses);
		},
		getPendingResponseCount() {
			return pending.length;
		},
		unregister() {
			// Only remove our own registration; a later registerFauxProvider for the api replaced it.
			if (getApiProvider(api) === stream) unregisterApiProvider(api);
		},
	};
}
