/**
 * An in-memory tracer provider for a test app (`buildApp({ tracerProvider })`): every ended span
 * is kept (InMemorySpanExporter behind a SimpleSpanProcessor), and a test waits for the span it
 * expects as it ends instead of sleeping.
 */
import {
	BasicTracerProvider,
	InMemorySpanExporter,
	type ReadableSpan,
	SimpleSpanProcessor,
	type SpanProcessor,
} from "@opentelemetry/sdk-trace-base";

export interface SpanRecorder {
	provider: BasicTracerProvider;
	/** The spans ended so far. */
	spans(): ReadableSpan[];
	/** Resolves with the first ended span matching `predicate`; rejects after `timeoutMs`. */
	waitFor(predicate: (span: ReadableSpan) => boolean, timeoutMs?: number): Promise<ReadableSpan>;
	/** The ended span named `name` (throws when there is none or several). */
	one(name: string): ReadableSpan;
	/** The parent span id of `span`. */
	parentOf(span: ReadableSpan): string | undefined;
}

export function recordSpans(): SpanRecorder {
	const exporter = new InMemorySpanExporter();
	const waiters = new Set<() => void>();
	const notifier: SpanProcessor = {
		onStart() {},
		onEnd() {
			// After the exporter's own onEnd has recorded the span.
			setImmediate(() => {
				for (const waiter of [...waiters]) waiter();
			});
		},
		forceFlush: async () => {},
		shutdown: async () => {},
	};
	const provider = new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(exporter), notifier] });
	const spans = () => exporter.getFinishedSpans();
	return {
		provider,
		spans,
		waitFor(predicate, timeoutMs = 5_000) {
			const found = spans().find(predicate);
			if (found) return Promise.resolve(found);
			return new Promise((resolve, reject) => {
				const timer = setTimeout(() => {
					waiters.delete(check);
					reject(new Error(`no such span ended within ${timeoutMs} ms; ended: ${spans().map((s) => s.name)}`));
				}, timeoutMs);
				const check = () => {
					const span = spans().find(predicate);
					if (!span) return;
					clearTimeout(timer);
					waiters.delete(check);
					resolve(span);
				};
				waiters.add(check);
			});
		},
		one(name) {
			const matching = spans().filter((span) => span.name === name);
			if (matching.length !== 1) {
				throw new Error(`expected one span "${name}", found ${matching.length}; ended: ${spans().map((s) => s.name)}`);
			}
			return matching[0];
		},
		parentOf(span) {
			return span.parentSpanContext?.spanId;
		},
	};
}
