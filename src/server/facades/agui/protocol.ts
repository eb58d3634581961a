/**
 * The two generations of AG-UI clients this facade serves, and what differs between them on the
 * wire. `@ag-ui/client` 1.0 declares `RunAgentInput.protocolVersion: "1.0"`; clients before it
 * (0.0.x, the one CopilotKit's runtime pins among them) send no `protocolVersion` and parse events
 * with a stricter schema:
 *
 * - `RUN_FINISHED.outcome` may only be `{ type: "success" }` or an interrupt: `pendingToolCallIds`
 *   and the `cancelled` outcome fail the whole run. A pre-1.0 client finds its pending calls
 *   itself (the tool calls of the run without a result), so the outcome is left out.
 * - Tool messages and `TOOL_CALL_RESULT` carry text only (no content parts).
 * - Token usage has no `cacheWriteInputTokens`.
 *
 * Everything else is the same, so the facade builds 1.0 events and `forProtocol` adapts each one.
 */
import { textOf } from "../text.js";
import type { AguiEvent, AguiMessage, TokenUsage } from "./events.js";

/** `"1.0"`: the protocol 1.0 events; `"0"`: the shape clients before 1.0 accept. */
export type AguiProtocol = "1.0" | "0";

/** What `protocolVersion` values look like: a version number, with anything after its digits. */
export const PROTOCOL_VERSION_PATTERN = "^[0-9]+(\\.[0-9]+)*([^0-9.].*)?$";

/**
 * The protocol of a client that declared `version` (checked against `PROTOCOL_VERSION_PATTERN`);
 * `fallback` when it declared none.
 */
export function protocolOf(version: string | undefined, fallback: AguiProtocol): AguiProtocol {
	if (version === undefined) return fallback;
	return Number.parseInt(version, 10) >= 1 ? "1.0" : "0";
}

function legacyUsage(usage: TokenUsage[]): TokenUsage[] {
	return usage.map(({ cacheWriteInputTokens: _cacheWrite, ...rest }) => rest);
}

function legacyMessage(message: AguiMessage): AguiMessage {
	return message.role === "tool" && typeof message.content !== "string"
		? { ...message, content: textOf(message.content) }
		: message;
}

/** `event` as a client of `protocol` accepts it. */
export function forProtocol(event: AguiEvent, protocol: AguiProtocol): AguiEvent {
	if (protocol === "1.0") return event;
	switch (event.type) {
		case "RUN_FINISHED": {
			const { outcome: _outcome, usage, ...rest } = event;
			return usage ? { ...rest, usage: legacyUsage(usage) } : rest;
		}
		case "TOOL_CALL_RESULT":
			return typeof event.content === "string" ? event : { ...event, content: textOf(event.content) };
		case "MESSAGES_SNAPSHOT":
			return { ...event, messages: event.messages.map(legacyMessage) };
		default:
			return event;
	}
}
