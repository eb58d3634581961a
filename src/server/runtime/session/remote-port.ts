/**
 * The session port of a session without a run on this replica (cluster mode): its run, if it has
 * one, lives on another replica. Control goes through the shared store and one Redis publish,
 * without building the session here:
 *
 * 1. `SessionManager.open` read the record, the queue and the waiting calls together (one store
 *    round trip).
 * 2. The operation writes its change (the second round trip): a queued message, a cleared queue,
 *    a stored abort, a call's resolution. It is durable from then on; the replica running the
 *    session (or one taking its run over) finds it in the store.
 * 3. One control message tells that replica to take it in now (`control.ts`).
 *
 * What needs the session in memory — a new run (it runs here), the view, a stream, a config
 * change (its extensions validate it) — loads it here once and goes on as {@link LocalSession}.
 */
import { setTimeout as sleep } from "node:timers/promises";
import type { AgentMessage } from "../../../agent/types.js";
import type {
	IdempotencyRecord,
	MessagePage,
	QueueKind,
	SessionConfig,
	SessionRecord,
	SessionStore,
	SupersededBranch,
} from "../../../store/types.js";
import { INTERRUPTED_RESOLUTION, type ResolveOutcome } from "../../../tools/index.js";
import { elicitationAnswerError, storedElicitationArgs } from "./elicitations.js";
import { busyError, busyForContinueError, sessionError } from "./errors.js";
import type { LocalSession } from "./local-port.js";
import type {
	AbortOutcome,
	ClearedQueue,
	EventFollower,
	IfBusy,
	PortRunOptions,
	PromptOutcome,
	Resolution,
	RewindOutcome,
	SessionPort,
} from "./port.js";
import type { ClusterLink } from "./port-context.js";
import { checkQueueBytes, type QueueByteLimits, type QueuedAnswer } from "./queues.js";
import type { RunHandle } from "./runs.js";
import { approximateJsonBytes } from "./sizes.js";
import type { RunPosition } from "./stream.js";
import type { OpenStreamSink, StreamSink } from "./stream-sink.js";
import { checkIdle } from "./transcript-cuts.js";
import type { SessionView, StoredSession } from "./view.js";

/**
 * What {@link SessionManager.open} read of the session, in one round trip. Its waiting calls
 * include the resolved ones (an answered call is a 409, not a 404).
 */
export type RemoteState = StoredSession;

export interface RemoteSessionDeps {
	store: SessionStore;
	cluster: ClusterLink;
	limits: QueueByteLimits & { maxQueuedMessages: number };
	/** Bytes queued on the owner's sessions in memory here (the per-key byte limit counts them). */
	ownerQueuedBytes(ownerId: string | null): number;
	/** Loads the session into this process (`SessionManager.load`) and gives its local port. */
	loadLocal(): Promise<LocalSession>;
	/** The session's state from what the store holds (`SessionManager.storedView`). */
	storedView(stored: StoredSession): SessionView;
}

/** How long a prompt with `ifBusy: "interrupt"` waits for the run on another replica to end. */
const INTERRUPT_WAIT_MS = 10_000;
const INTERRUPT_POLL_MS = 25;

/** How much of a transcript's end is searched for the result of a call that no longer waits. */
const RECENT_MESSAGES = 200;

export class RemoteSession implements SessionPort {
	readonly where = "remote" as const;
	private local: Promise<LocalSession> | undefined;

	constructor(
		private readonly state: RemoteState,
		private readonly deps: RemoteSessionDeps,
	) {}

	get id(): string {
		return this.state.record.id;
	}

	get ownerId(): string | null {
		return this.state.record.ownerId;
	}

	get record(): SessionRecord {
		return this.state.record;
	}

	/** Whether the store has a run of the session going (on another replica). */
	private get running(): boolean {
		return this.state.record.status === "running";
	}

	/** The session loaded here, once. */
	private loaded(): Promise<LocalSession> {
		this.local ??= this.deps.loadLocal();
		return this.local;
	}

	async view(): Promise<SessionView> {
		return (await this.loaded()).view();
	}

	async readView(): Promise<SessionView> {
		return this.deps.storedView(this.state);
	}

	async prompt(
		messages: AgentMessage[],
		ifBusy: IfBusy,
		options: PortRunOptions & { withKey?: (queued: QueuedAnswer) => IdempotencyRecord } = {},
	): Promise<PromptOutcome> {
		if (this.running && (ifBusy === "steer" || ifBusy === "followUp")) {
			if (messages.length !== 1) throw sessionError("VALIDATION_FAILED", "Queue exactly one message at a time.");
			return { kind: "queued", ...(await this.enqueue(ifBusy, messages[0]!, options.withKey)) };
		}
		// Refused as the claim would refuse it, without building the session here first.
		if (this.running && ifBusy === "reject") throw busyError(this.id);
		if (this.running && ifBusy === "interrupt") await this.interrupt();
		return (await this.loaded()).prompt(messages, ifBusy, options);
	}

	/**
	 * Aborts the run on the other replica, then waits until the store has it ended (the prompt then
	 * claims the session here, or answers busy when it did not end in time).
	 */
	private async interrupt(): Promise<void> {
		const { cluster } = this.deps;
		const runId = this.state.record.currentRunId;
		if (runId) {
			if (await cluster.storeAbort(this.id, runId)) await cluster.send({ t: "abort", s: this.id, run: runId });
		} else {
			await cluster.send({ t: "abort", s: this.id });
		}
		await this.runEnded(INTERRUPT_WAIT_MS);
	}

	async continue(options: PortRunOptions = {}): Promise<RunHandle> {
		if (this.running) throw busyForContinueError(this.id);
		return (await this.loaded()).continue(options);
	}

	// A rewind, a regenerate and an edit are runs: refused while the store has one going elsewhere,
	// else claimed and run here as the local port does.

	async rewind(toMessageId: string): Promise<RewindOutcome> {
		checkIdle(this, "rewind");
		return (await this.loaded()).rewind(toMessageId);
	}

	async regenerate(options: PortRunOptions = {}): Promise<RunHandle> {
		checkIdle(this, "regenerate");
		return (await this.loaded()).regenerate(options);
	}

	async edit(messageId: string, message: AgentMessage, options: PortRunOptions = {}): Promise<RunHandle> {
		checkIdle(this, "edit");
		return (await this.loaded()).edit(messageId, message, options);
	}

	async branches(): Promise<SupersededBranch[]> {
		return (await this.deps.store.listSuperseded(this.id)) ?? [];
	}

	async enqueue(
		kind: QueueKind,
		message: AgentMessage,
		withKey?: (queued: QueuedAnswer) => IdempotencyRecord,
	): Promise<QueuedAnswer> {
		const { store, cluster, limits } = this.deps;
		const queued = this.state.queued;
		if (queued.length >= limits.maxQueuedMessages) {
			throw sessionError(
				"QUEUE_FULL",
				`Session ${this.id} already has ${queued.length} queued messages (limit ${limits.maxQueuedMessages}); wait for them to drain or DELETE the queue.`,
			);
		}
		const bytes = approximateJsonBytes(message);
		const sessionBytes = queued.reduce((sum, entry) => sum + approximateJsonBytes(entry.message), 0);
		checkQueueBytes(
			limits,
			this.id,
			sessionBytes,
			() => this.deps.ownerQueuedBytes(this.ownerId) + sessionBytes,
			bytes,
		);
		const idle = !this.running;
		const queueLength = queued.filter((entry) => entry.kind === kind).length + 1;
		const entry = await store.enqueue(
			this.id,
			kind,
			message,
			Date.now(),
			withKey && ((stored) => withKey({ queue: kind, entryId: stored.id, queueLength, idle })),
		);
		if (!entry) throw sessionError("SESSION_NOT_FOUND", `Session ${this.id} no longer exists.`);
		queued.push(entry);
		if (!idle) await cluster.send({ t: "queue", s: this.id });
		return { queue: kind, entryId: entry.id, queueLength, idle };
	}

	async clearQueue(kind?: QueueKind): Promise<ClearedQueue> {
		// Stored, then the replica running it takes the change in (its stream says what was cleared).
		const cleared = await this.deps.store.clearQueue(this.id, kind);
		await this.deps.cluster.send({ t: "queue", s: this.id });
		const left = this.state.queued.filter((entry) => kind !== undefined && entry.kind !== kind);
		this.state.queued = left;
		return {
			cleared,
			steeringCount: left.filter((entry) => entry.kind === "steer").length,
			followUpCount: left.filter((entry) => entry.kind === "followUp").length,
		};
	}

	async abort(): Promise<AbortOutcome> {
		if (!this.running) return { aborted: false, runId: null };
		const { cluster } = this.deps;
		// Stored before the answer: the replica running it, or the one taking it over, honours it.
		const runId = this.state.record.currentRunId;
		if (runId && !(await cluster.storeAbort(this.id, runId))) {
			throw sessionError("SESSION_NOT_FOUND", `Session ${this.id} no longer exists.`);
		}
		const delivered = await cluster.send(runId ? { t: "abort", s: this.id, run: runId } : { t: "abort", s: this.id });
		if (!delivered) {
			throw sessionError(
				"ABORT_NOT_DELIVERED",
				`The abort of run ${runId} of session ${this.id} is stored, but the replica running it could not be told (Redis is unreachable from this replica): the run may go on until that replica finds the stored abort or the run is taken over. Retry the abort.`,
			);
		}
		return { aborted: true, runId };
	}

	/**
	 * Stores the resolution of a call waiting on another replica, then tells that replica. A call
	 * the open did not see waiting is `finished` when the transcript's end has its result.
	 */
	async resolve(resolution: Resolution): Promise<ResolveOutcome> {
		const { store, cluster } = this.deps;
		const { kind, toolCallId, value } = resolution;
		const stored = this.state.pending.find((p) => p.toolCallId === toolCallId && p.kind === kind);
		if (!stored) return (await this.answeredInTranscript(toolCallId)) ? "finished" : "unknown";
		if (kind === "elicitation") {
			// The MCP request of an elicitation a restart cut short is gone with its process.
			if (stored.resolution === INTERRUPTED_RESOLUTION) return "interrupted";
			if (stored.resolvedAt === null) {
				const refused = elicitationAnswerError(storedElicitationArgs(stored.payload), resolution.value);
				if (refused) throw refused;
			}
		}
		if (stored.resolvedAt !== null) return "finished";
		if (!(await store.resolvePending(this.id, toolCallId, JSON.stringify(value), Date.now()))) return "finished";
		await cluster.send({ t: "pending", s: this.id, kind, call: toolCallId });
		return "resolved";
	}

	/** Whether the transcript's end has a result for `toolCallId` (the call ended: 409, not 404). */
	private async answeredInTranscript(toolCallId: string): Promise<boolean> {
		const { store } = this.deps;
		const total = (await store.countMessages(this.id)) ?? 0;
		const page = await store.listMessages(this.id, {
			offset: Math.max(0, total - RECENT_MESSAGES),
			limit: RECENT_MESSAGES,
		});
		return (page?.messages ?? []).some((m) => (m as { toolCallId?: string }).toolCallId === toolCallId);
	}

	async patch(patch: Partial<SessionConfig>): Promise<SessionView> {
		return (await this.loaded()).patch(patch);
	}

	async delete(): Promise<void> {
		return (await this.loaded()).delete();
	}

	async setInstructions(systemPrompt: string | undefined, replacing?: string): Promise<void> {
		return (await this.loaded()).setInstructions(systemPrompt, replacing);
	}

	async waitingToolCalls(): Promise<string[]> {
		if (!this.running) return [];
		return this.state.pending.filter((p) => p.kind === "client_tool" && p.resolvedAt === null).map((p) => p.toolCallId);
	}

	async runEnded(maxMs: number): Promise<void> {
		const deadline = Date.now() + maxMs;
		while (Date.now() < deadline && (await this.deps.store.getSession(this.id))?.status === "running") {
			await sleep(INTERRUPT_POLL_MS);
		}
	}

	async messages(offset: number, limit: number): Promise<MessagePage> {
		return (await this.deps.store.listMessages(this.id, { offset, limit })) ?? { messages: [], offset, total: 0 };
	}

	async streamEvents(open: OpenStreamSink, afterId: number | undefined): Promise<void> {
		return (await this.loaded()).streamEvents(open, afterId);
	}

	async streamRun(open: OpenStreamSink, run: RunPosition, afterId: number | undefined): Promise<void> {
		return (await this.loaded()).streamRun(open, run, afterId);
	}

	async follow(sink: StreamSink, cursor: number, follower: EventFollower): Promise<() => void> {
		return (await this.loaded()).follow(sink, cursor, follower);
	}
}
