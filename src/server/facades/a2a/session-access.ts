/**
 * Every way the A2A facade reaches a session, in one place: finding or making a context's
 * session, starting a run, steering one, aborting one, answering what a run waits for, and
 * reading what the store keeps of a session (runs, transcript, pending interactions, the event
 * log, live events). Nothing else in the facade touches a session, the session manager or the
 * cluster, so that pointing the facade at another way of reaching sessions is a change here only.
 *
 * Everything a later request needs is read from the store every replica shares, never from this
 * process's memory: a task's record (the facade record `a2a.task`, keyed by the run id), the run
 * records, the transcript, the pending interactions and the event log. A run on another replica
 * is steered, aborted and answered through the session port, as `/v1` does it, and its events are
 * followed through the port too (`SessionPort.follow`: the cluster's subscriptions bring them).
 * A context or a task is found by opening its session's port: on a replica without its run, a
 * read (`GetTask`, `ListTasks`), a cancel or an answer builds no `LiveSession` there; only a new
 * run (it runs here) loads the session.
 */
import type { Context as TraceContext } from "@opentelemetry/api";
import type { FastifyInstance } from "fastify";
import type { AgentMessage } from "../../../agent/types.js";
import type { UserMessage } from "../../../ai/types.js";
import type { NewWebhookDelivery, PendingInteraction, RunRecord, StoredEvent } from "../../../store/types.js";
import type { ApprovalDecision, ClientToolResult, ResolveOutcome } from "../../../tools/index.js";
import { apiError } from "../../http/errors.js";
import type { SseConnection } from "../../http/sse/connection.js";
import { facadeSessionId } from "../../runtime/ids.js";
import { type AgentProfile, profileSettings } from "../../runtime/profiles.js";
import { startAdmitted } from "../../runtime/session/admission.js";
import { unlessNotFound } from "../../runtime/session/errors.js";
import type { LiveSession } from "../../runtime/session/live-session.js";
import type { SessionPort } from "../../runtime/session/port.js";
import type { ToolInteractions } from "../../runtime/session/tool-interactions.js";
import { pollUntil } from "../poll.js";
import { CONTEXT_KEY, mayHaveTasks, type PushConfig, PushConfigs, TASK_RECORD } from "./push.js";

/** A context's session as the facade holds it (its port): only its id is read outside this file. */
export type ContextSession = SessionPort;

/** How often the store is read while a run goes on (on this replica or another). */
const POLL_MS = 25;

/** What the facade stores of a task when its run starts. */
export interface TaskRecord {
	/** The A2A context id the client used (or the session id). */
	contextId: string;
	/** The transcript's length before the run's prompt: the run's messages start there. */
	offset: number;
	/** The id of the run's first event (`agent_start`). */
	firstEventId: number;
	createdAt: number;
}

/** A task found by id: its session and record. */
export interface FoundTask {
	session: ContextSession;
	taskId: string;
	record: TaskRecord;
}

/** A run that started here: its id and first event id, where its messages start, its session's port. */
export interface StartedRun {
	runId: string;
	firstEventId: number;
	/** The transcript's length before the run's prompt. */
	offset: number;
	/** The port of the session the run started in (local: the run is in this process). */
	session: ContextSession;
}

/** What a follower of a session's events is handed, in id order, each once. */
export type EventSink = (event: StoredEvent) => "next" | "stop";

export class A2aSessionAccess {
	private readonly pushConfigs: PushConfigs;

	constructor(
		private readonly app: FastifyInstance,
		private readonly interactions: ToolInteractions,
		private readonly push?: { wake: () => void },
	) {
		this.pushConfigs = new PushConfigs(app.wheelhouse.sessions.store);
	}

	private get ctx() {
		return this.app.wheelhouse;
	}

	private get store() {
		return this.ctx.sessions.store;
	}

	/** The configured profiles (the card's skills, the profile a new context names). */
	get profiles(): ReadonlyMap<string, AgentProfile> {
		return this.ctx.profiles;
	}

	/** The default model (the card's one skill when there are no profiles). */
	get defaultModel(): string {
		return this.ctx.sessions.defaultModel;
	}

	/**
	 * The session id of a context for an owner: a session id names that session; any other id is
	 * hashed with the owner, so the mapping needs no storage and two keys never share a context.
	 */
	private sessionIdOf(ownerId: string | null, contextId: string): { id: string; creatable: boolean } {
		return facadeSessionId("a2a", ownerId, contextId);
	}

	/** The context's session, or undefined when there is none this owner may see. */
	async findContext(ownerId: string | null, contextId: string): Promise<ContextSession | undefined> {
		return this.open(this.sessionIdOf(ownerId, contextId).id, ownerId);
	}

	/** The session's port (no session is built for it here), or undefined when this owner may not see it. */
	private async open(sessionId: string, ownerId: string | null): Promise<ContextSession | undefined> {
		return unlessNotFound(this.ctx.sessions.open(sessionId, ownerId));
	}

	/**
	 * Makes a context's session from a profile (or the server's defaults). Without `contextId` the
	 * session's own id is the context id. Undefined when `contextId` names a session that does not
	 * exist (sessions are never made under a given id).
	 */
	async createContext(
		ownerId: string | null,
		contextId: string | undefined,
		profile: { name: string; profile: AgentProfile } | undefined,
	): Promise<{ session: ContextSession; contextId: string } | undefined> {
		const settings = profile ? profileSettings(profile.name, profile.profile) : {};
		const target = contextId === undefined ? undefined : this.sessionIdOf(ownerId, contextId);
		if (target && !target.creatable) return undefined;
		const metadata = { ...settings.metadata, facade: "a2a", ...(contextId ? { [CONTEXT_KEY]: contextId } : {}) };
		const session = await this.ctx.sessions.create(ownerId, { ...settings, metadata }, target?.id);
		return { session: this.ctx.sessions.portOf(session), contextId: contextId ?? session.id };
	}

	/**
	 * The session in this process with a run going, or undefined: what this process runs is
	 * current; a session in memory without a run may be behind the store (another replica ran it).
	 */
	private running(port: ContextSession): LiveSession | undefined {
		const live = this.ctx.sessions.inMemory(port.id);
		return live?.isBusy ? live : undefined;
	}

	/**
	 * Starts a run with `message`. Refused (`AGENT_BUSY`, a budget, a run limit) as `/v1` refuses a
	 * prompt. Resolves once the run started and its first event has an id. Past a run limit under
	 * `admission: "queue"` it waits for a slot first (`signal`: the client went away, the place goes).
	 */
	async prompt(
		port: ContextSession,
		message: UserMessage,
		trace?: TraceContext,
		signal?: AbortSignal,
	): Promise<StartedRun> {
		// The run runs here: a session this process holds (just made, or running here) is the one,
		// else it is loaded here for the run.
		const session =
			(port.where === "local" ? this.ctx.sessions.inMemory(port.id) : undefined) ??
			(await this.ctx.sessions.load(port.id, port.ownerId));
		// A session made over `/v1`: marked first, so that its runs' ends carry their push notifications.
		if (!mayHaveTasks(session.config.metadata))
			await this.ctx.sessions.update(session, { metadata: { ...session.config.metadata, [CONTEXT_KEY]: session.id } });
		const offset = session.messageCount;
		// Past a run limit under `admission: "queue"` the request waits for a slot (bounded).
		const result = await startAdmitted(
			this.ctx.admission,
			{ sessionId: session.id, ownerId: session.ownerId, running: session.runId !== undefined },
			() => session.prompt([message as AgentMessage], "reject", trace ? { trace } : {}),
			(outcome) => (outcome.kind === "started" ? outcome.run : undefined),
			signal ? { signal } : {},
		);
		if (result.kind !== "started") throw apiError("AGENT_BUSY", `Session ${session.id} is running.`);
		return {
			runId: result.run.id,
			firstEventId: await result.run.firstEventId,
			offset,
			session: this.ctx.sessions.portOf(session),
		};
	}

	/** Stores a task's record (durably when this resolves). */
	async putTask(session: ContextSession, taskId: string, record: TaskRecord): Promise<void> {
		await this.store.putFacadeRecords(
			session.id,
			[{ kind: TASK_RECORD, key: taskId, data: JSON.stringify(record) }],
			Date.now(),
		);
	}

	/** The task `taskId` of this owner (another owner's is not found). */
	async findTask(ownerId: string | null, taskId: string): Promise<FoundTask | undefined> {
		const [found] = await this.store.findFacadeRecords(TASK_RECORD, taskId, ownerId, 1);
		if (!found) return undefined;
		const session = await this.open(found.sessionId, ownerId);
		if (!session) return undefined;
		return { session, taskId, record: JSON.parse(found.data) as TaskRecord };
	}

	/** The record of task `taskId` of a session, or undefined. */
	async taskRecord(session: ContextSession, taskId: string): Promise<TaskRecord | undefined> {
		const found = await this.store.getFacadeRecord(session.id, TASK_RECORD, taskId);
		return found ? (JSON.parse(found.data) as TaskRecord) : undefined;
	}

	/** A task's push configs (see push.ts). */
	taskPushConfigs(session: ContextSession, taskId: string): Promise<PushConfig[]> {
		return this.pushConfigs.list(session.id, taskId);
	}

	/** Replaces a task's push configs (durable on resolve). */
	saveTaskPushConfigs(session: ContextSession, taskId: string, configs: PushConfig[]): Promise<void> {
		return this.pushConfigs.save(session.id, taskId, configs);
	}

	/** Puts push deliveries in the outbox (durable on resolve) and has them sent. */
	async enqueuePush(deliveries: NewWebhookDelivery[]): Promise<void> {
		await this.store.enqueueWebhooks(deliveries);
		this.push?.wake();
	}

	/** The session's runs, oldest first (the most recent 1,000). */
	runs(session: ContextSession): Promise<RunRecord[]> {
		return this.store.listRuns(session.id, 1000);
	}

	/** The run in progress, wherever it runs (by the store): its id, or undefined when idle. */
	async runningRun(session: ContextSession): Promise<string | undefined> {
		const live = this.running(session);
		if (live) return live.runId;
		const record = await this.store.getSession(session.id);
		return record?.status === "running" ? (record.currentRunId ?? undefined) : undefined;
	}

	/** The session's unresolved interactions (what its run waits for), oldest first. */
	pending(session: ContextSession): Promise<PendingInteraction[]> {
		return this.store.listPending(session.id);
	}

	/** The transcript from `offset`, at most `limit` messages. */
	async messages(session: ContextSession, offset: number, limit = 1000): Promise<AgentMessage[]> {
		return (await this.store.listMessages(session.id, { offset, limit }))?.messages ?? [];
	}

	/**
	 * The id of the session's last event: the run's here when it runs here, else as the store had it
	 * when the port was opened.
	 */
	lastEventId(session: ContextSession): number {
		return (
			(session.where === "local" ? this.ctx.sessions.inMemory(session.id) : undefined)?.lastEventId ??
			session.record.lastEventId
		);
	}

	/**
	 * Steers `message` into the session's run, wherever it runs: delivered after the current tool
	 * batch, before the next model call.
	 */
	async steer(session: ContextSession, message: UserMessage): Promise<void> {
		await session.enqueue("steer", message as AgentMessage);
	}

	/** Answers an approval the run waits for, wherever it runs. */
	async resolveApproval(
		session: ContextSession,
		toolCallId: string,
		decision: ApprovalDecision,
	): Promise<ResolveOutcome> {
		return session.resolve({ kind: "approval", toolCallId, value: decision });
	}

	/** Hands the result of a client tool call to the run that waits for it, wherever it runs. */
	async resolveToolResult(
		session: ContextSession,
		toolCallId: string,
		result: ClientToolResult,
	): Promise<ResolveOutcome> {
		return session.resolve({ kind: "client_tool", toolCallId, value: result });
	}

	/**
	 * Aborts run `runId` wherever it runs, and resolves once the store has it ended (or after
	 * `waitMs`, for a run whose replica does not answer).
	 */
	async abort(port: ContextSession, runId: string, waitMs = 10_000): Promise<void> {
		const live = this.running(port);
		if (live) {
			if (live.runId === runId) {
				live.abort();
				await live.waitForIdle();
			}
			return;
		}
		if (port.record.status === "running" && port.record.currentRunId === runId) await port.abort();
		await this.waitUntil(waitMs, async () => (await this.runningRun(port)) !== runId);
	}

	/**
	 * Resolves once `done` holds (checked every `everyMs`), or `waitMs` passed, or `signal` fired.
	 */
	async waitUntil(
		waitMs: number,
		done: () => Promise<boolean>,
		signal?: AbortSignal,
		everyMs = POLL_MS,
	): Promise<void> {
		await pollUntil(waitMs, everyMs, done, signal);
	}

	/**
	 * Resolves once run `runId` is over or waits for input other than the calls in `answered` (or
	 * after `waitMs`, or when `signal` fires). A run of this process is watched through its own
	 * events and end; a run elsewhere through the store.
	 */
	async settled(
		port: ContextSession,
		runId: string,
		answered: ReadonlySet<string>,
		waitMs: number,
		signal: AbortSignal,
	): Promise<void> {
		const session = this.running(port);
		const run = session?.activeRunHandle(runId);
		if (!session || !run) {
			await this.waitUntil(
				waitMs,
				async () =>
					(await this.runningRun(port)) !== runId ||
					(await this.pending(port)).some((p) => !answered.has(p.toolCallId)),
				signal,
			);
			return;
		}
		const waitsForOthers = () =>
			this.interactions.pending(session).some((p) => !p.orphaned && !answered.has(p.toolCallId));
		const stop = new AbortController();
		const unsubscribe = session.observe({
			event({ type }) {
				if ((type === "approval_requested" || type === "tool_result_requested") && waitsForOthers()) stop.abort();
			},
			close: () => stop.abort(),
		});
		const onAbort = () => stop.abort();
		signal.addEventListener("abort", onAbort, { once: true });
		try {
			await Promise.race([run.done, this.waitUntil(waitMs, async () => waitsForOthers(), stop.signal, 250)]);
		} finally {
			stop.abort();
			signal.removeEventListener("abort", onAbort);
			unsubscribe();
		}
	}

	/**
	 * Follows the session's events after `cursor`, in id order and each once, wherever the session
	 * runs (the session port's `follow`): the log first, then live. `idle` is called after each
	 * pass over the log with nothing more to read (the caller checks the store there: a run that
	 * ended on a replica that died has no last event). Returns what stops it (the connection's
	 * close must call it too).
	 */
	follow(
		session: ContextSession,
		sse: SseConnection,
		cursor: number,
		sink: EventSink,
		trimmed: () => void,
		idle: (reader: { readToEnd(): Promise<unknown>; hasQueued: boolean }) => Promise<void>,
	): () => void {
		let stop: (() => void) | undefined;
		let stopped = false;
		void session.follow(sse, cursor, { event: sink, trimmed, idle }).then((stopFollowing) => {
			stop = stopFollowing;
			if (stopped) stopFollowing();
		});
		return () => {
			stopped = true;
			stop?.();
		};
	}
}
