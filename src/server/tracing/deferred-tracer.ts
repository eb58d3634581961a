/**
 * A tracer that hands its spans to the SDK in batches: a span's start, and its end with everything
 * done to it before (attributes, events, links, status), are noted as data with the time they
 * happened and replayed on the SDK's tracer up to {@link DEFAULT_DELAY_MS} later, together with
 * every other span noted meanwhile.
 *
 * Why: a server streaming to many clients runs a lot of its own code between two spans, and the
 * SDK's path for one span — sampler, ids, attribute checks, span processors — then runs with
 * cold caches every time, several times slower than the same calls made one after another
 * (bench/sse/span-cost.ts, `cold`). Replayed in a batch, the SDK's code stays hot.
 *
 * What the SDK sees is what it would have seen: the same names, kinds, attributes (those given
 * at start separately from later ones, so a sampler sees what it would), parents, links, events
 * and status, with the times they were noted; the span processors see the starts and ends of all
 * spans in the order they were made. Only when is later: a span processor's `onStart` runs at the
 * replay. Whatever needs the SDK's answer now — `spanContext()` (the ids), `isRecording()` (the
 * sampler's decision) — starts that span and its parents at once.
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
	type SpanKind,
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
/** Span starts and ends waiting that make a replay happen at once. */
export const DEFAULT_MAX_PENDING = 4096;
/**
 * Calls on one span (attributes, events, links, statuses) noted before its end that are handed to
 * the SDK at once rather than kept: what a span that is never ended can hold.
 */
export const MAX_NOTED_CALLS = 256;

/** The SDK does not throw on its own; a span processor might. Whatever else was noted goes on. */
function failed(err: unknown): void {
	diag.error("wheelhouse: a span call could not be handed to the tracing SDK", err);
}

/** What a caller hands over is read at the replay: a copy, so a caller reusing its objects changes nothing. */
function copyLink(link: Link): Link {
	return link.attributes ? { ...link, attributes: { ...link.attributes } } : { ...link };
}

function isTimeInput(value: unknown): value is TimeInput {
	return typeof value === "number" || value instanceof Date || Array.isArray(value);
}

/** An event or a recorded exception, in the order they were made. */
type NotedEvent =
	| { name: string; attributes: Attributes | undefined; time: TimeInput; exception?: undefined }
	| { name?: undefined; exception: Exception; time: TimeInput };

/** The calls of a span after its start other than attributes: rare, so kept apart. */
interface Rarer {
	events: NotedEvent[];
	links: Link[];
	statuses: SpanStatus[];
	name: string | undefined;
}

/**
 * A span whose calls are noted as data and handed to the SDK's span in two steps: its start
 * (the SDK's span made, a span processor's `onStart`), and its end, with everything done to it
 * in between. Each step has its place in the tracer's queue, in the order the calls were made, so
 * the processors see the starts and ends of all spans in their order.
 *
 * Attributes are merged into one object per span while no key is set twice; a key set again
 * starts another, so the SDK's span gets the same calls in the same order (a value it refuses
 * does not replace one it took). Calls after the end are refused as the SDK refuses them.
 */
class DeferredSpan implements Span {
	/** The SDK's span, once started. */
	private real: Span | undefined = undefined;
	/** The start's turn in the queue came (the next one is the end's). */
	private startReplayed = false;
	/** `end` was called. */
	private ended = false;
	/** The end was handed to the SDK's span. */
	private endApplied = false;
	private endTime: TimeInput = 0;
	/** Attributes set since the start, not yet handed over (the last of `attributeSets` when a key was set twice). */
	private attributes: Attributes | undefined = undefined;
	/** Earlier attribute objects, when a key was set twice before the end. */
	private attributeSets: Attributes[] | undefined = undefined;
	private rarer: Rarer | undefined = undefined;
	/** Calls noted and not yet handed over. */
	private noted = 0;

	/** The name the SDK's span is started with (kept: warnings name the span). */
	private readonly name: string;
	/** The rest of what it is started with; dropped once it is (a span may outlive its parents). */
	private kind: SpanKind | undefined;
	private startAttributes: Attributes | undefined;
	private startLinks: Link[] | undefined;
	private startTime: TimeInput;
	/** The parent when it is one of ours, else undefined (then `context` holds any parent). */
	private parent: DeferredSpan | undefined;
	private context: Context | undefined;

	constructor(
		private readonly tracer: DeferredTracer,
		name: string,
		options: SpanOptions,
		parent: DeferredSpan | undefined,
		context: Context,
	) {
		this.name = name;
		this.kind = options.kind;
		// Read at the replay: copies (copyLink).
		this.startAttributes = options.attributes && { ...options.attributes };
		this.startLinks = options.links?.map(copyLink);
		this.startTime = options.startTime ?? performance.now();
		this.parent = parent;
		this.context = context;
	}

	/**
	 * The SDK's span: started now (its parents first) if it was not yet. A start that throws (a span
	 * processor's `onStart`) leaves a span that records nothing, so that the span's later calls are
	 * not tried on a second start.
	 */
	materialize(): Span {
		if (this.real) return this.real;
		const parent = this.parent;
		const context = this.context!;
		const parentContext = parent ? trace.setSpan(context, parent.materialize()) : context;
		try {
			this.real = this.tracer.sdk.startSpan(
				this.name,
				{ kind: this.kind, attributes: this.startAttributes, links: this.startLinks, startTime: this.startTime },
				parentContext,
			);
		} catch (err) {
			failed(err);
			this.real = trace.wrapSpanContext(INVALID_SPAN_CONTEXT);
		}
		this.parent = undefined;
		this.context = undefined;
		this.startAttributes = undefined;
		this.startLinks = undefined;
		return this.real;
	}

	/** Does the span's next step in the queue: its start, then its end. */
	replayNext(): void {
		if (!this.startReplayed) {
			this.startReplayed = true;
			this.materialize();
		} else {
			this.finish();
		}
	}

	/** Hands what was noted since the start (or the last hand-over) to the SDK's span. */
	private handOver(): Span {
		const span = this.materialize();
		if (this.noted === 0) return span;
		this.noted = 0;
		const { attributeSets, attributes, rarer } = this;
		this.attributeSets = undefined;
		this.attributes = undefined;
		this.rarer = undefined;
		try {
			if (attributeSets) for (const set of attributeSets) span.setAttributes(set);
			if (attributes) span.setAttributes(attributes);
			if (rarer) {
				if (rarer.links.length > 0) span.addLinks(rarer.links);
				for (const event of rarer.events) {
					if (event.exception !== undefined) span.recordException(event.exception, event.time);
					else span.addEvent(event.name, event.attributes, event.time);
				}
				for (const status of rarer.statuses) span.setStatus(status);
				if (rarer.name !== undefined) span.updateName(rarer.name);
			}
		} catch (err) {
			failed(err);
		}
		return span;
	}

	/** Hands everything noted, the end included, to the SDK's span (once). */
	private finish(): Span {
		const span = this.handOver();
		if (this.ended && !this.endApplied) {
			this.endApplied = true;
			try {
				span.end(this.endTime);
			} catch (err) {
				failed(err);
			}
		}
		return span;
	}

	/** Whether a call may still be noted: not after the end (refused as the SDK refuses it). */
	private open(): boolean {
		if (!this.ended) return true;
		diag.warn(`wheelhouse: a call on the ended span ${this.name} was ignored`);
		return false;
	}

	private noteRarer(): Rarer {
		this.counted();
		this.rarer ??= { events: [], links: [], statuses: [], name: undefined };
		return this.rarer;
	}

	private counted(): void {
		if (++this.noted >= MAX_NOTED_CALLS) this.handOver();
	}

	spanContext(): SpanContext {
		return this.materialize().spanContext();
	}

	isRecording(): boolean {
		// Ended: the SDK's answer is false once it has the end, so it gets it now.
		return this.ended ? this.finish().isRecording() : this.materialize().isRecording();
	}

	setAttribute(key: string, value: AttributeValue): this {
		// The SDK ignores an absent value (it does not remove an earlier one).
		if (value == null || !this.open()) return this;
		let attributes = this.attributes;
		if (attributes !== undefined && Object.hasOwn(attributes, key)) {
			this.attributeSets ??= [];
			this.attributeSets.push(attributes);
			attributes = undefined;
		}
		if (attributes === undefined) {
			attributes = {};
			this.attributes = attributes;
		}
		attributes[key] = value;
		this.counted();
		return this;
	}

	setAttributes(attributes: Attributes): this {
		for (const key in attributes) {
			if (Object.hasOwn(attributes, key)) this.setAttribute(key, attributes[key] as AttributeValue);
		}
		return this;
	}

	addEvent(name: string, attributesOrStartTime?: Attributes | TimeInput, startTime?: TimeInput): this {
		if (!this.open()) return this;
		let attributes: Attributes | undefined;
		let time: TimeInput;
		// As the SDK reads them: with two times, the second wins.
		if (isTimeInput(attributesOrStartTime)) time = startTime ?? attributesOrStartTime;
		else {
			attributes = attributesOrStartTime && { ...attributesOrStartTime };
			time = startTime ?? performance.now();
		}
		this.noteRarer().events.push({ name, attributes, time });
		return this;
	}

	addLink(link: Link): this {
		if (this.open()) this.noteRarer().links.push(copyLink(link));
		return this;
	}

	addLinks(links: Link[]): this {
		if (this.open()) for (const link of links) this.noteRarer().links.push(copyLink(link));
		return this;
	}

	setStatus(status: SpanStatus): this {
		if (this.open()) this.noteRarer().statuses.push({ ...status });
		return this;
	}

	updateName(name: string): this {
		if (this.open()) this.noteRarer().name = name;
		return this;
	}

	end(endTime?: TimeInput): void {
		if (this.ended) {
			diag.error(`wheelhouse: the span ${this.name} was ended twice; the first end stands`);
			return;
		}
		this.ended = true;
		this.endTime = endTime ?? performance.now();
		this.tracer.enqueue(this);
	}

	recordException(exception: Exception, time?: TimeInput): void {
		if (this.open()) this.noteRarer().events.push({ exception, time: time ?? performance.now() });
	}
}

export interface DeferredTracerOptions {
	/** See {@link DEFAULT_DELAY_MS}. */
	delayMs?: number;
	/** See {@link DEFAULT_MAX_PENDING}. */
	maxPending?: number;
}

export class DeferredTracer implements Tracer {
	/** A span per step to replay (its start, then its end), in the order they were made. */
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
		const span = new DeferredSpan(this, name, options, parent, parentContext);
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
