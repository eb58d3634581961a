/**
 * Hands the results of client tool calls to the run that waits for them: the step every facade
 * takes when a request answers the tool calls an earlier answer returned.
 */
import type { ToolResultMessage } from "../../ai/types.js";
import { apiError } from "../http/errors.js";
import type { LiveSession } from "../runtime/session/live-session.js";
import type { ToolInteractions } from "../runtime/session/tool-interactions.js";

/** Where the facades differ. */
export interface DeliveryOptions {
	/** What the client should send instead when a call no longer waits (ends the error message). */
	instead: string;
}

/**
 * Resolves the wait of each result's call, in order. Throws `TOOL_CALL_FINISHED` at the first call
 * that no longer waits (it timed out, was aborted or answered); the results before it stay delivered.
 */
export function deliverToolResults(
	interactions: ToolInteractions,
	session: LiveSession,
	results: readonly ToolResultMessage[],
	options: DeliveryOptions,
): void {
	for (const result of results) {
		const outcome = interactions.resolveToolResult(session, result.toolCallId, {
			content: result.content,
			isError: result.isError,
		});
		if (outcome !== "resolved") {
			throw apiError(
				"TOOL_CALL_FINISHED",
				`The call ${result.toolCallId} no longer waits for a result (${outcome}); ${options.instead}.`,
			);
		}
	}
}
