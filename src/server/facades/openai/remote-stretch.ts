/**
 * A stretch of a run that waits for client tool results on another replica (cluster mode). The
 * results go the way the `/v1` tool-results route sends them there (the session port's `resolve`:
 * stored as the calls' resolutions, then the replica running the run is told), and the stretch is read
 * back from the store every replica shares: it ends when the run ends, or once every client tool
 * call of the model's next message waits. Each assistant message reaches the sink whole, once it
 * is in the transcript (its deltas stay on the run's replica); a sink that reads events gets every
 * message of the stretch as its `message_start` and `message_end`, and a `turn_start` before each
 * assistant message.
 */
import { setTimeout as sleep } from "node:timers/promises";
import type { AgentMessage } from "../../../agent/types.js";
import type { AssistantMessage, ToolCall, ToolResultMessage } from "../../../ai/types.js";
import { addUsage, zeroUsage } from "../../../ai/usage.js";
import type { SessionStore } from "../../../store/types.js";
import { apiError, quote } from "../../http/errors.js";
import type { SessionPort } from "../../runtime/session/port.js";
import { textOf } from "../text.js";
import { endOf, type SegmentEnd, type SegmentResult, type SegmentSink } from "./run-segment.js";

/** How often the store is read while the run goes on elsewhere. */
const POLL_MS = 25;

export interface RemoteStretchOptions {
	/** The store the stretch is read back from. */
	store: SessionStore;
	/** The session's port (remote: its run is on another replica). */
	port: SessionPort;
	results: readonly ToolResultMessage[];
	/** Names of the session's client tools: their calls end the stretch. */
	clientTools: ReadonlySet<string>;
	/** The transcript length the stretch is read after (default: the stored length when it starts). */
	after?: number;
	/** Ends the stretch (as `aborted`) without touching the run: a client that only watched went away. */
	detach?: AbortSignal;
}

/**
 * True when the session's run is on another replica and waits (by the store) for every one of
 * these results. Throws `VALIDATION_FAILED` when it waits for more results than these.
 */
export async function waitsElsewhere(port: SessionPort, results: readonly ToolResultMessage[]): Promise<boolean> {
	if (port.where !== "remote") return false;
	const waiting = await port.waitingToolCalls();
	return waiting.length > 0 && answersEveryCall(waiting, results);
}

/**
 * True when `results` answer every one of the `waiting` calls (ids), false when one of them answers
 * none. Throws `VALIDATION_FAILED` when they answer only some: the run goes on only once every call
 * of its batch has its result, so a partial answer would hang.
 */
export function answersEveryCall(waiting: readonly string[], results: readonly ToolResultMessage[]): boolean {
	if (!results.every((result) => waiting.includes(result.toolCallId))) return false;
	const answered = new Set(results.map((result) => result.toolCallId));
	const missing = waiting.filter((id) => !answered.has(id));
	if (missing.length > 0) {
		throw apiError(
			"VALIDATION_FAILED",
			`The run waits for the results of every tool call it made: add ${missing.map((id) => quote(id)).join(", ")}.`,
		);
	}
	return true;
}

function isAssistant(message: AgentMessage): message is AssistantMessage {
	return (message as { role?: string }).role === "assistant";
}

/**
 * Delivers the results to the run on the other replica, calls `started` (the answer may open),
 * then reads the stretch from the store until it ends. A call that no longer waits is a
 * `TOOL_CALL_FINISHED` before anything is reported. `signal` (the client went away) aborts the
 * run there.
 */
export async function remoteStretch(
	options: RemoteStretchOptions,
	sink: SegmentSink,
	signal: AbortSignal,
	started: () => Promise<void>,
): Promise<SegmentResult> {
	const { store, port, results, clientTools } = options;
	const session = { id: port.id };
	const before = options.after ?? (await store.countMessages(session.id)) ?? 0;
	const runId = port.record.currentRunId;
	for (const result of results) {
		const outcome = await port.resolve({
			kind: "client_tool",
			toolCallId: result.toolCallId,
			value: { content: result.content, isError: result.isError },
		});
		if (outcome !== "resolved") {
			throw apiError(
				"TOOL_CALL_FINISHED",
				`The call ${result.toolCallId} no longer waits for a result (${outcome}); send the conversation again without it.`,
			);
		}
	}
	await started();
	const usage = zeroUsage();
	let text = "";
	let seen = 0;
	let last: AssistantMessage | undefined;
	let end: SegmentEnd | undefined;
	while (!end) {
		if (options.detach?.aborted) {
			end = { kind: "aborted" };
			break;
		}
		if (signal.aborted) {
			// Stored and sent as `/v1`'s abort does; not delivered, the run ends by its own timeout.
			await port.abort().catch(() => undefined);
			end = { kind: "aborted" };
			break;
		}
		// The run's state first, then its messages: a run seen ended has all of its messages in the read.
		const record = await store.getSession(session.id);
		const ended = record?.status !== "running" || record.currentRunId !== runId;
		const messages = (await store.listMessages(session.id, { offset: before + seen, limit: 1000 }))?.messages ?? [];
		for (const message of messages) {
			seen++;
			// A sink that reads events (AG-UI) gets each message whole: a turn starts at each answer.
			if (isAssistant(message)) sink.event?.({ type: "turn_start" });
			sink.event?.({ type: "message_start", message });
			sink.event?.({ type: "message_end", message });
			if (!isAssistant(message)) continue;
			last = message;
			if (message.usage) addUsage(usage, message.usage);
			const messageText = textOf(message.content);
			sink.messageStart?.();
			if (messageText !== "") {
				text += messageText;
				sink.textDelta?.(messageText);
			}
			sink.messageEnd?.(messageText);
		}
		if (ended) {
			end = last ? endOf(last) : { kind: "error", message: "The run ended without an answer." };
			break;
		}
		const calls = (last?.content ?? []).filter(
			(block): block is ToolCall => block.type === "toolCall" && clientTools.has(block.name),
		);
		if (calls.length > 0) {
			const waiting = new Set((await store.listPending(session.id)).map((p) => p.toolCallId));
			if (calls.every((call) => waiting.has(call.id))) {
				end = { kind: "tool_calls", calls };
				break;
			}
		}
		await sleep(POLL_MS);
	}
	return { end, text, usage, serverTools: [] };
}
