/**
 * The agent loop: works on `AgentMessage`s throughout and converts to LLM `Message`s only at the
 * model-call boundary (`transformContext` → `convertToLlm` → `StreamFn`).
 *
 * Event order of a run:
 * `agent_start`, `turn_start`, prompt `message_start`/`message_end` pairs, then per turn the
 * injected messages, the assistant message (`message_start`, `message_update`*, `message_end`),
 * its tool batch, and `turn_end`; every later turn opens with `turn_start`; `agent_end` last.
 */
import { createAssistantMessage, type MessageOrigin } from "../ai/assistant-message.js";
import { EventStream } from "../ai/event-stream.js";
import { streamSimple } from "../ai/stream.js";
import type { AssistantMessage, Context, ToolResultMessage } from "../ai/types.js";
import { type AgentEventSink, executeToolCalls } from "./tools.js";
import type { AgentContext, AgentEvent, AgentLoopConfig, AgentMessage, StreamFn } from "./types.js";

export type { AgentEventSink } from "./tools.js";

/**
 * Starts a run with `prompts` appended to a copy of `context.messages`, returning its events as
 * a stream whose `result()` is the messages the run added (prompts included).
 */
export function agentLoop(
	prompts: AgentMessage[],
	context: AgentContext,
	config: AgentLoopConfig,
	signal?: AbortSignal,
	streamFn?: StreamFn,
): EventStream<AgentEvent, AgentMessage[]> {
	const stream = createAgentStream();
	const emit = (event: AgentEvent) => stream.push(event);
	runAgentLoop(prompts, context, config, emit, signal, streamFn).then(
		(messages) => stream.end(messages),
		(error) => failStream(stream, config, signal, error),
	);
	return stream;
}

/**
 * Continues from `context` without adding a message (retries, or after tool results). The last
 * message must convert to a `user` or `toolResult` message; throws at once when the context is
 * empty or ends with an assistant message.
 */
export function agentLoopContinue(
	context: AgentContext,
	config: AgentLoopConfig,
	signal?: AbortSignal,
	streamFn?: StreamFn,
): EventStream<AgentEvent, AgentMessage[]> {
	assertContinuable(context);
	const stream = createAgentStream();
	const emit = (event: AgentEvent) => stream.push(event);
	runAgentLoopContinue(context, config, emit, signal, streamFn).then(
		(messages) => stream.end(messages),
		(error) => failStream(stream, config, signal, error),
	);
	return stream;
}

/** Like {@link agentLoop}, but events go to `emit` (awaited) and the promise resolves to the new messages. */
export async function runAgentLoop(
	prompts: AgentMessage[],
	context: AgentContext,
	config: AgentLoopConfig,
	emit: AgentEventSink,
	signal?: AbortSignal,
	streamFn?: StreamFn,
): Promise<AgentMessage[]> {
	const newMessages: AgentMessage[] = [...prompts];
	const current: AgentContext = { ...context, messages: [...context.messages, ...prompts] };
	await emit({ type: "agent_start" });
	await emit({ type: "turn_start" });
	for (const prompt of prompts) {
		await emit({ type: "message_start", message: prompt });
		await emit({ type: "message_end", message: prompt });
	}
	await runTurns(current, newMessages, config, signal, emit, streamFn);
	return newMessages;
}

/**
 * Like {@link agentLoopContinue}, with an awaited sink. Appends to the `messages` array of the
 * context it is given (callers that need isolation pass a snapshot, as `Agent` does).
 */
export async function runAgentLoopContinue(
	context: AgentContext,
	config: AgentLoopConfig,
	emit: AgentEventSink,
	signal?: AbortSignal,
	streamFn?: StreamFn,
): Promise<AgentMessage[]> {
	assertContinuable(context);
	const newMessages: AgentMessage[] = [];
	const current: AgentContext = { ...context };
	await emit({ type: "agent_start" });
	await emit({ type: "turn_start" });
	await runTurns(current, newMessages, config, signal, emit, streamFn);
	return newMessages;
}

function assertContinuable(context: AgentContext): void {
	if (context.messages.length === 0) throw new Error("Cannot continue: no messages in context");
	const last = context.messages[context.messages.length - 1] as AgentMessage;
	if (last.role === "assistant") throw new Error("Cannot continue from message role: assistant");
}

function createAgentStream(): EventStream<AgentEvent, AgentMessage[]> {
	return new EventStream<AgentEvent, AgentMessage[]>(
		(event) => event.type === "agent_end",
		(event) => (event.type === "agent_end" ? event.messages : []),
	);
}

/**
 * The assistant message that ends a run which failed outside the model's stream (a callback that
 * threw, a run that rejected): empty text, `aborted` or `error`, and the error's message, as the
 * reference Agent records it.
 */
export function failureMessage(model: MessageOrigin, error: unknown, aborted: boolean): AssistantMessage {
	return {
		...createAssistantMessage(model),
		content: [{ type: "text", text: "" }],
		stopReason: aborted ? "aborted" : "error",
		errorMessage: error instanceof Error ? error.message : String(error),
	};
}

/**
 * A callback broke its no-throw contract: end the stream the way `Agent` does, with an
 * assistant message carrying the error, instead of leaving the consumer waiting forever.
 */
function failStream(
	stream: EventStream<AgentEvent, AgentMessage[]>,
	config: AgentLoopConfig,
	signal: AbortSignal | undefined,
	error: unknown,
): void {
	const message = failureMessage(config.model, error, signal?.aborted === true);
	stream.push({ type: "agent_end", messages: [message] });
	stream.end([message]);
}

async function runTurns(
	context: AgentContext,
	newMessages: AgentMessage[],
	config: AgentLoopConfig,
	signal: AbortSignal | undefined,
	emit: AgentEventSink,
	streamFn: StreamFn | undefined,
): Promise<void> {
	let firstTurn = true;
	// Steering typed while the run was starting is injected before the first model call.
	let pending: AgentMessage[] = (await config.getSteeringMessages?.()) || [];

	// Outer loop: one pass per follow-up batch; ends when the agent would stop and none are queued.
	while (true) {
		let hasMoreToolCalls = true;

		// Inner loop: one pass per turn (model call + tool batch) while tools ran or steering arrived.
		while (hasMoreToolCalls || pending.length > 0) {
			if (firstTurn) firstTurn = false;
			else await emit({ type: "turn_start" });

			for (const message of pending) {
				await emit({ type: "message_start", message });
				await emit({ type: "message_end", message });
				context.messages.push(message);
				newMessages.push(message);
			}
			pending = [];

			const message = await streamAssistantResponse(context, config, signal, emit, streamFn);
			newMessages.push(message);
			if (message.stopReason === "error" || message.stopReason === "aborted") {
				await emit({ type: "turn_end", message, toolResults: [] });
				await emit({ type: "agent_end", messages: newMessages });
				return;
			}

			const toolResults: ToolResultMessage[] = [];
			hasMoreToolCalls = false;
			if (message.content.some((block) => block.type === "toolCall")) {
				const batch = await executeToolCalls(context, message, config, signal, emit);
				toolResults.push(...batch.messages);
				hasMoreToolCalls = !batch.terminate;
				for (const result of toolResults) {
					context.messages.push(result);
					newMessages.push(result);
				}
			}
			await emit({ type: "turn_end", message, toolResults });

			if (await config.shouldStopAfterTurn?.({ message, toolResults, context, newMessages })) {
				await emit({ type: "agent_end", messages: newMessages });
				return;
			}
			pending = (await config.getSteeringMessages?.()) || [];
		}

		const followUps = (await config.getFollowUpMessages?.()) || [];
		if (followUps.length === 0) break;
		pending = followUps;
	}
	await emit({ type: "agent_end", messages: newMessages });
}

/**
 * One model call. The `start` partial is pushed into the context and replaced on every update,
 * then by the final message; each `message_update` carries a shallow copy of the partial.
 */
async function streamAssistantResponse(
	context: AgentContext,
	config: AgentLoopConfig,
	signal: AbortSignal | undefined,
	emit: AgentEventSink,
	streamFn: StreamFn | undefined,
): Promise<AssistantMessage> {
	const messages = config.transformContext ? await config.transformContext(context.messages, signal) : context.messages;
	const llmContext: Context = {
		systemPrompt: context.systemPrompt,
		messages: await config.convertToLlm(messages),
		tools: context.tools,
	};
	const apiKey = (config.getApiKey ? await config.getApiKey(config.model.provider) : undefined) || config.apiKey;
	const response = await (streamFn ?? streamSimple)(config.model, llmContext, { ...config, apiKey, signal });

	let partial: AssistantMessage | undefined;
	for await (const event of response) {
		switch (event.type) {
			case "start":
				partial = event.partial;
				context.messages.push(partial);
				await emit({ type: "message_start", message: { ...partial } });
				break;
			case "done":
			case "error":
				return finishAssistantMessage(context, await response.result(), partial !== undefined, emit);
			default:
				// Deltas before `start` carry nothing the consumer could attach to; they are skipped.
				if (partial) {
					partial = event.partial;
					context.messages[context.messages.length - 1] = partial;
					// The most frequent event: a sink with nothing to wait for costs no microtask turn.
					const pending = emit({ type: "message_update", assistantMessageEvent: event, message: { ...partial } });
					if (pending) await pending;
				}
		}
	}
	return finishAssistantMessage(context, await response.result(), partial !== undefined, emit);
}

async function finishAssistantMessage(
	context: AgentContext,
	final: AssistantMessage,
	startedPartial: boolean,
	emit: AgentEventSink,
): Promise<AssistantMessage> {
	if (startedPartial) {
		context.messages[context.messages.length - 1] = final;
	} else {
		context.messages.push(final);
		await emit({ type: "message_start", message: { ...final } });
	}
	await emit({ type: "message_end", message: final });
	return final;
}
