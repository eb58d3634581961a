/**
 * What the two session ports need from the server around them: the manager's config checks and
 * deletion, the tool interactions, the readers that follow a session's events, and (cluster
 * mode) the link to the other replicas.
 * `SessionManager` builds it; nothing else does.
 */

import type { SessionConfig } from "../../../store/types.js";
import type { LiveSession } from "./live-session.js";
import type { EventFollower } from "./port.js";
import type { OpenStreamSink, StreamSink } from "./stream-sink.js";
import type { ToolInteractions } from "./tool-interactions.js";

/**
 * Control messages between replicas (see `cluster/control.ts`, which carries them): the change
 * is in the store already; the message tells the replica running the session to take it in now.
 */
export type ControlMessage =
	| { t: "queue" | "config" | "delete"; s: string }
	/** `run`: the run the abort was posted for (it is stored under it). */
	| { t: "abort"; s: string; run?: string }
	| { t: "pending"; s: string; kind: "approval" | "client_tool" | "elicitation"; call: string };

/**
 * The other replicas, as a session port reaches them (cluster mode; `ClusterNode` implements it).
 * The session layer imports nothing of the cluster: the cluster plugs in here.
 */
export interface ClusterLink {
	/**
	 * Publishes a control message to every replica. Resolves to false when Redis did not take it.
	 * Contract: never rejects.
	 */
	send(message: ControlMessage): Promise<boolean>;
	/**
	 * Stores durably that run `runId` of the session is to be aborted (whoever runs it, or takes it
	 * over, honours it). Resolves to false for an unknown session.
	 */
	storeAbort(sessionId: string, runId: string): Promise<boolean>;
	/** `GET /events` across replicas: see `streamClusterEvents`. */
	streamEvents(session: LiveSession, open: OpenStreamSink, afterId: number | undefined): void;
	/** One run's stream across replicas: see `streamClusterRun`. */
	streamRun(
		session: LiveSession,
		open: OpenStreamSink,
		run: { runId: string; firstEventId: number; afterCut?: boolean },
		afterId: number | undefined,
	): void;
}

/** What the ports need besides the session. */
export interface PortContext {
	/** Validates, stores and applies a config patch (`SessionManager.update`). */
	update(session: LiveSession, patch: Partial<SessionConfig>): Promise<void>;
	/** Deletes a session from memory and the store (`SessionManager.delete`). */
	delete(session: LiveSession): Promise<void>;
	/** The tool interactions extension, once the tools plugin made it. */
	interactions(): ToolInteractions | undefined;
	/**
	 * Follows a session's events for `SessionPort.follow`: the cluster's readers (the log and the
	 * session's channel), or on a single node the same over the log and this process's events.
	 * Returns what stops it.
	 */
	follow(session: LiveSession, sink: StreamSink, cursor: number, follower: EventFollower): () => void;
	/** Absent on a single node. */
	cluster?: ClusterLink;
}
