/**
 * The per-session bound on the transcript held in memory (`WHEELHOUSE_MAX_SESSION_CONTEXT_BYTES`):
 * a session extension that refuses to start a prompt's or a continue's run on a session that holds
 * more than the limit.
 *
 * A session holds its transcript from the latest compaction on (`transcript-window.ts`): what its
 * next model call reads, so with compaction on it stays near the model's context window by itself.
 * With compaction off (a server setting, or a session's own `compaction.enabled: false`), or while
 * compactions fail, nothing else bounds it, and every further run would add to it. A manual
 * compaction (a run outside the loop) is never refused here: it is the way out.
 */
import { sessionError } from "./errors.js";
import type { SessionExtension } from "./live-session.js";

/** The extension that refuses runs on a session holding more than `maxBytes` of transcript and queue. */
export function contextLimitExtension(maxBytes: number): SessionExtension {
	return {
		name: "context-limit",
		beforeRun(session, kind) {
			if (kind === "outside") return;
			const bytes = session.memoryBytes;
			if (bytes <= maxBytes) return;
			throw sessionError(
				"CONTEXT_TOO_LARGE",
				`Session ${session.id} holds ${bytes} bytes of transcript and queue in memory, past WHEELHOUSE_MAX_SESSION_CONTEXT_BYTES (${maxBytes}); compact it (POST /v1/sessions/${session.id}/compact) or start a new session.`,
				{ bytes, max: maxBytes },
			);
		},
	};
}
