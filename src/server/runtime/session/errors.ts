/**
 * The errors of the session layer. Sessions, runs, queues and the session port refuse a request
 * by throwing a {@link SessionError}: a code saying what was refused and a message saying the fix.
 * The session layer knows nothing of HTTP; the HTTP layer maps each code to its status and
 * envelope (`errors.ts`, `fromSessionError`), so a status lives in one table only.
 */

/** What the session layer refuses, by the name the HTTP error table gives it. */
export type SessionErrorCode =
	/** No such session, or not the caller's; or deleted meanwhile. */
	| "SESSION_NOT_FOUND"
	/** A run is active (or the session is held by another replica) and the request needs none. */
	| "AGENT_BUSY"
	/** The process is shutting down: no session is created and no run starts. */
	| "SHUTTING_DOWN"
	/** `continue` on an empty transcript. */
	| "NOTHING_TO_CONTINUE"
	/** `continue` after the assistant's last message with nothing queued. */
	| "CANNOT_CONTINUE_FROM_ASSISTANT"
	/** The session's queue holds its maximum number of messages. */
	| "QUEUE_FULL"
	/** Queueing would pass a byte limit of the session's or of its owner's queues. */
	| "QUEUE_TOO_LARGE"
	/** A field of the request is invalid; the message names it. */
	| "VALIDATION_FAILED"
	/** A tool selector names no registered tool. */
	| "UNKNOWN_TOOL"
	/** The model does not exist. */
	| "UNKNOWN_MODEL"
	/** The model exists but cannot be used (no key for its provider). */
	| "MODEL_UNAVAILABLE"
	/** The process holds its maximum of sessions. */
	| "TOO_MANY_SESSIONS"
	/** The owner holds its maximum of sessions in memory. */
	| "TOO_MANY_KEY_SESSIONS"
	/** An abort was stored, but the replica running the run could not be told. */
	| "ABORT_NOT_DELIVERED"
	/** A message id names no message of the transcript. */
	| "MESSAGE_NOT_FOUND"
	/** `regenerate` on a transcript with no answered user message. */
	| "NOTHING_TO_REGENERATE"
	/** A request waited for a run slot (admission) longer than it may; its place was given up. */
	| "ADMISSION_TIMEOUT"
	/** The session's own token or cost budget is spent. */
	| "BUDGET_EXHAUSTED"
	/** The caller's API key has spent its budget for the period. */
	| "KEY_BUDGET_EXHAUSTED"
	/** The caller's tenant has spent its budget for the period. */
	| "TENANT_BUDGET_EXHAUSTED"
	/** The session holds more transcript and queue in memory than a run may start with. */
	| "CONTEXT_TOO_LARGE"
	/** A request names an agent profile the server does not have. */
	| "UNKNOWN_PROFILE"
	/** The caller's API key, or its tenant, has its maximum of runs running. */
	| "TOO_MANY_RUNS";

/**
 * A request the session layer refuses. `details` is extra data for the client (shown as the
 * envelope's `details`). Contract: thrown only for a refusal the caller can act on; a failure of
 * the store or of a provider is not a SessionError.
 */
export class SessionError extends Error {
	constructor(
		readonly code: SessionErrorCode,
		message: string,
		readonly details?: unknown,
	) {
		super(message);
		this.name = "SessionError";
	}
}

/** Builds a {@link SessionError} (for `throw sessionError(...)`). */
export function sessionError(code: SessionErrorCode, message: string, details?: unknown): SessionError {
	return new SessionError(code, message, details);
}

/** A prompt refused while the session runs (`ifBusy: "reject"`), here or on another replica. */
export function busyError(sessionId: string): SessionError {
	return sessionError(
		"AGENT_BUSY",
		`Session ${sessionId} is running. Send ifBusy "steer", "followUp" or "interrupt", POST /steer or /follow-up, or wait for agent_end.`,
	);
}

/** A continue refused while the session runs, here or on another replica. */
export function busyForContinueError(sessionId: string): SessionError {
	return sessionError("AGENT_BUSY", `Session ${sessionId} is running; continue only applies to an idle session.`);
}

/** Whether `err` says the session does not exist (a session-layer refusal or an HTTP one). */
export function isSessionNotFound(err: unknown): boolean {
	return err instanceof Error && (err as { code?: unknown }).code === "SESSION_NOT_FOUND" && "message" in err;
}

/** What `lookup` resolves to, or undefined when it rejects with `SESSION_NOT_FOUND`; other failures reject. */
export async function unlessNotFound<T>(lookup: Promise<T>): Promise<T | undefined> {
	try {
		return await lookup;
	} catch (err) {
		if (isSessionNotFound(err)) return undefined;
		throw err;
	}
}
