/**
 * AG-UI threads as Wheelhouse sessions: which session a thread is, what the facade remembers of
 * it, and the run's extra instructions.
 *
 * A thread's session id is derived from the API key's owner id and the thread id (a hash), so the
 * mapping needs no storage: it holds across restarts and replicas, two keys never share a thread,
 * and a thread whose session was deleted starts a new one (from the conversation the client
 * sends). A thread id that is a session id (`ses_` and 32 hex digits) names that session itself,
 * so an AG-UI client can drive a session made with `/v1`; such a thread is never created.
 *
 * The client's ids of the user messages the facade prompted with are stored with the session (its
 * facade records, the latest 1,000 per session, deleted with it) so that a message the client
 * sends again, after a run it aborted before any answer, is not prompted twice, whichever process
 * serves the request (a restarted one, another replica); ids of the `wh-<index>` form need no
 * record (transcript.ts).
 */
import type { SessionRecord, SessionStore } from "../../../store/types.js";
import { facadeSessionId } from "../../runtime/ids.js";
import { unlessNotFound } from "../../runtime/session/errors.js";
import type { LiveSession } from "../../runtime/session/live-session.js";
import type { NewSessionInput, SessionManager } from "../../runtime/session/manager.js";
import type { SessionPort } from "../../runtime/session/port.js";
import { isNonEmptyState } from "./input.js";
import { indexOfId } from "./transcript.js";

/** Where a thread's shared state is kept: a key of its session's metadata (JSON). */
export const STATE_KEY = "agui.state";
/** The facade record kind of a client's message id the session was prompted with (no data). */
const SENT = "agui.message";

export class Threads {
	private readonly store: SessionStore;

	constructor(private readonly sessions: SessionManager) {
		this.store = sessions.store;
	}

	/** The id of the session of `threadId` for this owner, and whether the facade may create it. */
	sessionIdOf(ownerId: string | null, threadId: string): { id: string; creatable: boolean } {
		return facadeSessionId("agui", ownerId, threadId);
	}

	/**
	 * The thread's session loaded into this process, or undefined when it has none (yet) that this
	 * owner may see. In cluster mode this builds the session here (reloaded from the store when no
	 * run of it is here): only for a request whose run is, or starts, here; reads and control use
	 * {@link open}.
	 */
	async find(ownerId: string | null, threadId: string): Promise<LiveSession | undefined> {
		return unlessNotFound(this.sessions.load(this.sessionIdOf(ownerId, threadId).id, ownerId));
	}

	/**
	 * The port of the thread's session (session/port.ts), or undefined when it has none (yet) that
	 * this owner may see. In cluster mode a session whose run is on another replica is not loaded.
	 */
	async open(ownerId: string | null, threadId: string): Promise<SessionPort | undefined> {
		return unlessNotFound(this.sessions.open(this.sessionIdOf(ownerId, threadId).id, ownerId));
	}

	/** Creates the thread's session; undefined when the thread id names a session, which is never created. */
	async create(ownerId: string | null, threadId: string, input: NewSessionInput): Promise<LiveSession | undefined> {
		const { id, creatable } = this.sessionIdOf(ownerId, threadId);
		if (!creatable) return undefined;
		return this.sessions.create(ownerId, input, id);
	}

	/** Stores the client's ids of messages the session now holds (durably when this resolves). */
	async rememberSent(sessionId: string, ids: readonly string[]): Promise<void> {
		const records = [...new Set(ids)].filter((id) => indexOfId(id) === undefined);
		if (records.length === 0) return;
		await this.store.putFacadeRecords(
			sessionId,
			records.map((key) => ({ kind: SENT, key, data: "" })),
			Date.now(),
		);
	}

	/**
	 * Which of the client's message `ids` the session (`messageCount` messages long) already holds
	 * (ours, or ones it was prompted with).
	 */
	async held(sessionId: string, messageCount: number, ids: readonly string[]): Promise<Set<string>> {
		const held = new Set<string>();
		for (const id of new Set(ids)) {
			const index = indexOfId(id);
			if (index !== undefined ? index < messageCount : await this.store.getFacadeRecord(sessionId, SENT, id))
				held.add(id);
		}
		return held;
	}

	/**
	 * Gives the session's model calls `extra` after its system prompt (the port's
	 * `setInstructions`) until the returned function is called (when the run is over); the stored
	 * system prompt is not changed, and a config change in between wins (the release restores the
	 * stored prompt only while these instructions are in force).
	 */
	async instruct(port: SessionPort, extra: string): Promise<() => Promise<void>> {
		const base = port.record.systemPrompt;
		const prompt = extra === "" ? base : base === "" ? extra : `${base}\n\n${extra}`;
		await port.setInstructions(prompt);
		return () => port.setInstructions(undefined, prompt);
	}

	/** The thread's stored shared state (`{}` when it has none). */
	state(record: SessionRecord): unknown {
		const json = record.metadata[STATE_KEY];
		if (json === undefined) return {};
		try {
			return JSON.parse(json);
		} catch {
			return {};
		}
	}

	/** Stores the state the client sent, when it differs from the stored one (durably when this resolves). */
	async keepState(session: LiveSession, state: unknown): Promise<void> {
		const stored = session.config.metadata[STATE_KEY];
		if (!isNonEmptyState(state) && stored === undefined) return;
		const json = JSON.stringify(state ?? {});
		if (json === stored) return;
		await this.sessions.update(session, { metadata: { ...session.config.metadata, [STATE_KEY]: json } });
	}
}
