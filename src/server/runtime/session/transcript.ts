/**
 * Which messages of a session's Agent transcript are in the store, and storing the rest exactly
 * once. A message is stored when it is complete (`message_end`), except two kinds stored earlier,
 * whose `message_end` then stores nothing: a run's prompt (with the run's start, in one write) and
 * a drained queued message (at its `message_start`, moved out of the stored queue in the same
 * write). At the run's end, anything the Agent holds that no `message_end` announced (a run
 * failure's message) is appended, so the stored transcript and the Agent's stay the same.
 *
 * Messages are appended through the store's working set (durable at the next barrier, which the
 * server awaits before anything that shows them leaves the process); moving a drained message is a
 * durable write, awaited before its `message_start` is published.
 *
 * The Agent holds a window of the transcript, not all of it: the messages from `base` on (the
 * latest compaction's first kept message; see docs/durability.md, "What a session holds in
 * memory"). What comes before is only in the store, read from there by whoever needs it
 * (`transcript-window.ts`). Counts here are of the whole transcript.
 */
import type { AgentMessage } from "../../../agent/types.js";
import type { SessionStore } from "../../../store/types.js";
import { approximateBytesOf, approximateJsonBytes } from "./sizes.js";

export class StoredTranscript {
	/** Transcript length in the store (messages appended so far). */
	private persistedCount: number;
	/** Messages stored before their `message_end`, which then stores nothing. */
	private readonly storedEarly = new Set<AgentMessage>();
	/** Drained queued messages not yet moved into the stored transcript, with their queue entry ids. */
	private readonly drainedIds = new Map<AgentMessage, number>();
	/** About the JSON bytes of the stored messages the Agent holds (`sizes.ts`): what the session holds in memory. */
	private storedBytes: number;
	/** Index in the whole transcript of the Agent's first message; the ones before it are only in the store. */
	private windowBase: number;

	/** `stored`: the window the Agent starts with, the messages of the stored transcript from `base` on. */
	constructor(
		private readonly store: SessionStore,
		private readonly sessionId: string,
		stored: readonly AgentMessage[],
		base = 0,
	) {
		this.windowBase = base;
		this.persistedCount = base + stored.length;
		this.storedBytes = approximateBytesOf(stored);
	}

	/**
	 * The store's transcript was rewound (nothing of a run is in flight): the Agent starts again from
	 * `stored`, the stored messages from index `base` on.
	 */
	reset(stored: readonly AgentMessage[], base: number): void {
		this.storedEarly.clear();
		this.drainedIds.clear();
		this.windowBase = base;
		this.persistedCount = base + stored.length;
		this.storedBytes = approximateBytesOf(stored);
	}

	/** About the JSON bytes of the stored messages the Agent holds. */
	get bytes(): number {
		return this.storedBytes;
	}

	/** Index in the whole transcript of the Agent's first message (0 while it holds all of it). */
	get base(): number {
		return this.windowBase;
	}

	/**
	 * Drops from the Agent's transcript (`agent.messages`) the messages before `first`, which stay in
	 * the store: no model call reads them any more (a compaction replaced them). Only stored messages
	 * are dropped. Returns how many were, 0 when `first` is not in the window.
	 */
	release(agent: { messages: AgentMessage[] }, first: AgentMessage): number {
		const messages = agent.messages;
		let at = -1;
		for (let i = messages.length - 1; i >= 0; i--) {
			if (messages[i] === first) {
				at = i;
				break;
			}
		}
		const count = Math.min(at, this.persistedCount - this.windowBase);
		if (count <= 0) return 0;
		this.storedBytes -= approximateBytesOf(messages.slice(0, count));
		this.windowBase += count;
		agent.messages = messages.slice(count);
		return count;
	}

	/** The run's start stored `prompt` with it. */
	storedWithRun(prompt: AgentMessage[]): void {
		this.persistedCount += prompt.length;
		this.storedBytes += approximateBytesOf(prompt);
		for (const message of prompt) this.storedEarly.add(message);
	}

	/** A run whose start stored `prompt` never started: its `message_end`s will not come. */
	forgetRun(prompt: AgentMessage[]): void {
		for (const message of prompt) this.storedEarly.delete(message);
	}

	/**
	 * Stores a drained queued message now, not at its `message_end`: no client sees it drained
	 * before it is in the stored transcript. Should this write fail, its `message_end` tries again.
	 */
	async storeDrained(message: AgentMessage, entryId: number): Promise<void> {
		this.drainedIds.set(message, entryId);
		await this.persist(message);
		this.storedEarly.add(message);
	}

	/**
	 * A message is complete: stores it unless it was stored earlier. A promise only when that is the
	 * retry of a drained message's move (a durable write to await).
	 */
	messageEnded(message: AgentMessage): Promise<void> | undefined {
		return this.storedEarly.delete(message) ? undefined : this.persist(message);
	}

	/** The run ended: stores what the Agent holds (`messages`, the window) and no `message_end` announced. */
	runEnded(messages: AgentMessage[]): void {
		this.storedEarly.clear();
		this.drainedIds.clear();
		if (this.windowBase + messages.length > this.persistedCount) {
			const rest = messages.slice(this.persistedCount - this.windowBase);
			const length = this.store.appendMessages(this.sessionId, rest);
			if (length !== undefined) {
				this.persistedCount = length;
				this.storedBytes += approximateBytesOf(rest);
			}
		}
	}

	/** Stores a message the loop did not produce (a compaction) at the end. Returns false for a deleted session. */
	appendOutsideLoop(message: AgentMessage): boolean {
		const length = this.store.appendMessages(this.sessionId, [message]);
		if (length === undefined) return false;
		this.persistedCount = length;
		this.storedBytes += approximateJsonBytes(message);
		return true;
	}

	/**
	 * Stores a completed message; a drained queued message leaves the stored queue in the same write
	 * (the promise of that durable write; undefined for an append to the working set).
	 */
	private persist(message: AgentMessage): Promise<void> | undefined {
		const entryId = this.drainedIds.get(message);
		if (entryId === undefined) {
			const length = this.store.appendMessages(this.sessionId, [message]);
			if (length !== undefined) {
				this.persistedCount = length;
				this.storedBytes += approximateJsonBytes(message);
			}
			return undefined;
		}
		return this.store.drainQueued(this.sessionId, [entryId], [message]).then((length) => {
			this.drainedIds.delete(message);
			if (length !== undefined) {
				this.persistedCount = length;
				this.storedBytes += approximateJsonBytes(message);
			}
		});
	}
}
