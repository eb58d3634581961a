/**
 * The sessions runtime: creates, loads (lazily, from the store), lists, evicts and deletes
 * {@link LiveSession}s, and shuts them down gracefully.
 *
 * The store is the source of truth; a `LiveSession` is the in-memory Agent around a stored
 * session, and the sessions in memory are in the store's working set (their hot-path writes are
 * synchronous). Any request for a session that is not in memory loads it from the store
 * (transcript and queued messages, asynchronously), so sessions survive restarts and eviction.
 */
import type { FastifyBaseLogger } from "fastify";
import type { AgentMessage, AgentTool } from "../../../agent/types.js";
import type { Model } from "../../../ai/types.js";
import { type Caller, canSee, isLeaseStore } from "../../../store/index.js";
import type {
	SessionConfig,
	SessionFilter,
	SessionPage,
	SessionRecord,
	SessionStore,
	SessionVisibility,
} from "../../../store/types.js";
import { ALL_TOOLS, isToolPattern, selectorProblem, selectTools } from "../../../tools/selection.js";
import { newSessionId } from "../ids.js";
import type { ModelProblem } from "../model-catalog.js";
import { sessionError } from "./errors.js";
import { ExtensionEventTable } from "./extension-events.js";
import { interruptedToolResult, unansweredToolCalls } from "./interrupted-results.js";
import { LiveSession, type LiveSessionDeps, type SessionExtension } from "./live-session.js";
import { LocalSession } from "./local-port.js";
import type { SessionObserver } from "./observers.js";
import type { SessionPort } from "./port.js";
import type { PortContext } from "./port-context.js";
import { RemoteSession } from "./remote-port.js";
import type { RunSlots } from "./run-slots.js";
import { loadWindow, type TranscriptWindow } from "./transcript-window.js";
import { type SessionView, type StoredSession, storedView } from "./view.js";

export interface SessionManagerOptions {
	store: SessionStore;
	logger: FastifyBaseLogger;
	resolveModel(spec: string): Model<any> | undefined;
	/** Why a session cannot use `spec` (unknown, or no key for its provider); undefined when it can. */
	modelProblem(spec: string): ModelProblem | undefined;
	defaultModel: string;
	tools: AgentTool<any>[];
	getApiKey(provider: string): string | undefined;
	/** Idle timeout of model calls whose model sets none (`Model.idleTimeoutMs`); 0 = none; absent: the driver's default. */
	providerIdleTimeoutMs?: number;
	maxSessions: number;
	/**
	 * Sessions one owner may hold in memory (its sessions with a run or a stream; idle ones are
	 * evicted to make room); past it `TOO_MANY_KEY_SESSIONS`. Absent or 0: no limit of its own.
	 * Owner `null` (auth off) is not limited by it.
	 */
	maxSessionsPerKey?: number;
	maxQueuedMessages: number;
	/** Bytes one session's queue may hold; absent or 0: no limit. */
	maxQueuedBytes?: number;
	/** Bytes the queues of one owner's sessions in memory may hold together; absent or 0: no limit. */
	maxQueuedBytesPerKey?: number;
	/**
	 * Budget of the bytes (`LiveSession.memoryBytes`) of the sessions in memory without a run or a
	 * subscriber: past it the least recently active of them are evicted (they reload from the store
	 * on access). Absent or 0: no budget.
	 */
	idleSessionBytes?: number;
	/** Idle sessions without subscribers are dropped from memory after this long (reloaded on access). */
	sessionTtlMs: number;
	/** Sessions idle this long (per the store's `lastActiveAt`) are deleted; 0 or absent: never. */
	sessionDeleteAfterMs?: number;
	/** The per-key limit of concurrent runs; absent: none. */
	runSlots?: RunSlots;
	/** The tenant of an owner id (identity/principal.ts `Tenants`); absent: nobody has one. */
	tenantOf?: (ownerId: string) => string | null;
	/** Observes every session's events (cluster mode's fan-out, see `LiveSessionDeps.fanOut`); absent: none. */
	fanOut?: SessionObserver;
	/**
	 * The store is shared with other replicas (cluster mode): a session without a run here may
	 * have been changed by another one since it was loaded, so each request reads it again. Such a
	 * session is not brought into the store's working set (that would take its lease, and hold off
	 * the replica that runs it): only a run does, and `releaseLease` gives the lease up after it.
	 */
	sharedStore?: boolean;
	/** Gives up the store's lease on a session without a run here (cluster mode). */
	releaseLease?(sessionId: string): Promise<void>;
}

/** What `POST /v1/sessions` may set; every field optional. */
export type NewSessionInput = Partial<SessionConfig> & {
	messages?: AgentMessage[];
	/** Who besides its creator sees it; default `"owner"` (store/visibility.ts). */
	visibility?: SessionVisibility;
};

/**
 * Cluster mode: how long a run's claim waits for another replica that holds the idle session's
 * lease (it gives it up right after its own run or request).
 */
const CLAIM_RETRY_MS = 3_000;

/**
 * A session active this recently is not evicted for the idle-session budget: a request that loaded
 * it may still be using it.
 */
export const IDLE_EVICTION_GRACE_MS = 2_000;

/** How often the idle-session budget is checked. */
const MEMORY_CHECK_MS = 1_000;

/** How long aborted runs may take to emit their `agent_end` at shutdown. */
export const SHUTDOWN_ABORT_WAIT_MS = 2_000;

/** Waits for `promise` at most `ms`. */
async function settleWithin(promise: Promise<unknown>, ms: number): Promise<"settled" | "timeout"> {
	let timer: NodeJS.Timeout | undefined;
	const timeout = new Promise<"timeout">((resolve) => {
		timer = setTimeout(() => resolve("timeout"), ms);
	});
	const outcome = await Promise.race([promise.then(() => "settled" as const), timeout]);
	clearTimeout(timer);
	return outcome;
}

export class SessionManager {
	private readonly live = new Map<string, LiveSession>();
	/** Sessions being read from the store into memory, by id (see `loadOnce`). */
	private readonly loading = new Map<string, Promise<LiveSession>>();
	/** `create` calls waiting for the store. */
	private creating = 0;
	/** Sessions being created or loaded, by owner (they count against the owner's limit meanwhile). */
	private readonly arriving = new Map<string | null, number>();
	private memoryTimer: NodeJS.Timeout | undefined;
	private readonly toolsByName = new Map<string, AgentTool<any>>();
	/**
	 * The server tools of the default selection (`[ALL_TOOLS]`, what most sessions have), in
	 * registration order: built once for every session that resolves its tools, until a tool is
	 * added or removed (`addTool`, `removeTool` forget it).
	 */
	private allTools: readonly AgentTool<any>[] | undefined;
	/** What every session gets from this manager (one object for all of them, see `sessionDepsOf`). */
	private readonly sessionDeps: LiveSessionDeps;
	private readonly extensionList: SessionExtension[] = [];
	private eventTable = new ExtensionEventTable<SessionExtension>([]);
	private shuttingDown = false;
	private evictTimer: NodeJS.Timeout | undefined;
	/** Leases being given up (cluster mode), by session: a run claims the session after that. */
	private readonly releasing = new Map<string, Promise<void>>();
	/** What the session ports need of the server (`connectPorts`); absent until then. */
	private portContext: PortContext | undefined;

	constructor(private readonly options: SessionManagerOptions) {
		for (const tool of options.tools) this.addTool(tool);
		this.sessionDeps = this.sessionDepsOf(options);
		// A store shared by replicas can lose a session's lease (another replica took it over): this
		// process must stop running it and end its streams; clients reconnect and resume elsewhere.
		if (isLeaseStore(options.store)) {
			options.store.onSessionLost((sessionId, error) => {
				const session = this.live.get(sessionId);
				if (!session) return;
				options.logger.warn({ sessionId, err: error }, "session lease lost: closing its streams");
				this.live.delete(sessionId);
				session.abort();
				// Its streams end without what they have not sent: the store refused it.
				session.leaseLost();
			});
		}
		const deleteAfter = options.sessionDeleteAfterMs ?? 0;
		if (options.sessionTtlMs > 0 || deleteAfter > 0) {
			const every = Math.min(...[options.sessionTtlMs, deleteAfter].filter((ms) => ms > 0), 60_000);
			this.evictTimer = setInterval(() => this.retentionTick(), every);
			this.evictTimer.unref();
		}
		if ((options.idleSessionBytes ?? 0) > 0) {
			this.memoryTimer = setInterval(() => this.trimIdleMemory(), MEMORY_CHECK_MS);
			this.memoryTimer.unref();
		}
	}

	get store(): SessionStore {
		return this.options.store;
	}

	get defaultModel(): string {
		return this.options.defaultModel;
	}

	get isShuttingDown(): boolean {
		return this.shuttingDown;
	}

	// --- tools and extensions -------------------------------------------------------------------

	/** Adds (or replaces) a server tool; sessions see it from their next tool refresh. */
	addTool(tool: AgentTool<any>): void {
		this.toolsByName.set(tool.name, tool);
		this.allTools = undefined;
	}

	removeTool(name: string): boolean {
		this.allTools = undefined;
		return this.toolsByName.delete(name);
	}

	/**
	 * The server tools `selectors` (a session's `tools`) enable, in registration order, as they are
	 * registered now. The default selection's list is built once per change of the tools and shared.
	 */
	private serverToolsFor(selectors: readonly string[]): readonly AgentTool<any>[] {
		if (selectors.length === 1 && selectors[0] === ALL_TOOLS) {
			this.allTools ??= [...this.toolsByName.values()];
			return this.allTools;
		}
		const tools: AgentTool<any>[] = [];
		for (const name of selectTools(selectors, this.toolsByName.keys())) tools.push(this.toolsByName.get(name)!);
		return tools;
	}

	/** Server tools by name (what `tools` in a session config refers to). */
	get tools(): ReadonlyMap<string, AgentTool<any>> {
		return this.toolsByName;
	}

	/** Registers a session extension (tool hooks, per-session tools, state fields). */
	addExtension(extension: SessionExtension): void {
		this.extensionList.push(extension);
		this.eventTable = new ExtensionEventTable(this.extensionList);
		for (const session of this.live.values()) {
			session.attachExtension(extension);
			session.refreshTools();
		}
	}

	get extensions(): readonly SessionExtension[] {
		return this.extensionList;
	}

	/** Gives up the lease of a session that has no run here (cluster mode); failures are logged. */
	private releaseIdle(session: LiveSession): void {
		const release = this.options.releaseLease;
		if (!release || session.isBusy) return;
		this.trackRelease(session.id, release, "could not give up the session's lease");
	}

	/**
	 * Runs `release(id)` unless one is in flight for the session, and keeps it in `releasing` until
	 * it settles (a load and a claim of the session wait for it); a failure is logged as `failure`.
	 */
	private trackRelease(id: string, release: (id: string) => Promise<unknown>, failure: string): void {
		if (this.releasing.has(id)) return;
		const releasing = release(id)
			.then(
				() => undefined,
				(err: unknown) => this.options.logger.warn({ err, sessionId: id }, failure),
			)
			.finally(() => this.releasing.delete(id));
		this.releasing.set(id, releasing);
	}

	/** The session if it is in memory, whoever owns it (for messages between replicas); no store read. */
	inMemory(id: string): LiveSession | undefined {
		return this.live.get(id);
	}

	/**
	 * Drops a session from memory without touching the store (another replica deleted it, or took
	 * it over): aborts its run here, ends its streams with `reason`.
	 */
	async forget(id: string, reason: string): Promise<void> {
		const session = this.live.get(id);
		if (!session) return;
		this.live.delete(id);
		await session.destroy(reason, 5_000);
		this.tellDeleted(session);
	}

	/** Sessions currently in memory. */
	liveSessions(): IterableIterator<LiveSession> {
		return this.live.values();
	}

	// --- validation ---------------------------------------------------------------------------

	private checkModel(spec: string): void {
		const problem = this.options.modelProblem(spec);
		if (problem) throw sessionError(problem.code, `body.model: ${problem.message}`);
	}

	/** Exact names must be registered tools; a `prefix*` pattern may match none yet (its tools may come later). */
	private checkTools(selectors: string[]): void {
		const problems = selectors.map(selectorProblem).filter((p) => p !== undefined);
		if (problems.length > 0) {
			throw sessionError("VALIDATION_FAILED", `body.tools: ${problems.join("; ")}`, { problems });
		}
		const unknown = selectors.filter((name) => !isToolPattern(name) && !this.toolsByName.has(name));
		if (unknown.length > 0) {
			throw sessionError(
				"UNKNOWN_TOOL",
				`body.tools: unknown tool${unknown.length > 1 ? "s" : ""} ${unknown.map((n) => `"${n}"`).join(", ")}; see GET /v1/tools.`,
				{ unknown, known: [...this.toolsByName.keys()] },
			);
		}
	}

	// --- lifecycle of sessions ------------------------------------------------------------------

	/**
	 * Creates a session. `id` is for callers that derive a session's id from a name of their own
	 * (an AG-UI thread); the store refuses an id that exists.
	 */
	async create(ownerId: string | null, input: NewSessionInput, id: string = newSessionId()): Promise<LiveSession> {
		if (this.shuttingDown) throw sessionError("SHUTTING_DOWN", "The server is shutting down.");
		// Sessions being created count: the limit holds while their store writes are awaited.
		if (this.live.size + this.creating >= this.options.maxSessions) this.evictIdle(0);
		if (this.live.size + this.creating >= this.options.maxSessions) {
			throw sessionError(
				"TOO_MANY_SESSIONS",
				`The server holds its maximum of ${this.options.maxSessions} active sessions; delete some or retry later.`,
			);
		}
		this.makeRoomForOwner(ownerId);
		const config: SessionConfig = {
			model: input.model ?? this.options.defaultModel,
			systemPrompt: input.systemPrompt ?? "",
			thinkingLevel: input.thinkingLevel ?? "off",
			tools: input.tools ?? [ALL_TOOLS],
			toolExecution: input.toolExecution ?? "parallel",
			steeringMode: input.steeringMode ?? "one-at-a-time",
			followUpMode: input.followUpMode ?? "one-at-a-time",
			metadata: input.metadata ?? {},
			clientTools: input.clientTools ?? [],
			toolApprovals: input.toolApprovals ?? {},
			onInterrupt: input.onInterrupt ?? "continue",
		};
		if (input.compaction) config.compaction = input.compaction;
		if (input.budget) config.budget = input.budget;
		this.checkModel(config.model);
		// The default (`[ALL_TOOLS]`) is always valid.
		if (input.tools) this.checkTools(config.tools);
		const tenant = ownerId === null ? null : (this.options.tenantOf?.(ownerId) ?? null);
		const visibility = input.visibility ?? "owner";
		if (visibility === "tenant" && tenant === null) {
			throw sessionError(
				"VALIDATION_FAILED",
				'body.visibility: "tenant" shares a session with its creator\'s tenant, and this caller has none (a JWT without the tenant claim, an API key without a tenant in auth.keyTenants).',
			);
		}
		for (const ext of this.extensionList) ext.beforeCreate?.(input);
		const messages = input.messages ?? [];
		this.creating++;
		this.arrive(ownerId, 1);
		try {
			const record = await this.options.store.createSession(
				{ ...config, id, ownerId, tenant, visibility, createdAt: Date.now() },
				messages,
			);
			const session = await this.instantiate(record, messages);
			for (const ext of this.extensionList) ext.onCreate?.(session, input);
			// Creating put it in the working set, with its lease: any replica may run it now.
			if (this.options.sharedStore) this.releaseIdle(session);
			return session;
		} finally {
			this.creating--;
			this.arrive(ownerId, -1);
		}
	}

	// --- what one owner holds -------------------------------------------------------------------

	private arrive(ownerId: string | null, delta: number): void {
		const count = (this.arriving.get(ownerId) ?? 0) + delta;
		if (count <= 0) this.arriving.delete(ownerId);
		else this.arriving.set(ownerId, count);
	}

	/** Sessions `ownerId` holds in memory, with those being created or loaded for it. */
	heldBy(ownerId: string | null): number {
		let held = this.arriving.get(ownerId) ?? 0;
		for (const session of this.live.values()) if (session.ownerId === ownerId) held++;
		return held;
	}

	/** Bytes queued (and being queued) on the sessions of `ownerId` in memory. */
	queuedBytesOf(ownerId: string | null): number {
		let bytes = 0;
		for (const session of this.live.values()) if (session.ownerId === ownerId) bytes += session.queuedBytes;
		return bytes;
	}

	/**
	 * Before `ownerId` takes one more session into memory: at its limit, its idle sessions without
	 * subscribers (and not active in the last {@link IDLE_EVICTION_GRACE_MS}: a request may still be
	 * using one) are evicted, least recently active first, until there is room; when none is left,
	 * `TOO_MANY_KEY_SESSIONS`. Other owners' sessions are never touched.
	 */
	private makeRoomForOwner(ownerId: string | null): void {
		const max = this.options.maxSessionsPerKey ?? 0;
		if (ownerId === null || max <= 0) return;
		let held = this.heldBy(ownerId);
		if (held < max) return;
		const recent = Date.now() - IDLE_EVICTION_GRACE_MS;
		const idle = [...this.live.values()]
			.filter((s) => s.ownerId === ownerId && !s.isBusy && s.subscriberCount === 0 && s.lastActiveAt <= recent)
			.sort((a, b) => a.lastActiveAt - b.lastActiveAt);
		for (const session of idle) {
			if (held < max) break;
			this.dropFromMemory(session.id);
			held--;
		}
		if (held >= max) {
			throw sessionError(
				"TOO_MANY_KEY_SESSIONS",
				`This API key holds its maximum of ${max} sessions in memory (WHEELHOUSE_MAX_SESSIONS_PER_KEY), each with a run, an open stream or a request in the last ${IDLE_EVICTION_GRACE_MS / 1000} s; end a run or close a stream, or retry in a moment.`,
				{ max },
			);
		}
	}

	/**
	 * Keeps the sessions in memory without a run or a subscriber within the idle-session budget:
	 * evicts the least recently active of them (not those active in the last
	 * {@link IDLE_EVICTION_GRACE_MS}) until their bytes fit. Returns how many were evicted.
	 */
	trimIdleMemory(): number {
		const budget = this.options.idleSessionBytes ?? 0;
		if (budget <= 0 || this.shuttingDown) return 0;
		let total = 0;
		const idle: { session: LiveSession; bytes: number }[] = [];
		for (const session of this.live.values()) {
			if (session.isBusy || session.subscriberCount > 0) continue;
			const bytes = session.memoryBytes;
			total += bytes;
			idle.push({ session, bytes });
		}
		if (total <= budget) return 0;
		idle.sort((a, b) => a.session.lastActiveAt - b.session.lastActiveAt);
		const recent = Date.now() - IDLE_EVICTION_GRACE_MS;
		let evicted = 0;
		for (const { session, bytes } of idle) {
			if (total <= budget || session.lastActiveAt > recent) break;
			this.dropFromMemory(session.id);
			total -= bytes;
			evicted++;
		}
		if (evicted > 0)
			this.options.logger.debug({ evicted, idleBytes: total }, "idle sessions evicted for the memory budget");
		return evicted;
	}

	/**
	 * What the sessions need of the manager: one object for all of them, built with the manager
	 * (its functions read the manager's state when called: tools and extensions added later count).
	 */
	private sessionDepsOf(options: SessionManagerOptions): LiveSessionDeps {
		const deps: LiveSessionDeps = {
			store: options.store,
			logger: options.logger,
			resolveModel: (spec) => options.resolveModel(spec),
			serverTools: (selectors) => this.serverToolsFor(selectors),
			extensions: () => this.extensionList,
			extensionEvents: () => this.eventTable,
			getApiKey: (provider) => options.getApiKey(provider),
			providerIdleTimeoutMs: options.providerIdleTimeoutMs,
			maxQueuedMessages: options.maxQueuedMessages,
			maxQueuedBytes: options.maxQueuedBytes,
			maxQueuedBytesPerKey: options.maxQueuedBytesPerKey,
			ownerQueuedBytes: (ownerId) => this.queuedBytesOf(ownerId),
			runSlots: options.runSlots,
			fanOut: options.fanOut,
			isShuttingDown: () => this.shuttingDown,
		};
		if (options.sharedStore) {
			deps.onIdle = (session) => this.releaseIdle(session);
			deps.beforeClaim = (sessionId) => this.releasing.get(sessionId);
			deps.claimRetryMs = CLAIM_RETRY_MS;
		}
		return deps;
	}

	/**
	 * Brings a stored session into memory: into the store's working set (its writes go through it),
	 * its transcript and queue read, its extensions' state loaded. `messages` is the transcript when
	 * the caller has it (a session just created).
	 */
	private async instantiate(record: SessionRecord, messages?: AgentMessage[]): Promise<LiveSession> {
		const store = this.options.store;
		const id = record.id;
		const shared = this.options.sharedStore === true;
		if (!shared && !(await store.openSession(id))) {
			throw sessionError("SESSION_NOT_FOUND", `Session ${id} does not exist.`);
		}
		const window = messages ? { base: 0, messages } : await this.loadTranscript(id);
		const transcript = window.messages;
		if (record.status === "interrupted" && !shared) {
			// The recovery records the results of a tool batch a restart cut short; a session
			// interrupted under an older version may still lack them, and the transcript could not
			// be continued without them.
			const missing = unansweredToolCalls(transcript).map((call) => interruptedToolResult(call));
			if (missing.length > 0) {
				store.appendMessages(id, missing);
				transcript.push(...missing);
			}
		}
		// A session just created has nothing queued: no store read for it.
		const queued = messages ? [] : await store.listQueued(id);
		const session = new LiveSession(record, transcript, queued, this.sessionDeps, window.base);
		const origin = messages ? "created" : "stored";
		for (const ext of this.extensionList) {
			if (!ext.load) continue;
			try {
				await ext.load(session, origin);
			} catch (err) {
				this.options.logger.error({ err, extension: ext.name, sessionId: id }, "extension load() failed");
			}
		}
		this.live.set(id, session);
		return session;
	}

	/** The part of the stored transcript a live session holds (`transcript-window.ts`). */
	private async loadTranscript(id: string): Promise<TranscriptWindow> {
		return (await loadWindow(this.options.store, id)) ?? { base: 0, messages: [] };
	}

	/**
	 * The session if it is in memory and `ownerId` may see it (auth off: `ownerId` null sees all).
	 * Throws `SESSION_NOT_FOUND` otherwise. Requests use {@link load}, which also reads a session
	 * that is not in memory from the store.
	 */
	get(id: string, ownerId: string | null): LiveSession {
		const session = this.live.get(id);
		if (!session || !canSee(this.callerOf(ownerId), session.sharing)) {
			throw sessionError("SESSION_NOT_FOUND", `No session "${id}".`);
		}
		return this.touch(session);
	}

	/**
	 * The session if it exists and `ownerId` may see it (auth off: `ownerId` null sees all);
	 * loads it from the store when it is not in memory (two requests for one session load it once).
	 * Rejects with `SESSION_NOT_FOUND` otherwise (also for another key's session: its existence is
	 * not revealed).
	 */
	async load(id: string, ownerId: string | null): Promise<LiveSession> {
		let session = this.live.get(id);
		// Another replica may have run, changed or deleted it since: only a run here keeps it current.
		if (session && this.options.sharedStore && !session.isBusy && session.subscriberCount === 0) {
			this.live.delete(id);
			session = undefined;
		}
		if (!session) {
			const record = await this.options.store.getSession(id);
			if (record && canSee(this.callerOf(ownerId), record)) {
				// A key's own request takes one of its places; the server's own loads (recovery, messages
				// between replicas, `ownerId` null) are not refused. A load under way has its place already.
				if (ownerId !== null && !this.loading.has(id) && !this.live.has(id)) this.makeRoomForOwner(ownerId);
				session = await this.loadOnce(record);
			}
		}
		if (!session || !canSee(this.callerOf(ownerId), session.sharing)) {
			throw sessionError("SESSION_NOT_FOUND", `No session "${id}".`);
		}
		return this.touch(session);
	}

	/**
	 * Wires the session ports to the server: the tool interactions, the readers that follow a
	 * session's events, and in cluster mode the link to the other replicas. Called once by `buildApp`, before any request.
	 */
	connectPorts(context: Omit<PortContext, "update" | "delete">): void {
		this.portContext = {
			...context,
			update: (session, patch) => this.update(session, patch),
			delete: (session) => this.delete(session),
		};
	}

	private get ports(): PortContext {
		if (!this.portContext) throw new Error("SessionManager.connectPorts() was not called: buildApp wires the ports");
		return this.portContext;
	}

	/** The local port of a session in memory. */
	portOf(session: LiveSession): LocalSession {
		return new LocalSession(session, this.ports);
	}

	/**
	 * The port of session `id` if `ownerId` may see it (auth off: `ownerId` null sees all); rejects
	 * with `SESSION_NOT_FOUND` otherwise. On a single node, and for a session that runs here, the
	 * local port over the session in memory (loaded from the store when it is not). In cluster mode
	 * a session without a run here gets the remote port: one store round trip reads its record,
	 * queue and waiting calls, and no `LiveSession` is built until an operation needs one.
	 */
	async open(id: string, ownerId: string | null): Promise<SessionPort> {
		const cluster = this.ports.cluster;
		if (!this.options.sharedStore || !cluster) return this.portOf(await this.load(id, ownerId));
		const running = this.live.get(id);
		if (running?.isBusy) return this.portOf(this.get(id, ownerId));
		const store = this.options.store;
		const [record, queued, pending] = await Promise.all([
			store.getSession(id),
			store.listQueued(id),
			store.listPending(id, { includeResolved: true }),
		]);
		if (!record || !canSee(this.callerOf(ownerId), record)) {
			throw sessionError("SESSION_NOT_FOUND", `No session "${id}".`);
		}
		// A run may have started here meanwhile.
		const now = this.live.get(id);
		if (now?.isBusy) return this.portOf(this.get(id, ownerId));
		return new RemoteSession(
			{ record, queued, pending },
			{
				store,
				cluster,
				limits: {
					maxQueuedMessages: this.options.maxQueuedMessages,
					maxQueuedBytes: this.options.maxQueuedBytes ?? 0,
					maxQueuedBytesPerKey: this.options.maxQueuedBytesPerKey ?? 0,
				},
				ownerQueuedBytes: (owner) => this.queuedBytesOf(owner),
				loadLocal: async () => this.portOf(await this.load(id, ownerId)),
				storedView: (stored) => this.storedView(stored),
			},
		);
	}

	/**
	 * The state of a session not in memory here, from what the store holds (`storedView`): its
	 * tools as they resolve (the server tools it selects, then its extensions' tools, as
	 * `LiveSession.resolveTools` orders them), its extensions' stored fields.
	 */
	storedView(stored: StoredSession): SessionView {
		const { record } = stored;
		const tools = selectTools(record.tools, this.toolsByName.keys());
		const extra: Record<string, unknown> = {};
		for (const ext of this.extensionList) {
			try {
				tools.push(...(ext.storedToolNames?.(stored) ?? []));
				Object.assign(extra, ext.storedState?.(stored));
			} catch (err) {
				this.options.logger.error(
					{ err, extension: ext.name, sessionId: record.id },
					"extension storedToolNames() or storedState() failed",
				);
			}
		}
		return storedView(stored, tools, extra);
	}

	/** The caller the visibility rule takes (store/visibility.ts); `null` when auth is off. */
	private callerOf(ownerId: string | null): Caller | null {
		return ownerId === null ? null : { ownerId, tenant: this.options.tenantOf?.(ownerId) ?? null };
	}

	/** Loads a stored session into memory, once however many requests ask for it at the same time. */
	private loadOnce(record: SessionRecord): Promise<LiveSession> {
		const live = this.live.get(record.id);
		if (live) return Promise.resolve(live);
		let loading = this.loading.get(record.id);
		if (!loading) {
			loading = this.loadStored(record).finally(() => this.loading.delete(record.id));
			this.loading.set(record.id, loading);
		}
		return loading;
	}

	private async loadStored(record: SessionRecord): Promise<LiveSession> {
		this.arrive(record.ownerId, 1);
		try {
			return await this.loadStoredNow(record);
		} finally {
			this.arrive(record.ownerId, -1);
		}
	}

	private async loadStoredNow(record: SessionRecord): Promise<LiveSession> {
		// Evicted a moment ago: its release from the working set ends before it joins again.
		await this.releasing.get(record.id);
		if (!this.options.resolveModel(record.model)) {
			// The model was removed from the catalog since: fall back so the session stays usable.
			this.options.logger.warn(
				{ sessionId: record.id, model: record.model },
				"stored model unknown; using the default",
			);
			record =
				(await this.options.store.updateSession(record.id, { model: this.options.defaultModel }, Date.now())) ?? record;
		}
		return this.instantiate(record);
	}

	/** A request reached the session: it was active now (drives eviction and, in the store, deletion). */
	private touch(session: LiveSession): LiveSession {
		session.lastActiveAt = Date.now();
		this.options.store.touchSession(session.id, session.lastActiveAt); // buffered: cheap per request
		return session;
	}

	async list(
		ownerId: string | null,
		cursor: string | undefined,
		limit: number,
		filter?: SessionFilter,
	): Promise<SessionPage> {
		try {
			const caller = this.callerOf(ownerId);
			return await this.options.store.listSessions({ ...(caller ?? {}), cursor, limit, ...(filter ? { filter } : {}) });
		} catch (err) {
			if (cursor !== undefined)
				throw sessionError("VALIDATION_FAILED", `query.cursor is not a cursor this server issued.`);
			throw err;
		}
	}

	/**
	 * Validates a config patch (extensions too), then stores and applies it. Model, system prompt
	 * and thinking level apply from the next model call, `toolApprovals` from the next tool call,
	 * the rest (`tools`, `clientTools`, modes) from the next run at the latest.
	 */
	async update(session: LiveSession, patch: Partial<SessionConfig>): Promise<void> {
		if (patch.model !== undefined) this.checkModel(patch.model);
		if (patch.tools !== undefined) this.checkTools(patch.tools);
		for (const ext of this.extensionList) ext.beforeUpdate?.(session, patch);
		await session.applyConfig(patch);
		if (patch.clientTools !== undefined) session.refreshTools();
	}

	/** Aborts the session's run, closes its streams, deletes it from memory and the store. */
	async delete(session: LiveSession): Promise<void> {
		await session.destroy("session deleted", 5_000);
		this.tellDeleted(session);
		this.live.delete(session.id);
		await this.options.store.deleteSession(session.id);
	}

	/** Tells each extension the session is gone (`onDelete`); one that throws is logged and the rest still hear. */
	private tellDeleted(session: LiveSession): void {
		for (const ext of this.extensionList) {
			try {
				ext.onDelete?.(session);
			} catch (err) {
				this.options.logger.error({ err, extension: ext.name }, "extension onDelete failed");
			}
		}
	}

	private retentionTick(): void {
		if (this.options.sessionTtlMs > 0) this.evictIdle();
		this.deleteExpired().catch((err: unknown) =>
			this.options.logger.error({ err }, "deleting expired sessions failed"),
		);
	}

	/**
	 * Deletes sessions last active before `cutoff` (default: now - `sessionDeleteAfterMs`; nothing when
	 * that is 0), with everything stored for them. A session with a run or a subscriber is kept.
	 * Returns how many were deleted.
	 */
	async deleteExpired(cutoff?: number): Promise<number> {
		const deleteAfter = this.options.sessionDeleteAfterMs ?? 0;
		if (cutoff === undefined) {
			if (deleteAfter <= 0) return 0;
			cutoff = Date.now() - deleteAfter;
		}
		if (this.shuttingDown) return 0;
		let deleted = 0;
		for (const id of await this.options.store.listIdleSessions(cutoff)) {
			const session = this.live.get(id);
			if (!session) {
				if (this.loading.has(id)) continue; // a request is bringing it into memory: it is active
				if (await this.options.store.deleteSession(id)) deleted++;
				continue;
			}
			if (session.isBusy || session.subscriberCount > 0 || session.lastActiveAt >= cutoff) continue;
			await this.delete(session);
			deleted++;
		}
		return deleted;
	}

	/** Drops idle sessions without subscribers, unused for `ttlMs`, from memory (they reload on access). */
	evictIdle(ttlMs = this.options.sessionTtlMs): number {
		const cutoff = Date.now() - ttlMs;
		let evicted = 0;
		for (const [id, session] of this.live) {
			if (session.isBusy || session.subscriberCount > 0 || session.lastActiveAt > cutoff) continue;
			this.dropFromMemory(id);
			evicted++;
		}
		return evicted;
	}

	/** Evicts an idle session without subscribers: out of memory, and of the store's working set. */
	private dropFromMemory(id: string): void {
		const session = this.live.get(id);
		this.live.delete(id);
		// With a shared store a session is in the working set only while it runs (releaseIdle).
		if (!this.options.sharedStore) this.releaseEvicted(id);
		if (session) this.notifyEvicted(session);
	}

	/** Tells the extensions a session left memory (`SessionExtension.onEvict`); a throw is logged. */
	private notifyEvicted(session: LiveSession): void {
		for (const ext of this.extensionList) {
			try {
				ext.onEvict?.(session);
			} catch (err) {
				this.options.logger.error({ err, extension: ext.name, sessionId: session.id }, "extension onEvict failed");
			}
		}
	}

	/**
	 * Takes an evicted session out of the store's working set, so its write state does not outlive
	 * it in memory; a load of the session waits for this first (it joins the working set again).
	 */
	private releaseEvicted(id: string): void {
		this.trackRelease(
			id,
			(sessionId) => this.options.store.releaseSession(sessionId),
			"could not release an evicted session",
		);
	}

	/** The first step of a shutdown: no new session or run starts from now on (`SHUTTING_DOWN`). */
	stopAccepting(): void {
		this.shuttingDown = true;
		if (this.evictTimer) clearInterval(this.evictTimer);
		if (this.memoryTimer) clearInterval(this.memoryTimer);
	}

	/**
	 * Graceful shutdown: no new runs; running runs get `graceMs` to finish, then are aborted (each
	 * still emits `agent_end`) and get up to {@link SHUTDOWN_ABORT_WAIT_MS} to settle; then every
	 * stream is closed and the store flushed.
	 */
	async shutdown(graceMs: number): Promise<void> {
		this.stopAccepting();
		const sessions = [...this.live.values()];
		const allIdle = Promise.all(sessions.map((s) => s.waitForIdle()));
		const outcome = await settleWithin(allIdle, graceMs);
		if (outcome === "timeout") {
			for (const session of sessions) session.abort();
			await settleWithin(allIdle, SHUTDOWN_ABORT_WAIT_MS);
		}
		// Every session in memory now: one loaded during the drain (a request on a connection that
		// was already open) may have subscribers too.
		for (const session of this.live.values()) session.closeSubscribers("server shutting down");
		await this.options.store.flush();
	}
}
