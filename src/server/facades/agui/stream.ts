/**
 * The AG-UI stream of one stretch of a run (run-segment.ts): the session's events into the
 * encoder, and the end of the stream. Both AG-UI routes use it: the run a request drives, and a
 * reconnecting client's view of a run in progress.
 */
import type { Usage } from "../../../ai/types.js";
import type { LiveSession } from "../../session/live-session.js";
import type { ToolInteractions } from "../../session/tool-interactions.js";
import type { SseConnection } from "../../sse/connection.js";
import { runSegment, type SegmentEnd } from "../openai/run-segment.js";
import type { AguiEncoder } from "./encoder.js";
import { type AguiEvent, aguiFrame, type TokenUsage } from "./events.js";

export interface StretchOptions {
	session: LiveSession;
	interactions: ToolInteractions;
	encoder: AguiEncoder;
	/** Aborts the run. */
	signal: AbortSignal;
	/** Ends the stretch without touching the run. */
	detach?: AbortSignal;
}

/** The client's tools of a session, by name. */
export function clientToolNames(session: LiveSession): Set<string> {
	return new Set(session.config.clientTools.map((tool) => tool.name));
}

/** The native frame's JSON data (frames of the session log are `id:`, `event:`, then one `data:` line). */
function dataOf(frame: string): string {
	const at = frame.indexOf("\ndata: ");
	return at < 0 ? "{}" : frame.slice(at + 7, frame.indexOf("\n", at + 7));
}

const SERVER_EVENTS = new Set(["queue_update", "approval_requested", "approval_resolved"]);

/**
 * Runs a stretch with every agent event and server event of the session going into the encoder.
 * `start` starts the run (or returns the one under way); its refusal rejects before anything was
 * encoded but what it wrote itself.
 */
export async function streamStretch(
	options: StretchOptions,
	start: Parameters<typeof runSegment>[1],
): Promise<{ end: SegmentEnd; usage: Usage }> {
	const { session, interactions, encoder } = options;
	const unsubscribe = session.subscribe({
		deliver(_id, type, frame) {
			if (SERVER_EVENTS.has(type)) encoder.serverEvent(type, dataOf(frame));
		},
		// The session going away ends its run, which ends the stretch.
		close() {},
	});
	try {
		const result = await runSegment(
			{
				session,
				interactions,
				clientTools: clientToolNames(session),
				sink: { event: (event) => encoder.agentEvent(event) },
				signal: options.signal,
				detach: options.detach,
			},
			start,
		);
		return { end: result.end, usage: result.usage };
	} finally {
		unsubscribe();
	}
}

/** The run's token counts in AG-UI's accounting (undefined when nothing was counted). */
export function tokenUsage(usage: Usage, session: LiveSession): TokenUsage[] | undefined {
	const input = usage.input + usage.cacheRead + usage.cacheWrite;
	if (input + usage.output === 0) return undefined;
	const model = session.agent.state.model;
	return [
		{
			provider: model.provider,
			model: model.id,
			inputTokens: input,
			outputTokens: usage.output,
			totalTokens: input + usage.output,
			...(usage.cacheRead > 0 ? { cachedInputTokens: usage.cacheRead } : {}),
			...(usage.cacheWrite > 0 ? { cacheWriteInputTokens: usage.cacheWrite } : {}),
		},
	];
}

/**
 * The event that ends an AG-UI run after a stretch: `RUN_FINISHED` (client tool calls pending, or
 * cancelled when the run was aborted from elsewhere) or `RUN_ERROR`.
 */
export function finalEvent(
	end: SegmentEnd,
	ids: { threadId: string; runId: string },
	usage: TokenUsage[] | undefined,
): AguiEvent {
	switch (end.kind) {
		case "error":
			return { type: "RUN_ERROR", message: end.message, code: "MODEL_ERROR" };
		case "aborted":
			return { type: "RUN_FINISHED", ...ids, outcome: { type: "cancelled" } };
		case "tool_calls":
			return {
				type: "RUN_FINISHED",
				...ids,
				outcome: { type: "success", pendingToolCallIds: end.calls.map((call) => call.id) },
				...(usage ? { usage } : {}),
			};
		case "stop":
			return { type: "RUN_FINISHED", ...ids, ...(usage ? { usage } : {}) };
	}
}

/** Closes what the encoder holds open, sends `event`, ends the response. */
export function endStream(sse: SseConnection, encoder: AguiEncoder, event: AguiEvent): void {
	encoder.close();
	sse.end(encoder.frame(event));
}

/** What a client dropped for not keeping up gets last (`then`: what happened and what to do). */
export function droppedFrame(then: string): () => string {
	return () =>
		aguiFrame({
			type: "RUN_ERROR",
			message: `This client fell too far behind and was dropped; ${then}`,
			code: "stream_dropped",
		});
}
