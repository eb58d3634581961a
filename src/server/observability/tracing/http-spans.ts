/**
 * A server span per HTTP request (HTTP semantic conventions), named for the route pattern
 * (`POST /v1/sessions/:id/prompt`), never the URL: it starts when the request is routed, under
 * the caller's span when the request carries `traceparent`, and ends when the response closes —
 * finished, or cut by the client (an SSE stream the reader left). Its context is the request's
 * `traceContext`, which the routes that start runs hand to the run (its `invoke_agent` span's parent):
 * made when read, since most requests start no run.
 *
 * The caller's `traceparent`/`tracestate` are read by the W3C propagator of `@opentelemetry/core`,
 * called here rather than installed as the API's global propagator, which an app must not set.
 *
 * `url.path` is recorded without the query string, which may carry a stream token.
 */
import {
	type Attributes,
	type Context,
	defaultTextMapGetter,
	ROOT_CONTEXT,
	type Span,
	SpanKind,
	SpanStatusCode,
	type Tracer,
	trace,
} from "@opentelemetry/api";
import { W3CTraceContextPropagator } from "@opentelemetry/core";
import type { FastifyInstance, FastifyReply, FastifyRequest } from "fastify";

declare module "fastify" {
	interface FastifyRequest {
		/** The request's server span, when tracing is on (`traceContext` is made from it). */
		requestSpan?: Span;
		/** The context the server span started in (its caller's span, from `traceparent`). */
		requestSpanParent?: Context;
	}
}

function endRequestSpan(span: Span, reply: FastifyReply): void {
	const res = reply.raw;
	// Who called (set by auth after this span started): the subject, never a credential.
	const principal = reply.request.principal;
	if (principal) {
		span.setAttribute("enduser.id", principal.subject);
		if (principal.tenant !== null) span.setAttribute("wheelhouse.tenant", principal.tenant);
	}
	// Headers never sent: the client left before any answer, so there is no status to report.
	if (res.headersSent) {
		const status = res.statusCode;
		span.setAttribute("http.response.status_code", status);
		// Server spans report 5xx as errors; a 4xx is the client's problem.
		if (status >= 500) {
			span.setAttribute("error.type", String(status));
			span.setStatus({ code: SpanStatusCode.ERROR });
		}
	}
	span.end();
}

/** Starts a server span for every request of `app` (call before the routes are registered). */
export function installHttpSpans(app: FastifyInstance, tracer: Tracer): void {
	const propagator = new W3CTraceContextPropagator();
	app.decorateRequest("requestSpan", undefined);
	app.decorateRequest("requestSpanParent", undefined);
	app.decorateRequest("traceContext", {
		getter(this: FastifyRequest) {
			const span = this.requestSpan;
			return span && trace.setSpan(this.requestSpanParent!, span);
		},
	});
	app.addHook("onRequest", function startRequestSpan(request, reply, done) {
		const route = request.routeOptions.url;
		const url = request.url;
		const query = url.indexOf("?");
		const attributes: Attributes = {
			"http.request.method": request.method,
			"url.path": query === -1 ? url : url.slice(0, query),
			"url.scheme": request.protocol,
		};
		if (route) attributes["http.route"] = route;
		const parent = propagator.extract(ROOT_CONTEXT, request.headers, defaultTextMapGetter);
		const span = tracer.startSpan(
			route ? `${request.method} ${route}` : request.method,
			{ kind: SpanKind.SERVER, attributes },
			parent,
		);
		request.requestSpan = span;
		request.requestSpanParent = parent;
		// A response closes once.
		reply.raw.on("close", () => endRequestSpan(span, reply));
		done();
	});
}
