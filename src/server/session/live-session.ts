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
import { Agent } from "../../agent/agent.js";
import type {
	AfterToolCallContext,
	AfterToolCallResult,
	AgentEvent,
	AgentMessage,
	AgentTool,
	BeforeToolCallContext,
	BeforeToolCallResult,
} from "../../agent/types.js";
import { streamSimple } from "../../ai/stream.js";
import type { Context, Model, SimpleStreamOptions, Usage } from "../../ai/types.js";
import { addUsage } from "../../ai/usage.js";
import type {
	IdempotencyRecord,
	QueuedMessage,
	QueueKind,
	RunStatus,
	SessionConfig,
	SessionRecord,
	SessionStore,
} from "../../store/types.js";
import { selectTools } from "../../tools/selection.js";
import type { ServerEvent } from "../../wire/events.js";
import { apiError } from "../errors.js";
import type { RunSlots } from "../limits.js";
import { AgentEventRecorder } from "./agent-events.js";
import { type EventTap, SessionEventLog, type SessionSubscriber } from "./event-log.js";
import type { ExtensionEventTable } from "./extension-events.js";
import { type QueuedAnswer, type QueueEntry, SessionQueues } from "./queues.js";
import { type RunHandle, SessionRuns } from "./runs.js";
import { approximateJsonBytes } from "./sizes.js";
import { StoredTranscript } from "./transcript.js";
import { type SessionView, sessionView } from "./view.js";

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
	 * Called for each AgentEvent of a type in `events` (every type when `events` is absent), after
	 * it was logged.
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
	/** Validates the `POST /v1/sessions` body before the session is created; throw an ApiError to reject it. */
	beforeCreate?(input: Record<string, unknown>): void;
	/** A session was created from `input` (the `POST /v1/sessions` body). */
	onCreate?(session: LiveSession, input: Record<string, unknown>): void;
	/**
	 * The session was brought into memory (created, or loaded from the store), before any request
	 * can reach it: read what the extension keeps in the store for it.
	 */
	load?(session: LiveSession): Promise<void>;
	/** Validates a config patch (`PATCH /v1/sessions/:id`) before it is stored; throw an ApiError to reject it. */
	beforeUpdate?(session: LiveSession, patch: Record<string, unknown>): void;
	/** A session object was built (created, or loaded from the store): may install hooks on its Agent. */
	attach?(session: LiveSession): void;
	/** Before a prompt, a continue or a run outside the loop claims the session; throw an ApiError to refuse it. */
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
	/** Tools of the server by name. */
	serverTools(): Map<string, AgentTool<any>>;
	extensions(): readonly SessionExtension[];
	/** The same extensions by the event types their `onEvent` takes. */
	extensionEvents(): ExtensionEventTable<SessionExtension>;
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
	/** Sees every event appended to the session's log (cluster mode's fan-out); absent: none. */
	eventTap?: EventTap;
	/** The session's run ended and no other waits to start (cluster mode gives up its lease). */
	onIdle?(session: LiveSession): void;
	/** Resolves when a run may claim the session in the store (cluster mode: its lease is not being given up). */
	beforeClaim?(sessionId: string): Promise<void> | undefined;
	/** See `RunHost.claimRetryMs`. */
	claimRetryMs?: number;
}

export class LiveSession {
	readonly id: string;
	readonly agent: Agent;
	/** The session's event log: appends, fan-out, and the reads a resume needs. */
	readonly events: SessionEventLog;
	/** The stored record, kept as the store has it: replaced by config changes, moved by run starts and ends. */
	private record: SessionRecord;
	private readonly queues: SessionQueues;
	private readonly runs: SessionRuns;
	private readonly transcript: StoredTranscript;
	private deleted = false;
	/** A message started and no `message_update` of it was handed to the extensions yet. */
	private firstUpdatePending = false;
	/** Aborts the work of a run outside the agent loop (`runOutsideLoop`) while one runs. */
	private outsideAbort: AbortController | undefined;
	lastActiveAt = Date.now();

	constructor(
		record: SessionRecord,
		messages: AgentMessage[],
		queued: QueuedMessage[],
		private readonly deps: LiveSessionDeps,
	) {
		this.id = record.id;
		this.record = record;
		this.events = new SessionEventLog(deps.store, record.id, deps.logger, deps.eventTap, record.lastEventId);
		this.transcript = new StoredTranscript(deps.store, record.id, messages);
		const model = deps.resolveModel(record.model);
		if (!model) throw new Error(`Session ${record.id}: model ${record.model} is not in the catalog`);
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
			getApiKey: (provider) => deps.getApiKey(provider),
			streamFn: (model, context, options) => this.streamWithCurrentConfig(model, context, options),
			beforeToolCall: (context, signal) => this.runBeforeToolCall(context, signal),
			afterToolCall: (context, signal) => this.runAfterToolCall(context, signal),
		});
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
				const usage = structuredClone(this.record.usage);
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
			notifyExtensions: (event) => this.notifyExtensions(event),
		});
		this.agent.subscribe((event) => recorder.onAgentEvent(event));
		for (const ext of deps.extensions()) this.attachExtension(ext);
	}

	/**
	 * Hands a logged event to the extensions that take its type, and the first update of each
	 * message to `onFirstUpdate`. A throw is logged and stops no other extension.
	 */
	private notifyExtensions(event: AgentEvent): void {
		const table = this.deps.extensionEvents();
		for (const ext of table.forType(event.type)) {
			try {
				ext.onEvent?.(this, event);
			} catch (err) {
				this.extensionFailed(err, ext, "onEvent");
			}
		}
		if (event.type === "message_start" || event.type === "message_end") {
			this.firstUpdatePending = event.type === "message_start";
		} else if (event.type === "message_update" && this.firstUpdatePending) {
			this.firstUpdatePending = false;
			for (const ext of table.firstUpdateHooks) {
				try {
					ext.onFirstUpdate?.(this, event);
				} catch (err) {
					this.extensionFailed(err, ext, "onFirstUpdate");
				}
			}
		}
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

	/** The store this session persists to. */
	get store(): SessionStore {
		return this.deps.store;
	}

	get ownerId(): string | null {
		return this.record.ownerId;
	}

	get isBusy(): boolean {
		return this.runs.isBusy;
	}

	get subscriberCount(): number {
		return this.events.subscriberCount;
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

	// --- tools & hooks ----------------------------------------------------------------------

	/**
	 * The session's tools: the server tools its `tools` selectors match (exact names and `prefix*`
	 * patterns, matched now, so tools registered since creation count) plus every extension's tools.
	 */
	resolveTools(): AgentTool<any>[] {
		const server = this.deps.serverTools();
		const tools: AgentTool<any>[] = [];
		for (const name of selectTools(this.record.tools, server.keys())) tools.push(server.get(name) as AgentTool<any>);
		for (const ext of this.deps.extensions()) {
			try {
				if (ext.tools) tools.push(...ext.tools(this));
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

	/** Adds a subscriber; it receives every event appended from now on. Returns the unsubscribe function. */
	subscribe(subscriber: SessionSubscriber): () => void {
		const unsubscribe = this.events.subscribe(subscriber);
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
			if (messages.length !== 1) throw apiError("VALIDATION_FAILED", "Queue exactly one message at a time.");
			const { entry, queueLength, idle } = await this.enqueue(ifBusy, messages[0], withKey);
			return { kind: "queued", queue: ifBusy, queueLength, idle, entryId: entry.id };
		}
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
		if (this.runs.isBusy)
			throw apiError("AGENT_BUSY", `Session ${this.id} is running; continue only applies to an idle session.`);
		const messages = this.agent.state.messages;
		const last = messages[messages.length - 1];
		if (!last) {
			throw apiError("NOTHING_TO_CONTINUE", `Session ${this.id} has no messages to continue from; send a prompt.`);
		}
		if ((last as { role?: string }).role === "assistant" && this.queues.length === 0) {
			throw apiError(
				"CANNOT_CONTINUE_FROM_ASSISTANT",
				`The last message of session ${this.id} is the assistant's and nothing is queued; send a prompt (or queue a steering/follow-up message) instead.`,
			);
		}
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

	/** Appends a message the loop did not produce (a compaction) at the end of the transcript: the store's and the Agent's. */
	appendMessage(message: AgentMessage): boolean {
		if (!this.transcript.appendOutsideLoop(message)) return false;
		this.agent.state.messages = [...this.agent.state.messages, message];
		return true;
	}

	/** Adds usage spent outside the loop's assistant messages (a compaction's model call) to the active run's. */
	addRunUsage(usage: Usage): void {
		const run = this.runs.active;
		if (run) addUsage(run.usage, usage);
	}

	/** Tokens and cost of the session so far: its ended runs and the active one. */
	get usage(): Usage {
		const usage = structuredClone(this.record.usage);
		const run = this.runs.active;
		if (run) addUsage(usage, run.usage);
		return usage;
	}

	// --- config -------------------------------------------------------------------------------

	/** Applies a config patch (validated by the caller): the store first (durably), then the live Agent. */
	async applyConfig(patch: Partial<SessionConfig>): Promise<SessionRecord> {
		const updated = await this.deps.store.updateSession(this.id, patch, Date.now());
		if (!updated) throw apiError("SESSION_NOT_FOUND", `Session ${this.id} no longer exists.`);
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
			try {
				Object.assign(extra, ext.state?.(this));
			} catch (err) {
				this.deps.logger.error({ err, extension: ext.name }, "extension state() failed");
			}
		}
		return sessionView({
			record,
			agent: this.agent.state,
			busy: this.runs.isBusy,
			activeRun: this.runs.active,
			queues: this.queues,
			lastEventId: this.lastEventId,
			extra,
		});
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

	closeSubscribers(reason: string): void {
		this.events.closeSubscribers(reason);
	}
}
