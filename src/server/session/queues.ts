/**
 * The steering and follow-up queues of one session, all three copies in one room:
 *
 * - the store's rows: what survives a crash. A queued message is durable before the request that
 *   queued it is answered (202), and a session loaded from the store gets its queue back;
 * - the Agent's own queues (`steer` / `followUp`): what the loop drains (`getSteeringMessages` /
 *   `getFollowUpMessages`), by the session's modes;
 * - the mirror here: the entries with their store ids and times, in order. The Agent's queues hold
 *   bare messages and are drained inside the loop, so the mirror is what the session state, the
 *   `queue_update` events and the queue limit read, and what tells which entry a drained message was.
 *
 * A queued message is known to be drained when the loop emits `message_start` for that very
 * message object ({@link SessionQueues.takeDrained}); the session then moves it from the store's
 * queue into its transcript in one write, so a crash at any moment leaves it in exactly one of the
 * two, and a `queue_update` with `action: "drained"` precedes its `message_start` on the stream.
 *
 * Queueing and clearing wait for the store (durable writes), one at a time per session: each
 * sees the mirror as the one before it left it, so the copies stay the same and the counts a
 * request is answered are its own.
 */
import type { Agent } from "../../agent/agent.js";
import type { AgentMessage } from "../../agent/types.js";
import type { IdempotencyRecord, QueuedMessage, QueueKind, SessionStore } from "../../store/types.js";
import { apiError } from "../errors.js";

/** What a request that queued a message is answered: the queue, the entry's id, the queue's length, whether no run is active. */
export interface QueuedAnswer {
	queue: QueueKind;
	entryId: number;
	queueLength: number;
	idle: boolean;
}

export interface QueueEntry {
	id: number;
	kind: QueueKind;
	message: AgentMessage;
	createdAt: number;
}

export type QueueAction = "queued" | "drained" | "cleared";

/** An entry as the session state shows it. */
export interface QueueEntryView {
	id: number;
	message: AgentMessage;
	createdAt: number;
}

export interface SessionQueuesOptions {
	sessionId: string;
	store: SessionStore;
	agent: Agent;
	maxQueuedMessages: number;
	/** Publishes a `queue_update` on the session's stream. */
	publish(payload: Record<string, unknown>): void;
}

export class SessionQueues {
	private entries: QueueEntry[] = [];
	/** Ids of every entry the mirror has held (queued, drained, cleared): a reload never takes one back. */
	private readonly known = new Set<number>();
	/** The last queue change in progress: the next one starts after it. */
	private changing: Promise<unknown> = Promise.resolve();

	/** Takes the queue loaded from the store into the mirror and the Agent's queues. */
	constructor(
		private readonly options: SessionQueuesOptions,
		loaded: QueuedMessage[],
	) {
		for (const entry of loaded) {
			this.known.add(entry.id);
			this.entries.push({ id: entry.id, kind: entry.kind, message: entry.message, createdAt: entry.createdAt });
			if (entry.kind === "steer") options.agent.steer(entry.message);
			else options.agent.followUp(entry.message);
		}
	}

	/** Queued messages in order. */
	get queued(): readonly QueueEntry[] {
		return this.entries;
	}

	get length(): number {
		return this.entries.length;
	}

	counts(): { steeringCount: number; followUpCount: number } {
		let steeringCount = 0;
		for (const entry of this.entries) if (entry.kind === "steer") steeringCount++;
		return { steeringCount, followUpCount: this.entries.length - steeringCount };
	}

	/** The entries of one queue, as the session state shows them. */
	view(kind: QueueKind): QueueEntryView[] {
		return this.entries
			.filter((e) => e.kind === kind)
			.map((e) => ({ id: e.id, message: e.message, createdAt: e.createdAt }));
	}

	/** Runs `change` after the changes before it (each sees the mirror they left). */
	private serially<T>(change: () => Promise<T>): Promise<T> {
		const next = this.changing.then(change, change);
		this.changing = next.catch(() => undefined);
		return next;
	}

	/**
	 * Queues a steering or follow-up message: into the store (durable when this resolves), the
	 * mirror and the Agent's queue. Rejects with `QUEUE_FULL` past the limit. `withKey` builds, from
	 * what the caller will answer, the idempotency record the store keeps in the message's own commit.
	 */
	enqueue(
		kind: QueueKind,
		message: AgentMessage,
		idle: boolean,
		withKey?: (queued: QueuedAnswer) => IdempotencyRecord,
	): Promise<{ entry: QueueEntry; queueLength: number; idle: boolean }> {
		return this.serially(() => this.store(kind, message, idle, withKey));
	}

	private async store(
		kind: QueueKind,
		message: AgentMessage,
		idle: boolean,
		withKey?: (queued: QueuedAnswer) => IdempotencyRecord,
	): Promise<{ entry: QueueEntry; queueLength: number; idle: boolean }> {
		const { sessionId, maxQueuedMessages } = this.options;
		if (this.entries.length >= maxQueuedMessages) {
			throw apiError(
				"QUEUE_FULL",
				`Session ${sessionId} already has ${this.entries.length} queued messages (limit ${maxQueuedMessages}); wait for them to drain or DELETE the queue.`,
			);
		}
		const before = this.counts();
		const queueLength = (kind === "steer" ? before.steeringCount : before.followUpCount) + 1;
		const stored = await this.options.store.enqueue(
			sessionId,
			kind,
			message,
			Date.now(),
			withKey && ((queued) => withKey({ queue: kind, entryId: queued.id, queueLength, idle })),
		);
		if (!stored) throw apiError("SESSION_NOT_FOUND", `Session ${sessionId} no longer exists.`);
		const entry: QueueEntry = { id: stored.id, kind, message, createdAt: stored.createdAt };
		this.known.add(entry.id);
		this.entries.push(entry);
		if (kind === "steer") this.options.agent.steer(message);
		else this.options.agent.followUp(message);
		this.publish("queued", kind, [entry]);
		return { entry, queueLength, idle };
	}

	/**
	 * Clears one queue or both (Agent, mirror and store; the store's rows durably before the
	 * `queue_update` is published). Resolves to how many messages were removed.
	 */
	clear(kind?: QueueKind): Promise<number> {
		return this.serially(async () => {
			const matches = (e: QueueEntry) => kind === undefined || e.kind === kind;
			const removed = this.entries.filter(matches);
			if (kind === undefined || kind === "steer") this.options.agent.clearSteeringQueue();
			if (kind === undefined || kind === "followUp") this.options.agent.clearFollowUpQueue();
			this.entries = this.entries.filter((e) => !matches(e));
			await this.options.store.clearQueue(this.options.sessionId, kind);
			if (removed.length > 0) this.publish("cleared", kind ?? "all", removed);
			return removed.length;
		});
	}

	/**
	 * Takes in the store's queue as another process left it (queued or cleared there): entries
	 * this mirror never held are added at the end, in store order, and announced; entries gone from
	 * the store are removed, and announced as cleared. What the loop drained here is never taken back.
	 */
	syncStored(stored: readonly QueuedMessage[]): Promise<void> {
		return this.serially(async () => {
			const inStore = new Set(stored.map((e) => e.id));
			const removed = this.entries.filter((e) => !inStore.has(e.id));
			const added: QueueEntry[] = stored
				.filter((e) => !this.known.has(e.id))
				.map((e) => ({ id: e.id, kind: e.kind, message: e.message, createdAt: e.createdAt }));
			if (removed.length > 0) {
				this.entries = this.entries.filter((e) => inStore.has(e.id));
				for (const kind of new Set(removed.map((e) => e.kind))) {
					if (kind === "steer") this.options.agent.clearSteeringQueue();
					else this.options.agent.clearFollowUpQueue();
					for (const e of this.entries) if (e.kind === kind) this.enqueueInAgent(e);
					this.publish(
						"cleared",
						kind,
						removed.filter((e) => e.kind === kind),
					);
				}
			}
			for (const entry of added) {
				this.known.add(entry.id);
				this.entries.push(entry);
				this.enqueueInAgent(entry);
				this.publish("queued", entry.kind, [entry]);
			}
		});
	}

	private enqueueInAgent(entry: QueueEntry): void {
		if (entry.kind === "steer") this.options.agent.steer(entry.message);
		else this.options.agent.followUp(entry.message);
	}

	/**
	 * The entry of `message` if it is a queued message the loop just started (its `message_start`),
	 * taken out of the mirror; undefined for any other message. The caller stores it, then
	 * {@link publishDrained}.
	 */
	takeDrained(message: AgentMessage): QueueEntry | undefined {
		if (this.entries.length === 0 || (message as { role?: string }).role === "assistant") return undefined;
		const index = this.entries.findIndex((entry) => entry.message === message);
		if (index < 0) return undefined;
		return this.entries.splice(index, 1)[0];
	}

	/** Publishes that `entry` was drained (after the caller stored it in the transcript). */
	publishDrained(entry: QueueEntry): void {
		this.publish("drained", entry.kind, [entry]);
	}

	private publish(action: QueueAction, kind: QueueKind | "all", entries: QueueEntry[]): void {
		this.options.publish({
			action,
			kind,
			messages: entries.map((e) => ({ id: e.id, kind: e.kind, message: e.message })),
			...this.counts(),
		});
	}
}
