/**
 * One live session: its `Agent` and the wiring around it — the tool hooks of the session's
 * extensions, config changes applied to the running Agent — over the parts that each keep one job:
 * the Agent's listener that stores what an event completes and then publishes the event
 * (`agent-events.ts`), the event log (`event-log.ts`), the runs (`runs.ts`), the queues
 * (`queues.ts`), the stored transcript (`transcript.ts`) and the view (`view.ts`).
 */
import { setTimeout as sleep } from "node:timers/promises";
import type { Context as TraceContext } from "@opentelemetry/api";
import type { FastifyBaseLogger } from "fastify";
import { Agent } from "../../../agent/agent.js";
import type {
	AfterToolCallContext,
	AfterToolCallResult,
	AgentEvent,
	AgentMessage,
	AgentTool,
	BeforeToolCallContext,
	BeforeToolCallResult,
	StreamFn,
} from "../../../agent/types.js";
import { streamSimple } from "../../../ai/stream.js";
import type { Context, Model, SimpleStreamOptions, Usage } from "../../../ai/types.js";
import { addUsage, zeroUsage } from "../../../ai/usage.js";
import type {
	IdempotencyRecord,
	MessagePage,
	QueuedMessage,
	QueueKind,
	RunStatus,
	SessionConfig,
	SessionRecord,
	SessionStore,
	SessionVisibility,
	SupersededBranch,
} from "../../../store/types.js";
import type { ServerEvent } from "../../../wire/events.js";
import { AgentEventRecorder } from "./agent-events.js";
import { busyForContinueError, sessionError } from "./errors.js";
import { SessionEventLog } from "./event-log.js";
import { type ExtensionEventTable, ExtensionObserver } from "./extension-events.js";
import {
	type BeforeToolCall,
	buildModelCallChain,
	type ConvertToLlm,
	type ModelCallHooks,
	type ModelCallLayer,
} from "./model-calls.js";
import { type SessionObserver, SessionObservers } from "./observers.js";
import { type QueuedAnswer, type QueueEntry, SessionQueues } from "./queues.js";
import type { RewindPlan } from "./rewind.js";
import type { RunSlots } from "./run-slots.js";
import { type RunHandle, SessionRuns } from "./runs.js";
import { approximateJsonBytes } from "./sizes.js";
import { StoredTranscript } from "./transcript.js";
import { transcriptMessageId } from "./transcript-cuts.js";
import { loadWindow, readBefore } from "./transcript-window.js";
import { type SessionView, type StoredSession, sessionView } from "./view.js";

/**
 * Hooks that extend every session (client-side tools, approvals, ...). All optional.
 * Contract: hooks must not throw (a throw in `beforeToolCall` / `afterToolCall` becomes an error
 * tool result, as in the Agent; a throw elsewhere is logged and ignored).
 */
export interface SessionExtension {
	name: string;
	/** Extra tools of one session (e.g. client-side tools it declared). Called when tools are (re)resolved. */
	tools?(session: LiveSession): AgentTool<any>[];
	/** Runs in registration order before each tool call; the first `{ block: true }` wins. */
	beforeToolCall?(
		session: LiveSession,
		context: BeforeToolCallContext,
		signal?: AbortSignal,
	): Promise<BeforeToolCallResult | undefined>;
	/** Runs in registration order after each tool call; later overrides win field by field. */
	afterToolCall?(
		session: LiveSession,
		context: AfterToolCallContext,
		signal?: AbortSignal,
	): Promise<AfterToolCallResult | undefined>;
	/** Extra fields of the session state (`GET /v1/sessions/:id` and `session_snapshot`). */
	state?(session: LiveSession): Record<string, unknown>;
	/**
	 * The fields of `state` it can give from what the store holds, for a session not in memory here
	 * (`storedView`: a replica without its run shows it without loading it). Absent: those fields
	 * are left out there.
	 */
	storedState?(stored: StoredSession): Record<string, unknown>;
	/** The names of the tools `tools` would give the session, from what the store holds (`storedView`). */
	storedToolNames?(stored: StoredSession): string[];
	/**
	 * Called for each AgentEvent of a type in `events` (every type when `events` is absent), after
	 * it was logged: the extensions are an observer of the session's events (`observers.ts`), after
	 * the observers added with `LiveSession.observe`.
	 */
	onEvent?(session: LiveSession, event: AgentEvent): void;
	/**
	 * The event types `onEvent` is called for; absent: all. Name them: a streamed delta
	 * (`message_update`) is by far the most frequent event, and every call on it is paid per token.
	 */
	events?: readonly AgentEvent["type"][];
	/**
	 * Called for the first `message_update` of each message, after it was logged (a model's first
	 * streamed output): what needs only that leaves `message_update` out of `events`.
	 */
	onFirstUpdate?(session: LiveSession, event: AgentEvent & { type: "message_update" }): void;
	/** The session was deleted. */
	onDelete?(session: LiveSession): void;
	/**
	 * The session was dropped from memory while idle (evicted, or left to another replica): it
	 * stays in the store and a later request loads it again (`load`, `attach`). Forget what is
	 * kept for it in memory, so the dropped object can be collected.
	 */
	onEvict?(session: LiveSession): void;
	/** Validates the `POST /v1/sessions` body before the session is created; throw an ApiError (or a SessionError) to reject it. */
	beforeCreate?(input: Record<string, unknown>): void;
	/** A session was created from `input` (the `POST /v1/sessions` body). */
	onCreate?(session: LiveSession, input: Record<string, unknown>): void;
	/**
	 * The session was brought into memory (`origin`: `created` just now, or `stored`: loaded from
	 * the store), before any request can reach it: read what the extension keeps in the store for
	 * it. A session just created has nothing stored but its record and transcript.
	 */
	load?(session: LiveSession, origin: "created" | "stored"): Promise<void>;
	/** Validates a config patch (`PATCH /v1/sessions/:id`) before it is stored; throw an ApiError (or a SessionError) to reject it. */
	beforeUpdate?(session: LiveSession, patch: Record<string, unknown>): void;
	/** A session object was built (created, or loaded from the store): may install hooks on its Agent. */
	attach?(session: LiveSession): void;
	/**
	 * Before `beforeRun`: reads what it needs from elsewhere (the store) to decide; returns a promise
	 * to wait for, or undefined when there is nothing to read (the run then starts without waiting).
	 * A rejection refuses the run.
	 */
	prepareRun?(session: LiveSession, kind: RunKind): Promise<void> | undefined;
	/** Before a prompt, a continue or a run outside the loop claims the session; throw an ApiError (or a SessionError) to refuse it. */
	beforeRun?(session: LiveSession, kind: RunKind): void;
	/**
	 * A run of the session ended, once per run: when its end was stored (`completed`, `error`,
	 * `aborted`), or, for a run a stopped process or a lost replica left behind, when this process
	 * announced it `interrupted` on the session's stream.
	 */
	onRunEnd?(session: LiveSession, runId: string | null, status: Exclude<RunStatus, "running">): void;
}

/** How a prompt or a continue starts its run. All optional. */
export interface RunStartOptions {
	/** Runs once the run exists, before its first event (a per-run stream attaches here). */
	attach?: (run: RunHandle) => void;
	/** The trace context of the request that starts the run (its server span is the run's parent). */
	trace?: TraceContext;
}

/** What claims a session: a prompt, a continue, or work outside the agent loop (`runOutsideLoop`). */
export type RunKind = "prompt" | "continue" | "outside";

/** What a session needs from its manager. */
export interface LiveSessionDeps {
	store: SessionStore;
	logger: FastifyBaseLogger;
	resolveModel(spec: string): Model<any> | undefined;
	/**
	 * The server tools `selectors` (a session's `tools`, see `tools/selection.ts`) enable as they are
	 * registered now, in registration order. Contract: sessions with the same selection may get the
	 * same array; it must not be changed.
	 */
	serverTools(selectors: readonly string[]): readonly AgentTool<any>[];
	extensions(): readonly SessionExtension[];
	/** The same extensions by the event types their `onEvent` takes. */
	extensionEvents(): ExtensionEventTable<SessionExtension>;
	/** Called without `this` (the Agent gets it as it is). */
	getApiKey(provider: string): string | undefined;
	/** Idle timeout of model calls whose model sets none; absent: the driver's default. */
	providerIdleTimeoutMs?: number;
	maxQueuedMessages: number;
	/** Bytes one session's queue may hold; 0: no limit. */
	maxQueuedBytes?: number;
	/** Bytes the queues of one owner's sessions may hold together; 0: no limit. */
	maxQueuedBytesPerKey?: number;
	/** Bytes queued now on all the sessions of `ownerId` in memory (this one included). */
	ownerQueuedBytes?(ownerId: string | null): number;
	isShuttingDown(): boolean;
	/** The per-key limit of concurrent runs; absent: none. */
	runSlots?: RunSlots;
	/**
	 * Observes every session's events after the session's other observers (cluster mode's fan-out
	 * to the other replicas); absent: none. Contract: must not throw.
	 */
	fanOut?: SessionObserver;
	/** The session's run ended and no other waits to start (cluster mode gives up its lease). */
	onIdle?(session: LiveSession): void;
	/** Resolves when a run may claim the session in the store (cluster mode: its lease is not being given up). */
	beforeClaim?(sessionId: string): Promise<void> | undefined;
	/** See `RunHost.claimRetryMs`. */
	claimRetryMs?: number;
}

export class LiveSession {
	readonly id: string;
	private readonly agent: Agent;
	/** The session's event log: appends, and the reads a resume needs. */
	readonly events: SessionEventLog;
	/** The one channel its events are observed through (see `observers.ts`). */
	private readonly observers: SessionObservers;
	/** The stored record, kept as the store has it: replaced by config changes, moved by run starts and ends. */
	private record: SessionRecord;
	private readonly queues: SessionQueues;
	private readonly runs: SessionRuns;
	private readonly transcript: StoredTranscript;
	private deleted = false;
	/** Aborts the work of a run outside the agent loop (`runOutsideLoop`) while one runs. */
	private outsideAbort: AbortController | undefined;
	/** The layers around the model calls, by layer (see `model-calls.ts`). */
	private readonly modelCallLayers = new Map<ModelCallLayer, ModelCallHooks>();
	private readonly defaultConvertToLlm: ConvertToLlm;
	/** The innermost model call and tool hook, around which the layers go (made once, for the Agent and every rebuild of the chain). */
	private readonly innermost: { stream: StreamFn; beforeToolCall: BeforeToolCall };
	lastActiveAt = Date.now();

	/** `messages`: the stored transcript from index `base` on (its window, `transcript-window.ts`). */
	constructor(
		record: SessionRecord,
		messages: AgentMessage[],
		queued: QueuedMessage[],
		private readonly deps: LiveSessionDeps,
		base = 0,
	) {
		this.id = record.id;
		this.record = record;
		const own: SessionObserver[] = [new ExtensionObserver(this, () => deps.extensionEvents(), deps.logger)];
		if (deps.fanOut) own.unshift(deps.fanOut);
		this.observers = new SessionObservers(record.id, deps.logger, own);
		this.events = new SessionEventLog(deps.store, record.id, this.observers, record.lastEventId);
		this.transcript = new StoredTranscript(deps.store, record.id, messages, base);
		const model = deps.resolveModel(record.model);
		if (!model) throw new Error(`Session ${record.id}: model ${record.model} is not in the catalog`);
		this.innermost = {
			stream: (model, context, options) => this.streamWithCurrentConfig(model, context, options),
			beforeToolCall: (context, signal) => this.runBeforeToolCall(context, signal),
		};
		this.agent = new Agent({
			initialState: {
				systemPrompt: record.systemPrompt,
				model,
				thinkingLevel: record.thinkingLevel,
				messages,
			},
			steeringMode: record.steeringMode,
			followUpMode: record.followUpMode,
			toolExecution: record.toolExecution,
			sessionId: record.id,
			getApiKey: deps.getApiKey,
			streamFn: this.innermost.stream,
			beforeToolCall: this.innermost.beforeToolCall,
			afterToolCall: (context, signal) => this.runAfterToolCall(context, signal),
		});
		this.defaultConvertToLlm = this.agent.convertToLlm;
		this.agent.state.tools = this.resolveTools();
		this.queues = new SessionQueues(
			{
				sessionId: record.id,
				store: deps.store,
				agent: this.agent,
				maxQueuedMessages: deps.maxQueuedMessages,
				maxQueuedBytes: deps.maxQueuedBytes ?? 0,
				maxQueuedBytesPerKey: deps.maxQueuedBytesPerKey ?? 0,
				ownerQueuedBytes: () => deps.ownerQueuedBytes?.(this.ownerId) ?? this.queues.bytes,
				publish: (payload) => this.publish("queue_update", payload),
			},
			queued,
		);
		this.runs = new SessionRuns({
			sessionId: record.id,
			store: deps.store,
			logger: deps.logger,
			runSlots: deps.runSlots,
			ownerId: () => this.ownerId,
			isShuttingDown: () => deps.isShuttingDown(),
			isDeleted: () => this.deleted,
			lastEventId: () => this.lastEventId,
			abortAgent: () => this.agent.abort(),
			runStored: (runId, prompt) => {
				this.transcript.storedWithRun(prompt);
				this.record = { ...this.record, status: "running", currentRunId: runId, interruptedAt: null };
			},
			runAbandoned: (prompt) => {
				this.transcript.forgetRun(prompt);
				if (prompt.length > 0) this.agent.state.messages = [...this.agent.state.messages, ...prompt];
			},
			// As the store records it (`SessionWriter.endRun`), without reading it back: the end is
			// committed with other sessions' at the next barrier, and a read would commit it at once.
			runEnded: (runId, end) => {
				this.notifyRunEnd(runId, end.status);
				const usage = zeroUsage();
				addUsage(usage, this.record.usage);
				addUsage(usage, end.usage);
				const current = this.record.currentRunId === runId;
				this.record = {
					...this.record,
					usage,
					lastActiveAt: Math.max(this.record.lastActiveAt, end.endedAt),
					...(current ? { status: "idle" as const, currentRunId: null, interruptedAt: null } : {}),
				};
			},
			touch: () => {
				this.lastActiveAt = Date.now();
			},
			idle: () => this.deps.onIdle?.(this),
			beforeClaim: () => this.deps.beforeClaim?.(this.id),
			claimed: (updatedAt) => this.takeInStoredConfig(updatedAt),
			claimRetryMs: deps.claimRetryMs,
		});
		const recorder = new AgentEventRecorder({
			sessionId: record.id,
			agent: this.agent,
			events: this.events,
			runs: this.runs,
			queues: this.queues,
			transcript: this.transcript,
			logger: deps.logger,
		});
		this.agent.subscribe((event) => recorder.onAgentEvent(event));
		for (const ext of deps.extensions()) this.attachExtension(ext);
	}

	private extensionFailed(err: unknown, ext: SessionExtension, hook: string): void {
		this.deps.logger.error({ err, extension: ext.name, sessionId: this.id }, `extension ${hook}() failed`);
	}

	/** Lets `ext` install its hooks on this session (`SessionExtension.attach`); a throw is logged. */
	attachExtension(ext: SessionExtension): void {
		try {
			ext.attach?.(this);
		} catch (err) {
			this.deps.logger.error({ err, extension: ext.name, sessionId: this.id }, "extension attach() failed");
		}
	}

	/** The stored record (config, owner, status, usage of ended runs). */
	get config(): SessionRecord {
		return this.record;
	}

	/** The session's record as the store has it now (another replica may have changed it). */
	readRecord(): Promise<SessionRecord | undefined> {
		return this.deps.store.getSession(this.id);
	}

	/** The session's waiting calls as the store has them, resolved ones included. */
	readPending(): ReturnType<SessionStore["listPending"]> {
		return this.deps.store.listPending(this.id, { includeResolved: true });
	}

	/** The superseded branches of the transcript (rewinds, regenerations, edits), oldest first. */
	async readSuperseded(): Promise<SupersededBranch[]> {
		return (await this.deps.store.listSuperseded(this.id)) ?? [];
	}

	/** A page of the stored transcript (empty for a session deleted meanwhile). */
	async readMessages(offset: number, limit: number): Promise<MessagePage> {
		return (await this.deps.store.listMessages(this.id, { offset, limit })) ?? { messages: [], offset, total: 0 };
	}

	get ownerId(): string | null {
		return this.record.ownerId;
	}

	/** Who may see it besides its owner: its tenant and visibility (store/visibility.ts). */
	get sharing(): { ownerId: string | null; tenant: string | null; visibility: SessionVisibility } {
		return { ownerId: this.record.ownerId, tenant: this.record.tenant, visibility: this.record.visibility };
	}

	get isBusy(): boolean {
		return this.runs.isBusy;
	}

	/** The observers added with `observe` (SSE streams, facades): a session with one stays in memory. */
	get subscriberCount(): number {
		return this.observers.count;
	}

	get lastEventId(): number {
		return this.events.lastEventId;
	}

	/**
	 * The Agent fixes model, system prompt and reasoning level when a run starts; a PATCH must
	 * apply from the next model call, so each call reads them from the live state instead.
	 */
	private streamWithCurrentConfig(model: Model<any>, context: Context, options?: SimpleStreamOptions) {
		const state = this.agent.state;
		const current = state.model;
		const apiKey =
			current.provider === model.provider ? options?.apiKey : (this.deps.getApiKey(current.provider) ?? undefined);
		return streamSimple(
			current,
			{ ...context, systemPrompt: state.systemPrompt },
			{
				...options,
				apiKey,
				reasoning: state.thinkingLevel === "off" ? undefined : state.thinkingLevel,
				// The model's own idle timeout beats the server-wide one.
				timeoutMs: options?.timeoutMs ?? current.idleTimeoutMs ?? this.deps.providerIdleTimeoutMs,
			},
		);
	}

	/**
	 * Puts `hooks` around the session's model calls as layer `layer` (replacing that layer's
	 * previous hooks); the chain is rebuilt in the order of `MODEL_CALL_LAYERS`, whatever order
	 * the layers come in. Applies from the next model call.
	 */
	useModelCallLayer(layer: ModelCallLayer, hooks: ModelCallHooks): void {
		this.modelCallLayers.set(layer, hooks);
		const chain = buildModelCallChain(this.modelCallLayers, this.innermost);
		this.agent.streamFn = chain.stream;
		this.agent.transformContext = chain.transformContext;
		this.agent.convertToLlm = chain.convertToLlm ?? this.defaultConvertToLlm;
		this.agent.beforeToolCall = chain.beforeToolCall;
	}

	/** The API key of `provider` (what the session's model calls use). */
	apiKeyFor(provider: string): string | undefined {
		return this.deps.getApiKey(provider);
	}

	// --- tools & hooks ----------------------------------------------------------------------

	/**
	 * The session's tools: the server tools its `tools` selectors match (exact names and `prefix*`
	 * patterns, matched now, so tools registered since creation count) plus every extension's tools.
	 */
	resolveTools(): AgentTool<any>[] {
		const tools = this.deps.serverTools(this.record.tools).slice();
		for (const ext of this.deps.extensions()) {
			if (!ext.tools) continue;
			try {
				const own = ext.tools(this);
				for (const tool of own) tools.push(tool);
			} catch (err) {
				this.deps.logger.error({ err, extension: ext.name, sessionId: this.id }, "extension tools() failed");
			}
		}
		return tools;
	}

	/** Re-reads the tool list (after a PATCH, or when an extension's tools for this session changed); applies from the next run. */
	refreshTools(): void {
		this.agent.state.tools = this.resolveTools();
	}

	private async runBeforeToolCall(
		context: BeforeToolCallContext,
		signal?: AbortSignal,
	): Promise<BeforeToolCallResult | undefined> {
		for (const ext of this.deps.extensions()) {
			if (!ext.beforeToolCall) continue;
			const result = await ext.beforeToolCall(this, context, signal);
			if (result?.block) return result;
		}
		return undefined;
	}

	private async runAfterToolCall(
		context: AfterToolCallContext,
		signal?: AbortSignal,
	): Promise<AfterToolCallResult | undefined> {
		let merged: AfterToolCallResult | undefined;
		for (const ext of this.deps.extensions()) {
			if (!ext.afterToolCall) continue;
			const result = await ext.afterToolCall(this, context, signal);
			if (result) merged = { ...merged, ...result };
		}
		return merged;
	}

	// --- events -------------------------------------------------------------------------------

	/** The sequence number of the active run, 0 when idle. */
	get currentRunSeq(): number {
		return this.runs.currentSeq;
	}

	/**
	 * Publishes a server-level event (a name that is not an AgentEvent type, e.g.
	 * `approval_requested`) on the session's stream with the next id. `payload.type` is set to `type`.
	 */
	publish(type: ServerEvent["type"], payload: Record<string, unknown>): number | undefined {
		return this.events.append(type, JSON.stringify({ ...payload, type }), this.currentRunSeq);
	}

	/** Tells the extensions that run `runId` ended with `status` (see {@link SessionExtension.onRunEnd}). */
	notifyRunEnd(runId: string | null, status: Exclude<RunStatus, "running">): void {
		for (const ext of this.deps.extensions()) {
			try {
				ext.onRunEnd?.(this, runId, status);
			} catch (err) {
				this.extensionFailed(err, ext, "onRunEnd");
			}
		}
	}

	/**
	 * Adds an observer of the session's events: every event appended from now on, as the contract
	 * of `observers.ts` says (the one way to read them live). Returns the removal function.
	 */
	observe(observer: SessionObserver): () => void {
		const unsubscribe = this.observers.observe(observer);
		this.lastActiveAt = Date.now();
		return () => {
			unsubscribe();
			this.lastActiveAt = Date.now();
		};
	}

	// --- queues -------------------------------------------------------------------------------

	/** Queued messages in order. */
	get queued(): readonly QueueEntry[] {
		return this.queues.queued;
	}

	queueCounts(): { steeringCount: number; followUpCount: number } {
		return this.queues.counts();
	}

	/** Bytes queued (and being queued) on this session, as the queue's byte limits count them. */
	get queuedBytes(): number {
		return this.queues.bytes;
	}

	/**
	 * About the bytes this session holds in memory: its transcript and its queue, as JSON. The
	 * idle-session budget counts this (the store's share, such as the events kept for resume, goes
	 * with the session when it is evicted).
	 */
	get memoryBytes(): number {
		return this.transcript.bytes + this.queues.bytes;
	}

	/** Throws `QUEUE_TOO_LARGE` when queueing `message` would pass a byte limit (for queueing done elsewhere). */
	checkQueueRoom(message: AgentMessage): void {
		this.queues.checkBytes(approximateJsonBytes(message));
	}

	/**
	 * Queues a steering or follow-up message: into the store (durable when this resolves) and the
	 * Agent's queue. Rejects with `QUEUE_FULL` past the limit. `withKey` builds, from what the caller
	 * will answer, the idempotency record the store keeps in the message's own commit.
	 */
	async enqueue(
		kind: QueueKind,
		message: AgentMessage,
		withKey?: (queued: QueuedAnswer) => IdempotencyRecord,
	): Promise<{ entry: QueueEntry; queueLength: number; idle: boolean }> {
		const queued = await this.queues.enqueue(kind, message, !this.runs.isBusy, withKey);
		this.lastActiveAt = Date.now();
		return queued;
	}

	/** Takes in the stored queue as another replica changed it (queued or cleared there). */
	async reloadQueue(): Promise<void> {
		await this.queues.syncStored(await this.deps.store.listQueued(this.id));
	}

	/** Clears one queue or both (Agent and store). Resolves to how many messages were removed. */
	clearQueue(kind?: QueueKind): Promise<number> {
		return this.queues.clear(kind);
	}

	// --- runs ---------------------------------------------------------------------------------

	/**
	 * Starts a prompt. `ifBusy` decides what happens while a run is active: `reject` (409),
	 * `interrupt` (abort it, start when it settled), or queue the message as `steer` / `followUp`.
	 * `options.withKey` builds, from what the caller will answer, the idempotency record a queued
	 * message is stored with.
	 */
	async prompt(
		messages: AgentMessage[],
		ifBusy: "reject" | "steer" | "followUp" | "interrupt",
		options: RunStartOptions & { withKey?: (queued: QueuedAnswer) => IdempotencyRecord } = {},
	): Promise<{ kind: "started"; run: RunHandle } | ({ kind: "queued" } & QueuedAnswer)> {
		const { attach, withKey, trace } = options;
		if (this.runs.isBusy && (ifBusy === "steer" || ifBusy === "followUp")) {
			if (messages.length !== 1) throw sessionError("VALIDATION_FAILED", "Queue exactly one message at a time.");
			const { entry, queueLength, idle } = await this.enqueue(ifBusy, messages[0], withKey);
			return { kind: "queued", queue: ifBusy, queueLength, idle, entryId: entry.id };
		}
		const preparing = this.prepareRun("prompt");
		if (preparing) await preparing;
		this.checkRun("prompt");
		await this.runs.claim(ifBusy === "interrupt" ? "interrupt" : "reject");
		return {
			kind: "started",
			run: await this.runs.launch(() => this.agent.prompt(messages), attach, messages, trace),
		};
	}

	/**
	 * Continues from the transcript, by the reference's rules: 409 while running; 422 on an empty
	 * transcript; after an assistant message only when steering or follow-up messages are queued.
	 */
	async continue(options: RunStartOptions = {}): Promise<RunHandle> {
		if (this.runs.isBusy) throw busyForContinueError(this.id);
		const messages = this.agent.state.messages;
		const last = messages[messages.length - 1];
		if (!last) {
			throw sessionError("NOTHING_TO_CONTINUE", `Session ${this.id} has no messages to continue from; send a prompt.`);
		}
		if ((last as { role?: string }).role === "assistant" && this.queues.length === 0) {
			throw sessionError(
				"CANNOT_CONTINUE_FROM_ASSISTANT",
				`The last message of session ${this.id} is the assistant's and nothing is queued; send a prompt (or queue a steering/follow-up message) instead.`,
			);
		}
		const preparing = this.prepareRun("continue");
		if (preparing) await preparing;
		this.checkRun("continue");
		await this.runs.claim("reject");
		return await this.runs.launch(() => this.agent.continue(), options.attach, [], options.trace);
	}

	/** Aborts the active run (it still ends with `agent_end`). Returns whether a run was active. */
	abort(): boolean {
		if (!this.runs.abort()) return false;
		this.outsideAbort?.abort();
		return true;
	}

	/** Resolves when no run is active (including a waiting interrupt's run). */
	waitForIdle(): Promise<void> {
		return this.runs.waitForIdle();
	}

	/** The active run's id, if any. */
	get runId(): string | undefined {
		return this.runs.active?.id;
	}

	/** The trace context of the request that started the active run, if it was traced. */
	get runTrace(): TraceContext | undefined {
		return this.runs.active?.trace;
	}

	/** The handle of run `runId` while it is the active run; undefined once it is over (or if it never was). */
	activeRunHandle(runId: string): RunHandle | undefined {
		return this.runs.activeHandle(runId);
	}

	// --- work outside the agent loop (compaction) ----------------------------------------------

	/** The extensions' `prepareRun` together; undefined (no tick to wait) when none has anything to read. */
	private prepareRun(kind: RunKind): Promise<unknown> | undefined {
		const pending: Promise<void>[] = [];
		for (const ext of this.deps.extensions()) {
			const wait = ext.prepareRun?.(this, kind);
			if (wait) pending.push(wait);
		}
		return pending.length > 0 ? Promise.all(pending) : undefined;
	}

	private checkRun(kind: RunKind): void {
		for (const ext of this.deps.extensions()) ext.beforeRun?.(this, kind);
	}

	/**
	 * Runs `work` as a run without the agent loop (a manual compaction): refused and claimed like a
	 * prompt (`AGENT_BUSY` meanwhile), stored as a run (its usage counts; a crash leaves the session
	 * interrupted), with no agent events. `work` gets a signal that `abort()` fires, counts what it
	 * spends with `addRunUsage`, and returns why it failed, if it did. Resolves once the run is over.
	 */
	async runOutsideLoop(work: (signal: AbortSignal) => Promise<{ failure?: string }>): Promise<void> {
		const preparing = this.prepareRun("outside");
		if (preparing) await preparing;
		this.checkRun("outside");
		await this.runs.claim("reject");
		const controller = new AbortController();
		const handle = await this.runs.launch(async () => {
			this.outsideAbort = controller;
			try {
				const { failure } = await work(controller.signal);
				const run = this.runs.active;
				if (run) this.runs.end(run, failure);
			} finally {
				this.outsideAbort = undefined;
			}
		});
		await handle.done;
	}

	/**
	 * Cuts the transcript as `plan` says, as a run (refused and claimed like a prompt: `AGENT_BUSY`
	 * meanwhile; durable as any run): the store moves the messages from `plan.keep` on into a
	 * superseded branch, the Agent reloads its window, `transcript_rewound` goes on the stream, and
	 * the run goes on as `plan.after` says. Resolves once the run started; `rewound` settles with the
	 * branch, or with the error that left the transcript as it was (the run then ends as failed).
	 */
	async rewind(
		plan: RewindPlan,
		options: RunStartOptions = {},
	): Promise<{ run: RunHandle; rewound: Promise<SupersededBranch | Error> }> {
		const after = plan.after;
		const kind = after.kind === "stop" ? "outside" : after.kind;
		const preparing = this.prepareRun(kind);
		if (preparing) await preparing;
		this.checkRun(kind);
		await this.runs.claim("reject");
		let settle!: (outcome: SupersededBranch | Error) => void;
		const rewound = new Promise<SupersededBranch | Error>((resolve) => {
			settle = resolve;
		});
		const start = async () => {
			const run = this.runs.active;
			const outcome = await this.cutTranscript(plan, run?.id ?? null).catch((err: unknown) =>
				err instanceof Error ? err : new Error(String(err)),
			);
			settle(outcome);
			if (outcome instanceof Error || after.kind === "stop") {
				if (run) this.runs.end(run, outcome instanceof Error ? outcome.message : undefined);
				return;
			}
			await (after.kind === "continue" ? this.agent.continue() : this.agent.prompt(after.messages));
		};
		return { run: await this.runs.launch(start, options.attach, [], options.trace), rewound };
	}

	/** The cut of {@link rewind}, in its run: store, window, event. */
	private async cutTranscript(plan: RewindPlan, runId: string | null): Promise<SupersededBranch> {
		const store = this.deps.store;
		if ((await store.countMessages(this.id)) !== plan.expectedCount) {
			throw sessionError(
				"AGENT_BUSY",
				`The transcript of session ${this.id} changed meanwhile; nothing was rewound (try again).`,
			);
		}
		const branch = await store.rewindTranscript(this.id, plan.keep, Date.now());
		const window = branch && (await loadWindow(store, this.id));
		if (!branch || !window) {
			throw sessionError(
				"AGENT_BUSY",
				`Session ${this.id} is held by another replica or was deleted; nothing was rewound.`,
			);
		}
		this.transcript.reset(window.messages, window.base);
		this.agent.state.messages = window.messages;
		const eventId = this.publish("transcript_rewound", {
			messageCount: plan.keep,
			fromMessageId: transcriptMessageId(plan.keep),
			branch: branch.branch,
			superseded: branch.messages.length,
			reason: plan.reason,
			runId,
		});
		// The run's first event is this one, not its `agent_start`: a client resuming from before the
		// run learns of the cut first.
		if (eventId !== undefined) this.runs.active?.resolveFirst(eventId);
		return branch;
	}

	/** Appends a message the loop did not produce (a compaction) at the end of the transcript: the store's and the Agent's. */
	appendMessage(message: AgentMessage): boolean {
		if (!this.transcript.appendOutsideLoop(message)) return false;
		this.agent.state.messages = [...this.agent.state.messages, message];
		return true;
	}

	// --- the transcript window (transcript-window.ts) -----------------------------------------

	/** Messages in the whole transcript: the window the Agent holds and the stored ones before it. */
	get messageCount(): number {
		return this.transcript.base + this.agent.state.messages.length;
	}

	/** Index in the whole transcript of the Agent's first message. */
	get transcriptBase(): number {
		return this.transcript.base;
	}

	/**
	 * No model call reads the messages before `first` any more (a compaction replaced them): they
	 * leave memory and stay in the store. Returns how many left.
	 */
	releaseBefore(first: AgentMessage): number {
		return this.transcript.release(this.agent.state, first);
	}

	/**
	 * The whole transcript as it is when this resolves: the part before the window read from the
	 * store, then the window (for readers that send all of it).
	 */
	async wholeTranscript(): Promise<AgentMessage[]> {
		for (;;) {
			const base = this.transcript.base;
			const older = await readBefore(this.deps.store, this.id, base);
			// A compaction meanwhile moved the window on: what it released is not in `older`.
			if (this.transcript.base === base) return [...older, ...this.agent.state.messages];
		}
	}

	/** Adds usage spent outside the loop's assistant messages (a compaction's model call) to the active run's. */
	addRunUsage(usage: Usage): void {
		const run = this.runs.active;
		if (run) addUsage(run.usage, usage);
	}

	/** Tokens and cost of the session so far: its ended runs and the active one. */
	get usage(): Usage {
		const usage = zeroUsage();
		addUsage(usage, this.record.usage);
		const run = this.runs.active;
		if (run) addUsage(usage, run.usage);
		return usage;
	}

	// --- config -------------------------------------------------------------------------------

	/** Applies a config patch (validated by the caller): the store first (durably), then the live Agent. */
	async applyConfig(patch: Partial<SessionConfig>): Promise<SessionRecord> {
		const updated = await this.deps.store.updateSession(this.id, patch, Date.now());
		if (!updated) throw sessionError("SESSION_NOT_FOUND", `Session ${this.id} no longer exists.`);
		this.record = updated; // a durable write of the session: the run writes queued before it are in it
		this.applyToAgent(patch);
		return updated;
	}

	/**
	 * Takes in the config another replica stored (`updated`, read back from the store): applied
	 * to the running Agent as `applyConfig` applies a patch, without writing.
	 */
	adoptConfig(updated: SessionRecord): void {
		const { model, systemPrompt, thinkingLevel, steeringMode, followUpMode, toolExecution, tools, clientTools } =
			updated;
		const changedTools = tools !== this.record.tools || clientTools !== this.record.clientTools;
		this.record = { ...this.record, ...updated, status: this.record.status, currentRunId: this.record.currentRunId };
		this.applyToAgent({ model, systemPrompt, thinkingLevel, steeringMode, followUpMode, toolExecution });
		if (changedTools) this.refreshTools();
	}

	/**
	 * A run's claim read the stored config version `updatedAt`: when it is not the one held here,
	 * another replica changed the config since this session was loaded, and the stored record is
	 * read and taken in (unless a change reached this session meanwhile: that one is newer).
	 */
	private async takeInStoredConfig(updatedAt: number): Promise<void> {
		const held = this.record.updatedAt;
		if (updatedAt === held) return;
		try {
			const stored = await this.readRecord();
			if (stored && stored.updatedAt !== held && this.record.updatedAt === held) this.adoptConfig(stored);
		} catch (err) {
			this.deps.logger.warn(
				{ err, sessionId: this.id },
				"the config stored since the session was loaded could not be read",
			);
		}
	}

	private applyToAgent(patch: Partial<SessionConfig>): void {
		if (patch.model) {
			const model = this.deps.resolveModel(patch.model);
			if (model) this.agent.state.model = model;
		}
		if (patch.systemPrompt !== undefined) this.agent.state.systemPrompt = patch.systemPrompt;
		if (patch.thinkingLevel) this.agent.state.thinkingLevel = patch.thinkingLevel;
		if (patch.steeringMode) this.agent.steeringMode = patch.steeringMode;
		if (patch.followUpMode) this.agent.followUpMode = patch.followUpMode;
		if (patch.toolExecution) this.agent.toolExecution = patch.toolExecution;
		if (patch.tools) this.refreshTools();
	}

	// --- state --------------------------------------------------------------------------------

	/** Session state as `GET /v1/sessions/:id` returns it. */
	view(): SessionView {
		const record = this.record;
		const extra: Record<string, unknown> = {};
		for (const ext of this.deps.extensions()) {
			if (!ext.state) continue;
			try {
				Object.assign(extra, ext.state(this));
			} catch (err) {
				this.deps.logger.error({ err, extension: ext.name }, "extension state() failed");
			}
		}
		return sessionView({
			record,
			agent: this.agent.state,
			messageCount: this.messageCount,
			busy: this.runs.isBusy,
			activeRun: this.runs.active,
			queues: this.queues,
			lastEventId: this.lastEventId,
			extra,
		});
	}

	/**
	 * Sets the system prompt of the next model calls without storing it (a facade's per-request
	 * instructions), or restores the stored one with `undefined`.
	 */
	setInstructions(systemPrompt: string | undefined): void {
		this.agent.state.systemPrompt = systemPrompt ?? this.record.systemPrompt;
	}

	/** The system prompt the next model call gets (the stored one, or a facade's instructions). */
	get systemPrompt(): string {
		return this.agent.state.systemPrompt;
	}

	/** The model the next model call goes to. */
	get model(): Model<any> {
		return this.agent.state.model;
	}

	/** The transcript as the Agent holds it (what the next model call is built from). Read only. */
	get messages(): AgentMessage[] {
		return this.agent.state.messages;
	}

	/** The in-flight partial message, if one is streaming. */
	get streamingMessage(): AgentMessage | undefined {
		return this.agent.state.streamingMessage;
	}

	/** Marks the session deleted: aborts its run, closes its streams. The caller deletes it from the store. */
	async destroy(reason: string, waitMs: number): Promise<void> {
		this.deleted = true;
		this.abort();
		await Promise.race([this.waitForIdle(), sleep(waitMs, undefined, { ref: false })]);
		this.closeSubscribers(reason);
	}

	/** Tells every observer the session is going away (`SessionObserver.close`), and forgets them. */
	closeSubscribers(reason: string): void {
		this.observers.close(reason);
	}

	/** The session's lease was lost to another replica: its observers end without what is not sent. */
	leaseLost(): void {
		this.observers.leaseLost();
	}
}
