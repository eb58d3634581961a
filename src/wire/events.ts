/**
 * The compact SSE wire format of Wheelhouse — one module shared by the server's SSE writer (which
 * calls {@link toWireEvent} / {@link encodeWireData}) and the client helper (which undoes it with
 * `MessageAssembler`), so the two sides cannot drift.
 *
 * ## Frames
 *
 * ```
 * id: 42                      per-session integer sequence, strictly increasing, never reused
 * event: message_update       the event's `type` (AgentEvent type or a server-level event name)
 * data: {"type":"message_update","assistantMessageEvent":{"type":"text_delta","contentIndex":0,"delta":"Hi"}}
 * ```
 *
 * `data` is the {@link WireEvent} as one line of JSON (JSON never contains a raw line break).
 *
 * ## What is compacted (why: bytes must grow linearly with the answer)
 *
 * Every AgentEvent is sent unchanged except `message_update`, which drops the full `message` and
 * the `assistantMessageEvent.partial`. To let a client rebuild the partial message exactly:
 *
 * - `*_start` events carry `block`: the new content block as it is in the server's partial at that
 *   moment (e.g. `{type:"toolCall",id,name,arguments:{}}`; small).
 * - `*_delta` events carry the delta only. The client appends it to `text` / `thinking`, or, for a
 *   tool call, to its raw argument JSON and re-parses `arguments` with partial JSON.
 * - `*_end` events carry `block` without its bulky field (`text`, `thinking`, `arguments`), which
 *   the client restores from the event's own `content` / `toolCall.arguments`; this brings over
 *   anything a provider set at the end of a block (signatures, a repaired tool call).
 *
 * `message_start` and `message_end` carry the full message; a client replaces its partial with the
 * `message_end` message, so message-level fields a provider updates mid-stream (usage, responseId)
 * are exact at the end.
 *
 * Contract for the writer: call {@link toWireEvent} / {@link encodeWireData} synchronously inside
 * the AgentEvent listener. The agent mutates its partial message in place after the listener
 * returns, so serialising later would send content from the future.
 */

import type { AgentEvent, AgentMessage } from "../agent/types.js";
import type { AssistantMessage, AssistantMessageEvent } from "../ai/types.js";

/** The agent's events and messages as the wire carries them (a client reads them from here). */
export type { AgentEvent, AgentMessage };

type ContentBlock = AssistantMessage["content"][number];

/** An `AssistantMessageEvent` of a `message_update`, as sent on the wire (never with `partial`). */
export type WireAssistantMessageEvent =
	| { type: "text_start"; contentIndex: number; block: ContentBlock }
	| { type: "text_delta"; contentIndex: number; delta: string }
	| { type: "text_end"; contentIndex: number; content: string; block: Partial<ContentBlock> }
	| { type: "thinking_start"; contentIndex: number; block: ContentBlock }
	| { type: "thinking_delta"; contentIndex: number; delta: string }
	| { type: "thinking_end"; contentIndex: number; content: string; block: Partial<ContentBlock> }
	| { type: "toolcall_start"; contentIndex: number; block: ContentBlock }
	| { type: "toolcall_delta"; contentIndex: number; delta: string }
	| {
			type: "toolcall_end";
			contentIndex: number;
			toolCall: Extract<ContentBlock, { type: "toolCall" }>;
			block: Partial<ContentBlock>;
	  };

/** `message_update` on the wire: the delta only (see the module doc). */
export interface WireMessageUpdate {
	type: "message_update";
	assistantMessageEvent: WireAssistantMessageEvent;
}

/**
 * A snapshot for a late joiner (the first event of a subscription without a cursor) or for a
 * cursor older than the retained log (`reset: true`: the client must drop what it has and rebuild
 * from here). `streamingMessage` is the in-flight partial message, if a message is streaming; a
 * `MessageAssembler` continues from it. `state` is the session state as `GET /v1/sessions/:id`
 * returns it (opaque to the assembler).
 */
export interface SessionSnapshotEvent {
	type: "session_snapshot";
	reset?: boolean;
	state?: Record<string, unknown>;
	streamingMessage?: AgentMessage;
	[key: string]: unknown;
}

/** A steering / follow-up message was queued, drained or cleared. */
export interface QueueUpdateEvent {
	type: "queue_update";
	[key: string]: unknown;
}

/**
 * The last event a subscriber gets when it fell too far behind and is dropped (bounded buffering);
 * the stream then ends and the client resumes with `Last-Event-ID` (`streamEvents` does).
 */
export interface StreamDroppedEvent {
	type: "stream_dropped";
	reason: string;
	message: string;
	lastEventId: number | null;
}

/**
 * A tool call waits for a human decision: answer with `POST /v1/sessions/:id/approvals/:toolCallId`
 * `{ approve, reason? }` before `expiresAt` (epoch ms). Pending ones are also in the snapshot's
 * `state.pendingApprovals`.
 */
export interface ApprovalRequestedEvent {
	type: "approval_requested";
	toolCallId: string;
	toolName: string;
	args: unknown;
	createdAt: number;
	expiresAt: number;
}

/** The wait for a decision ended; a call that was not approved ends with an error result. */
export interface ApprovalResolvedEvent {
	type: "approval_resolved";
	toolCallId: string;
	toolName: string;
	outcome:
		| { kind: "approved"; reason?: string }
		| { kind: "denied"; reason?: string }
		| { kind: "timeout"; timeoutMs: number }
		| { kind: "aborted" }
		/** The server process died while the call waited (sent by startup recovery, before `run_interrupted`). */
		| { kind: "interrupted" };
}

/**
 * A client tool's call waits for its result: the client runs `toolName` with `args` and answers
 * with `POST /v1/sessions/:id/tool-results/:toolCallId` before `expiresAt` (epoch ms). Sent once
 * the wait is in the store (after the call's `tool_execution_start`, and after its approval when
 * the tool asks for one), so any replica can take the answer. The call's `tool_execution_end`
 * ends the wait, however it ended (a result, a timeout, an abort, a restart): there is no
 * `tool_result_resolved`. Pending ones are also in the snapshot's `state.pendingClientToolCalls`.
 */
export interface ToolResultRequestedEvent {
	type: "tool_result_requested";
	toolCallId: string;
	toolName: string;
	args: unknown;
	createdAt: number;
	expiresAt: number;
}

/**
 * An MCP server asks for input during tool call `toolCallId` (MCP elicitation, form mode): answer
 * with `POST /v1/sessions/:id/elicitations/:elicitationId` `{ action: "accept", content }`,
 * `{ action: "decline" }` or `{ action: "cancel" }` before `expiresAt` (epoch ms); the answer goes
 * back to the MCP server and the call goes on. `requestedSchema` is a flat JSON Schema object of
 * primitive fields. Pending ones are also in the snapshot's `state.pendingElicitations`.
 */
export interface ElicitationRequestedEvent {
	type: "elicitation_requested";
	elicitationId: string;
	server: string;
	toolCallId: string;
	toolName: string;
	message: string;
	requestedSchema: unknown;
	createdAt: number;
	expiresAt: number;
}

/** The wait for an answer to an elicitation ended; what the MCP server was told follows from `outcome`. */
export interface ElicitationResolvedEvent {
	type: "elicitation_resolved";
	elicitationId: string;
	toolCallId: string;
	toolName: string;
	outcome:
		| { kind: "accepted"; content: Record<string, unknown> }
		| { kind: "declined" }
		| { kind: "cancelled" }
		/** No answer in time: the server was told `cancel`. */
		| { kind: "timeout"; timeoutMs: number }
		/** The tool call ended first (its run was aborted, it timed out, or the server withdrew the request). */
		| { kind: "aborted" }
		/** The server process died while it waited (sent by startup recovery); the MCP request is gone with it. */
		| { kind: "interrupted" };
}

/**
 * The process running run `runId` died (a crash, a kill; in a cluster, the loss of its replica):
 * sent by the process that holds the session next (the restarted server, or the replica that took
 * the session over), after `approval_resolved` (outcome `interrupted`) for each approval that
 * waited and the results of the tool calls cut short (`tool_execution_end`, `message_start`,
 * `message_end`: a call of an idempotent tool run again, or an error result). The run is over: no
 * `agent_end` of it follows, and a message that was streaming was not kept.
 *
 * `willContinue: true` (the session's `onInterrupt` is `"continue"`): a new run continues from the
 * last stored message, its `agent_start` next on the stream. `false`: the session stays
 * `interrupted` until `POST /v1/sessions/:id/continue`; `message` says why.
 */
export interface RunInterruptedEvent {
	type: "run_interrupted";
	runId: string | null;
	reason: "server_restart" | "replica_lost";
	interruptedAt: number;
	willContinue: boolean;
	message: string;
}

/**
 * A run waits for a run slot of its tenant or API key (`auth.admission: "queue"`): stored in the
 * admission queue, it starts when a slot frees, and its `agent_start` then follows on this
 * stream. `position`: 1 + the runs of the same tenant (of the same owner without one) waiting
 * ahead of it. Sent when the run is queued and again each time its position changes (a run ahead
 * of it took a slot or left the queue), with the same `admissionId`, so a client sees its place
 * move; the last one says `position: 1`, or its place was given up (a request that stopped waiting).
 */
export interface RunQueuedEvent {
	type: "run_queued";
	admissionId: number;
	position: number;
	queuedAt: number;
}

/** Why a compaction ran: the context passed its threshold, the provider said it overflowed, or a client asked. */
export type CompactionReason = "threshold" | "overflow" | "manual";

/**
 * A compaction starts: the model summarises the older messages of the context (`tokensBefore`
 * tokens, estimated) so that the next model call sees the summary and the recent messages only.
 * During a run it comes right before a model call; `compaction_end` always follows (or, after a
 * crash, the run's `run_interrupted`).
 */
export interface CompactionStartEvent {
	type: "compaction_start";
	reason: CompactionReason;
	tokensBefore: number;
	/** Messages the summary replaces (a previous summary counts as one). */
	messagesToSummarize: number;
	/** Recent messages kept verbatim. */
	messagesKept: number;
	instructions?: string;
}

/**
 * A compaction ended. `compacted`: `message` is the compaction message now at the end of the
 * transcript (index `messageIndex`), and the context is about `tokensAfter` tokens. `failed` /
 * `aborted`: nothing changed, `errorMessage` says why, and the session goes on with its full context.
 */
export interface CompactionEndEvent {
	type: "compaction_end";
	reason: CompactionReason;
	outcome: "compacted" | "failed" | "aborted";
	tokensBefore: number;
	tokensAfter?: number;
	message?: AgentMessage;
	messageIndex?: number;
	errorMessage?: string;
}

/**
 * The transcript was rewound (`POST /v1/sessions/:id/rewind`, `/regenerate`, an edited message):
 * it now holds `messageCount` messages, `wh-0` to `wh-<messageCount - 1>`; the `superseded`
 * messages that followed (from `fromMessageId`, the old index `messageCount`) are kept as branch
 * `branch` (`GET /v1/sessions/:id/branches`). A client holding the transcript drops its messages
 * from index `messageCount` on; what follows on the stream builds on the rewound transcript.
 * `runId`: the run the rewind belongs to (a regenerate's or an edit's run goes on after it).
 */
export interface TranscriptRewoundEvent {
	type: "transcript_rewound";
	messageCount: number;
	fromMessageId: string;
	branch: number;
	superseded: number;
	reason: "rewind" | "regenerate" | "edit";
	runId: string | null;
}

/** Server-level events; their names never collide with AgentEvent types. */
export type ServerEvent =
	| SessionSnapshotEvent
	| QueueUpdateEvent
	| StreamDroppedEvent
	| ApprovalRequestedEvent
	| ApprovalResolvedEvent
	| ToolResultRequestedEvent
	| ElicitationRequestedEvent
	| ElicitationResolvedEvent
	| RunInterruptedEvent
	| RunQueuedEvent
	| CompactionStartEvent
	| CompactionEndEvent
	| TranscriptRewoundEvent;

/** What `data:` holds: an AgentEvent (with `message_update` compacted) or a server-level event. */
export type WireEvent = Exclude<AgentEvent, { type: "message_update" }> | WireMessageUpdate | ServerEvent;

/** The SSE `event:` name of every frame that carries data: the event's `type`. */
export type SseEventName = WireEvent["type"];

// Records keyed by the unions: a type that is added to (or removed from) AgentEvent or ServerEvent
// and not to (from) these lists does not compile, so the lists below cannot go stale.
const AGENT_EVENTS: Record<AgentEvent["type"], true> = {
	agent_start: true,
	turn_start: true,
	message_start: true,
	message_update: true,
	message_end: true,
	tool_execution_start: true,
	tool_execution_update: true,
	tool_execution_end: true,
	turn_end: true,
	agent_end: true,
};
const SERVER_EVENTS: Record<ServerEvent["type"], true> = {
	session_snapshot: true,
	queue_update: true,
	approval_requested: true,
	approval_resolved: true,
	tool_result_requested: true,
	elicitation_requested: true,
	elicitation_resolved: true,
	stream_dropped: true,
	run_interrupted: true,
	run_queued: true,
	compaction_start: true,
	compaction_end: true,
	transcript_rewound: true,
};

/** The names of the AgentEvent types, as the SSE `event:` names of those events. */
export const AGENT_EVENT_NAMES = Object.freeze(Object.keys(AGENT_EVENTS) as AgentEvent["type"][]);

/** The names of the server-level events (never an AgentEvent type). */
export const SERVER_EVENT_NAMES = Object.freeze(Object.keys(SERVER_EVENTS) as ServerEvent["type"][]);

/**
 * Every SSE `event:` name the server sends. Every frame that carries data is named, so a generic
 * `EventSource` client gets nothing on `onmessage` and must `addEventListener` each of these;
 * the other lines (`retry:`, `:` comments such as heartbeats) are never a frame of their own (no
 * blank line follows them), so they dispatch nothing, even in a client that dispatches every blank line.
 */
export const SSE_EVENT_NAMES: readonly SseEventName[] = Object.freeze([...AGENT_EVENT_NAMES, ...SERVER_EVENT_NAMES]);

const BULKY_FIELD: Record<string, "text" | "thinking" | "arguments"> = {
	text_end: "text",
	thinking_end: "thinking",
	toolcall_end: "arguments",
};

function compactAssistantEvent(event: AssistantMessageEvent): WireAssistantMessageEvent {
	switch (event.type) {
		case "text_delta":
		case "thinking_delta":
		case "toolcall_delta":
			return { type: event.type, contentIndex: event.contentIndex, delta: event.delta };
		case "text_start":
		case "thinking_start":
		case "toolcall_start": {
			// Copied (one level, plus tool arguments) so later in-place mutation cannot leak into it.
			const block = { ...event.partial.content[event.contentIndex] } as ContentBlock;
			if (block.type === "toolCall") block.arguments = { ...block.arguments };
			return { type: event.type, contentIndex: event.contentIndex, block };
		}
		case "text_end":
		case "thinking_end":
		case "toolcall_end": {
			const block: Record<string, unknown> = { ...event.partial.content[event.contentIndex] };
			delete block[BULKY_FIELD[event.type]];
			const { partial: _partial, ...rest } = event;
			return { ...rest, block } as WireAssistantMessageEvent;
		}
		default:
			throw new Error(
				`toWireEvent: assistant event "${(event as { type: string }).type}" never appears in a message_update; ` +
					"pass only AgentEvents emitted by the agent loop",
			);
	}
}

/**
 * Converts an AgentEvent to its wire form. Only `message_update` changes; every other event is
 * returned as is (so serialise it before the agent mutates it — see the module contract).
 */
export function toWireEvent(event: AgentEvent): WireEvent {
	if (event.type !== "message_update") return event;
	return { type: "message_update", assistantMessageEvent: compactAssistantEvent(event.assistantMessageEvent) };
}

/**
 * What a delta's `data:` line says before its index, per delta type: the line is then built from
 * four pieces, not seven (each join of a long string is an object to collect, one per delta).
 */
const DELTA_HEADS: ReadonlyMap<string, string> = new Map(
	(["text_delta", "thinking_delta", "toolcall_delta"] as const).map((type) => [
		type,
		`{"type":"message_update","assistantMessageEvent":{"type":"${type}","contentIndex":`,
	]),
);

/**
 * `JSON.stringify(toWireEvent(event))`: the `data:` line of the event's frame. Deltas, most of a
 * stream, are written directly (the same bytes, without building the compact object first).
 */
export function encodeWireData(event: AgentEvent | ServerEvent): string {
	if (event.type !== "message_update") return JSON.stringify(event);
	const inner = (event as Extract<AgentEvent, { type: "message_update" }>).assistantMessageEvent;
	const head = DELTA_HEADS.get(inner.type);
	if (head !== undefined) {
		const { contentIndex, delta } = inner as Extract<AssistantMessageEvent, { type: "text_delta" }>;
		if (Number.isSafeInteger(contentIndex) && typeof delta === "string") {
			return `${head}${contentIndex},"delta":${JSON.stringify(delta)}}}`;
		}
	}
	return JSON.stringify(toWireEvent(event as AgentEvent));
}
