/**
 * The `chat {model}` span of one model call (GenAI conventions, kind CLIENT): started when the
 * call is made, ended when its stream resolves its final message — never per streamed event —
 * with the response's id, model, finish reason and token counts, or the error. Used for the
 * agent loop's calls (run-spans.ts) and for `POST /api/stream` (the pi proxy).
 */
import { type Attributes, type Context, type Span, SpanKind, SpanStatusCode, type Tracer } from "@opentelemetry/api";
import type { AssistantMessageEventStream } from "../../../ai/event-stream.js";
import type { AssistantMessage, Model, Context as ModelContext, SimpleStreamOptions } from "../../../ai/types.js";
import {
	ATTR,
	finishReason,
	inputContentAttributes,
	modelErrorType,
	outputContentAttributes,
	providerName,
	usageAttributes,
} from "./gen-ai.js";

/** What a model call is made with. */
export interface ModelCallRequest {
	model: Model<any>;
	context: ModelContext;
	options?: SimpleStreamOptions;
	/** The session the call belongs to (`gen_ai.conversation.id`), if any. */
	conversationId?: string;
}

export class ChatSpan {
	private ended = false;

	private constructor(
		private readonly span: Span,
		private readonly captureContent: boolean,
	) {}

	/** Starts the span of a call of `request` under `parent`. */
	static start(tracer: Tracer, parent: Context, request: ModelCallRequest, captureContent: boolean): ChatSpan {
		const { model, context, options } = request;
		const attributes: Attributes = {
			[ATTR.operationName]: "chat",
			[ATTR.providerName]: providerName(model.provider),
			[ATTR.requestModel]: model.id,
		};
		if (request.conversationId !== undefined) attributes[ATTR.conversationId] = request.conversationId;
		if (options?.maxTokens !== undefined) attributes[ATTR.requestMaxTokens] = options.maxTokens;
		if (options?.temperature !== undefined) attributes[ATTR.requestTemperature] = options.temperature;
		const span = tracer.startSpan(`chat ${model.id}`, { kind: SpanKind.CLIENT, attributes }, parent);
		if (captureContent && span.isRecording()) span.setAttributes(inputContentAttributes(context));
		return new ChatSpan(span, captureContent);
	}

	/** Ends the span when `stream` resolves its final message; returns `stream` as it came. */
	watch<S extends AssistantMessageEventStream | Promise<AssistantMessageEventStream>>(stream: S): S {
		if (stream instanceof Promise) {
			stream.then(
				(resolved) => this.watch(resolved),
				(err: unknown) => this.fail(err),
			);
		} else {
			stream.result().then(
				(message) => this.end(message),
				(err: unknown) => this.fail(err),
			);
		}
		return stream;
	}

	/** Ends the span with the call's final message (idempotent). */
	end(message: AssistantMessage): void {
		if (this.ended) return;
		this.ended = true;
		const span = this.span;
		// Only content, dear to build, is built for a recording span alone; a span that does not
		// record ignores the rest.
		const attributes: Attributes = {
			[ATTR.responseModel]: message.responseModel ?? message.model,
			[ATTR.finishReasons]: [finishReason(message.stopReason)],
			...usageAttributes(message.usage),
		};
		if (message.responseId) attributes[ATTR.responseId] = message.responseId;
		if (message.stopReason === "error") attributes[ATTR.errorType] = modelErrorType(message);
		span.setAttributes(attributes);
		if (this.captureContent && span.isRecording()) span.setAttributes(outputContentAttributes(message));
		if (message.stopReason === "error") span.setStatus({ code: SpanStatusCode.ERROR, message: message.errorMessage });
		span.end();
	}

	/** Ends the span as failed without a final message (a stream that broke its contract; idempotent). */
	fail(reason: unknown): void {
		if (this.ended) return;
		this.ended = true;
		this.span.setAttribute(ATTR.errorType, "_OTHER");
		this.span.setStatus({
			code: SpanStatusCode.ERROR,
			message: reason instanceof Error ? reason.message : String(reason),
		});
		this.span.end();
	}

	get isEnded(): boolean {
		return this.ended;
	}
}
