/**
 * The session port over a session in this process (`LiveSession`): what a single node does for
 * every session, and a replica for a session it runs (or one it loads to start a run, show it or
 * stream it). In cluster mode it still reads the streams through the cluster (the run may move)
 * and tells the other replicas of a config change or a deletion.
 */
import { setTimeout as sleep } from "node:timers/promises";
import type { AgentMessage } from "../../../agent/types.js";
import type {
	IdempotencyRecord,
	MessagePage,
	QueueKind,
	SessionConfig,
	SessionRecord,
	SupersededBranch,
} from "../../../store/types.js";
import type { ResolveOutcome } from "../../../tools/index.js";
import { type ElicitationArgs, elicitationAnswerError } from "./elicitations.js";
import type { LiveSession } from "./live-session.js";
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
import type { PortContext } from "./port-context.js";
import type { QueuedAnswer } from "./queues.js";
import { planEdit, planRegenerate, planRewind, type RewindPlan } from "./rewind.js";
import type { RunHandle } from "./runs.js";
import { type RunPosition, resumeRunStream, runStreamAttacher, streamSessionEvents } from "./stream.js";
import type { OpenStreamSink, StreamSink } from "./stream-sink.js";
import { checkIdle } from "./transcript-cuts.js";
import type { SessionView } from "./view.js";

export class LocalSession implements SessionPort {
	readonly where = "local" as const;

	constructor(
		private readonly session: LiveSession,
		private readonly context: PortContext,
	) {}

	get id(): string {
		return this.session.id;
	}

	get ownerId(): string | null {
		return this.session.ownerId;
	}

	get record(): SessionRecord {
		return this.session.config;
	}

	async view(): Promise<SessionView> {
		return this.session.view();
	}

	async readView(): Promise<SessionView> {
		return this.session.view();
	}

	/** The `attach` of a run: `onRun` first (an idempotency record), then the run's stream. */
	private attach(options: PortRunOptions): ((run: RunHandle) => void) | undefined {
		const { onRun, stream } = options;
		const attachStream = stream ? runStreamAttacher(this.session, stream) : undefined;
		if (!onRun) return attachStream;
		return (run) => {
			// Nothing of the run is logged yet: the next event id is its first (its agent_start).
			onRun(run, this.session.lastEventId + 1);
			attachStream?.(run);
		};
	}

	prompt(
		messages: AgentMessage[],
		ifBusy: IfBusy,
		options: PortRunOptions & { withKey?: (queued: QueuedAnswer) => IdempotencyRecord } = {},
	): Promise<PromptOutcome> {
		return this.session.prompt(messages, ifBusy, {
			attach: this.attach(options),
			withKey: options.withKey,
			trace: options.trace,
		});
	}

	continue(options: PortRunOptions = {}): Promise<RunHandle> {
		return this.session.continue({ attach: this.attach(options), trace: options.trace });
	}

	async enqueue(
		kind: QueueKind,
		message: AgentMessage,
		withKey?: (queued: QueuedAnswer) => IdempotencyRecord,
	): Promise<QueuedAnswer> {
		const { entry, queueLength, idle } = await this.session.enqueue(kind, message, withKey);
		return { queue: kind, entryId: entry.id, queueLength, idle };
	}

	async clearQueue(kind?: QueueKind): Promise<ClearedQueue> {
		const cleared = await this.session.clearQueue(kind);
		return { cleared, ...this.session.queueCounts() };
	}

	async abort(): Promise<AbortOutcome> {
		const runId = this.session.runId ?? null;
		return { aborted: this.session.abort(), runId };
	}

	async resolve(resolution: Resolution): Promise<ResolveOutcome> {
		const interactions = this.context.interactions();
		if (!interactions) return "unknown";
		switch (resolution.kind) {
			case "approval":
				return interactions.resolveApproval(this.session, resolution.toolCallId, resolution.value);
			case "client_tool":
				return interactions.resolveToolResult(this.session, resolution.toolCallId, resolution.value);
			case "elicitation": {
				const waiting = interactions
					.pending(this.session)
					.find((p) => p.kind === "elicitation" && p.toolCallId === resolution.toolCallId && !p.orphaned);
				if (waiting) {
					const refused = elicitationAnswerError(waiting.args as Partial<ElicitationArgs>, resolution.value);
					if (refused) throw refused;
				}
				return interactions.resolveElicitation(this.session, resolution.toolCallId, resolution.value);
			}
		}
	}

	async patch(patch: Partial<SessionConfig>): Promise<SessionView> {
		await this.context.update(this.session, patch);
		// Stored: a run on another replica takes it in now.
		if (this.context.cluster && !this.session.isBusy) await this.context.cluster.send({ t: "config", s: this.id });
		return this.session.view();
	}

	async delete(): Promise<void> {
		await this.context.delete(this.session);
		// Deleted from the store: the replica running it aborts the run and ends its streams.
		await this.context.cluster?.send({ t: "delete", s: this.id });
	}

	async setInstructions(systemPrompt: string | undefined, replacing?: string): Promise<void> {
		if (replacing !== undefined && this.session.systemPrompt !== replacing) return;
		this.session.setInstructions(systemPrompt);
	}

	async waitingToolCalls(): Promise<string[]> {
		const interactions = this.context.interactions();
		if (!interactions) return [];
		return interactions
			.pending(this.session)
			.filter((p) => p.kind === "client_tool" && !p.orphaned)
			.map((p) => p.toolCallId);
	}

	async runEnded(maxMs: number): Promise<void> {
		await Promise.race([this.session.waitForIdle(), sleep(maxMs, undefined, { ref: false })]);
	}

	async messages(offset: number, limit: number): Promise<MessagePage> {
		return this.session.readMessages(offset, limit);
	}

	async rewind(toMessageId: string): Promise<RewindOutcome> {
		checkIdle(this, "rewind");
		const plan = await planRewind((offset, limit) => this.messages(offset, limit), toMessageId);
		const { run, rewound } = await this.session.rewind(plan);
		const outcome = await rewound;
		await run.done;
		if (outcome instanceof Error) throw outcome;
		return { runId: run.id, messageCount: plan.keep, branch: outcome };
	}

	async regenerate(options: PortRunOptions = {}): Promise<RunHandle> {
		checkIdle(this, "regenerate");
		return this.runRewind(await planRegenerate((offset, limit) => this.messages(offset, limit)), options);
	}

	async edit(messageId: string, message: AgentMessage, options: PortRunOptions = {}): Promise<RunHandle> {
		checkIdle(this, "edit");
		const plan = await planEdit((offset, limit) => this.messages(offset, limit), messageId, message);
		return this.runRewind(plan, options);
	}

	/** Starts the run of a regenerate or an edit; without a stream, answers only once the cut is made. */
	private async runRewind(plan: RewindPlan, options: PortRunOptions): Promise<RunHandle> {
		const { run, rewound } = await this.session.rewind(plan, { attach: this.attach(options), trace: options.trace });
		if (!options.stream) {
			const outcome = await rewound;
			if (outcome instanceof Error) throw outcome;
		}
		return run;
	}

	async branches(): Promise<SupersededBranch[]> {
		return this.session.readSuperseded();
	}

	async streamEvents(open: OpenStreamSink, afterId: number | undefined): Promise<void> {
		const { cluster } = this.context;
		// In a cluster the session may run on any replica: its live events come through Redis.
		if (cluster) cluster.streamEvents(this.session, open, afterId);
		else streamSessionEvents(this.session, open, afterId);
	}

	async streamRun(open: OpenStreamSink, run: RunPosition, afterId: number | undefined): Promise<void> {
		const { cluster } = this.context;
		// A run not active here may be running on another replica: follow it through the cluster.
		if (cluster && !this.session.activeRunHandle(run.runId)) {
			cluster.streamRun(this.session, open, run, afterId);
		} else {
			resumeRunStream(this.session, open, run, afterId);
		}
	}

	async follow(sink: StreamSink, cursor: number, follower: EventFollower): Promise<() => void> {
		return this.context.follow(this.session, sink, cursor, follower);
	}
}
