/** The partial assistant message of one model call, grown by a provider, with the events it emits. */
import { createAssistantMessage } from "../assistant-message.js";
import type { AssistantMessageEventStream } from "../event-stream.js";
import { parseStreamingJson, parseToolArguments } from "../partial-json.js";
import type {
	AssistantMessage,
	AssistantMessageEvent,
	Model,
	StopReason,
	TextContent,
	ThinkingContent,
	ToolCall,
} from "../types.js";
import { calculateCost } from "../usage.js";

/** Token counts as a provider reports them; `input` excludes cache reads and writes. */
export interface TokenCounts {
	input: number;
	output: number;
	cacheRead?: number;
	cacheWrite?: number;
	/** Defaults to input + output + cacheRead + cacheWrite. */
	totalTokens?: number;
}

type Block = TextContent | ThinkingContent | ToolCall;

/**
 * Builds the partial `AssistantMessage` of one model call and emits the matching events, so a
 * provider only maps its wire events to calls like `startText` / `appendText` / `endBlock`.
 *
 * - Every emitted event carries `partial` = {@link message} (the same object, mutated as it grows,
 *   like the reference implementation).
 * - Blocks get their `contentIndex` from `start*`; several may be open at once (parallel tool
 *   calls); `finish` closes whatever is still open, in index order.
 * - Tool-call arguments are accumulated as raw JSON text and re-parsed with the partial-JSON parser
 *   on each delta, so `ToolCall.arguments` grows as it streams; `endBlock` parses them exactly.
 * - `hasOutput` turns true at the first content block; the driver never retries after that.
 *
 * Misuse (an unknown or closed index, a type mismatch) throws an `Error`: that is a provider bug,
 * and the driver turns it into an `error` event like any other failure.
 */
export class OutputBuilder {
	readonly message: AssistantMessage;
	private started = false;
	private finished = false;
	private readonly open = new Set<number>();
	private readonly rawArgs = new Map<number, string>();

	constructor(
		readonly model: Model<any>,
		private readonly stream: AssistantMessageEventStream,
	) {
		this.message = createAssistantMessage(model);
	}

	/** True once a content block was started: from then on a failure is final (no retry). */
	get hasOutput(): boolean {
		return this.message.content.length > 0;
	}

	/** Emits `start` (once). The driver calls it when a 2xx response arrives. */
	start(): void {
		if (this.started) return;
		this.started = true;
		this.emit({ type: "start", partial: this.message });
	}

	// ---- text ----

	startText(text = ""): number {
		const index = this.push({ type: "text", text: "" });
		this.emit({ type: "text_start", contentIndex: index, partial: this.message });
		if (text) this.appendText(index, text);
		return index;
	}

	appendText(index: number, delta: string): void {
		if (!delta) return;
		const block = this.openBlock(index, "text");
		block.text += delta;
		this.emit({ type: "text_delta", contentIndex: index, delta, partial: this.message });
	}

	setTextSignature(index: number, signature: string): void {
		this.openBlock(index, "text").textSignature = signature;
	}

	// ---- thinking ----

	startThinking(options: { signature?: string; redacted?: boolean; text?: string } = {}): number {
		const block: ThinkingContent = { type: "thinking", thinking: "" };
		if (options.signature !== undefined) block.thinkingSignature = options.signature;
		if (options.redacted) block.redacted = true;
		const index = this.push(block);
		this.emit({ type: "thinking_start", contentIndex: index, partial: this.message });
		if (options.text) this.appendThinking(index, options.text);
		return index;
	}

	appendThinking(index: number, delta: string): void {
		if (!delta) return;
		const block = this.openBlock(index, "thinking");
		block.thinking += delta;
		this.emit({ type: "thinking_delta", contentIndex: index, delta, partial: this.message });
	}

	/** Sets (or with `append`, extends) the opaque signature replayed on the next call. */
	setThinkingSignature(index: number, signature: string, append = false): void {
		const block = this.openBlock(index, "thinking");
		block.thinkingSignature = append ? (block.thinkingSignature ?? "") + signature : signature;
	}

	// ---- tool calls ----

	startToolCall(id: string, name: string, options: { args?: string; thoughtSignature?: string } = {}): number {
		const block: ToolCall = { type: "toolCall", id, name, arguments: {} };
		if (options.thoughtSignature !== undefined) block.thoughtSignature = options.thoughtSignature;
		const index = this.push(block);
		this.rawArgs.set(index, "");
		this.emit({ type: "toolcall_start", contentIndex: index, partial: this.message });
		if (options.args) this.appendToolArgs(index, options.args);
		return index;
	}

	/** Appends a piece of the arguments' JSON text; `arguments` is re-parsed from the partial text. */
	appendToolArgs(index: number, delta: string): void {
		if (!delta) return;
		const block = this.openBlock(index, "toolCall");
		const raw = (this.rawArgs.get(index) ?? "") + delta;
		this.rawArgs.set(index, raw);
		block.arguments = parseStreamingJson(raw);
		this.emit({ type: "toolcall_delta", contentIndex: index, delta, partial: this.message });
	}

	/**
	 * Replaces the arguments' JSON text with the provider's final version (e.g. Responses
	 * `function_call_arguments.done`), emitting the missing suffix as a delta when it extends the text.
	 */
	setToolArgs(index: number, json: string): void {
		const raw = this.rawArgs.get(index) ?? "";
		if (json === raw) return;
		if (json.startsWith(raw)) {
			this.appendToolArgs(index, json.slice(raw.length));
			return;
		}
		this.openBlock(index, "toolCall");
		this.rawArgs.set(index, json);
	}

	/** Sets already-parsed arguments (APIs that send objects, not text, e.g. Gemini). */
	setToolArgsObject(index: number, args: Record<string, any>): void {
		this.setToolArgs(index, JSON.stringify(args ?? {}));
	}

	/** Updates fields of an open tool call that arrive late (an id, a name, a thoughtSignature). */
	updateToolCall(index: number, patch: Partial<Pick<ToolCall, "id" | "name" | "thoughtSignature">>): void {
		Object.assign(this.openBlock(index, "toolCall"), patch);
	}

	/** Raw JSON text of a tool call's arguments so far. */
	toolArgsText(index: number): string {
		return this.rawArgs.get(index) ?? "";
	}

	// ---- blocks ----

	isOpen(index: number): boolean {
		return this.open.has(index);
	}

	/** Closes a block, emitting its `*_end` event. Closing a closed block is a no-op. */
	endBlock(index: number): void {
		if (!this.open.has(index)) return;
		this.open.delete(index);
		const block = this.message.content[index]!;
		if (block.type === "text") {
			this.emit({ type: "text_end", contentIndex: index, content: block.text, partial: this.message });
		} else if (block.type === "thinking") {
			this.emit({ type: "thinking_end", contentIndex: index, content: block.thinking, partial: this.message });
		} else {
			block.arguments = parseToolArguments(this.rawArgs.get(index));
			this.rawArgs.delete(index);
			this.emit({ type: "toolcall_end", contentIndex: index, toolCall: block, partial: this.message });
		}
	}

	/** Closes every open block in index order. */
	endAll(): void {
		for (const index of [...this.open].sort((a, b) => a - b)) this.endBlock(index);
	}

	// ---- metadata ----

	setResponseId(id: string | undefined): void {
		if (id) this.message.responseId = id;
	}

	setResponseModel(model: string | undefined): void {
		if (model) this.message.responseModel = model;
	}

	/** Replaces the usage with these counts and recomputes the cost from the model's prices. */
	setUsage(counts: TokenCounts): void {
		const usage = this.message.usage;
		usage.input = counts.input || 0;
		usage.output = counts.output || 0;
		usage.cacheRead = counts.cacheRead || 0;
		usage.cacheWrite = counts.cacheWrite || 0;
		usage.totalTokens = counts.totalTokens ?? usage.input + usage.output + usage.cacheRead + usage.cacheWrite;
		calculateCost(this.model, usage);
	}

	/** The stop reason `finish` will report (`stop` unless set). */
	setStopReason(reason: Extract<StopReason, "stop" | "length" | "toolUse">): void {
		this.message.stopReason = reason;
	}

	addDiagnostic(diagnostic: { type: string; [key: string]: unknown }): void {
		if (!this.message.diagnostics) this.message.diagnostics = [];
		this.message.diagnostics.push(diagnostic);
	}

	// ---- terminal (called by the driver) ----

	/**
	 * Closes open blocks and emits `done`. A `stop` with tool calls in the content becomes `toolUse`
	 * (several OpenAI-compatible servers and Gemini say "stop" after a tool call).
	 */
	finish(): void {
		if (this.finished) return;
		this.start();
		this.endAll();
		let reason = this.message.stopReason;
		if (reason === "error" || reason === "aborted") reason = "stop";
		if (reason === "stop" && this.message.content.some((block) => block.type === "toolCall")) reason = "toolUse";
		this.message.stopReason = reason;
		this.finished = true;
		this.stream.push({ type: "done", reason, message: this.message });
	}

	/** Ends with an `error` event: open blocks stay as they are, `errorMessage` says what happened. */
	fail(reason: "error" | "aborted", errorMessage: string): void {
		if (this.finished) return;
		this.finished = true;
		this.open.clear();
		// Unfinished tool calls keep the arguments parsed so far.
		this.message.stopReason = reason;
		this.message.errorMessage = errorMessage;
		this.stream.push({ type: "error", reason, error: this.message });
	}

	/** Forgets everything but `start` before a retry (only legal while `hasOutput` is false). */
	resetForRetry(): void {
		if (this.hasOutput)
			throw new Error("OutputBuilder.resetForRetry: output was already emitted; a retry is not allowed");
		const fresh = createAssistantMessage(this.model);
		this.message.usage = fresh.usage;
		this.message.stopReason = "stop";
		delete this.message.responseId;
		delete this.message.responseModel;
		delete this.message.diagnostics;
		delete this.message.errorMessage;
		this.open.clear();
		this.rawArgs.clear();
	}

	private push(block: Block): number {
		if (this.finished) throw new Error("OutputBuilder: block started after the message finished");
		this.start();
		const index = this.message.content.length;
		this.message.content.push(block);
		this.open.add(index);
		return index;
	}

	private openBlock<K extends Block["type"]>(index: number, type: K): Extract<Block, { type: K }> {
		const block = this.message.content[index];
		if (!block || block.type !== type || !this.open.has(index)) {
			throw new Error(`OutputBuilder: no open ${type} block at content index ${index}`);
		}
		return block as Extract<Block, { type: K }>;
	}

	private emit(event: AssistantMessageEvent): void {
		if (this.finished) return;
		this.stream.push(event);
	}
}
