// The DeferredTracer on the real OpenTelemetry SDK: what reaches the SDK, when, and that it is
// what the SDK would have got from direct calls.
import { performance } from "node:perf_hooks";
import { setTimeout as sleep } from "node:timers/promises";
import {
	type Attributes,
	type Context,
	ROOT_CONTEXT,
	type Span,
	SpanKind,
	SpanStatusCode,
	TraceFlags,
	trace,
} from "@opentelemetry/api";
import {
	AlwaysOnSampler,
	BasicTracerProvider,
	InMemorySpanExporter,
	type ReadableSpan,
	type Sampler,
	SamplingDecision,
	SimpleSpanProcessor,
	type SpanProcessor,
} from "@opentelemetry/sdk-trace-base";
import { describe, expect, it } from "vitest";
import { DeferredTracer } from "../../src/server/tracing/deferred-tracer.js";

function setup(
	options: { sampler?: Sampler; processors?: SpanProcessor[]; delayMs?: number; maxPending?: number } = {},
) {
	const exporter = new InMemorySpanExporter();
	const started: string[] = [];
	const watcher: SpanProcessor = {
		onStart: (span) => started.push((span as unknown as ReadableSpan).name),
		onEnd() {},
		forceFlush: async () => {},
		shutdown: async () => {},
	};
	const provider = new BasicTracerProvider({
		sampler: options.sampler ?? new AlwaysOnSampler(),
		spanProcessors: [...(options.processors ?? []), new SimpleSpanProcessor(exporter), watcher],
	});
	const tracer = new DeferredTracer(provider.getTracer("test"), {
		delayMs: options.delayMs ?? 10_000,
		maxPending: options.maxPending,
	});
	const ended = () => exporter.getFinishedSpans();
	const one = (name: string) => {
		const spans = ended().filter((span) => span.name === name);
		expect(spans, `one ${name}`).toHaveLength(1);
		return spans[0];
	};
	return { tracer, started, ended, one };
}

/** Milliseconds of an SDK HrTime. */
const ms = ([s, ns]: [number, number]) => s * 1e3 + ns / 1e6;

describe("DeferredTracer", () => {
	it("hands spans to the SDK only when flushed, with the names, kinds, attributes, status, events and parents it was given", () => {
		const { tracer, started, ended, one } = setup();
		const request = tracer.startSpan("POST /x", { kind: SpanKind.SERVER, attributes: { "http.route": "/x" } });
		const run = tracer.startSpan("invoke_agent", { attributes: { n: 1 } }, trace.setSpan(ROOT_CONTEXT, request));
		const chat = tracer.startSpan("chat m", { kind: SpanKind.CLIENT }, trace.setSpan(ROOT_CONTEXT, run));
		chat.setAttributes({ "gen_ai.usage.output_tokens": 7, reasons: ["stop"] });
		chat.addEvent("first token", { at: 1 });
		chat.end();
		run.setStatus({ code: SpanStatusCode.ERROR, message: "model failed" });
		run.updateName("invoke_agent support");
		run.end();
		request.setAttribute("http.response.status_code", 200);
		request.end();
		expect(started).toEqual([]);
		expect(ended()).toEqual([]);

		tracer.flush();
		expect(started).toEqual(["POST /x", "invoke_agent", "chat m"]);
		const [r, a, c] = [one("POST /x"), one("invoke_agent support"), one("chat m")];
		expect(r.kind).toBe(SpanKind.SERVER);
		expect(r.attributes).toEqual({ "http.route": "/x", "http.response.status_code": 200 });
		expect(r.parentSpanContext).toBeUndefined();
		expect(a.parentSpanContext?.spanId).toBe(r.spanContext().spanId);
		expect(a.spanContext().traceId).toBe(r.spanContext().traceId);
		expect(a.status).toEqual({ code: SpanStatusCode.ERROR, message: "model failed" });
		expect(a.attributes).toEqual({ n: 1 });
		expect(c.kind).toBe(SpanKind.CLIENT);
		expect(c.parentSpanContext?.spanId).toBe(a.spanContext().spanId);
		expect(c.attributes).toEqual({ "gen_ai.usage.output_tokens": 7, reasons: ["stop"] });
		expect(c.events.map((event) => [event.name, event.attributes])).toEqual([["first token", { at: 1 }]]);
		// Ended in the order they were ended.
		expect(ended().map((span) => span.name)).toEqual(["chat m", "invoke_agent support", "POST /x"]);
	});

	it("replays the calls in the order they were made across spans", () => {
		const { tracer, ended } = setup();
		const outer = tracer.startSpan("outer");
		outer.setAttribute("a", 1);
		const inner = tracer.startSpan("inner", {}, trace.setSpan(ROOT_CONTEXT, outer));
		inner.end();
		outer.end();
		const last = tracer.startSpan("last");
		last.end();
		// Answered at once: then its next call waits its turn behind the calls made before it.
		const asked = tracer.startSpan("asked");
		expect(asked.isRecording()).toBe(true);
		const after = tracer.startSpan("after");
		after.end();
		asked.end();
		tracer.flush();
		expect(ended().map((span) => span.name)).toEqual(["inner", "outer", "last", "after", "asked"]);
	});

	it("records the times the calls were made, not the time of the replay", async () => {
		const { tracer, one } = setup();
		const before = Date.now();
		const span = tracer.startSpan("timed");
		await sleep(30);
		span.addEvent("midway");
		await sleep(30);
		span.end();
		const endedAt = Date.now();
		await sleep(100);
		tracer.flush();
		const done = one("timed");
		expect(ms(done.startTime)).toBeGreaterThanOrEqual(before - 2);
		expect(ms(done.startTime)).toBeLessThan(before + 20);
		expect(ms(done.duration)).toBeGreaterThanOrEqual(55);
		expect(ms(done.duration)).toBeLessThan(100);
		expect(ms(done.endTime)).toBeLessThanOrEqual(endedAt + 2);
		const midway = ms(done.events[0].time) - ms(done.startTime);
		expect(midway).toBeGreaterThanOrEqual(25);
		expect(midway).toBeLessThan(55);
	});

	it("gives the sampler the attributes given at start, and only those", () => {
		const seen: Attributes[] = [];
		const sampler: Sampler = {
			shouldSample(_context, _traceId, _name, _kind, attributes) {
				seen.push({ ...attributes });
				return { decision: attributes.keep ? SamplingDecision.RECORD_AND_SAMPLED : SamplingDecision.NOT_RECORD };
			},
			toString: () => "keep-attribute",
		};
		const { tracer, ended } = setup({ sampler });
		const kept = tracer.startSpan("kept", { attributes: { keep: true } });
		kept.setAttribute("later", 1);
		kept.end();
		const dropped = tracer.startSpan("dropped", { attributes: { keep: false } });
		dropped.setAttribute("keep", true);
		dropped.end();
		tracer.flush();
		expect(seen).toEqual([{ keep: true }, { keep: false }]);
		expect(ended().map((span) => [span.name, span.attributes])).toEqual([["kept", { keep: true, later: 1 }]]);
	});

	it("answers isRecording and spanContext from the SDK at once, for the span and its parents", () => {
		const { tracer, started, ended, one } = setup({
			sampler: {
				shouldSample: (_c, _t, name) => ({
					decision: name === "unsampled" ? SamplingDecision.NOT_RECORD : SamplingDecision.RECORD_AND_SAMPLED,
				}),
				toString: () => "by-name",
			},
		});
		const parent = tracer.startSpan("parent");
		const child = tracer.startSpan("child", {}, trace.setSpan(ROOT_CONTEXT, parent));
		const context = child.spanContext();
		expect(started).toEqual(["parent", "child"]);
		expect(context.traceFlags & TraceFlags.SAMPLED).toBe(TraceFlags.SAMPLED);
		expect(child.isRecording()).toBe(true);
		expect(tracer.startSpan("unsampled").isRecording()).toBe(false);
		child.end();
		expect(child.isRecording()).toBe(false);
		expect(ended().map((span) => span.name)).toEqual(["child"]);
		parent.end();
		tracer.flush();
		expect(one("child").spanContext().spanId).toBe(context.spanId);
		expect(one("child").parentSpanContext?.spanId).toBe(one("parent").spanContext().spanId);
	});

	it("parents a span on a remote context, and honours root", () => {
		const { tracer, one } = setup();
		const remote = trace.setSpanContext(ROOT_CONTEXT, {
			traceId: "0af7651916cd43dd8448eb211c80319c",
			spanId: "b7ad6b7169203331",
			traceFlags: TraceFlags.SAMPLED,
			isRemote: true,
		});
		const server = tracer.startSpan("server", { kind: SpanKind.SERVER }, remote);
		const root = tracer.startSpan("root", { root: true }, trace.setSpan(remote, server));
		server.end();
		root.end();
		tracer.flush();
		expect(one("server").spanContext().traceId).toBe("0af7651916cd43dd8448eb211c80319c");
		expect(one("server").parentSpanContext).toMatchObject({ spanId: "b7ad6b7169203331", isRemote: true });
		expect(one("root").parentSpanContext).toBeUndefined();
		expect(one("root").spanContext().traceId).not.toBe("0af7651916cd43dd8448eb211c80319c");
	});

	it("replays a span started under a parent already handed over, and work done on a span after its start was", () => {
		const { tracer, one } = setup();
		const parent = tracer.startSpan("long");
		tracer.flush();
		const child = tracer.startSpan("late child", {}, trace.setSpan(ROOT_CONTEXT, parent));
		child.end();
		parent.setAttribute("after", true);
		parent.end();
		tracer.flush();
		expect(one("late child").parentSpanContext?.spanId).toBe(one("long").spanContext().spanId);
		expect(one("long").attributes).toEqual({ after: true });
	});

	it("copies what it is given: a caller reusing its attribute object changes no span", () => {
		const { tracer, one } = setup();
		const attributes: Attributes = { a: 1 };
		const span = tracer.startSpan("copied", { attributes });
		const later: Attributes = { b: 2 };
		span.setAttributes(later);
		attributes.a = 99;
		later.b = 99;
		span.end();
		tracer.flush();
		expect(one("copied").attributes).toEqual({ a: 1, b: 2 });
	});

	it("hands spans over on its own after the delay, and at once when too many wait", async () => {
		const timed = setup({ delayMs: 20 });
		timed.tracer.startSpan("on its own").end();
		expect(timed.ended()).toEqual([]);
		await sleep(80);
		expect(timed.ended().map((span) => span.name)).toEqual(["on its own"]);

		// A start is one call waiting, an end another.
		const bounded = setup({ maxPending: 4 });
		bounded.tracer.startSpan("a").end();
		expect(bounded.ended()).toEqual([]);
		bounded.tracer.startSpan("b").end();
		expect(bounded.ended().map((span) => span.name)).toEqual(["a", "b"]);
	});

	it("goes on with the other spans when a span processor throws", () => {
		const thrower: SpanProcessor = {
			onStart(span) {
				if ((span as unknown as ReadableSpan).name === "bad") throw new Error("processor failed");
			},
			onEnd() {},
			forceFlush: async () => {},
			shutdown: async () => {},
		};
		const { tracer, ended } = setup({ processors: [thrower] });
		tracer.startSpan("bad").end();
		tracer.startSpan("good").end();
		tracer.flush();
		expect(ended().map((span) => span.name)).toContain("good");
	});

	it("a span whose start a processor refused is not started again for its later calls", () => {
		let badStarts = 0;
		const thrower: SpanProcessor = {
			onStart(span) {
				if ((span as unknown as ReadableSpan).name !== "bad") return;
				badStarts++;
				throw new Error("processor failed");
			},
			onEnd() {},
			forceFlush: async () => {},
			shutdown: async () => {},
		};
		const { tracer, ended } = setup({ processors: [thrower] });
		const bad = tracer.startSpan("bad");
		bad.setAttribute("a", 1);
		bad.addEvent("e");
		bad.end();
		tracer.flush();
		expect(badStarts).toBe(1);
		expect(bad.isRecording()).toBe(false);
		expect(ended().map((span) => span.name)).toEqual([]);
	});

	it("a call the SDK throws on during an early replay is neither lost for the others nor done twice", () => {
		const ends: ReadableSpan[] = [];
		const counter: SpanProcessor = {
			onStart() {},
			onEnd: (span) => ends.push(span),
			forceFlush: async () => {},
			shutdown: async () => {},
		};
		const thrower: SpanProcessor = {
			onStart() {},
			onEnd(span) {
				if (span.name === "boom") throw new Error("processor failed");
			},
			forceFlush: async () => {},
			shutdown: async () => {},
		};
		const { tracer } = setup({ processors: [counter, thrower] });
		const boom = tracer.startSpan("boom");
		boom.addEvent("before");
		boom.end();
		// Replays the span at once: its end throws in the second processor, the answer still comes.
		expect(boom.isRecording()).toBe(false);
		tracer.flush();
		expect(ends.map((span) => span.name)).toEqual(["boom"]);
		expect(ends[0].events.map((event) => event.name)).toEqual(["before"]);
	});

	it("takes an event's second time when given two, and copies links", async () => {
		const { tracer, one } = setup();
		const span = tracer.startSpan("linked", {
			links: [{ context: { traceId: "1".repeat(32), spanId: "2".repeat(16), traceFlags: 1 }, attributes: { k: 1 } }],
		});
		const link = { context: { traceId: "3".repeat(32), spanId: "4".repeat(16), traceFlags: 1 }, attributes: { k: 2 } };
		span.addLink(link);
		await sleep(30);
		const now = performance.now();
		// Both times are past ones (the SDK reads a later number as epoch milliseconds).
		span.addEvent("twice timed", now - 25, now - 2);
		link.attributes.k = 99;
		span.end();
		tracer.flush();
		const done = one("linked");
		expect(done.links.map((l) => l.attributes)).toEqual([{ k: 1 }, { k: 2 }]);
		const eventAt = ms(done.events[0].time) - ms(done.startTime);
		expect(eventAt).toBeGreaterThan(20);
		expect(eventAt).toBeLessThan(60);
	});

	it("gives the SDK the same calls: a key set twice, a value the SDK refuses, statuses in order", () => {
		const { tracer, one } = setup();
		const span = tracer.startSpan("merged");
		span.setAttribute("a", 1);
		span.setAttributes({ b: "x", c: true });
		span.setAttribute("a", 2);
		// The SDK ignores an absent value: the earlier one stands.
		span.setAttribute("b", undefined as unknown as string);
		span.setAttributes({ c: null as unknown as boolean, d: [1, 2] });
		// An OK status is final in the SDK: the later error does not replace it.
		span.setStatus({ code: SpanStatusCode.OK });
		span.setStatus({ code: SpanStatusCode.ERROR, message: "later" });
		span.recordException(new Error("boom"));
		span.addEvent("after the exception");
		span.end();
		tracer.flush();
		const done = one("merged");
		expect(done.attributes).toEqual({ a: 2, b: "x", c: true, d: [1, 2] });
		expect(done.status).toEqual({ code: SpanStatusCode.OK });
		expect(done.events.map((event) => event.name)).toEqual(["exception", "after the exception"]);
		expect(done.events[0].attributes?.["exception.message"]).toBe("boom");
	});

	it("refuses calls after the end, as the SDK does, and keeps the first end", async () => {
		const { tracer, one } = setup();
		const span = tracer.startSpan("closed");
		span.end();
		const endedAt = Date.now();
		await sleep(30);
		span.setAttribute("late", 1);
		span.addEvent("late");
		span.setStatus({ code: SpanStatusCode.ERROR });
		span.updateName("renamed late");
		span.end();
		tracer.flush();
		const done = one("closed");
		expect(done.attributes).toEqual({});
		expect(done.events).toEqual([]);
		expect(done.status.code).toBe(SpanStatusCode.UNSET);
		expect(ms(done.endTime)).toBeLessThanOrEqual(endedAt + 2);
	});

	it("hands a span that is never ended to the SDK once it has been given many calls", () => {
		const { tracer, started } = setup();
		const open = tracer.startSpan("open");
		for (let i = 0; i < 100; i++) open.setAttribute(`k${i}`, i);
		expect(started).toEqual([]);
		for (let i = 0; i < 300; i++) open.addEvent(`e${i}`);
		// Started (and its calls handed over) without a flush: what it holds stays bounded.
		expect(started).toEqual(["open"]);
	});

	it("runs startActiveSpan's function with the span and returns its result", () => {
		const { tracer, one } = setup();
		let inside: Span | undefined;
		const result = tracer.startActiveSpan("active", { attributes: { x: 1 } }, (span: Span) => {
			inside = span;
			span.end();
			return 42;
		});
		expect(result).toBe(42);
		tracer.flush();
		expect(one("active").attributes).toEqual({ x: 1 });
		expect(inside?.spanContext().spanId).toBe(one("active").spanContext().spanId);
		const context: Context = ROOT_CONTEXT;
		expect(tracer.startActiveSpan("with context", {}, context, () => "ok")).toBe("ok");
	});
});
