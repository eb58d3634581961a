/**
 * The synchronous write surface both SQL stores share (see "A synchronous working set" in
 * `../types.ts`): appends, messages and touches that find their session in the working set or
 * write nothing, and the commit barrier's flags. Each store supplies its working set, event log,
 * run writes and commit queue; how they reach the database is its own.
 */
import type { AgentMessage } from "../../agent/types.js";
import { checkLimit, closedError } from "../shared.js";
import type { MessagePage } from "../types.js";
import type { BufferState } from "./event-buffer.js";
import type { SessionStates } from "./working-set.js";

/** What the engine asks of a store's event log. */
export interface EngineLog<S> {
	/** Assigns the next id of `state`'s session and buffers the event. Returns the id. */
	append(state: S, type: string, data: string, at: number): number;
}

/** What the engine asks of a store's run writes. */
export interface EngineRuns<S> {
	/** See `SessionWriter.appendMessages`; `state` is the session's working-set state. */
	appendMessages(state: S, messages: AgentMessage[]): number;
}

/** What the engine asks of a store's commit queue. */
export interface EngineCommits {
	/** True while writes wait for the commit barrier (`SessionStore.syncPending`). */
	readonly pending: boolean;
	commitObserver: ((ms: number) => void) | undefined;
	/** Records an activity time, written with the next commit. */
	touch(sessionId: string, at: number): void;
}

export abstract class SqlStoreEngine<S extends BufferState> {
	readonly deltaRetention = "while-streaming" as const;
	protected closed = false;
	protected abstract readonly sessions: SessionStates<S>;
	protected abstract readonly log: EngineLog<S>;
	protected abstract readonly runs: EngineRuns<S>;
	protected abstract readonly commits: EngineCommits;

	protected open(): void {
		if (this.closed) throw closedError();
	}

	appendEvent(sessionId: string, type: string, data: string, createdAt?: number): number | undefined {
		this.open();
		if (type === "") throw new RangeError("appendEvent: type must be a non-empty event name");
		const state = this.sessions.get(sessionId);
		return state && this.log.append(state, type, data, createdAt ?? Date.now());
	}

	lastEventId(sessionId: string): number | undefined {
		this.open();
		return this.sessions.get(sessionId)?.last;
	}

	appendMessages(sessionId: string, messages: AgentMessage[]): number | undefined {
		this.open();
		const state = this.sessions.get(sessionId);
		return state && this.runs.appendMessages(state, messages);
	}

	touchSession(sessionId: string, at: number): boolean {
		this.open();
		if (!this.sessions.get(sessionId)) return false;
		this.commits.touch(sessionId, at);
		return true;
	}

	get syncPending(): boolean {
		return this.commits.pending;
	}

	observeCommits(observer: ((ms: number) => void) | undefined): void {
		this.commits.commitObserver = observer;
	}

	async deleteSession(sessionId: string): Promise<boolean> {
		return (await this.deleteSessions([sessionId])) > 0;
	}

	abstract deleteSessions(sessionIds: string[]): Promise<number>;

	async listMessages(
		sessionId: string,
		options: { offset?: number; limit?: number } = {},
	): Promise<MessagePage | undefined> {
		const offset = checkLimit("offset", options.offset, 0, 0, Number.MAX_SAFE_INTEGER);
		const limit = checkLimit("limit", options.limit, 100, 1, 1000);
		const total = await this.countMessages(sessionId);
		if (total === undefined) return undefined;
		const rows = await this.messageRows(sessionId, offset, limit);
		return { messages: rows.map((d) => JSON.parse(d) as AgentMessage), offset, total };
	}

	abstract countMessages(sessionId: string): Promise<number | undefined>;

	/** The JSON of `limit` transcript messages from `offset` on (the caller counted them first). */
	protected abstract messageRows(sessionId: string, offset: number, limit: number): Promise<string[]>;
}
