/**
 * One replica's part in a cluster: its Redis link, the live fan-out (publisher and
 * subscriptions), the control bus, and the operations the routes call for a session that runs
 * on another replica. Built by `buildApp` when `WHEELHOUSE_REDIS_URL` is set; started before the
 * app listens (Redis unreachable at startup stops it, naming the variable), closed with the app.
 */
import { setTimeout as sleep } from "node:timers/promises";
import type { FastifyBaseLogger } from "fastify";
import type { AgentMessage } from "../../agent/types.js";
import { redactUrl } from "../../ai/redact-url.js";
import type { IdempotencyRecord, QueuedMessage, QueueKind, SessionRecord, SessionStore } from "../../store/types.js";
import type { ApprovalDecision, ClientToolResult, ResolveOutcome } from "../../tools/index.js";
import { ConfigError } from "../config.js";
import type { LiveSession } from "../session/live-session.js";
import type { SessionManager } from "../session/manager.js";
import type { ToolInteractions } from "../session/tool-interactions.js";
import type { WritePasses } from "../sse/write-passes.js";
import { abortRecorded, recordAbort } from "./aborts.js";
import { ControlBus, type ControlMessage } from "./control.js";
import { EventPublisher } from "./event-publisher.js";
import { EventSubscriptions } from "./event-subscriptions.js";
import { LeaseGuard } from "./lease-guard.js";
import { LeaseKeeper, leasesOf } from "./leases.js";
import { RedisLink } from "./redis.js";
import type { ClusterStreamDeps } from "./remote-stream.js";
import type { ClusterSettings } from "./settings.js";

export class ClusterNode {
	readonly redis: RedisLink;
	readonly publisher: EventPublisher;
	readonly subscriptions: EventSubscriptions;
	private control: ControlBus | undefined;
	private keeper: LeaseKeeper | undefined;
	/** What this replica does only while it knows it holds a session's lease (a store with leases). */
	private readonly guard: LeaseGuard | undefined;
	private removeGuardBarrier: (() => void) | undefined;
	private interactions: ToolInteractions | undefined;

	constructor(
		readonly settings: ClusterSettings,
		private readonly store: SessionStore,
		private readonly logger: FastifyBaseLogger,
		/** How often a stream reader re-reads the store after its cursor. */
		readonly recheckMs: number,
	) {
		this.redis = new RedisLink(settings.redisUrl, logger);
		const leases = leasesOf(store);
		this.guard = leases && new LeaseGuard(leases, logger);
		this.publisher = new EventPublisher(store, this.redis, settings.prefix, logger, this.guard);
		this.subscriptions = new EventSubscriptions(this.redis, settings.prefix, logger, { retryMaxMs: recheckMs });
	}

	get replicaId(): string {
		return this.settings.replicaId;
	}

	/** What the cluster streams need. */
	get streams(): ClusterStreamDeps {
		return { subscriptions: this.subscriptions, recheckMs: this.recheckMs };
	}

	/** Both Redis connections are up (`/readyz`). */
	get ready(): boolean {
		return this.redis.ready;
	}

	/** The tool interactions extension, once the tools plugin made it (approvals, client tool results). */
	useInteractions(interactions: ToolInteractions): void {
		this.interactions = interactions;
	}

	/**
	 * Connects to Redis, listens for control messages, and starts sweeping for runs whose replica
	 * died. With a store that has leases, guards `passes` (no SSE frame leaves while this replica
	 * may have lost a lease unknowingly) and every session's model and tool calls (see
	 * `lease-guard.ts`). Throws a ConfigError naming the URL when Redis is unreachable.
	 */
	async start(sessions: SessionManager, resume: ResumeTakenOver, passes?: WritePasses): Promise<void> {
		try {
			await this.redis.connect();
		} catch (err) {
			throw new ConfigError(
				"WHEELHOUSE_REDIS_URL",
				`cannot reach Redis at ${redactUrl(this.settings.redisUrl)}: ${(err as Error).message}`,
			);
		}
		this.control = new ControlBus({
			redis: this.redis,
			prefix: this.settings.prefix,
			replicaId: this.settings.replicaId,
			sessions,
			subscriptions: this.subscriptions,
			logger: this.logger,
			interactions: () => this.interactions,
			recheckMs: this.recheckMs,
		});
		await this.control.start();
		const leases = leasesOf(this.store);
		if (leases) {
			this.keeper = new LeaseKeeper({
				store: this.store,
				leases,
				sessions,
				publisher: this.publisher,
				subscriptions: this.subscriptions,
				redis: this.redis,
				prefix: this.settings.prefix,
				logger: this.logger,
				resume: (sessionId, at) => this.resumeTakenOver(sessions, resume, sessionId, at),
			});
			this.keeper.start();
		}
		if (this.guard) {
			// Added last: its checks wrap every other extension's wrappers of the model call.
			sessions.addExtension(this.guard.extension);
			this.removeGuardBarrier = passes?.addBarrier(this.guard);
			await this.guard.start(sessions);
		} else {
			this.logger.warn("the store has no session leases: runs of a dead replica are not taken over");
		}
		this.logger.info({ replica: this.replicaId, prefix: this.settings.prefix }, "cluster mode: this is one replica");
	}

	/**
	 * Settles the run of a session this replica took over, and continues it per its policy unless
	 * an abort of it was stored (posted while its replica was dying): then it stops there, and a
	 * continued run is aborted if the abort is found only once it started (posted meanwhile; a
	 * control message that came before the continued run was registered here found nothing to abort).
	 */
	private async resumeTakenOver(
		sessions: SessionManager,
		resume: ResumeTakenOver,
		sessionId: string,
		at: number,
	): Promise<{ kind: string }> {
		const runId = (await this.store.getSession(sessionId))?.currentRunId ?? null;
		const aborted = async () => runId !== null && (await abortRecorded(this.store, sessionId, runId));
		const outcome = await resume(
			sessionId,
			at,
			(await aborted()) ? "an abort of it was posted (POST /abort) before it was interrupted." : undefined,
		);
		if (outcome.kind === "continued" && (await aborted())) sessions.inMemory(sessionId)?.abort();
		return outcome;
	}

	/** Ends every cluster stream (shutdown). */
	closeStreams(reason: string): void {
		this.subscriptions.closeAll(reason);
	}

	/** Gives up the lease of a session whose run here ended (once its events are published). */
	async releaseLease(sessionId: string): Promise<void> {
		await this.keeper?.release(sessionId);
	}

	async close(): Promise<void> {
		this.keeper?.stop();
		this.control?.stop();
		this.guard?.stop();
		this.removeGuardBarrier?.();
		// What the last runs appended is published if the store takes it within a moment.
		await Promise.race([this.publisher.idle(), sleep(CLOSE_PUBLISH_WAIT_MS, undefined, { ref: false })]);
		this.publisher.close();
		this.subscriptions.closeAll("server shutting down");
		await this.redis.close();
	}

	send(message: ControlMessage): Promise<boolean> {
		return this.control?.send(message) ?? Promise.resolve(false);
	}

	// --- what the routes call for a session without a run on this replica ------------------------

	/** The stored record when the session's run is on another replica (none here, the store says running). */
	async runningElsewhere(session: LiveSession): Promise<SessionRecord | undefined> {
		if (session.isBusy) return undefined;
		const record = await this.store.getSession(session.id);
		return record?.status === "running" ? record : undefined;
	}

	/**
	 * Queues a message for a session that has no run here: durably in the store (with its key's
	 * record), then tells the replica running it. Resolves to the stored entry and the queue length.
	 */
	async enqueue(
		session: LiveSession,
		kind: QueueKind,
		message: AgentMessage,
		idle: boolean,
		withKey?: (answer: { queue: QueueKind; entryId: number; queueLength: number; idle: boolean }) => IdempotencyRecord,
	): Promise<{ entry: QueuedMessage; queueLength: number; idle: boolean } | undefined> {
		const before = (await this.store.listQueued(session.id, kind)).length;
		const queueLength = before + 1;
		const entry = await this.store.enqueue(
			session.id,
			kind,
			message,
			Date.now(),
			withKey && ((queued) => withKey({ queue: kind, entryId: queued.id, queueLength, idle })),
		);
		if (!entry) return undefined;
		if (!idle) await this.send({ t: "queue", s: session.id });
		return { entry, queueLength, idle };
	}

	/**
	 * Aborts run `runId` of a session running on another replica: the abort is stored (durably,
	 * see `aborts.ts`), then the replica running it is told. `gone`: the session no longer exists;
	 * `not_delivered`: Redis did not take the control message (the run may go on until its replica
	 * finds the stored abort, or is taken over).
	 */
	async abortElsewhere(session: LiveSession, runId: string): Promise<"delivered" | "not_delivered" | "gone"> {
		if (!(await recordAbort(this.store, session.id, runId, Date.now()))) return "gone";
		return (await this.send({ t: "abort", s: session.id, run: runId })) ? "delivered" : "not_delivered";
	}

	/** Whether the transcript's end has a result for `toolCallId` (the call ended: 409, not 404). */
	private async answeredInTranscript(sessionId: string, toolCallId: string): Promise<boolean> {
		const total = (await this.store.countMessages(sessionId)) ?? 0;
		const page = await this.store.listMessages(sessionId, {
			offset: Math.max(0, total - RECENT_MESSAGES),
			limit: RECENT_MESSAGES,
		});
		return (page?.messages ?? []).some((m) => (m as { toolCallId?: string }).toolCallId === toolCallId);
	}

	/**
	 * Delivers an approval or a client tool result to a call waiting on another replica: stored
	 * durably as the call's resolution, then the replica running it is told. `unknown` when no such
	 * call waits (by the store), `finished` when it was answered already.
	 */
	async resolve(
		session: LiveSession,
		kind: "approval" | "client_tool",
		toolCallId: string,
		value: ApprovalDecision | ClientToolResult,
	): Promise<ResolveOutcome> {
		const stored = (await this.store.listPending(session.id, { includeResolved: true })).find(
			(p) => p.toolCallId === toolCallId && p.kind === kind,
		);
		if (!stored) return (await this.answeredInTranscript(session.id, toolCallId)) ? "finished" : "unknown";
		if (stored.resolvedAt !== null) return "finished";
		if (!(await this.store.resolvePending(session.id, toolCallId, JSON.stringify(value), Date.now()))) {
			return "finished";
		}
		await this.send({ t: "pending", s: session.id, kind, call: toolCallId });
		return "resolved";
	}
}

/**
 * Settles and continues (per its `onInterrupt`) the interrupted run of a session this replica
 * took over; with `stopBecause`, it is not continued whatever the policy, and `run_interrupted`
 * says why.
 */
export type ResumeTakenOver = (sessionId: string, at: number, stopBecause?: string) => Promise<{ kind: string }>;

/** At close, how long the events still queued may take to be published. */
const CLOSE_PUBLISH_WAIT_MS = 1_000;

/** How much of a transcript's end is searched for the result of a call that no longer waits. */
const RECENT_MESSAGES = 200;
