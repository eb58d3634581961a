/**
 * One replica's part in a cluster: its Redis link, the live fan-out (publisher and
 * subscriptions), the control bus (the remote session port sends through it, `session/remote-port.ts`),
 * the lease keeper and guard. Built by `buildApp` when `WHEELHOUSE_REDIS_URL` is set; started before the
 * app listens (Redis unreachable at startup stops it, naming the variable), closed with the app.
 */
import { setTimeout as sleep } from "node:timers/promises";
import type { FastifyBaseLogger } from "fastify";
import { redactUrl } from "../../ai/redact-url.js";
import type { SessionStore } from "../../store/types.js";
import { ConfigError } from "../config/config.js";
import type { WritePasses } from "../http/sse/write-passes.js";
import type { LiveSession } from "../runtime/session/live-session.js";
import type { SessionManager } from "../runtime/session/manager.js";
import type { ClusterLink } from "../runtime/session/port-context.js";
import type { OpenStreamSink } from "../runtime/session/stream-sink.js";
import type { ToolInteractions } from "../runtime/session/tool-interactions.js";
import { abortRecorded, recordAbort } from "./aborts.js";
import { ControlBus, type ControlMessage } from "./control.js";
import { EventPublisher } from "./event-publisher.js";
import { EventSubscriptions } from "./event-subscriptions.js";
import { LeaseGuard } from "./lease-guard.js";
import { LeaseKeeper, leasesOf } from "./leases.js";
import { RedisLink } from "./redis.js";
import {
	type ClusterRunPosition,
	type ClusterStreamDeps,
	streamClusterEvents,
	streamClusterRun,
} from "./remote-stream.js";
import type { ClusterSettings } from "./settings.js";

/** One replica's part in a cluster; the session ports reach the other replicas through it (`ClusterLink`). */
export class ClusterNode implements ClusterLink {
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
			// Its layer is the outermost of every session's model calls (`session/model-calls.ts`).
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

	/** Stores the abort of run `runId` (`aborts.ts`); false for an unknown session. */
	storeAbort(sessionId: string, runId: string): Promise<boolean> {
		return recordAbort(this.store, sessionId, runId, Date.now());
	}

	streamEvents(session: LiveSession, open: OpenStreamSink, afterId: number | undefined): void {
		streamClusterEvents(this.streams, session, open, afterId);
	}

	streamRun(session: LiveSession, open: OpenStreamSink, run: ClusterRunPosition, afterId: number | undefined): void {
		streamClusterRun(this.streams, session, open, run, afterId);
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
