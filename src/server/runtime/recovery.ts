/**
 * Startup recovery of the runs a dead process left active: before the app exists, the store
 * marks them interrupted (each with its `run.interrupted` webhook and the deliveries of `more`,
 * such as an A2A task's push notification, in the same commit); once the
 * app is ready and before it listens, each one's session is settled on its stream and continued
 * or left stopped per its `onInterrupt` policy (`resumeInterruptedSession`).
 */
import type { SessionStore } from "../../store/types.js";
import type { WebhookEvents } from "../observability/webhooks/events.js";
import { type MoreDeliveries, withMoreInterrupted } from "../observability/webhooks/store.js";
import { type ResumeContext, type ResumeOutcome, resumeInterruptedSession } from "./session/interruption.js";

/** Marks the runs of a dead process interrupted (durably). Returns the ids of their sessions. */
export async function markInterruptedRuns(
	store: SessionStore,
	at: number,
	webhooks?: WebhookEvents,
	more?: MoreDeliveries,
): Promise<string[]> {
	const sessionIds = await store.recoverInterrupted(
		at,
		withMoreInterrupted(at, webhooks && ((sessionId, runId) => webhooks.runInterrupted(sessionId, runId, at)), more),
	);
	await store.flush();
	return sessionIds;
}

/**
 * Settles and resumes each session `markInterruptedRuns` returned, one after the other (a tool
 * run again takes its time). A session whose resumption fails is logged and left interrupted.
 */
export async function resumeAfterRestart(
	ctx: ResumeContext,
	sessionIds: string[],
	at: number,
	log: { error(obj: object, msg: string): void },
): Promise<ResumeOutcome[]> {
	const outcomes: ResumeOutcome[] = [];
	for (const sessionId of sessionIds) {
		try {
			outcomes.push(await resumeInterruptedSession(ctx, sessionId, "server_restart", at));
		} catch (err) {
			log.error({ err, sessionId }, "could not resume an interrupted session");
		}
	}
	return outcomes;
}
