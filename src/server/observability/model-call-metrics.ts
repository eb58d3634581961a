/**
 * Model calls that are no turn of a session's run — pi's streamProxy calls and compaction
 * summaries — noted in the `wheelhouse_model_*` metrics through the hooks the metrics extension
 * gets for a run's turns (`turn_start`, the first streamed output, `message_end`). The extension
 * keys a call's timing on its session: each call watched here has a key of its own, so it neither
 * reads nor disturbs the timing of a turn the same session may have under way.
 */
import type { AgentEvent } from "../../agent/types.js";
import type { AssistantMessage } from "../../ai/types.js";
import type { LiveSession, SessionExtension } from "../runtime/session/live-session.js";

/** One model call being watched. Contract: never throws. */
export interface ModelCallWatch {
	/** The call streamed output (`partial`: the message so far); only the first one counts. */
	output(partial: AssistantMessage): void;
	/** The call ended with `message`: its stop reason, usage and retries are counted, once. */
	end(message: AssistantMessage): void;
}

/** Starts watching one model call; undefined when metrics are off. */
export type WatchModelCall = () => ModelCallWatch | undefined;

/** The watcher over the metrics extension (`ServerMetrics.extension`); a no-op without one. */
export function modelCallWatcher(extension: SessionExtension | undefined): WatchModelCall {
	if (!extension) return () => undefined;
	return () => {
		// The extension uses the session as a key of its per-call timing, and reads its tenant for
		// the per-tenant tokens: a call that is no turn of a session counts for no tenant.
		const key = { sharing: { ownerId: null, tenant: null, visibility: "owner" } } as unknown as LiveSession;
		extension.onEvent?.(key, { type: "turn_start" });
		let streaming = false;
		let ended = false;
		return {
			output(partial) {
				if (streaming || ended) return;
				streaming = true;
				const update = { type: "message_update", message: partial } as AgentEvent & { type: "message_update" };
				extension.onFirstUpdate?.(key, update);
			},
			end(message) {
				if (ended) return;
				ended = true;
				extension.onEvent?.(key, { type: "message_end", message });
			},
		};
	};
}
