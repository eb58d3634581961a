/**
 * Drives one stretch of a session's run for an OpenAI-style request and reports what the client
 * sees: text deltas of the assistant's messages, the calls of the client's own tools, usage, and
 * how the stretch ended.
 *
 * A stretch ends at the run's `agent_end`, or as soon as the model called client tools and every
 * one of them waits for its result (the client tool mechanism of session/tool-interactions.ts): the run
 * then stays open, and the client's next request, carrying the tool results, resolves those
 * waits and drives the next stretch of the same run. Server tools run inside the stretch and
 * stay hidden; the text of every assistant message of the stretch reaches the client.
 *
 * Every facade (Chat Completions, Responses, AG-UI) encodes the same stretch: this is the only
 * place that decides where a stretch ends. A sink that needs more than text (AG-UI streams
 * thinking, tool calls and turns) reads every event of the stretch through `event`.
 */
import type { AgentEvent } from "../../../agent/types.js";
import type { AssistantMessage, StopReason, ToolCall, Usage } from "../../../ai/types.js";
import { addUsage, zeroUsage } from "../../../ai/usage.js";
import type { LiveSession } from "../../runtime/session/live-session.js";
import type { RunHandle } from "../../runtime/session/runs.js";
import type { ToolInteractions } from "../../runtime/session/tool-interactions.js";
import { textOf } from "../text.js";

/** How a stretch ended. `tool_calls`: the model called client tools, whose results the run waits for. */
export type SegmentEnd =
	| { kind: "stop"; reason: Extract<StopReason, "stop" | "length"> }
	| { kind: "tool_calls"; calls: ToolCall[] }
	| { kind: "aborted" }
	| { kind: "error"; message: string };

/** A call of a server tool that ran inside the stretch, with its outcome. */
export interface ServerToolCall {
	id: string;
	name: string;
	arguments: unknown;
	/** The text the model saw. */
	output: string;
	isError: boolean;
}

/** Receives a stretch as it happens. Contract: must not throw (an observer that throws is dropped, and the stretch would end only with its run). */
export interface SegmentSink {
	/** A new assistant message starts (before its first text delta). */
	messageStart?(): void;
	textDelta?(delta: string): void;
	/** The assistant message ended; `text` is all of its text. */
	messageEnd?(text: string): void;
	/** A server tool call finished (clients that asked to see server tools show it). */
	serverTool?(call: ServerToolCall): void;
	/** Every agent event of the stretch, in order, before the callbacks above see it. */
	event?(event: AgentEvent): void;
}

export interface SegmentResult {
	end: SegmentEnd;
	/** Text of every assistant message of the stretch, in order. */
	text: string;
	usage: Usage;
	/** The server tool calls of the stretch, in the order they finished. */
	serverTools: ServerToolCall[];
}

export interface SegmentOptions {
	session: LiveSession;
	interactions: ToolInteractions;
	/** Names of the request's client tools: their calls end the stretch. */
	clientTools: ReadonlySet<string>;
	sink: SegmentSink;
	/** Aborts the run (the client went away, or asked to cancel). */
	signal: AbortSignal;
	/**
	 * Ends the stretch (as `aborted`) without touching the run: a client that only watched the run
	 * went away.
	 */
	detach?: AbortSignal;
}

/**
 * Runs a stretch: observes the session's events (`session/observers.ts`), then calls `start` (which starts a run, or
 * resolves the waiting client tool calls of the active one), and settles when the stretch ends.
 * Failures of `start` (a busy session, a bad message) reject before anything was reported.
 */
export async function runSegment(
	options: SegmentOptions,
	start: () => Promise<RunHandle | undefined>,
): Promise<SegmentResult> {
	const { session, interactions, clientTools, sink, signal, detach } = options;
	const usage = zeroUsage();
	let text = "";
	let clientCalls: ToolCall[] = [];
	const serverTools: ServerToolCall[] = [];
	const serverArgs = new Map<string, unknown>();
	let settle!: (end: SegmentEnd) => void;
	const ended = new Promise<SegmentEnd>((resolve) => {
		settle = resolve;
	});
	let finished = false;
	const finish = (end: SegmentEnd) => {
		if (finished) return;
		finished = true;
		settle(end);
	};
	let last: AssistantMessage | undefined;

	/** True once every client call of the last assistant message waits for the client. */
	const clientCallsWaiting = () => {
		const waiting = new Set(interactions.pending(session).map((p) => p.toolCallId));
		return clientCalls.every((call) => waiting.has(call.id));
	};

	const listener = (event: AgentEvent) => {
		if (finished) return;
		sink.event?.(event);
		switch (event.type) {
			case "message_start":
				if (event.message.role === "assistant") sink.messageStart?.();
				break;
			case "message_update": {
				const update = event.assistantMessageEvent;
				if (update.type === "text_delta") {
					text += update.delta;
					sink.textDelta?.(update.delta);
				}
				break;
			}
			case "message_end": {
				if (event.message.role !== "assistant") break;
				const message = event.message as AssistantMessage;
				last = message;
				if (message.usage) addUsage(usage, message.usage);
				sink.messageEnd?.(textOf(message.content));
				clientCalls = message.content.filter(
					(block): block is ToolCall => block.type === "toolCall" && clientTools.has(block.name),
				);
				break;
			}
			case "tool_execution_start":
				// The wait is registered when the tool executes, after this event: check on the next turns.
				if (clientCalls.some((call) => call.id === event.toolCallId)) void awaitWaiting();
				else serverArgs.set(event.toolCallId, event.args);
				break;
			case "tool_execution_end": {
				if (!serverArgs.has(event.toolCallId)) break;
				const content = (event.result?.content ?? []) as { type: string; text?: string }[];
				const call: ServerToolCall = {
					id: event.toolCallId,
					name: event.toolName,
					arguments: serverArgs.get(event.toolCallId),
					output: textOf(content),
					isError: event.isError,
				};
				serverArgs.delete(event.toolCallId);
				serverTools.push(call);
				sink.serverTool?.(call);
				break;
			}
			case "agent_end": {
				const reason = last?.stopReason;
				if (reason === "aborted" || (signal.aborted && reason !== "stop")) finish({ kind: "aborted" });
				else if (reason === "error" || !last)
					finish({ kind: "error", message: last?.errorMessage ?? "The run ended without an answer." });
				else finish({ kind: "stop", reason: reason === "length" ? "length" : "stop" });
				break;
			}
		}
	};

	/** Ends the stretch with the client calls once all of them wait (each wait registers in its tool's execute). */
	const awaitWaiting = async () => {
		while (!finished && !signal.aborted) {
			if (clientCalls.length > 0 && clientCallsWaiting()) {
				finish({ kind: "tool_calls", calls: clientCalls });
				return;
			}
			await new Promise((resolve) => setImmediate(resolve));
		}
	};

	const onAbort = () => {
		session.abort();
		// Aborting a run that already waits for the client ends its wait; the stretch ends with it.
		finish({ kind: "aborted" });
	};
	const onDetach = () => finish({ kind: "aborted" });
	const unsubscribe = session.observe({
		event: (event) => {
			if (event.agent) listener(event.agent);
		},
		unlogged: listener,
	});
	try {
		const run = await start();
		if (signal.aborted) onAbort();
		else signal.addEventListener("abort", onAbort, { once: true });
		if (detach?.aborted) onDetach();
		else detach?.addEventListener("abort", onDetach, { once: true });
		// A run that ended before anything was reported (a start that only resolved waits may hand
		// the stretch to a run already over) settles with its `done`.
		run?.done.then(() => finish(last ? endOf(last) : { kind: "error", message: "The run ended without an answer." }));
		const end = await ended;
		return { end, text, usage, serverTools };
	} finally {
		signal.removeEventListener("abort", onAbort);
		detach?.removeEventListener("abort", onDetach);
		unsubscribe();
	}
}

/** How a stretch ends with `message` as its last assistant message. */
export function endOf(message: AssistantMessage): SegmentEnd {
	if (message.stopReason === "aborted") return { kind: "aborted" };
	if (message.stopReason === "error")
		return { kind: "error", message: message.errorMessage ?? "The model call failed." };
	return { kind: "stop", reason: message.stopReason === "length" ? "length" : "stop" };
}
