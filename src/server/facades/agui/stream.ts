/**
 * The AG-UI stream of one stretch of a run (run-segment.ts): the session's events into the
 * encoder, and the end of the stream. Both AG-UI routes use it: the run a request drives, and a
 * reconnecting client's view of a run in progress.
 */
import type { Usage } from "../../../ai/types.js";
import type { SessionRecord } from "../../../store/types.js";
import type { SseConnection } from "../../http/sse/connection.js";
import type { LiveSession } from "../../runtime/session/live-session.js";
import type { ToolInteractions } from "../../runtime/session/tool-interactions.js";
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
export function clientToolNames(record: Pick<SessionRecord, "clientTools">): Set<string> {
	return new Set(record.clientTools.map((tool) => tool.name));
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
	const unsubscribe = session.observe({
		event({ type, data }) {
			if (SERVER_EVENTS.has(type)) encoder.serverEvent(type, data);
		},
		// The session going away ends its run, which ends the stretch.
		close() {},
	});
	try {
		const result = await runSegment(
			{
				session,
				interactions,
				clientTools: clientToolNames(session.config),
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
export function tokenUsage(usage: Usage, model: { provider: string; id: string }): TokenUsage[] | undefined {
	const input = usage.input + usage.cacheRead + usage.cacheWrite;
	if (input + usage.output === 0) return undefined;
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
