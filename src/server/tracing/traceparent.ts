/**
 * The W3C Trace Context headers of an incoming request (`traceparent`, `tracestate`), read into
 * the parent context of its server span, so a caller's trace continues through Wheelhouse. Read
 * here rather than through the API's global propagator, which an app must not install.
 *
 * https://www.w3.org/TR/trace-context/#traceparent-header: `version-traceid-parentid-flags`,
 * lowercase hex; version `ff` and all-zero ids are invalid; a later version may add fields after
 * the flags, so only version `00` must be exactly 55 characters.
 */
import {
	type Context,
	createTraceState,
	isSpanContextValid,
	ROOT_CONTEXT,
	type SpanContext,
	trace,
} from "@opentelemetry/api";

const TRACEPARENT = /^([0-9a-f]{2})-([0-9a-f]{32})-([0-9a-f]{16})-([0-9a-f]{2})(-.*)?$/;

/** The remote span context of a `traceparent` value, or undefined when it is absent or invalid. */
export function parseTraceparent(
	traceparent: string | string[] | undefined,
	tracestate?: string | string[],
): SpanContext | undefined {
	if (typeof traceparent !== "string") return undefined;
	const match = TRACEPARENT.exec(traceparent.trim());
	if (!match) return undefined;
	const [, version, traceId, spanId, flags, rest] = match;
	if (version === "ff" || (version === "00" && rest !== undefined)) return undefined;
	const context: SpanContext = { traceId, spanId, traceFlags: Number.parseInt(flags, 16) & 1, isRemote: true };
	if (!isSpanContextValid(context)) return undefined;
	const state = Array.isArray(tracestate) ? tracestate.join(",") : tracestate;
	if (state) context.traceState = createTraceState(state);
	return context;
}

/** The context a request's server span starts in: its caller's span when it sent a valid `traceparent`. */
export function requestParentContext(headers: Record<string, string | string[] | undefined>): Context {
	const remote = parseTraceparent(headers.traceparent, headers.tracestate);
	return remote ? trace.setSpanContext(ROOT_CONTEXT, remote) : ROOT_CONTEXT;
}
