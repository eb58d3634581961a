/** The push-based event stream every provider returns, and the stream-function type that returns it. */
import type { Api, AssistantMessage, AssistantMessageEvent, Context, Model, StreamOptions } from "./types.js";

/**
 * A push-based async-iterable event stream with a final result.
 *
 * Contract:
 * - `push(event)` delivers events in order to the single consumer; pushing after the stream is
 *   done is ignored (a late event from a cancelled producer must not resurrect a finished stream).
 * - When `isComplete(event)` is true for a pushed event, the stream ends after delivering it and
 *   `result()` resolves to `extractResult(event)`.
 * - `end(result?)` ends the stream explicitly; with a result, `result()` resolves to it.
 * - Iteration finishes once every queued event was delivered after the end.
 *
 * The queue holds only what the consumer has not read yet; the agent loop reads as fast as it is
 * pushed, so in practice it stays a few events long. It is consumed with a moving head index
 * rather than `shift()`, so a burst of 10,000 deltas costs O(n), not O(n²).
 */
export class EventStream<T, R = T> implements AsyncIterable<T> {
	private queue: T[] = [];
	private head = 0;
	private waiting: ((value: IteratorResult<T>) => void)[] = [];
	private done = false;
	private readonly finalResult: Promise<R>;
	private resolveFinal!: (value: R) => void;

	constructor(
		private readonly isComplete: (event: T) => boolean,
		private readonly extractResult: (event: T) => R,
	) {
		this.finalResult = new Promise<R>((resolve) => {
			this.resolveFinal = resolve;
		});
	}

	push(event: T): void {
		if (this.done) return;
		if (this.isComplete(event)) {
			this.done = true;
			this.resolveFinal(this.extractResult(event));
		}
		const waiter = this.waiting.shift();
		if (waiter) {
			waiter({ value: event, done: false });
		} else {
			this.queue.push(event);
		}
		if (this.done) this.flushWaiters();
	}

	end(result?: R): void {
		if (result !== undefined) this.resolveFinal(result);
		if (this.done) return;
		this.done = true;
		this.flushWaiters();
	}

	private flushWaiters(): void {
		// Waiters only exist while the queue is empty, so every one of them is past the end.
		for (const waiter of this.waiting.splice(0)) waiter({ value: undefined as never, done: true });
	}

	private take(): T | undefined {
		if (this.head >= this.queue.length) return undefined;
		const event = this.queue[this.head++];
		if (this.head > 1024 && this.head * 2 > this.queue.length) {
			this.queue = this.queue.slice(this.head);
			this.head = 0;
		}
		return event;
	}

	[Symbol.asyncIterator](): AsyncIterator<T> {
		return {
			next: (): Promise<IteratorResult<T>> => {
				if (this.head < this.queue.length) return Promise.resolve({ value: this.take() as T, done: false });
				if (this.done) return Promise.resolve({ value: undefined as never, done: true });
				return new Promise((resolve) => this.waiting.push(resolve));
			},
			return: (): Promise<IteratorResult<T>> => Promise.resolve({ value: undefined as never, done: true }),
		};
	}

	/** Resolves with the final result once a completing event was pushed or `end(result)` was called. */
	result(): Promise<R> {
		return this.finalResult;
	}
}

/** The stream every provider returns: assistant-message events, resolving to the final message. */
export class AssistantMessageEventStream extends EventStream<AssistantMessageEvent, AssistantMessage> {
	constructor() {
		super(
			(event) => event.type === "done" || event.type === "error",
			(event) => {
				if (event.type === "done") return event.message;
				if (event.type === "error") return event.error;
				throw new Error(`Unexpected terminal event ${event.type}`);
			},
		);
	}
}

/** Factory for {@link AssistantMessageEventStream} (the reference exports both). */
export function createAssistantMessageEventStream(): AssistantMessageEventStream {
	return new AssistantMessageEventStream();
}

/**
 * A wire API's stream function: one model call as an {@link AssistantMessageEventStream}, returned
 * synchronously. Contract: never throws; every failure is an `error` event (see types.ts).
 */
export type StreamFunction<TApi extends Api = Api, TOptions extends StreamOptions = StreamOptions> = (
	model: Model<TApi>,
	context: Context,
	options?: TOptions,
) => AssistantMessageEventStream;
