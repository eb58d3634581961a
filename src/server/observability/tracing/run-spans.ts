/**
 * The spans of a session's runs, as a {@link SessionExtension}, from what every session already
 * emits and without touching the agent's contract:
 *
 * - `invoke_agent` per run: from `agent_start` to `agent_end`, a child of the server span of the
 *   request that started the run (`LiveSession.runTrace`), ended by the run's own end however long
 *   it outlives that request;
 * - `chat {model}` per model call, under the run's span: the session Agent's `streamFn` is wrapped
 *   when the session is built (`attach`), before the compaction extension wraps it, so each call
 *   that reaches the provider (an overflow retry too) is one span, and a call a budget refuses is none;
 * - `execute_tool {name}` per tool call, under the run's span: from `tool_execution_start` to
 *   `tool_execution_end` (approval and client-side waits included).
 *
 * The per-event work is a `switch` on the event type: streamed deltas cost nothing more.
 */
import {
	type Attributes,
	type Context,
	ROOT_CONTEXT,
	type Span,
	SpanKind,
	SpanStatusCode,
	type Tracer,
	trace,
} from "@opentelemetry/api";
import type { AgentEvent, AgentMessage, StreamFn } from "../../../agent/types.js";
import type { AssistantMessage, Usage } from "../../../ai/types.js";
import { addUsage, zeroUsage } from "../../../ai/usage.js";
import { PROFILE_METADATA_KEY } from "../../runtime/profiles.js";
import type { LiveSession, SessionExtension } from "../../runtime/session/live-session.js";
import { ChatSpan } from "./chat-span.js";
import { ATTR, jsonAttribute, modelErrorType, providerName, usageAttributes } from "./gen-ai.js";

/** The traced state of a session's active run. */
interface RunTrace {
	span: Span;
	/** The run span's context, the parent of its model and tool call spans: made when first asked for. */
	context?: Context;
	tools: Map<string, Span>;
	chats: Set<ChatSpan>;
}

function runContext(run: RunTrace): Context {
	run.context ??= trace.setSpan(ROOT_CONTEXT, run.span);
	return run.context;
}

export interface RunSpansOptions {
	tracer: Tracer;
	/** Record message content (model input and output, tool arguments and results). */
	captureContent: boolean;
}

/** The last assistant message of a run's new messages. */
function lastAssistant(messages: AgentMessage[]): AssistantMessage | undefined {
	for (let i = messages.length - 1; i >= 0; i--) {
		const message = messages[i] as { role?: string };
		if (message.role === "assistant") return message as AssistantMessage;
	}
	return undefined;
}

export class RunSpans {
	readonly extension: SessionExtension;
	private readonly runs = new WeakMap<LiveSession, RunTrace>();

	constructor(private readonly options: RunSpansOptions) {
		this.extension = {
			name: "tracing",
			attach: (session) => this.wrapModelCalls(session),
			onEvent: (session, event) => this.onEvent(session, event),
			events: ["agent_start", "agent_end", "tool_execution_start", "tool_execution_end"],
		};
	}

	private wrapModelCalls(session: LiveSession): void {
		session.useModelCallLayer("tracing", {
			stream:
				(inner: StreamFn): StreamFn =>
				(model, context, options) => {
					const run = this.runs.get(session);
					// The session reads model and system prompt from its live state at each call (a PATCH applies).
					const chat = ChatSpan.start(
						this.options.tracer,
						run ? runContext(run) : ROOT_CONTEXT,
						{
							model: session.model,
							// Read only to record content: the copy is made only then.
							context: this.options.captureContent ? { ...context, systemPrompt: session.systemPrompt } : context,
							options,
							conversationId: session.id,
						},
						this.options.captureContent,
					);
					if (run) run.chats.add(chat);
					return chat.watch(inner(model, context, options));
				},
		});
	}

	private onEvent(session: LiveSession, event: AgentEvent): void {
		switch (event.type) {
			case "agent_start":
				this.startRun(session);
				return;
			case "agent_end":
				this.endRun(session, event.messages);
				return;
			case "tool_execution_start":
				this.startTool(session, event.toolCallId, event.toolName, event.args);
				return;
			case "tool_execution_end":
				this.endTool(session, event.toolCallId, event.result, event.isError);
				return;
		}
	}

	private startRun(session: LiveSession): void {
		// A run that ended without `agent_end` (it failed to start) leaves its span behind: end it now.
		const stale = this.runs.get(session);
		if (stale) this.finish(stale, { [ATTR.runStatus]: "error", [ATTR.errorType]: "_OTHER" }, "no agent_end");
		const model = session.model;
		const agentName = session.config.metadata[PROFILE_METADATA_KEY];
		const attributes: Attributes = {
			[ATTR.operationName]: "invoke_agent",
			[ATTR.conversationId]: session.id,
			[ATTR.providerName]: providerName(model.provider),
			[ATTR.requestModel]: model.id,
		};
		const runId = session.runId;
		if (runId) attributes[ATTR.runId] = runId;
		if (typeof agentName === "string" && agentName) attributes[ATTR.agentName] = agentName;
		const span = this.options.tracer.startSpan(
			typeof attributes[ATTR.agentName] === "string" ? `invoke_agent ${agentName}` : "invoke_agent",
			{ kind: SpanKind.INTERNAL, attributes },
			session.runTrace ?? ROOT_CONTEXT,
		);
		this.runs.set(session, { span, tools: new Map(), chats: new Set() });
	}

	private endRun(session: LiveSession, messages: AgentMessage[]): void {
		const run = this.runs.get(session);
		if (!run) return;
		this.runs.delete(session);
		const usage: Usage = zeroUsage();
		for (const message of messages as { role?: string; usage?: Usage }[]) {
			if (message.role === "assistant" && message.usage) addUsage(usage, message.usage);
		}
		const last = lastAssistant(messages);
		const status = last?.stopReason === "error" ? "error" : last?.stopReason === "aborted" ? "aborted" : "completed";
		// Only a run that did not complete says how it ended: every attribute costs on every span.
		const attributes: Attributes = usageAttributes(usage);
		if (status !== "completed") attributes[ATTR.runStatus] = status;
		if (last && status === "error") attributes[ATTR.errorType] = modelErrorType(last);
		this.finish(run, attributes, status === "error" ? last?.errorMessage : undefined);
	}

	/** Ends a run's span, and what is still open under it (a call the run's end cut short). */
	private finish(run: RunTrace, attributes: Attributes, errorMessage: string | undefined): void {
		for (const chat of run.chats) if (!chat.isEnded) chat.fail("the run ended before the model call did");
		for (const span of run.tools.values()) {
			span.setStatus({ code: SpanStatusCode.ERROR, message: "the run ended before the tool call did" });
			span.end();
		}
		run.span.setAttributes(attributes);
		if (attributes[ATTR.errorType] !== undefined)
			run.span.setStatus({ code: SpanStatusCode.ERROR, message: errorMessage });
		run.span.end();
	}

	private startTool(session: LiveSession, toolCallId: string, toolName: string, args: unknown): void {
		const run = this.runs.get(session);
		const attributes: Attributes = {
			[ATTR.operationName]: "execute_tool",
			[ATTR.toolName]: toolName,
			[ATTR.toolCallId]: toolCallId,
			[ATTR.toolType]: "function",
			[ATTR.conversationId]: session.id,
		};
		const span = this.options.tracer.startSpan(
			`execute_tool ${toolName}`,
			{ kind: SpanKind.INTERNAL, attributes },
			run ? runContext(run) : ROOT_CONTEXT,
		);
		if (this.options.captureContent && span.isRecording()) span.setAttribute(ATTR.toolArguments, jsonAttribute(args));
		if (run) run.tools.set(toolCallId, span);
		else span.end();
	}

	private endTool(session: LiveSession, toolCallId: string, result: unknown, isError: boolean): void {
		const run = this.runs.get(session);
		const span = run?.tools.get(toolCallId);
		if (!run || !span) return;
		run.tools.delete(toolCallId);
		if (this.options.captureContent && span.isRecording()) {
			const content = (result as { content?: unknown } | undefined)?.content ?? result;
			span.setAttribute(ATTR.toolResult, jsonAttribute(content));
		}
		if (isError) {
			span.setAttribute(ATTR.errorType, "tool_error");
			span.setStatus({ code: SpanStatusCode.ERROR });
		}
		span.end();
	}
}
