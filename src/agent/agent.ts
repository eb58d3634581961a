/**
 * `Agent`: the stateful wrapper around the loop. It owns the transcript, runs one prompt or
 * continuation at a time, reduces loop events into `state`, awaits subscribers in order, and
 * feeds the steering and follow-up queues into the run.
 */
import { streamSimple } from "../ai/stream.js";
import type {
	ImageContent,
	Message,
	Model,
	SimpleStreamOptions,
	TextContent,
	ThinkingBudgets,
	Transport,
} from "../ai/types.js";
import { failureMessage, runAgentLoop, runAgentLoopContinue } from "./loop.js";
import { PendingMessageQueue, type QueueMode } from "./queue.js";
import type {
	AfterToolCallContext,
	AfterToolCallResult,
	AgentContext,
	AgentEvent,
	AgentLoopConfig,
	AgentMessage,
	AgentState,
	AgentTool,
	BeforeToolCallContext,
	BeforeToolCallResult,
	StreamFn,
	ToolExecutionMode,
} from "./types.js";

/** Options for constructing an {@link Agent}. Every field is optional. */
export interface AgentOptions {
	initialState?: Partial<Omit<AgentState, "pendingToolCalls" | "isStreaming" | "streamingMessage" | "errorMessage">>;
	/** Default: keep `user`, `assistant` and `toolResult` messages, drop everything else. */
	convertToLlm?: (messages: AgentMessage[]) => Message[] | Promise<Message[]>;
	transformContext?: (messages: AgentMessage[], signal?: AbortSignal) => Promise<AgentMessage[]>;
	/** Default: `streamSimple`. */
	streamFn?: StreamFn;
	getApiKey?: (provider: string) => Promise<string | undefined> | string | undefined;
	onPayload?: SimpleStreamOptions["onPayload"];
	onResponse?: SimpleStreamOptions["onResponse"];
	beforeToolCall?: (context: BeforeToolCallContext, signal?: AbortSignal) => Promise<BeforeToolCallResult | undefined>;
	afterToolCall?: (context: AfterToolCallContext, signal?: AbortSignal) => Promise<AfterToolCallResult | undefined>;
	/** Default `"one-at-a-time"`. */
	steeringMode?: QueueMode;
	/** Default `"one-at-a-time"`. */
	followUpMode?: QueueMode;
	sessionId?: string;
	thinkingBudgets?: ThinkingBudgets;
	/** Default `"auto"`. */
	transport?: Transport;
	maxRetryDelayMs?: number;
	/** Default `"parallel"`. */
	toolExecution?: ToolExecutionMode;
}

type AgentListener = (event: AgentEvent, signal: AbortSignal) => Promise<void> | void;

/** A subscribed listener and its subscription number (a listener subscribed again later gets a new, higher one). */
interface ListenerEntry {
	readonly listener: AgentListener;
	readonly seq: number;
}

/** `AgentState` with the runtime fields writable from inside the class. */
type MutableAgentState = {
	-readonly [K in keyof AgentState]: AgentState[K];
};

interface ActiveRun {
	promise: Promise<void>;
	resolve: () => void;
	abortController: AbortController;
	/** `abortController.signal`, read once (the getter is not free and runs per event). */
	signal: AbortSignal;
}

/** Placeholder until a model is assigned; its api has no provider, so a run fails with a clear error. */
const DEFAULT_MODEL: Model<any> = {
	id: "unknown",
	name: "unknown",
	api: "unknown",
	provider: "unknown",
	baseUrl: "",
	reasoning: false,
	input: [],
	cost: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0 },
	contextWindow: 0,
	maxTokens: 0,
};

function defaultConvertToLlm(messages: AgentMessage[]): Message[] {
	return messages.filter(
		(message): message is Message =>
			message.role === "user" || message.role === "assistant" || message.role === "toolResult",
	);
}

function createMutableState(initial: AgentOptions["initialState"]): MutableAgentState {
	let tools: AgentTool<any>[] = initial?.tools?.slice() ?? [];
	let messages: AgentMessage[] = initial?.messages?.slice() ?? [];
	return {
		systemPrompt: initial?.systemPrompt ?? "",
		model: initial?.model ?? DEFAULT_MODEL,
		thinkingLevel: initial?.thinkingLevel ?? "off",
		get tools() {
			return tools;
		},
		set tools(next: AgentTool<any>[]) {
			tools = next.slice();
		},
		get messages() {
			return messages;
		},
		set messages(next: AgentMessage[]) {
			messages = next.slice();
		},
		isStreaming: false,
		streamingMessage: undefined,
		pendingToolCalls: new Set<string>(),
		errorMessage: undefined,
	};
}

/**
 * Stateful wrapper around the low-level agent loop.
 *
 * Contract: one run at a time — `prompt()`/`continue()` during a run throw (queue with `steer()`
 * or `followUp()` instead). Listeners are called in subscription order, each after the promise
 * the previous one returned (if any) settled; a run settles (and `waitForIdle()` resolves) only
 * after the `agent_end` listeners finished. A failure inside a run never rejects `prompt()`: it
 * becomes an assistant message with `stopReason` `"error"` (or `"aborted"` after `abort()`) and an
 * `agent_end`.
 */
export class Agent {
	private _state: MutableAgentState;
	/**
	 * The listeners in subscription order, replaced (never changed in place) by every subscribe and
	 * unsubscribe. A delivery walks it by index, with no iterator per event, and keeps the rules of a
	 * `Set`'s iteration when a listener changes it during a delivery: it goes on after the listener
	 * it last called, in the list as it is now, so one subscribed meanwhile is called too and one
	 * unsubscribed before its turn is not.
	 */
	private listeners: readonly ListenerEntry[] = [];
	private nextListenerSeq = 0;
	private readonly steeringQueue: PendingMessageQueue;
	private readonly followUpQueue: PendingMessageQueue;
	convertToLlm: (messages: AgentMessage[]) => Message[] | Promise<Message[]>;
	transformContext?: (messages: AgentMessage[], signal?: AbortSignal) => Promise<AgentMessage[]>;
	streamFn: StreamFn;
	getApiKey?: (provider: string) => Promise<string | undefined> | string | undefined;
	onPayload?: SimpleStreamOptions["onPayload"];
	onResponse?: SimpleStreamOptions["onResponse"];
	beforeToolCall?: (context: BeforeToolCallContext, signal?: AbortSignal) => Promise<BeforeToolCallResult | undefined>;
	afterToolCall?: (context: AfterToolCallContext, signal?: AbortSignal) => Promise<AfterToolCallResult | undefined>;
	private activeRun?: ActiveRun;
	/** Session identifier forwarded to providers for cache-aware backends. */
	sessionId?: string;
	/** Optional per-level thinking token budgets forwarded to the stream function. */
	thinkingBudgets?: ThinkingBudgets;
	/** Preferred transport forwarded to the stream function. */
	transport: Transport;
	/** Optional cap for provider-requested retry delays. */
	maxRetryDelayMs?: number;
	/** Tool execution strategy for assistant messages that contain multiple tool calls. */
	toolExecution: ToolExecutionMode;

	constructor(options: AgentOptions = {}) {
		this._state = createMutableState(options.initialState);
		this.convertToLlm = options.convertToLlm ?? defaultConvertToLlm;
		this.transformContext = options.transformContext;
		this.streamFn = options.streamFn ?? streamSimple;
		this.getApiKey = options.getApiKey;
		this.onPayload = options.onPayload;
		this.onResponse = options.onResponse;
		this.beforeToolCall = options.beforeToolCall;
		this.afterToolCall = options.afterToolCall;
		this.steeringQueue = new PendingMessageQueue(options.steeringMode ?? "one-at-a-time");
		this.followUpQueue = new PendingMessageQueue(options.followUpMode ?? "one-at-a-time");
		this.sessionId = options.sessionId;
		this.thinkingBudgets = options.thinkingBudgets;
		this.transport = options.transport ?? "auto";
		this.maxRetryDelayMs = options.maxRetryDelayMs;
		this.toolExecution = options.toolExecution ?? "parallel";
	}

	/**
	 * Subscribe to agent lifecycle events. Listener promises are awaited in subscription order and
	 * are part of the current run's settlement; listeners receive the run's abort signal.
	 * Returns the unsubscribe function.
	 */
	subscribe(listener: AgentListener): () => void {
		if (!this.listeners.some((entry) => entry.listener === listener)) {
			this.listeners = [...this.listeners, { listener, seq: this.nextListenerSeq++ }];
		}
		return () => this.unsubscribe(listener);
	}

	/** Removes `listener`; false when it was not subscribed. */
	private unsubscribe(listener: AgentListener): boolean {
		const rest = this.listeners.filter((entry) => entry.listener !== listener);
		if (rest.length === this.listeners.length) return false;
		this.listeners = rest;
		return true;
	}

	/** Current agent state. Assigning `state.tools` or `state.messages` copies the top-level array. */
	get state(): AgentState {
		return this._state;
	}

	/** Controls how queued steering messages are drained. */
	set steeringMode(mode: QueueMode) {
		this.steeringQueue.mode = mode;
	}
	get steeringMode(): QueueMode {
		return this.steeringQueue.mode;
	}

	/** Controls how queued follow-up messages are drained. */
	set followUpMode(mode: QueueMode) {
		this.followUpQueue.mode = mode;
	}
	get followUpMode(): QueueMode {
		return this.followUpQueue.mode;
	}

	/** Queue a message to be injected after the current assistant turn finishes. */
	steer(message: AgentMessage): void {
		this.steeringQueue.enqueue(message);
	}

	/** Queue a message to run only after the agent would otherwise stop. */
	followUp(message: AgentMessage): void {
		this.followUpQueue.enqueue(message);
	}

	/** Remove all queued steering messages. */
	clearSteeringQueue(): void {
		this.steeringQueue.clear();
	}

	/** Remove all queued follow-up messages. */
	clearFollowUpQueue(): void {
		this.followUpQueue.clear();
	}

	/** Remove all queued steering and follow-up messages. */
	clearAllQueues(): void {
		this.clearSteeringQueue();
		this.clearFollowUpQueue();
	}

	/** True when either queue still holds messages. */
	hasQueuedMessages(): boolean {
		return this.steeringQueue.hasItems() || this.followUpQueue.hasItems();
	}

	/** Abort signal of the active run, if any. */
	get signal(): AbortSignal | undefined {
		return this.activeRun?.abortController.signal;
	}

	/** Abort the active run, if any. */
	abort(): void {
		this.activeRun?.abortController.abort();
	}

	/** Resolves when the active run and all awaited listeners (including `agent_end`'s) have finished. */
	waitForIdle(): Promise<void> {
		return this.activeRun?.promise ?? Promise.resolve();
	}

	/** Clear transcript, runtime state and both queues. */
	reset(): void {
		this._state.messages = [];
		this._state.isStreaming = false;
		this._state.streamingMessage = undefined;
		this._state.pendingToolCalls = new Set();
		this._state.errorMessage = undefined;
		this.clearFollowUpQueue();
		this.clearSteeringQueue();
	}

	/** Start a new prompt from text (with optional images), a single message, or a batch of messages. */
	prompt(message: AgentMessage | AgentMessage[]): Promise<void>;
	prompt(input: string, images?: ImageContent[]): Promise<void>;
	async prompt(input: string | AgentMessage | AgentMessage[], images?: ImageContent[]): Promise<void> {
		if (this.activeRun) {
			throw new Error(
				"Agent is already processing a prompt. Use steer() or followUp() to queue messages, or wait for completion.",
			);
		}
		await this.runPromptMessages(this.normalizePromptInput(input, images));
	}

	/**
	 * Continue from the current transcript. The last message must be a user or tool-result message;
	 * after an assistant message, queued steering (else follow-ups) is run instead, else this throws.
	 */
	async continue(): Promise<void> {
		if (this.activeRun) throw new Error("Agent is already processing. Wait for completion before continuing.");
		const last = this._state.messages[this._state.messages.length - 1];
		if (!last) throw new Error("No messages to continue from");
		if (last.role === "assistant") {
			const steering = this.steeringQueue.drain();
			if (steering.length > 0) {
				await this.runPromptMessages(steering, { skipInitialSteeringPoll: true });
				return;
			}
			const followUps = this.followUpQueue.drain();
			if (followUps.length > 0) {
				await this.runPromptMessages(followUps);
				return;
			}
			throw new Error("Cannot continue from message role: assistant");
		}
		await this.runContinuation();
	}

	private normalizePromptInput(input: string | AgentMessage | AgentMessage[], images?: ImageContent[]): AgentMessage[] {
		if (Array.isArray(input)) return input;
		if (typeof input !== "string") return [input];
		const content: (TextContent | ImageContent)[] = [{ type: "text", text: input }];
		if (images && images.length > 0) content.push(...images);
		return [{ role: "user", content, timestamp: Date.now() }];
	}

	private async runPromptMessages(
		messages: AgentMessage[],
		options: { skipInitialSteeringPoll?: boolean } = {},
	): Promise<void> {
		await this.runWithLifecycle(async (signal) => {
			await runAgentLoop(
				messages,
				this.createContextSnapshot(),
				this.createLoopConfig(options),
				(event) => this.processEvent(event),
				signal,
				this.streamFn,
			);
		});
	}

	private async runContinuation(): Promise<void> {
		await this.runWithLifecycle(async (signal) => {
			await runAgentLoopContinue(
				this.createContextSnapshot(),
				this.createLoopConfig(),
				(event) => this.processEvent(event),
				signal,
				this.streamFn,
			);
		});
	}

	private createContextSnapshot(): AgentContext {
		return {
			systemPrompt: this._state.systemPrompt,
			messages: this._state.messages.slice(),
			tools: this._state.tools.slice(),
		};
	}

	private createLoopConfig(options: { skipInitialSteeringPoll?: boolean } = {}): AgentLoopConfig {
		let skipInitialSteeringPoll = options.skipInitialSteeringPoll === true;
		return {
			model: this._state.model,
			reasoning: this._state.thinkingLevel === "off" ? undefined : this._state.thinkingLevel,
			sessionId: this.sessionId,
			onPayload: this.onPayload,
			onResponse: this.onResponse,
			transport: this.transport,
			thinkingBudgets: this.thinkingBudgets,
			maxRetryDelayMs: this.maxRetryDelayMs,
			toolExecution: this.toolExecution,
			beforeToolCall: this.beforeToolCall,
			afterToolCall: this.afterToolCall,
			convertToLlm: this.convertToLlm,
			transformContext: this.transformContext,
			getApiKey: this.getApiKey,
			getSteeringMessages: async () => {
				// continue() already drained the steering it runs; the loop's initial poll must not take more.
				if (skipInitialSteeringPoll) {
					skipInitialSteeringPoll = false;
					return [];
				}
				return this.steeringQueue.drain();
			},
			getFollowUpMessages: async () => this.followUpQueue.drain(),
		};
	}

	private async runWithLifecycle(executor: (signal: AbortSignal) => Promise<void>): Promise<void> {
		if (this.activeRun) throw new Error("Agent is already processing.");
		const abortController = new AbortController();
		let resolve: () => void = () => {};
		const promise = new Promise<void>((r) => {
			resolve = r;
		});
		this.activeRun = { promise, resolve, abortController, signal: abortController.signal };
		this._state.isStreaming = true;
		this._state.streamingMessage = undefined;
		this._state.errorMessage = undefined;
		try {
			await executor(abortController.signal);
		} catch (error) {
			await this.handleRunFailure(error, abortController.signal.aborted);
		} finally {
			this.finishRun();
		}
	}

	private async handleRunFailure(error: unknown, aborted: boolean): Promise<void> {
		const failure = failureMessage(this._state.model, error, aborted);
		this._state.messages.push(failure);
		this._state.errorMessage = failure.errorMessage;
		await this.processEvent({ type: "agent_end", messages: [failure] });
	}

	private finishRun(): void {
		this._state.isStreaming = false;
		this._state.streamingMessage = undefined;
		this._state.pendingToolCalls = new Set();
		this.activeRun?.resolve();
		this.activeRun = undefined;
	}

	/**
	 * Reduce a loop event into state, then call every listener in subscription order, each after the
	 * previous one's promise settled. A promise only once a listener returned one: a run with
	 * synchronous listeners (the server's) does not pay two promises and two microtask turns per
	 * streamed delta for listeners that had nothing to wait for.
	 */
	private processEvent(event: AgentEvent): Promise<void> | undefined {
		switch (event.type) {
			case "message_start":
			case "message_update":
				this._state.streamingMessage = event.message;
				break;
			case "message_end":
				this._state.streamingMessage = undefined;
				this._state.messages.push(event.message);
				break;
			case "tool_execution_start": {
				const pending = new Set(this._state.pendingToolCalls);
				pending.add(event.toolCallId);
				this._state.pendingToolCalls = pending;
				break;
			}
			case "tool_execution_end": {
				const pending = new Set(this._state.pendingToolCalls);
				pending.delete(event.toolCallId);
				this._state.pendingToolCalls = pending;
				break;
			}
			case "turn_end":
				if (event.message.role === "assistant" && event.message.errorMessage) {
					this._state.errorMessage = event.message.errorMessage;
				}
				break;
			case "agent_end":
				this._state.streamingMessage = undefined;
				break;
		}
		const signal = this.activeRun?.signal;
		if (!signal) throw new Error("Agent listener invoked outside active run");
		let entries = this.listeners;
		for (let i = 0; i < entries.length; ) {
			const entry = entries[i++] as ListenerEntry;
			const pending = entry.listener(event, signal);
			if (pending) return this.awaitListeners(pending, entry.seq, event, signal);
			if (entries !== this.listeners) {
				// The listener subscribed or unsubscribed one: go on after it in the list as it is now.
				entries = this.listeners;
				i = entries.findIndex((next) => next.seq > entry.seq);
				if (i < 0) break;
			}
		}
		return undefined;
	}

	/**
	 * The rest of {@link processEvent} once a listener returned a promise: the listeners subscribed
	 * after subscription `after`, each awaited in turn.
	 */
	private async awaitListeners(
		pending: Promise<void>,
		after: number,
		event: AgentEvent,
		signal: AbortSignal,
	): Promise<void> {
		await pending;
		for (let entry = this.listenerAfter(after); entry; entry = this.listenerAfter(entry.seq)) {
			await entry.listener(event, signal);
		}
	}

	/** The first listener subscribed after subscription `seq`: where a `Set`'s iterator would go on. */
	private listenerAfter(seq: number): ListenerEntry | undefined {
		return this.listeners.find((entry) => entry.seq > seq);
	}
}
