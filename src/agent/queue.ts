/**
 * The queue of steering or follow-up messages waiting to be injected into a run, and how a poll
 * drains it.
 */
import type { AgentMessage } from "./types.js";

/**
 * How a queue hands out its messages when the loop polls it:
 * `"one-at-a-time"` (default) one message per poll, `"all"` everything queued at once.
 */
export type QueueMode = "all" | "one-at-a-time";

/**
 * Messages waiting to be injected into a run (steering or follow-up).
 *
 * Contract: `drain()` never throws and returns `[]` when empty; the mode may change between polls
 * and applies from the next `drain()`.
 */
export class PendingMessageQueue {
	private messages: AgentMessage[] = [];

	constructor(public mode: QueueMode = "one-at-a-time") {}

	enqueue(message: AgentMessage): void {
		this.messages.push(message);
	}

	hasItems(): boolean {
		return this.messages.length > 0;
	}

	get size(): number {
		return this.messages.length;
	}

	/** Removes and returns the next message(s) according to `mode`. */
	drain(): AgentMessage[] {
		if (this.messages.length === 0) return [];
		if (this.mode === "all") {
			const drained = this.messages;
			this.messages = [];
			return drained;
		}
		return this.messages.splice(0, 1);
	}

	clear(): void {
		this.messages = [];
	}
}
