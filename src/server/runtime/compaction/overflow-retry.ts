/**
 * Sends a model call once more when its first answer is a context-overflow error, after the caller
 * made room: the loop sees one answer, either the first or the retried one, never both.
 */
import type { StreamFn } from "../../../agent/types.js";
import { createAssistantMessage } from "../../../ai/assistant-message.js";
import { AssistantMessageEventStream } from "../../../ai/event-stream.js";
import type { AssistantMessage, AssistantMessageEvent, Model } from "../../../ai/types.js";
import { isContextOverflow } from "./overflow.js";

export interface OverflowRetry {
	/** After an overflow: make room and return the call to send instead, or undefined to let the error through. */
	retry(): Promise<ReturnType<StreamFn> | undefined>;
	/** Whether retrying is still worth it (not when the run was aborted meanwhile). */
	allowed(): boolean;
	/** Model the error message of a failed relay is attributed to. */
	model: Model<any>;
	onError(err: unknown): void;
}

/**
 * Relays `first`, holding back its `start` until the next event shows whether the call failed for
 * a context overflow (providers send that error before any content). On an overflow, relays the
 * call `retry()` returns instead (once); otherwise the held `start` and everything after it.
 * Never throws: a failure of the relay itself ends the stream with an error message.
 *
 * Once that is decided, the consumer reads the chosen call's stream directly: each later event
 * costs no more than it would without the relay (no second queue, no extra promise per event).
 */
export function relayWithOverflowRetry(first: ReturnType<StreamFn>, hooks: OverflowRetry): AssistantMessageEventStream {
	return new OverflowRelay(first, hooks);
}

const DONE: IteratorResult<AssistantMessageEvent> = { value: undefined, done: true };

/**
 * The relay as a stream. Contract (that of {@link AssistantMessageEventStream} for its one
 * consumer): iterate once, `result()` resolves to the chosen call's final message (or the relay's
 * own error message). Nothing is pushed into it from outside.
 */
class OverflowRelay extends AssistantMessageEventStream {
	/** Events handed out before the chosen call's own: the held `start` and the deciding event. */
	private ready: AssistantMessageEvent[] = [];
	private readyHead = 0;
	/** The chosen call's iterator, once decided (undefined after a failure: the stream ends after `ready`). */
	private source: AsyncIterator<AssistantMessageEvent> | undefined;
	private readonly decided: Promise<void>;
	private readonly chosen: Promise<AssistantMessage>;
	private choose!: (result: AssistantMessage | Promise<AssistantMessage>) => void;

	constructor(first: ReturnType<StreamFn>, hooks: OverflowRetry) {
		super();
		this.chosen = new Promise((resolve) => {
			this.choose = resolve;
		});
		this.decided = this.decide(first, hooks);
	}

	/** The decision: `held` first, then the rest of `stream` read straight from `events`. */
	private handOver(
		held: AssistantMessageEvent[],
		stream: AssistantMessageEventStream,
		events = stream[Symbol.asyncIterator](),
	): void {
		this.ready = held;
		this.source = events;
		this.choose(stream.result());
	}

	private async decide(first: ReturnType<StreamFn>, hooks: OverflowRetry): Promise<void> {
		try {
			const stream = await first;
			const events = stream[Symbol.asyncIterator]();
			const held: AssistantMessageEvent[] = [];
			for (;;) {
				const step = await events.next();
				if (step.done) break;
				const event = step.value;
				if (event.type === "start") {
					held.push(event);
					continue;
				}
				if (event.type === "error" && isContextOverflow(event.error) && hooks.allowed()) {
					const again = await hooks.retry();
					if (again) {
						this.handOver([], await again);
						return;
					}
				}
				held.push(event);
				break;
			}
			this.handOver(held, stream, events);
		} catch (err) {
			hooks.onError(err);
			const errorMessage = err instanceof Error ? err.message : String(err);
			const error: AssistantMessage = { ...createAssistantMessage(hooks.model), stopReason: "error", errorMessage };
			this.ready = [{ type: "error", reason: "error", error }];
			this.readyHead = 0;
			this.source = undefined;
			this.choose(error);
		}
	}

	override [Symbol.asyncIterator](): AsyncIterator<AssistantMessageEvent> {
		const next = (): Promise<IteratorResult<AssistantMessageEvent>> => {
			if (this.readyHead < this.ready.length) {
				return Promise.resolve({ value: this.ready[this.readyHead++] as AssistantMessageEvent, done: false });
			}
			if (this.source) return this.source.next();
			return this.decided.then(() => (this.source || this.readyHead < this.ready.length ? next() : DONE));
		};
		return { next, return: () => Promise.resolve(DONE) };
	}

	override result(): Promise<AssistantMessage> {
		return this.chosen;
	}
}
