/**
 * A tracer that hands its spans to the SDK in batches: a span's start, attributes, status and
 * end are noted (with the time they happened) and replayed on the SDK's tracer up to
 * {@link DEFAULT_DELAY_MS} later, together with every other span noted meanwhile.
 *
 * Why: a server streaming to many clients runs a lot of its own code between two spans, and the
 * SDK's path for one span — sampler, ids, attribute checks, span processors — then runs with
 * cold caches every time, several times slower than the same calls made one after another
 * (bench/sse/span-cost.ts, `cold`). Replayed in a batch, the SDK's code stays hot.
 *
 * What the SDK sees is what it would have seen: the same names, kinds, attributes (those given
 * at start separately from later ones, so a sampler sees what it would), parents, links, events
 * and status, with the times they were noted, in the order they were made. Only when is later:
 * a span processor's `onStart` runs at the replay. Whatever needs the SDK's answer now
 * — `spanContext()` (the ids), `isRecording()` (the sampler's decision) — replays that span and
 * its parents at once.
 *
 * Ended spans reach the SDK's span processors within {@link DEFAULT_DELAY_MS}, and at once on
 * {@link DeferredTracer.flush} (call it before shutting the SDK down or flushing its exporters).
 */

import { performance } from "node:perf_hooks";
import {
	type Attributes,
	type AttributeValue,
	type Context,
	context as contextApi,
	diag,
	type Exception,
	INVALID_SPAN_CONTEXT,
	type Link,
	type Span,
	type SpanContext,
	type SpanOptions,
	type SpanStatus,
	type TimeInput,
	type Tracer,
	trace,
} from "@opentelemetry/api";

/**
 * How long a noted call waits for others before it is replayed: the more calls a replay takes,
 * the less each costs (bench/sse/span-cost.ts), and the SDK's batch processor then waits seconds
 * more before it exports.
 */
export const DEFAULT_DELAY_MS = 200;
/** Calls waiting (a span's start, and each call on it after) that make a replay happen at once. */
export const DEFAULT_MAX_PENDING = 4096;

type Op = (span: Span) => void;

/** The SDK does not throw on its own; a span processor might. Whatever else was noted goes on. */
function failed(err: unknown): void {
	diag.error("wheelhouse: a span call could not be handed to the tracing SDK", err);
}

/** Does one noted call to the SDK's span; a throw is reported and stops nothing else. */
function apply(op: Op, span: Span): void {
	try {
		op(span);
	} catch (err) {
		failed(err);
	}
}

/** A span's start: made by `materialize`, nothing more to do. */
const started: Op = () => {};

/** What a caller hands over is read at the replay: a copy, so a caller reusing its objects changes nothing. */
function copyLink(link: Link): Link {
	return link.attributes ? { ...link, attributes: { ...link.attributes } } : { ...link };
}

function isTimeInput(value: unknown): value is TimeInput {
	return typeof value === "number" || value instanceof Date || Array.isArray(value);
}

class DeferredSpan implements Span {
	/** The SDK's span, once replayed. */
	private real: Span | undefined;
	/**
	 * What was done to the span, in order, from its start (`ops[0]`, nothing to do once the span is
	 * made); `ops[done]` is the first not yet done to the SDK's span.
	 */
	private ops: Op[] = [started];
	private done = 0;
	/** Queue entries of calls already done by {@link replayAll}: the next ones to pass over. */
	private skip = 0;

	/** What the SDK's span is started with; dropped once it is (a span may outlive its parents). */
	private start:
		| {
				name: string;
				options: SpanOptions;
				/** The parent when it is one of ours, else undefined (then `context` holds any parent). */
				parent: DeferredSpan | undefined;
				context: Context;
		  }
		| undefined;

	constructor(
		private readonly tracer: DeferredTracer,
		name: string,
		options: SpanOptions,
		parent: DeferredSpan | undefined,
		context: Context,
	) {
		this.start = { name, options, parent, context };
	}

	/**
	 * The SDK's span: started now (its parents first) if it was not yet. A start that throws (a span
	 * processor's `onStart`) leaves a span that records nothing, so that the span's later calls are
	 * not tried on a second start.
	 */
	materialize(): Span {
		if (this.real) return this.real;
		const { name, options, parent, context } = this.start!;
		const parentContext = parent ? trace.setSpan(context, parent.materialize()) : context;
		try {
			this.real = this.tracer.sdk.startSpan(name, options, parentContext);
		} catch (err) {
			failed(err);
			this.real = trace.wrapSpanContext(INVALID_SPAN_CONTEXT);
		}
		this.start = undefined;
		return this.real;
	}

	/**
	 * Starts the SDK's span if needed and does the next thing done to it (the tracer's queue holds
	 * the span once for its start and once for each call after, in the order they were made).
	 */
	replayNext(): void {
		if (this.skip > 0) {
			this.skip--;
			return;
		}
		const span = this.materialize();
		if (this.done < this.ops.length) apply(this.ops[this.done++], span);
		if (this.done === this.ops.length && this.done > 0) {
			this.ops = [];
			this.done = 0;
		}
	}

	/** Starts the SDK's span if needed and does everything done to it so far (its queue entries then do nothing). */
	replayAll(): Span {
		const span = this.materialize();
		const ops = this.ops;
		for (let i = this.done; i < ops.length; i++) apply(ops[i], span);
		this.skip += ops.length - this.done;
		this.ops = [];
		this.done = 0;
		return span;
	}

	private note(op: Op): this {
		this.ops.push(op);
		this.tracer.enqueue(this);
		return this;
	}

	spanContext(): SpanContext {
		return this.materialize().spanContext();
	}

	isRecording(): boolean {
		return this.replayAll().isRecording();
	}

	setAttribute(key: string, value: AttributeValue): this {
		return this.note((span) => span.setAttribute(key, value));
	}

	setAttributes(attributes: Attributes): this {
		const copy = { ...attributes };
		return this.note((span) => span.setAttributes(copy));
	}

	addEvent(name: string, attributesOrStartTime?: Attributes | TimeInput, startTime?: TimeInput): this {
		let attributes: Attributes | undefined;
		let time: TimeInput;
		// As the SDK reads them: with two times, the second wins.
		if (isTimeInput(attributesOrStartTime)) time = startTime ?? attributesOrStartTime;
		else {
			attributes = attributesOrStartTime && { ...attributesOrStartTime };
			time = startTime ?? performance.now();
		}
		return this.note((span) => span.addEvent(name, attributes, time));
	}

	addLink(link: Link): this {
		const copy = copyLink(link);
		return this.note((span) => span.addLink(copy));
	}

	addLinks(links: Link[]): this {
		const copy = links.map(copyLink);
		return this.note((span) => span.addLinks(copy));
	}

	setStatus(status: SpanStatus): this {
		const copy = { ...status };
		return this.note((span) => span.setStatus(copy));
	}

	updateName(name: string): this {
		return this.note((span) => span.updateName(name));
	}

	end(endTime?: TimeInput): void {
		const time = endTime ?? performance.now();
		this.note((span) => span.end(time));
	}

	recordException(exception: Exception, time?: TimeInput): void {
		const at = time ?? performance.now();
		this.note((span) => span.recordException(exception, at));
	}
}

export interface DeferredTracerOptions {
	/** See {@link DEFAULT_DELAY_MS}. */
	delayMs?: number;
	/** See {@link DEFAULT_MAX_PENDING}. */
	maxPending?: number;
}

export class DeferredTracer implements Tracer {
	/** A span per call to replay (its start, then each call made on it), in the order they were made. */
	private pending: DeferredSpan[] = [];
	private timer: NodeJS.Timeout | undefined;
	private readonly delayMs: number;
	private readonly maxPending: number;

	constructor(
		/** The SDK's tracer the spans are replayed on. */
		readonly sdk: Tracer,
		options: DeferredTracerOptions = {},
	) {
		this.delayMs = options.delayMs ?? DEFAULT_DELAY_MS;
		this.maxPending = options.maxPending ?? DEFAULT_MAX_PENDING;
	}

	startSpan(name: string, options: SpanOptions = {}, context: Context = contextApi.active()): Span {
		let parentContext = context;
		let parent: DeferredSpan | undefined;
		if (options.root) {
			parentContext = trace.deleteSpan(context);
		} else {
			const span = trace.getSpan(context);
			// The context is kept as it is: the replay sets the SDK's parent span in it, in this one's place.
			if (span instanceof DeferredSpan) parent = span;
		}
		const noted: SpanOptions = {
			kind: options.kind,
			// Read at the replay: copies (copyLink).
			attributes: options.attributes && { ...options.attributes },
			links: options.links?.map(copyLink),
			startTime: options.startTime ?? performance.now(),
		};
		const span = new DeferredSpan(this, name, noted, parent, parentContext);
		this.enqueue(span);
		return span;
	}

	startActiveSpan<F extends (span: Span) => unknown>(name: string, fn: F): ReturnType<F>;
	startActiveSpan<F extends (span: Span) => unknown>(name: string, options: SpanOptions, fn: F): ReturnType<F>;
	startActiveSpan<F extends (span: Span) => unknown>(
		name: string,
		options: SpanOptions,
		context: Context,
		fn: F,
	): ReturnType<F>;
	startActiveSpan<F extends (span: Span) => unknown>(
		name: string,
		a: F | SpanOptions,
		b?: F | Context,
		c?: F,
	): ReturnType<F> {
		const fn = (typeof a === "function" ? a : typeof b === "function" ? b : c) as F;
		const options = typeof a === "function" ? {} : a;
		const parent = typeof b === "object" ? b : contextApi.active();
		const span = this.startSpan(name, options, parent);
		return contextApi.with(trace.setSpan(parent, span), fn as (span: Span) => ReturnType<F>, undefined, span);
	}

	/** Queues `span` for the next replay. */
	enqueue(span: DeferredSpan): void {
		this.pending.push(span);
		if (this.pending.length >= this.maxPending) {
			this.flush();
		} else if (!this.timer) {
			this.timer = setTimeout(() => this.flush(), this.delayMs);
			// Pending spans never keep a process alive: a closing app flushes them itself.
			this.timer.unref();
		}
	}

	/** Hands every noted span to the SDK now. */
	flush(): void {
		if (this.timer) {
			clearTimeout(this.timer);
			this.timer = undefined;
		}
		const pending = this.pending;
		this.pending = [];
		for (const span of pending) span.replayNext();
	}
}
