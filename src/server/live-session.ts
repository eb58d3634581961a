/**
 * One live session: its `Agent`, its event log (ids from the store), its subscribers, its runs
 * and the mirror of its steering / follow-up queues.
 *
 * ## Event ids and fan-out
 *
 * Every AgentEvent and every server-level event (`queue_update`, and whatever extensions
 * publish) is serialised once, inside the Agent listener (the agent mutates its partial message
 * after the listener returns), appended to the store's event log, which assigns the next id, and
 * handed as one prebuilt frame to every subscriber. The listener is synchronous, so the order of
 * ids is the order of events, and a subscriber that reads the backlog from the store and
 * registers in the same tick misses and duplicates nothing.
 *
 * ## Queues
 *
 * `steer` / `followUp` go into the Agent's own queues (what `getSteeringMessages` /
 * `getFollowUpMessages` drain) and into the store (durable before the 202). A queued message is
 * known to be drained when the loop emits `message_start` for that very message object; then it
 * moves from the store's queue into its transcript in one write (`drainQueued`), so a crash at
 * any moment leaves it in exactly one of the two, and a `queue_update` with `action: "drained"`
 * precedes its `message_start` on the stream. Its `message_end` stores nothing more.
 *
 * ## Runs
 *
 * At most one run at a time (`busy`). `ifBusy: "interrupt"` aborts the active run and hands the
 * session over to the waiting prompt when the aborted run has settled, so no other request can
 * slip in between.
 */
import type { FastifyBaseLogger } from "fastify";
import { Agent } from "../agent/agent.js";
import type {
	AfterToolCallContext,
	AfterToolCallResult,
	AgentEvent,
	AgentMessage,
	AgentTool,
	BeforeToolCallContext,
	BeforeToolCallResult,
} from "../agent/types.js";
import { streamSimple } from "../ai/stream.js";
import type { AssistantMessage, Context, Model, SimpleStreamOptions, Usage } from "../ai/types.js";
import { addUsage, zeroUsage } from "../ai/usage.js";
import type {
	IdempotencyRecord,
	QueuedMessage,
	QueueKind,
	SessionConfig,
	SessionRecord,
	SessionStore,
} from "../store/types.js";
import { selectTools } from "../tools/selection.js";
import { encodeWireData, type ServerEvent, type SseEventName } from "../wire/events.js";
import { apiError } from "./errors.js";
import { newRunId } from "./ids.js";
import type { RunSlots } from "./limits.js";
import { formatEventFrame } from "./sse.js";

/** Receives every event of a session, in id order, as a prebuilt SSE frame. */
export interface SessionSubscriber {
	/** `runSeq` is the sequence number of the run the event belongs to (0 outside any run). */
	deliver(id: number, type: string, frame: string, runSeq: number): void;
	/** The session is going away (deleted, evicted, shutdown): end the stream. */
	close(reason: string): void;
}

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
	/** Called for every AgentEvent after it was logged. */
	onEvent?(session: LiveSession, event: AgentEvent): void;
	/** The session was deleted. */
	onDelete?(session: LiveSession): void;
	/** Validates the `POST /v1/sessions` body before the session is created; throw an ApiError to reject it. */
	beforeCreate?(input: Record<string, unknown>): void;
	/** A session was created from `input` (the `POST /v1/sessions` body). */
	onCreate?(session: LiveSession, input: Record<string, unknown>): void;
	/** Validates a config patch (`PATCH /v1/sessions/:id`) before it is stored; throw an ApiError to reject it. */
	beforeUpdate?(session: LiveSession, patch: Record<string, unknown>): void;
}

/** What a session needs from its manager. */
export interface LiveSessionDeps {
	store: SessionStore;
	logger: FastifyBaseLogger;
	resolveModel(spec: string): Model<any> | undefined;
	/** Tools of the server by name. */
	serverTools(): Map<string, AgentTool<any>>;
	extensions(): readonly SessionExtension[];
	getApiKey(provider: string): string | undefined;
	/** Idle timeout of model calls whose model sets none; absent: the driver's default. */
	providerIdleTimeoutMs?: number;
	maxQueuedMessages: number;
	isShuttingDown(): boolean;
	/** The per-key limit of concurrent runs; absent: none. */
	runSlots?: RunSlots;
}

/** A run handle (one `prompt` / `continue`). */
/** What a request that queued a message is answered: the queue, the entry's id, the queue's length, whether no run is active. */
export interface QueuedAnswer {
	queue: QueueKind;
	entryId: number;
	queueLength: number;
	idle: boolean;
}

export interface RunHandle {
	id: string;
	seq: number;
	/** Id of the run's first event (`agent_start`). */
	firstEventId: Promise<number>;
	/** Settles when the run is over and the session idle (or handed to the next run). */
	done: Promise<void>;
}

interface ActiveRun extends RunHandle {
	usage: Usage;
	resolveFirst(id: number): void;
	lastAssistant?: AssistantMessage;
	abortRequested: boolean;
}

interface QueueEntry {
	id: number;
	kind: QueueKind;
	message: AgentMessage;
	createdAt: number;
}

export type QueueAction = "queued" | "drained" | "cleared";

export class LiveSession {
	readonly id: string;
	readonly agent: Agent;
	private record: SessionRecord;
	/** A run ended since `record` was read (see `current`). */
	private recordStale = false;
	private readonly subscribers = new Set<SessionSubscriber>();
	private queue: QueueEntry[] = [];
	private busy = false;
	private handoff: (() => void) | undefined;
	private activeRun: ActiveRun | undefined;
	private runSeq = 0;
	/** Transcript length in the store (messages appended so far). */
	private persistedCount: number;
	/**
	 * Messages stored before their `message_end`, which then stores nothing: prompts (with their run's
	 * start, `startRun`) and drained queued messages (at their `message_start`, `drainQueued`).
	 */
	private readonly storedWithRun = new Set<AgentMessage>();
	/** Drained queued messages not yet moved into the stored transcript, with their queue entry ids. */
	private readonly drainedIds = new Map<AgentMessage, number>();
	private deleted = false;
	lastActiveAt = Date.now();

	constructor(
		record: SessionRecord,
		messages: AgentMessage[],
		queued: QueuedMessage[],
		private readonly deps: LiveSessionDeps,
	) {
		this.id = record.id;
		this.record = record;
		this.persistedCount = messages.length;
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
		for (const entry of queued) {
			this.queue.push({ id: entry.id, kind: entry.kind, message: entry.message, createdAt: entry.createdAt });
			if (entry.kind === "steer") this.agent.steer(entry.message);
			else this.agent.followUp(entry.message);
		}
		this.agent.subscribe((event) => this.onAgentEvent(event));
	}

	/** The stored record (config, owner, status, usage of ended runs). */
	get config(): SessionRecord {
		return this.current;
	}

	/** The record, re-read from the store if a run ended since it was read. */
	private get current(): SessionRecord {
		return this.recordStale ? this.refreshRecord() : this.record;
	}

	/** The store this session persists to. */
	get store(): SessionStore {
		return this.deps.store;
	}

	get ownerId(): string | null {
		return this.record.ownerId;
	}

	get isBusy(): boolean {
		return this.busy;
	}

	get subscriberCount(): number {
		return this.subscribers.size;
	}

	get lastEventId(): number {
		return this.deps.store.lastEventId(this.id) ?? 0;
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

	// --- event log ----------------------------------------------------------------------------

	/** The sequence number of the active run, 0 when idle. */
	get currentRunSeq(): number {
		return this.activeRun?.seq ?? 0;
	}

	/**
	 * Appends an event to the log and delivers it to every subscriber. `data` is the serialised
	 * JSON payload. Returns the id (undefined when the session is gone from the store).
	 */
	private append(type: SseEventName, data: string): number | undefined {
		const id = this.deps.store.appendEvent(this.id, type, data);
		if (id === undefined) return undefined;
		const frame = formatEventFrame(id, type, data);
		const runSeq = this.currentRunSeq;
		for (const subscriber of this.subscribers) {
			try {
				subscriber.deliver(id, type, frame, runSeq);
			} catch (err) {
				this.deps.logger.error({ err, sessionId: this.id }, "subscriber failed; dropping it");
				this.subscribers.delete(subscriber);
			}
		}
		return id;
	}

	/**
	 * Publishes a server-level event (a name that is not an AgentEvent type, e.g.
	 * `approval_requested`) on the session's stream with the next id. `payload.type` is set to `type`.
	 */
	publish(type: ServerEvent["type"], payload: Record<string, unknown>): number | undefined {
		return this.append(type, JSON.stringify({ ...payload, type }));
	}

	/** Adds a subscriber; it receives every event appended from now on. Returns the unsubscribe function. */
	subscribe(subscriber: SessionSubscriber): () => void {
		this.subscribers.add(subscriber);
		this.lastActiveAt = Date.now();
		return () => {
			this.subscribers.delete(subscriber);
			this.lastActiveAt = Date.now();
		};
	}

	private onAgentEvent(event: AgentEvent): void {
		const run = this.activeRun;
		try {
			if (event.type === "message_start") this.noteDrained(event.message);
			// What the event completes is stored before any subscriber gets the event (a stream that ends
			// at agent_end writes at once, after the store's sync): no client sees a message or a run end
			// that a crash could take back.
			switch (event.type) {
				case "message_end":
					if (!this.storedWithRun.delete(event.message)) this.persistMessage(event.message);
					if (run && event.message.role === "assistant") {
						run.lastAssistant = event.message as AssistantMessage;
						if (run.lastAssistant.usage) addUsage(run.usage, run.lastAssistant.usage);
					}
					break;
				case "agent_end":
					this.storedWithRun.clear();
					this.drainedIds.clear();
					this.reconcileTranscript();
					if (run) this.endRun(run);
					break;
			}
			const id = this.append(event.type, encodeWireData(event));
			if (run && id !== undefined) run.resolveFirst(id);
			for (const ext of this.deps.extensions()) ext.onEvent?.(this, event);
		} catch (err) {
			// Never let persistence or fan-out trouble break the run: the Agent awaits this listener.
			this.deps.logger.error({ err, sessionId: this.id, event: event.type }, "failed to record an agent event");
		}
	}

	/** Stores a completed message; a drained queued message leaves the stored queue in the same write. */
	private persistMessage(message: AgentMessage): void {
		const entryId = this.drainedIds.get(message);
		const length =
			entryId === undefined
				? this.deps.store.appendMessages(this.id, [message])
				: this.deps.store.drainQueued(this.id, [entryId], [message]);
		this.drainedIds.delete(message);
		if (length !== undefined) this.persistedCount = length;
	}

	/** Appends transcript messages the agent holds but no `message_end` announced (a run failure's message). */
	private reconcileTranscript(): void {
		const messages = this.agent.state.messages;
		if (messages.length > this.persistedCount) {
			const length = this.deps.store.appendMessages(this.id, messages.slice(this.persistedCount));
			if (length !== undefined) this.persistedCount = length;
		}
	}

	// --- queues -------------------------------------------------------------------------------

	/** Queued messages in order. */
	get queued(): readonly QueueEntry[] {
		return this.queue;
	}

	private noteDrained(message: AgentMessage): void {
		if (this.queue.length === 0 || (message as { role?: string }).role === "assistant") return;
		const index = this.queue.findIndex((entry) => entry.message === message);
		if (index < 0) return;
		const [entry] = this.queue.splice(index, 1);
		// Stored now, not at its message_end: no client sees it drained before it is in the stored
		// transcript. Should this write fail, its message_end tries again.
		this.drainedIds.set(message, entry.id);
		this.persistMessage(message);
		this.storedWithRun.add(message);
		this.publishQueue("drained", entry.kind, [entry]);
	}

	private publishQueue(action: QueueAction, kind: QueueKind | "all", entries: QueueEntry[]): void {
		this.publish("queue_update", {
			action,
			kind,
			messages: entries.map((e) => ({ id: e.id, kind: e.kind, message: e.message })),
			...this.queueCounts(),
		});
	}

	queueCounts(): { steeringCount: number; followUpCount: number } {
		let steeringCount = 0;
		for (const entry of this.queue) if (entry.kind === "steer") steeringCount++;
		return { steeringCount, followUpCount: this.queue.length - steeringCount };
	}

	/**
	 * Queues a steering or follow-up message: into the store (durable before this returns) and the
	 * Agent's queue. Throws `QUEUE_FULL` past the limit. `withKey` builds, from what the caller will
	 * answer, the idempotency record the store keeps in the message's own commit.
	 */
	enqueue(
		kind: QueueKind,
		message: AgentMessage,
		withKey?: (queued: QueuedAnswer) => IdempotencyRecord,
	): { entry: QueueEntry; queueLength: number; idle: boolean } {
		if (this.queue.length >= this.deps.maxQueuedMessages) {
			throw apiError(
				"QUEUE_FULL",
				`Session ${this.id} already has ${this.queue.length} queued messages (limit ${this.deps.maxQueuedMessages}); wait for them to drain or DELETE the queue.`,
			);
		}
		const before = this.queueCounts();
		const queueLength = (kind === "steer" ? before.steeringCount : before.followUpCount) + 1;
		const idle = !this.busy;
		const stored = this.deps.store.enqueue(
			this.id,
			kind,
			message,
			Date.now(),
			withKey && ((queued) => withKey({ queue: kind, entryId: queued.id, queueLength, idle })),
		);
		if (!stored) throw apiError("SESSION_NOT_FOUND", `Session ${this.id} no longer exists.`);
		const entry: QueueEntry = { id: stored.id, kind, message, createdAt: stored.createdAt };
		this.queue.push(entry);
		if (kind === "steer") this.agent.steer(message);
		else this.agent.followUp(message);
		this.lastActiveAt = Date.now();
		this.publishQueue("queued", kind, [entry]);
		return { entry, queueLength, idle };
	}

	/** Clears one queue or both (Agent and store). Returns how many messages were removed. */
	clearQueue(kind?: QueueKind): number {
		const removed = this.queue.filter((e) => kind === undefined || e.kind === kind);
		if (kind === undefined || kind === "steer") this.agent.clearSteeringQueue();
		if (kind === undefined || kind === "followUp") this.agent.clearFollowUpQueue();
		this.queue = this.queue.filter((e) => !(kind === undefined || e.kind === kind));
		this.deps.store.clearQueue(this.id, kind);
		if (removed.length > 0) this.publishQueue("cleared", kind ?? "all", removed);
		return removed.length;
	}

	// --- runs ---------------------------------------------------------------------------------

	private async claim(ifBusy: "reject" | "interrupt"): Promise<void> {
		if (this.deps.isShuttingDown()) throw apiError("SHUTTING_DOWN", "The server is shutting down; no new runs start.");
		if (this.deleted) throw apiError("SESSION_NOT_FOUND", `Session ${this.id} was deleted.`);
		if (!this.busy) {
			this.deps.runSlots?.acquire(this.ownerId);
			this.busy = true;
			return;
		}
		if (ifBusy === "interrupt") {
			if (this.handoff) {
				throw apiError("AGENT_BUSY", `Session ${this.id} already has an interrupting prompt waiting to start.`);
			}
			const handedOver = new Promise<void>((resolve) => {
				this.handoff = resolve;
			});
			this.abort();
			await handedOver;
			if (this.deleted) {
				this.release();
				throw apiError("SESSION_NOT_FOUND", `Session ${this.id} was deleted.`);
			}
			return;
		}
		throw apiError(
			"AGENT_BUSY",
			`Session ${this.id} is running. Send ifBusy "steer", "followUp" or "interrupt", POST /steer or /follow-up, or wait for agent_end.`,
		);
	}

	private release(): void {
		const next = this.handoff;
		if (next) {
			this.handoff = undefined;
			next(); // `busy` stays true: the waiting prompt owns the session now.
		} else {
			this.busy = false;
			this.deps.runSlots?.release(this.ownerId);
		}
	}

	/**
	 * Starts a run with `start` once the session is claimed. `attach` runs after the run exists and
	 * before its first event, so a per-run stream sees `agent_start`.
	 */
	/**
	 * Starts a run. `prompt` (the messages `start` prompts with) is stored with the run's start, in
	 * one write, committed by the store's sync before the response that accepts it.
	 */
	private launch(
		start: () => Promise<void>,
		attach?: (run: RunHandle) => void,
		prompt: AgentMessage[] = [],
	): RunHandle {
		let resolveFirst!: (id: number) => void;
		const firstEventId = new Promise<number>((resolve) => {
			resolveFirst = resolve;
		});
		let firstSeen = false;
		let settle!: () => void;
		const done = new Promise<void>((resolve) => {
			settle = resolve;
		});
		const run: ActiveRun = {
			id: newRunId(),
			seq: ++this.runSeq,
			firstEventId,
			done,
			usage: zeroUsage(),
			abortRequested: false,
			resolveFirst: (id) => {
				if (firstSeen) return;
				firstSeen = true;
				resolveFirst(id);
			},
		};
		// Between the claim and the run's start, a throw (the store refusing the write, an attach
		// that fails) must give the session back: otherwise it stays busy with no run to end it.
		let recorded = false;
		try {
			recorded = this.deps.store.startRun(this.id, run.id, Date.now(), prompt);
			if (recorded && prompt.length > 0) {
				this.persistedCount += prompt.length;
				for (const message of prompt) this.storedWithRun.add(message);
			}
			this.activeRun = run;
			this.lastActiveAt = Date.now();
			attach?.(run);
		} catch (err) {
			this.abandonLaunch(run, recorded ? prompt : undefined, err);
			settle();
			throw err;
		}
		void (async () => {
			try {
				await start();
			} catch (err) {
				// The Agent reports run failures as messages; a throw here is a bug or a lost race.
				this.deps.logger.error({ err, sessionId: this.id, runId: run.id }, "run failed to start");
				if (this.activeRun === run) this.endRun(run, err instanceof Error ? err.message : String(err));
			} finally {
				if (this.activeRun === run) this.activeRun = undefined;
				run.resolveFirst(this.lastEventId);
				this.lastActiveAt = Date.now();
				this.release();
				settle();
			}
		})();
		return run;
	}

	/**
	 * Undoes a launch that threw before its run started and releases the claim. When the run's
	 * start was stored (`stored` is its prompt), the run is ended as failed and the agent gets the
	 * stored prompt too, so its transcript and the store's stay the same.
	 */
	private abandonLaunch(run: ActiveRun, stored: AgentMessage[] | undefined, err: unknown): void {
		if (this.activeRun === run) this.activeRun = undefined;
		if (stored) {
			for (const message of stored) this.storedWithRun.delete(message);
			if (stored.length > 0) this.agent.state.messages = [...this.agent.state.messages, ...stored];
			try {
				this.endRun(run, err instanceof Error ? err.message : String(err));
			} catch (endErr) {
				this.deps.logger.error(
					{ err: endErr, sessionId: this.id, runId: run.id },
					"could not end a run that failed to start",
				);
			}
		}
		run.resolveFirst(this.lastEventId);
		this.release();
	}

	private endRun(run: ActiveRun, failure?: string): void {
		const last = run.lastAssistant;
		const status = failure
			? "error"
			: last?.stopReason === "aborted" || (run.abortRequested && !last)
				? "aborted"
				: last?.stopReason === "error"
					? "error"
					: "completed";
		this.deps.store.endRun(this.id, run.id, {
			status,
			endedAt: Date.now(),
			usage: run.usage,
			...(failure || last?.errorMessage ? { errorMessage: failure ?? last?.errorMessage } : {}),
		});
		// Re-read when next needed, not now: the run's end is committed with other sessions' at the
		// store's next sync, and reading it here would commit it at once.
		this.recordStale = true;
	}

	/**
	 * Starts a prompt. `ifBusy` decides what happens while a run is active: `reject` (409),
	 * `interrupt` (abort it, start when it settled), or queue the message as `steer` / `followUp`.
	 */
	async prompt(
		messages: AgentMessage[],
		ifBusy: "reject" | "steer" | "followUp" | "interrupt",
		attach?: (run: RunHandle) => void,
		withKey?: (queued: QueuedAnswer) => IdempotencyRecord,
	): Promise<{ kind: "started"; run: RunHandle } | ({ kind: "queued" } & QueuedAnswer)> {
		if (this.busy && (ifBusy === "steer" || ifBusy === "followUp")) {
			if (messages.length !== 1) throw apiError("VALIDATION_FAILED", "Queue exactly one message at a time.");
			const { entry, queueLength, idle } = this.enqueue(ifBusy, messages[0], withKey);
			return { kind: "queued", queue: ifBusy, queueLength, idle, entryId: entry.id };
		}
		await this.claim(ifBusy === "interrupt" ? "interrupt" : "reject");
		return { kind: "started", run: this.launch(() => this.agent.prompt(messages), attach, messages) };
	}

	/**
	 * Continues from the transcript, by the reference's rules: 409 while running; 422 on an empty
	 * transcript; after an assistant message only when steering or follow-up messages are queued.
	 */
	async continue(attach?: (run: RunHandle) => void): Promise<RunHandle> {
		if (this.busy)
			throw apiError("AGENT_BUSY", `Session ${this.id} is running; continue only applies to an idle session.`);
		const messages = this.agent.state.messages;
		const last = messages[messages.length - 1];
		if (!last) {
			throw apiError("NOTHING_TO_CONTINUE", `Session ${this.id} has no messages to continue from; send a prompt.`);
		}
		if ((last as { role?: string }).role === "assistant" && this.queue.length === 0) {
			throw apiError(
				"CANNOT_CONTINUE_FROM_ASSISTANT",
				`The last message of session ${this.id} is the assistant's and nothing is queued; send a prompt (or queue a steering/follow-up message) instead.`,
			);
		}
		await this.claim("reject");
		return this.launch(() => this.agent.continue(), attach);
	}

	/** Aborts the active run (it still ends with `agent_end`). Returns whether a run was active. */
	abort(): boolean {
		const run = this.activeRun;
		if (!run) return false;
		run.abortRequested = true;
		this.agent.abort();
		return true;
	}

	/** Resolves when no run is active (including a waiting interrupt's run). */
	async waitForIdle(): Promise<void> {
		while (this.activeRun || this.busy) {
			const run = this.activeRun;
			if (run) await run.done;
			else await new Promise((resolve) => setImmediate(resolve));
		}
	}

	/** The active run's id, if any. */
	get runId(): string | undefined {
		return this.activeRun?.id;
	}

	/** The handle of run `runId` while it is the active run; undefined once it is over (or if it never was). */
	activeRunHandle(runId: string): RunHandle | undefined {
		return this.activeRun?.id === runId ? this.activeRun : undefined;
	}

	// --- config -------------------------------------------------------------------------------

	/** Applies a config patch (validated by the caller): the store first, then the live Agent. */
	applyConfig(patch: Partial<SessionConfig>): SessionRecord {
		const updated = this.deps.store.updateSession(this.id, patch, Date.now());
		if (!updated) throw apiError("SESSION_NOT_FOUND", `Session ${this.id} no longer exists.`);
		this.record = updated;
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
		return updated;
	}

	/** Re-reads the record from the store (after runs end). */
	refreshRecord(): SessionRecord {
		this.recordStale = false;
		const updated = this.deps.store.getSession(this.id);
		if (updated) this.record = updated;
		return this.record;
	}

	// --- state --------------------------------------------------------------------------------

	/** Session state as `GET /v1/sessions/:id` returns it. */
	view(): SessionView {
		const r = this.current;
		const state = this.agent.state;
		const usage = structuredClone(r.usage);
		if (this.activeRun) addUsage(usage, this.activeRun.usage);
		const extra: Record<string, unknown> = {};
		for (const ext of this.deps.extensions()) {
			try {
				Object.assign(extra, ext.state?.(this));
			} catch (err) {
				this.deps.logger.error({ err, extension: ext.name }, "extension state() failed");
			}
		}
		const counts = this.queueCounts();
		return {
			id: r.id,
			createdAt: r.createdAt,
			updatedAt: r.updatedAt,
			model: r.model,
			systemPrompt: r.systemPrompt,
			thinkingLevel: r.thinkingLevel,
			tools: r.tools,
			activeTools: this.agent.state.tools.map((t) => t.name),
			toolExecution: r.toolExecution,
			steeringMode: r.steeringMode,
			followUpMode: r.followUpMode,
			metadata: r.metadata,
			status: this.busy ? "running" : r.status === "interrupted" ? "interrupted" : "idle",
			interruptedAt: this.busy ? null : r.interruptedAt,
			runId: this.activeRun?.id ?? null,
			isStreaming: state.isStreaming,
			pendingToolCalls: [...state.pendingToolCalls],
			errorMessage: state.errorMessage ?? null,
			queue: {
				steering: this.queue.filter((e) => e.kind === "steer").map(queueView),
				followUp: this.queue.filter((e) => e.kind === "followUp").map(queueView),
				...counts,
			},
			messageCount: state.messages.length,
			lastEventId: this.lastEventId,
			usage,
			...extra,
		};
	}

	/** The in-flight partial message, if one is streaming. */
	get streamingMessage(): AgentMessage | undefined {
		return this.agent.state.streamingMessage;
	}

	/** Marks the session deleted: aborts its run, closes its streams. The caller deletes it from the store. */
	async destroy(reason: string, waitMs: number): Promise<void> {
		this.deleted = true;
		this.abort();
		await Promise.race([this.waitForIdle(), new Promise((resolve) => setTimeout(resolve, waitMs).unref())]);
		this.closeSubscribers(reason);
	}

	closeSubscribers(reason: string): void {
		for (const subscriber of [...this.subscribers]) {
			try {
				subscriber.close(reason);
			} catch {
				// closing is best effort
			}
		}
		this.subscribers.clear();
	}
}

function queueView(e: QueueEntry): { id: number; message: AgentMessage; createdAt: number } {
	return { id: e.id, message: e.message, createdAt: e.createdAt };
}

/** The JSON shape of a session's state. */
export interface SessionView {
	id: string;
	createdAt: number;
	updatedAt: number;
	model: string;
	systemPrompt: string;
	thinkingLevel: string;
	tools: string[];
	activeTools: string[];
	toolExecution: string;
	steeringMode: string;
	followUpMode: string;
	metadata: Record<string, string>;
	status: "idle" | "running" | "interrupted";
	interruptedAt: number | null;
	runId: string | null;
	isStreaming: boolean;
	pendingToolCalls: string[];
	errorMessage: string | null;
	queue: {
		steering: { id: number; message: AgentMessage; createdAt: number }[];
		followUp: { id: number; message: AgentMessage; createdAt: number }[];
		steeringCount: number;
		followUpCount: number;
	};
	messageCount: number;
	lastEventId: number;
	usage: Usage;
	[extra: string]: unknown;
}
