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
 *
 * The queue is bounded by count and by bytes (about the messages' JSON length, `sizes.ts`): per
 * session, and per API key over all its sessions in memory. A message being stored counts from its
 * check on (`reserved`), so queueing on several sessions of one key at once cannot pass the key's
 * limit. A refused message is not stored; nothing already queued is touched.
 */
import type { Agent } from "../../../agent/agent.js";
import type { AgentMessage } from "../../../agent/types.js";
import type { IdempotencyRecord, QueuedMessage, QueueKind, SessionStore } from "../../../store/types.js";
import { sessionError } from "./errors.js";
import { approximateJsonBytes } from "./sizes.js";

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
	/** About the message's JSON bytes (`sizes.ts`), as the byte limits count it. */
	bytes: number;
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
	/** Bytes the session's queue may hold (`WHEELHOUSE_MAX_QUEUED_BYTES`); 0: no limit. */
	maxQueuedBytes: number;
	/** Bytes the queues of all the owner's sessions may hold (`WHEELHOUSE_MAX_QUEUED_BYTES_PER_KEY`); 0: no limit. */
	maxQueuedBytesPerKey: number;
	/** Bytes queued (or being queued) now on all the sessions of this session's owner, this one included. */
	ownerQueuedBytes(): number;
	/** Publishes a `queue_update` on the session's stream. */
	publish(payload: Record<string, unknown>): void;
}

export class SessionQueues {
	private entries: QueueEntry[] = [];
	/** Ids of every entry the mirror has held (queued, drained, cleared): a reload never takes one back. */
	private readonly known = new Set<number>();
	/** The last queue change in progress: the next one starts after it. */
	private changing: Promise<unknown> = Promise.resolve();
	/** Bytes of the entries. */
	private entryBytes = 0;
	/** Bytes of a message being stored (checked against the limits, not yet an entry). */
	private reserved = 0;

	/** Takes the queue loaded from the store into the mirror and the Agent's queues. */
	constructor(
		private readonly options: SessionQueuesOptions,
		loaded: QueuedMessage[],
	) {
		for (const entry of loaded) {
			this.known.add(entry.id);
			this.add(toEntry(entry));
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

	/** Bytes queued, and being queued, on this session (what the byte limits count). */
	get bytes(): number {
		return this.entryBytes + this.reserved;
	}

	private add(entry: QueueEntry): void {
		this.entries.push(entry);
		this.entryBytes += entry.bytes;
	}

	/** Keeps the entries `keep` accepts; returns the others. */
	private remove(keep: (entry: QueueEntry) => boolean): QueueEntry[] {
		const removed = this.entries.filter((e) => !keep(e));
		this.entries = this.entries.filter(keep);
		for (const entry of removed) this.entryBytes -= entry.bytes;
		return removed;
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
			throw sessionError(
				"QUEUE_FULL",
				`Session ${sessionId} already has ${this.entries.length} queued messages (limit ${maxQueuedMessages}); wait for them to drain or DELETE the queue.`,
			);
		}
		const bytes = approximateJsonBytes(message);
		this.checkBytes(bytes);
		const before = this.counts();
		const queueLength = (kind === "steer" ? before.steeringCount : before.followUpCount) + 1;
		this.reserved += bytes;
		let stored: Awaited<ReturnType<SessionStore["enqueue"]>>;
		try {
			stored = await this.options.store.enqueue(
				sessionId,
				kind,
				message,
				Date.now(),
				withKey && ((queued) => withKey({ queue: kind, entryId: queued.id, queueLength, idle })),
			);
		} finally {
			this.reserved -= bytes;
		}
		if (!stored) throw sessionError("SESSION_NOT_FOUND", `Session ${sessionId} no longer exists.`);
		const entry: QueueEntry = { id: stored.id, kind, message, createdAt: stored.createdAt, bytes };
		this.known.add(entry.id);
		this.add(entry);
		if (kind === "steer") this.options.agent.steer(message);
		else this.options.agent.followUp(message);
		this.publish("queued", kind, [entry]);
		return { entry, queueLength, idle };
	}

	/** Throws `QUEUE_TOO_LARGE` when `bytes` more would pass the session's or the owner's byte limit. */
	checkBytes(bytes: number): void {
		checkQueueBytes(this.options, this.options.sessionId, this.bytes, () => this.options.ownerQueuedBytes(), bytes);
	}

	/**
	 * Clears one queue or both (Agent, mirror and store; the store's rows durably before the
	 * `queue_update` is published). Resolves to how many messages were removed.
	 */
	clear(kind?: QueueKind): Promise<number> {
		return this.serially(async () => {
			const matches = (e: QueueEntry) => kind === undefined || e.kind === kind;
			if (kind === undefined || kind === "steer") this.options.agent.clearSteeringQueue();
			if (kind === undefined || kind === "followUp") this.options.agent.clearFollowUpQueue();
			const removed = this.remove((e) => !matches(e));
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
			const added: QueueEntry[] = stored.filter((e) => !this.known.has(e.id)).map(toEntry);
			const removed = this.remove((e) => inStore.has(e.id));
			if (removed.length > 0) {
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
				this.add(entry);
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
		const [entry] = this.entries.splice(index, 1);
		this.entryBytes -= entry!.bytes;
		return entry;
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

function toEntry(stored: QueuedMessage): QueueEntry {
	const { id, kind, message, createdAt } = stored;
	return { id, kind, message, createdAt, bytes: approximateJsonBytes(message) };
}

/** The byte limits of queues; 0: no limit. */
export interface QueueByteLimits {
	/** Bytes one session's queue may hold. */
	maxQueuedBytes: number;
	/** Bytes the queues of one owner's sessions may hold together. */
	maxQueuedBytesPerKey: number;
}

/**
 * Throws `QUEUE_TOO_LARGE` when `bytes` more would pass the session's limit (it holds
 * `queuedBytes`) or its owner's (`ownerBytes()`, read only when there is that limit).
 */
export function checkQueueBytes(
	limits: QueueByteLimits,
	sessionId: string,
	queuedBytes: number,
	ownerBytesOf: () => number,
	bytes: number,
): void {
	const { maxQueuedBytes, maxQueuedBytesPerKey } = limits;
	if (maxQueuedBytes > 0 && queuedBytes + bytes > maxQueuedBytes) {
		throw sessionError(
			"QUEUE_TOO_LARGE",
			`Session ${sessionId} has ${queuedBytes} bytes queued; this message (${bytes} bytes) would pass its limit of ${maxQueuedBytes} (WHEELHOUSE_MAX_QUEUED_BYTES). Wait for the queue to drain or DELETE it.`,
			{ limit: "perSession", maxBytes: maxQueuedBytes, queuedBytes, messageBytes: bytes },
		);
	}
	const ownerBytes = maxQueuedBytesPerKey > 0 ? ownerBytesOf() : 0;
	if (maxQueuedBytesPerKey > 0 && ownerBytes + bytes > maxQueuedBytesPerKey) {
		throw sessionError(
			"QUEUE_TOO_LARGE",
			`This API key has ${ownerBytes} bytes queued on its sessions; this message (${bytes} bytes) would pass its limit of ${maxQueuedBytesPerKey} (WHEELHOUSE_MAX_QUEUED_BYTES_PER_KEY). Wait for queues to drain.`,
			{ limit: "perKey", maxBytes: maxQueuedBytesPerKey, queuedBytes: ownerBytes, messageBytes: bytes },
		);
	}
}
