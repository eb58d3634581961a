/**
 * Durable aborts: an abort posted on a replica that does not run the session is written to the
 * store before it is answered, so it is honoured by whoever runs the run — the replica running it
 * (told by a control message, or finding it when it re-checks after its control channel was
 * away) or the replica that takes the run over after that one died or stalled (it does not
 * continue an aborted run).
 *
 * The record is the session's idempotency record under a key no client can send (client keys
 * are printable ASCII only; this one has a tab), one per aborted run: durable in every store,
 * deleted with the session, read by one keyed lookup. Like every idempotency record it is kept
 * 24 hours and among the session's 1,000 most recent, far longer than a run waits to be aborted.
 */
import type { SessionStore } from "../../store/types.js";

/** The reserved idempotency key of the abort of run `runId`. */
function abortKey(runId: string): string {
	return `abort\t${runId}`;
}

/** Stores that run `runId` of the session is to be aborted. Resolves to false for an unknown session. Durable on resolve. */
export function recordAbort(store: SessionStore, sessionId: string, runId: string, at: number): Promise<boolean> {
	return store.putIdempotencyKey({
		sessionId,
		key: abortKey(runId),
		operation: "abort",
		fingerprint: "",
		outcome: JSON.stringify({ runId, at }),
		createdAt: at,
	});
}

/** Whether an abort of run `runId` of the session was stored. */
export async function abortRecorded(store: SessionStore, sessionId: string, runId: string): Promise<boolean> {
	return (await store.getIdempotencyKey(sessionId, abortKey(runId))) !== undefined;
}
