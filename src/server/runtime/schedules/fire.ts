/**
 * What one fire of a schedule does, once it is recorded: a new session (with the schedule's
 * profile) prompted with the schedule's prompt, or the schedule's session prompted through its
 * busy policy (`ifBusy`). The fire runs as the schedule's owner, so that owner's limits (run
 * slots, sessions, budgets) apply as to any request of theirs; a refusal is the fire's outcome,
 * never a throw. Under `auth.admission: "queue"` a fire past a run limit is not refused: its
 * prompt waits in the admission queue (durably) and starts when a slot frees.
 */
import type { ScheduleRecord } from "../../../store/types.js";
import { type AgentProfiles, profileNamed, profileSettings } from "../profiles.js";
import type { Admission, AdmittedPrompt } from "../session/admission.js";
import { SessionError } from "../session/errors.js";
import type { SessionManager } from "../session/manager.js";
import type { SessionPort } from "../session/port.js";
import { toUserMessage } from "../session/user-message.js";

/** Metadata key naming the schedule on the sessions its fires create. */
export const SCHEDULE_METADATA_KEY = "wheelhouse.schedule";

export interface FireDeps {
	sessions: SessionManager;
	profiles: AgentProfiles;
	/** Fair admission: a fire past a run limit waits for a slot instead of failing. */
	admission?: Admission;
}

/** A fire's prompt, through admission when there is one. */
function promptOf(
	deps: FireDeps,
	session: SessionPort,
	schedule: ScheduleRecord,
	ifBusy: "reject" | "followUp" | "interrupt",
): Promise<AdmittedPrompt> {
	const messages = [toUserMessage(schedule.prompt)];
	return deps.admission ? deps.admission.prompt(session, messages, ifBusy, {}) : session.prompt(messages, ifBusy);
}

/** The result of a fire whose prompt waits for a run slot. */
function waitingFire(sessionId: string, position: number): FireResult {
	return {
		outcome: "fired",
		sessionId,
		runId: null,
		reason: `waiting for a run slot (position ${position}); the run starts when one frees`,
	};
}

/** What a fire came to. */
export type FireResult =
	| { outcome: "fired"; sessionId: string; runId: string | null; reason: string | null }
	| { outcome: "skipped" | "failed"; sessionId: string | null; runId: null; reason: string };

function refused(err: unknown, sessionId: string | null): FireResult {
	const known = err instanceof SessionError;
	const reason = known ? `${err.code}: ${err.message}` : `internal error: ${(err as Error).message}`;
	if (known && err.code === "SESSION_NOT_FOUND") {
		return { outcome: "skipped", sessionId, runId: null, reason };
	}
	return { outcome: "failed", sessionId, runId: null, reason };
}

/** Carries out a recorded fire of `schedule`; never throws. */
export async function carryOutFire(deps: FireDeps, schedule: ScheduleRecord): Promise<FireResult> {
	if (schedule.sessionId !== null) {
		try {
			const session = await deps.sessions.open(schedule.sessionId, schedule.ownerId);
			return await promptSession(deps, schedule, session);
		} catch (err) {
			return refused(err, schedule.sessionId);
		}
	}
	let sessionId: string | null = null;
	try {
		const name = schedule.profile ?? "";
		const base = name === "" ? { metadata: {} } : profileSettings(name, profileNamed(deps.profiles, name, "profile"));
		const session = await deps.sessions.create(schedule.ownerId, {
			...base,
			metadata: { ...base.metadata, ...schedule.metadata, [SCHEDULE_METADATA_KEY]: schedule.id },
		});
		sessionId = session.id;
		const port = await deps.sessions.open(session.id, schedule.ownerId);
		const started = await promptOf(deps, port, schedule, "reject");
		if (started.kind === "waiting") return waitingFire(sessionId, started.position);
		if (started.kind !== "started") throw new Error("a new session queued the prompt");
		return { outcome: "fired", sessionId, runId: started.run.id, reason: null };
	} catch (err) {
		return refused(err, sessionId);
	}
}

/**
 * Prompts the schedule's own session through `ifBusy`, here or on the replica running it (the
 * session port does either): `skip` records a skip while a run is going, `followUp` queues the
 * prompt for it, `interrupt` aborts it and starts this one.
 */
async function promptSession(deps: FireDeps, schedule: ScheduleRecord, session: SessionPort): Promise<FireResult> {
	const skipped: FireResult = {
		outcome: "skipped",
		sessionId: session.id,
		runId: null,
		reason: "the session was running (ifBusy: skip)",
	};
	if (schedule.ifBusy === "skip" && session.record.status === "running") return skipped;
	const ifBusy = schedule.ifBusy === "skip" ? "reject" : schedule.ifBusy;
	try {
		const result = await promptOf(deps, session, schedule, ifBusy);
		if (result.kind === "waiting") return waitingFire(session.id, result.position);
		if (result.kind === "queued") {
			return {
				outcome: "fired",
				sessionId: session.id,
				runId: null,
				reason: "queued as a follow-up of the running run",
			};
		}
		return { outcome: "fired", sessionId: session.id, runId: result.run.id, reason: null };
	} catch (err) {
		// A run started between the look and the prompt: with `skip`, that is a skip too.
		if (schedule.ifBusy === "skip" && err instanceof SessionError && err.code === "AGENT_BUSY") return skipped;
		throw err;
	}
}
