/**
 * Execution of one assistant message's tool calls: prepare → execute → finalize → emit.
 *
 * Every failure along the way (unknown tool, `prepareArguments` or validation error, a blocking
 * or throwing `beforeToolCall`, a throwing tool, a throwing `afterToolCall`) becomes an error
 * tool result the model can read; nothing here throws unless an event sink does.
 */
import type { AssistantMessage, ToolResultMessage } from "../ai/types.js";
import { validateToolArguments } from "../ai/validation.js";
import type { AgentContext, AgentEvent, AgentLoopConfig, AgentTool, AgentToolCall, AgentToolResult } from "./types.js";

/** Receives every loop event; the loop awaits the promise it returns, so a slow sink applies backpressure. */
export type AgentEventSink = (event: AgentEvent) => Promise<void> | void;

/** Outcome of preparing one call: either ready to run, or already finished with a result. */
type Preparation =
	| { kind: "immediate"; result: AgentToolResult<any>; isError: boolean }
	| { kind: "prepared"; toolCall: AgentToolCall; tool: AgentTool<any>; args: unknown };

type PreparedCall = Extract<Preparation, { kind: "prepared" }>;

interface ExecutedCall {
	result: AgentToolResult<any>;
	isError: boolean;
}

interface FinalizedCall {
	toolCall: AgentToolCall;
	result: AgentToolResult<any>;
	isError: boolean;
}

/** The tool-result messages of a batch (source order) and whether the batch ends the run. */
export interface ToolBatchResult {
	messages: ToolResultMessage[];
	terminate: boolean;
}

function errorMessageOf(error: unknown): string {
	return error instanceof Error ? error.message : String(error);
}

function errorResult(message: string): AgentToolResult<any> {
	return { content: [{ type: "text", text: message }], details: {} };
}

function toolCallsOf(message: AssistantMessage): AgentToolCall[] {
	const calls: AgentToolCall[] = [];
	for (const block of message.content) if (block.type === "toolCall") calls.push(block);
	return calls;
}

/**
 * Runs the tool calls of `assistantMessage`. Sequential when `config.toolExecution` is
 * `"sequential"` or any called tool has `executionMode: "sequential"`; parallel otherwise.
 */
export async function executeToolCalls(
	context: AgentContext,
	assistantMessage: AssistantMessage,
	config: AgentLoopConfig,
	signal: AbortSignal | undefined,
	emit: AgentEventSink,
): Promise<ToolBatchResult> {
	const toolCalls = toolCallsOf(assistantMessage);
	const sequential =
		config.toolExecution === "sequential" ||
		toolCalls.some((call) => findTool(context, call.name)?.executionMode === "sequential");
	return sequential
		? executeSequential(context, assistantMessage, toolCalls, config, signal, emit)
		: executeParallel(context, assistantMessage, toolCalls, config, signal, emit);
}

async function executeSequential(
	context: AgentContext,
	assistantMessage: AssistantMessage,
	toolCalls: AgentToolCall[],
	config: AgentLoopConfig,
	signal: AbortSignal | undefined,
	emit: AgentEventSink,
): Promise<ToolBatchResult> {
	const finalized: FinalizedCall[] = [];
	const messages: ToolResultMessage[] = [];
	for (const toolCall of toolCalls) {
		await emitStart(toolCall, emit);
		const preparation = await prepareToolCall(context, assistantMessage, toolCall, config, signal);
		let call: FinalizedCall;
		if (preparation.kind === "immediate") {
			call = { toolCall, result: preparation.result, isError: preparation.isError };
		} else {
			const executed = await executePrepared(preparation, signal, emit);
			call = await finalizeExecuted(context, assistantMessage, preparation, executed, config, signal);
		}
		await emitEnd(call, emit);
		const message = toToolResultMessage(call);
		await emitResultMessage(message, emit);
		finalized.push(call);
		messages.push(message);
	}
	return { messages, terminate: shouldTerminate(finalized) };
}

async function executeParallel(
	context: AgentContext,
	assistantMessage: AssistantMessage,
	toolCalls: AgentToolCall[],
	config: AgentLoopConfig,
	signal: AbortSignal | undefined,
	emit: AgentEventSink,
): Promise<ToolBatchResult> {
	// Phase 1: prepare one by one (hooks see a stable order); calls that finish here end at once.
	const pending: (FinalizedCall | (() => Promise<FinalizedCall>))[] = [];
	for (const toolCall of toolCalls) {
		await emitStart(toolCall, emit);
		const preparation = await prepareToolCall(context, assistantMessage, toolCall, config, signal);
		if (preparation.kind === "immediate") {
			const call = { toolCall, result: preparation.result, isError: preparation.isError };
			await emitEnd(call, emit);
			pending.push(call);
			continue;
		}
		pending.push(async () => {
			const executed = await executePrepared(preparation, signal, emit);
			const call = await finalizeExecuted(context, assistantMessage, preparation, executed, config, signal);
			await emitEnd(call, emit);
			return call;
		});
	}
	// Phase 2: run concurrently; each `tool_execution_end` fires on completion, results keep source order.
	const finalized = await Promise.all(
		pending.map((entry) => (typeof entry === "function" ? entry() : Promise.resolve(entry))),
	);
	const messages: ToolResultMessage[] = [];
	for (const call of finalized) {
		const message = toToolResultMessage(call);
		await emitResultMessage(message, emit);
		messages.push(message);
	}
	return { messages, terminate: shouldTerminate(finalized) };
}

/** A batch ends the run only when it has results and every one of them asks to terminate. */
function shouldTerminate(finalized: FinalizedCall[]): boolean {
	return finalized.length > 0 && finalized.every((call) => call.result.terminate === true);
}

function findTool(context: AgentContext, name: string): AgentTool<any> | undefined {
	return context.tools?.find((tool) => tool.name === name);
}

function applyPrepareArguments(tool: AgentTool<any>, toolCall: AgentToolCall): AgentToolCall {
	if (!tool.prepareArguments) return toolCall;
	const prepared = tool.prepareArguments(toolCall.arguments);
	return prepared === toolCall.arguments ? toolCall : { ...toolCall, arguments: prepared as Record<string, any> };
}

async function prepareToolCall(
	context: AgentContext,
	assistantMessage: AssistantMessage,
	toolCall: AgentToolCall,
	config: AgentLoopConfig,
	signal: AbortSignal | undefined,
): Promise<Preparation> {
	const tool = findTool(context, toolCall.name);
	if (!tool) return { kind: "immediate", result: errorResult(`Tool ${toolCall.name} not found`), isError: true };
	try {
		const args = validateToolArguments(tool, applyPrepareArguments(tool, toolCall));
		if (config.beforeToolCall) {
			const before = await config.beforeToolCall({ assistantMessage, toolCall, args, context }, signal);
			if (before?.block) {
				return {
					kind: "immediate",
					result: errorResult(before.reason || "Tool execution was blocked"),
					isError: true,
				};
			}
		}
		return { kind: "prepared", toolCall, tool, args };
	} catch (error) {
		return { kind: "immediate", result: errorResult(errorMessageOf(error)), isError: true };
	}
}

async function executePrepared(
	prepared: PreparedCall,
	signal: AbortSignal | undefined,
	emit: AgentEventSink,
): Promise<ExecutedCall> {
	// Updates are emitted as they come but all of them settle before the call may end.
	const updates: Promise<void>[] = [];
	const onUpdate = (partialResult: AgentToolResult<any>) => {
		updates.push(
			Promise.resolve(
				emit({
					type: "tool_execution_update",
					toolCallId: prepared.toolCall.id,
					toolName: prepared.toolCall.name,
					args: prepared.toolCall.arguments,
					partialResult,
				}),
			),
		);
	};
	try {
		const result = await prepared.tool.execute(prepared.toolCall.id, prepared.args, signal, onUpdate);
		await Promise.all(updates);
		return { result, isError: false };
	} catch (error) {
		await Promise.all(updates);
		return { result: errorResult(errorMessageOf(error)), isError: true };
	}
}

async function finalizeExecuted(
	context: AgentContext,
	assistantMessage: AssistantMessage,
	prepared: PreparedCall,
	executed: ExecutedCall,
	config: AgentLoopConfig,
	signal: AbortSignal | undefined,
): Promise<FinalizedCall> {
	let { result, isError } = executed;
	if (config.afterToolCall) {
		try {
			const after = await config.afterToolCall(
				{ assistantMessage, toolCall: prepared.toolCall, args: prepared.args, result, isError, context },
				signal,
			);
			if (after) {
				// Field-by-field replacement, no deep merge.
				result = {
					content: after.content ?? result.content,
					details: after.details ?? result.details,
					terminate: after.terminate ?? result.terminate,
				};
				isError = after.isError ?? isError;
			}
		} catch (error) {
			result = errorResult(errorMessageOf(error));
			isError = true;
		}
	}
	return { toolCall: prepared.toolCall, result, isError };
}

function toToolResultMessage(call: FinalizedCall): ToolResultMessage {
	return {
		role: "toolResult",
		toolCallId: call.toolCall.id,
		toolName: call.toolCall.name,
		content: call.result.content,
		details: call.result.details,
		isError: call.isError,
		timestamp: Date.now(),
	};
}

async function emitStart(toolCall: AgentToolCall, emit: AgentEventSink): Promise<void> {
	await emit({
		type: "tool_execution_start",
		toolCallId: toolCall.id,
		toolName: toolCall.name,
		args: toolCall.arguments,
	});
}

async function emitEnd(call: FinalizedCall, emit: AgentEventSink): Promise<void> {
	await emit({
		type: "tool_execution_end",
		toolCallId: call.toolCall.id,
		toolName: call.toolCall.name,
		result: call.result,
		isError: call.isError,
	});
}

async function emitResultMessage(message: ToolResultMessage, emit: AgentEventSink): Promise<void> {
	await emit({ type: "message_start", message });
	await emit({ type: "message_end", message });
}
