/**
 * `wheelhouse-agents/client`: talk to a Wheelhouse server from a browser or Node: `WheelhouseClient` has a
 * typed method per `/v1` operation; the stream helpers read its SSE streams.
 *
 * ```ts
 * import { WheelhouseClient } from "wheelhouse-agents/client";
 * const client = new WheelhouseClient({ baseUrl, apiKey });
 * const session = await client.createSession({ model: "faux/echo" });
 * for await (const event of client.streamPrompt(session.id, "hi")) console.log(event.type);
 * ```
 *
 * ```ts
 * import { streamPrompt, MessageAssembler } from "wheelhouse-agents/client";
 * const assembler = new MessageAssembler();
 * for await (const { data } of streamPrompt({ baseUrl, sessionId, message: "hi" })) {
 *   const event = assembler.apply(data); // pi-shaped AgentEvent, partial message rebuilt
 *   if (event.type === "message_update") render(event.message);
 * }
 * ```
 */

// The providers' partial-JSON parser, so the client's rebuilt tool arguments equal the server's at every delta.
export { parseStreamingJson } from "../ai/partial-json.js";
export {
	AGENT_EVENT_NAMES,
	type ApprovalRequestedEvent,
	type ApprovalResolvedEvent,
	type CompactionEndEvent,
	type CompactionReason,
	type CompactionStartEvent,
	type ElicitationRequestedEvent,
	type ElicitationResolvedEvent,
	encodeWireData,
	type QueueUpdateEvent,
	SERVER_EVENT_NAMES,
	type ServerEvent,
	type SessionSnapshotEvent,
	SSE_EVENT_NAMES,
	type SseEventName,
	type StreamDroppedEvent,
	type ToolResultRequestedEvent,
	type TranscriptRewoundEvent,
	toWireEvent,
	type WireAssistantMessageEvent,
	type WireEvent,
	type WireMessageUpdate,
} from "../wire/events.js";
export type { components, operations, paths } from "./api-types.js";
export { type ErrorCode, WheelhouseError, WheelhouseHttpError } from "./errors.js";
export { newIdempotencyKey } from "./idempotency.js";
export { type ExpandedEvent, MessageAssembler } from "./message-assembler.js";
export { type SessionStreamOptions, type StreamPromptOptions, sessionEvents, streamPrompt } from "./session-streams.js";
export { type ReadSseOptions, readSse, type SseMessage } from "./sse-parser.js";
export { type ReceivedEvent, type StreamEventsOptions, streamEvents } from "./stream-events.js";
export * from "./wheelhouse-client.js";
