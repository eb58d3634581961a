/**
 * `wheelhouse/client`: read a Wheelhouse server's SSE streams from a browser or Node.
 *
 * ```ts
 * import { streamPrompt, MessageAssembler } from "wheelhouse/client";
 * const assembler = new MessageAssembler();
 * for await (const { data } of streamPrompt({ baseUrl, sessionId, message: "hi" })) {
 *   const event = assembler.apply(data); // pi-shaped AgentEvent, partial message rebuilt
 *   if (event.type === "message_update") render(event.message);
 * }
 * ```
 */

export {
	AGENT_EVENT_NAMES,
	type ApprovalRequestedEvent,
	type ApprovalResolvedEvent,
	type CompactionEndEvent,
	type CompactionReason,
	type CompactionStartEvent,
	encodeWireData,
	type QueueUpdateEvent,
	SERVER_EVENT_NAMES,
	type ServerEvent,
	type SessionSnapshotEvent,
	SSE_EVENT_NAMES,
	type SseEventName,
	type StreamDroppedEvent,
	toWireEvent,
	type WireAssistantMessageEvent,
	type WireEvent,
	type WireMessageUpdate,
} from "../wire/events.js";
export { type ExpandedEvent, MessageAssembler } from "./message-assembler.js";
export { parseStreamingJson } from "./partial-json.js";
export { type SessionStreamOptions, type StreamPromptOptions, sessionEvents, streamPrompt } from "./session-streams.js";
export { type ReadSseOptions, readSse, type SseMessage } from "./sse-parser.js";
export { type ReceivedEvent, type StreamEventsOptions, streamEvents, WheelhouseHttpError } from "./stream-events.js";
