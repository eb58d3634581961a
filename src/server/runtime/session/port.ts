/**
 * The session port: every operation a route or a facade may ask of one session, whichever
 * replica runs it. `SessionManager.open` hands one out; routes and facades hold nothing else of a
 * session. Two implementations:
 *
 * - `LocalSession` (local-port.ts): the session is in this process (`LiveSession`), with its run
 *   if it has one; on a single node every session is local.
 * - `RemoteSession` (remote-port.ts), cluster mode only: the session has no run on this replica.
 *   Control (queue, clear, abort, resolve a waiting call) is written to the shared store and the
 *   replica running the session is told over Redis; no `LiveSession` is built for it. What needs
 *   the session in memory (a new run, its view, its streams, a config change) loads it here and
 *   goes on as the local port does.
 *
 * Every operation checks nothing of the caller: `open` did (a session of another owner is not
 * found). Refusals are {@link SessionError}s; the HTTP layer maps them.
 */
import type { Context as TraceContext } from "@opentelemetry/api";
import type { AgentMessage } from "../../../agent/types.js";
import type {
	IdempotencyRecord,
	MessagePage,
	QueueKind,
	SessionConfig,
	SessionRecord,
	StoredEvent,
	SupersededBranch,
} from "../../../store/types.js";
import type { ApprovalDecision, ClientToolResult, ElicitationAnswer, ResolveOutcome } from "../../../tools/index.js";
import type { SessionError } from "./errors.js";
import type { QueuedAnswer } from "./queues.js";
import type { RunHandle } from "./runs.js";
import type { RunPosition } from "./stream.js";
import type { OpenStreamSink, StreamSink } from "./stream-sink.js";
import type { SessionView } from "./view.js";

/** What a prompt does while a run is active (`PromptBody.ifBusy`). */
export type IfBusy = "reject" | "steer" | "followUp" | "interrupt";

/** How a prompt or a continue starts its run. All optional. */
export interface PortRunOptions {
	/**
	 * Runs once the run exists, before its first event (whose id is `firstEventId`) and before the
	 * stream below attaches (an idempotency key records the run here, in the commit of the run's
	 * start). Contract: must not throw.
	 */
	onRun?: (run: RunHandle, firstEventId: number) => void;
	/**
	 * The run's stream: opened once the run exists (a refused run opens nothing), then written from
	 * the run's first event to its end.
	 */
	stream?: OpenStreamSink;
	/** The trace context of the request that starts the run (its server span is the run's parent). */
	trace?: TraceContext;
}

/**
 * What follows a session's events through {@link SessionPort.follow}: a facade that writes frames
 * of its own protocol to the stream. Each is called synchronously in the tick its read or live
 * message arrived in.
 */
export interface EventFollower {
	/** An event after the cursor, in id order, each once: `next` goes on, `stop` ends the following. */
	event(event: StoredEvent): "next" | "stop";
	/** The log no longer holds the events after the cursor (trimmed past a slow reader). */
	trimmed(): void;
	/**
	 * After a pass over the log left nothing to read (also at the periodic re-read while no live
	 * event comes): where the follower checks the store (a run that ended on a replica that died
	 * has no last event). `readToEnd` sends what the log has after the cursor now; `hasQueued`:
	 * live events wait to be sent.
	 */
	idle(reader: { readToEnd(): Promise<unknown>; hasQueued: boolean }): Promise<void>;
}

/** What `rewind` answers: the run that made the cut, the transcript's new length, the branch kept. */
export interface RewindOutcome {
	runId: string;
	messageCount: number;
	branch: SupersededBranch;
}

/** What a prompt came to: a run started here, or the message was queued for the active run. */
export type PromptOutcome = { kind: "started"; run: RunHandle } | ({ kind: "queued" } & QueuedAnswer);

/** What `clearQueue` answers: how many messages went, and the counts left. */
export interface ClearedQueue {
	cleared: number;
	steeringCount: number;
	followUpCount: number;
}

/** What `abort` answers: whether a run was aborted, and which. */
export interface AbortOutcome {
	aborted: boolean;
	runId: string | null;
}

/**
 * What `resolve` delivers: an approval decision, a client tool's result, or the answer to an MCP
 * server's elicitation (`toolCallId` is then the elicitation's id).
 */
export type Resolution =
	| { kind: "approval"; toolCallId: string; value: ApprovalDecision }
	| { kind: "client_tool"; toolCallId: string; value: ClientToolResult }
	| { kind: "elicitation"; toolCallId: string; value: ElicitationAnswer };

/**
 * The operations on one session. Durability: every operation that changes the session resolves
 * only once the change is in the store (a crash after it loses nothing acknowledged).
 * Contract: rejects with a {@link SessionError} for a refusal the caller can act on; anything
 * else (a store failure) rejects as it is.
 */
export interface SessionPort {
	readonly id: string;
	readonly ownerId: string | null;
	/** `local`: this process holds the session (and its run, if any); `remote`: it has no run here. */
	readonly where: "local" | "remote";
	/** The stored record as this port last saw it (config, owner, status, current run). */
	readonly record: SessionRecord;

	/** The session's state as `GET /v1/sessions/:id` returns it (loads the session here when remote). */
	view(): Promise<SessionView>;

	/**
	 * The session's state without loading it: local, {@link view}; remote, from what the store held
	 * when the port was opened (`storedView`: the same on every replica without the run), for a read
	 * that must build nothing here.
	 */
	readView(): Promise<SessionView>;

	/**
	 * Starts a run with `messages`, or per `ifBusy` while one is active (here or on another
	 * replica): `reject` → `AGENT_BUSY`; `steer` / `followUp` → queued as {@link enqueue} does;
	 * `interrupt` → the active run is aborted (wherever it runs) and this one starts once it ended.
	 * `withKey` builds the idempotency record a queued message is stored with.
	 */
	prompt(
		messages: AgentMessage[],
		ifBusy: IfBusy,
		options?: PortRunOptions & { withKey?: (queued: QueuedAnswer) => IdempotencyRecord },
	): Promise<PromptOutcome>;

	/**
	 * Continues from the transcript by the reference's rules: `AGENT_BUSY` while running,
	 * `NOTHING_TO_CONTINUE` on an empty transcript, `CANNOT_CONTINUE_FROM_ASSISTANT` after the
	 * assistant's message with nothing queued.
	 */
	continue(options?: PortRunOptions): Promise<RunHandle>;

	/**
	 * Queues a steering or follow-up message for the active run (or the next one when idle):
	 * durable on resolve, and the replica running the session takes it in. `QUEUE_FULL` /
	 * `QUEUE_TOO_LARGE` past the limits. Remote: two store round trips (the open's reads, the
	 * write) and one Redis publish.
	 */
	enqueue(
		kind: QueueKind,
		message: AgentMessage,
		withKey?: (queued: QueuedAnswer) => IdempotencyRecord,
	): Promise<QueuedAnswer>;

	/** Clears one queue, or both without `kind`; durable on resolve, the running replica told. */
	clearQueue(kind?: QueueKind): Promise<ClearedQueue>;

	/**
	 * Aborts the active run (it still ends with its `agent_end`); queued messages stay. Remote: the
	 * abort is stored before the answer (the replica running it, or one taking it over, honours
	 * it), then that replica is told; `ABORT_NOT_DELIVERED` when Redis did not take the message.
	 */
	abort(): Promise<AbortOutcome>;

	/**
	 * Delivers an approval or a client tool result to the call waiting for it, here or on the
	 * replica running the session (stored as the call's resolution first). Resolves to `resolved`,
	 * or why not: `unknown` (no such call waits), `finished` (answered, timed out or its run ended),
	 * `interrupted` (a restart cut its run short). An elicitation's answer is checked against the
	 * schema the MCP server requested first: `VALIDATION_FAILED` naming the field, and it still waits.
	 */
	resolve(resolution: Resolution): Promise<ResolveOutcome>;

	/**
	 * Validates and stores a config patch, then applies it: here at once, on the replica running the
	 * session when it takes the change in. Resolves to the new view.
	 */
	patch(patch: Partial<SessionConfig>): Promise<SessionView>;

	/** Aborts the session's run wherever it runs, ends its streams, deletes it and everything of it. */
	delete(): Promise<void>;

	/**
	 * Sets the system prompt of the next model calls without storing it (a facade's per-request
	 * instructions; AG-UI's `context`), or restores the stored one with `undefined`. With
	 * `replacing`, only when the prompt in force is that one (a release that must not undo another
	 * request's instructions). Applies only to a run this process starts.
	 */
	setInstructions(systemPrompt: string | undefined, replacing?: string): Promise<void>;

	/**
	 * The ids of the client tool calls that wait for their results now: here (calls a restart
	 * orphaned do not count), or by the store on the replica running the session.
	 */
	waitingToolCalls(): Promise<string[]>;

	/** Resolves once the session has no run going (here, or by the store), or after `maxMs`. */
	runEnded(maxMs: number): Promise<void>;

	/** A page of the stored transcript. */
	messages(offset: number, limit: number): Promise<MessagePage>;

	/**
	 * Ends the transcript with message `toMessageId` (`wh-<index>`), as a run (`AGENT_BUSY` while
	 * one is active, here or on another replica); what followed is kept as a superseded branch and
	 * `transcript_rewound` goes on the stream. Resolves once the cut is stored and its run ended.
	 * `MESSAGE_NOT_FOUND` for an id outside the transcript; `VALIDATION_FAILED` for a cut inside a
	 * tool call round.
	 */
	rewind(toMessageId: string): Promise<RewindOutcome>;

	/**
	 * Supersedes the answer to the last user message and answers it again: one run that rewinds to
	 * that message, then continues. `NOTHING_TO_REGENERATE` when no user message has an answer.
	 */
	regenerate(options?: PortRunOptions): Promise<RunHandle>;

	/**
	 * Replaces user message `messageId` with `message`: one run that rewinds to before it (it and
	 * what followed become a superseded branch), then prompts with `message`.
	 */
	edit(messageId: string, message: AgentMessage, options?: PortRunOptions): Promise<RunHandle>;

	/** The session's superseded branches, oldest first. */
	branches(): Promise<SupersededBranch[]>;

	/**
	 * Streams the session's events to the sink `open` opens (once the session is at hand: a failure
	 * before rejects with nothing opened): after `afterId` when given (a reset snapshot when it is
	 * no longer retained), else a snapshot first; then live, wherever it runs.
	 */
	streamEvents(open: OpenStreamSink, afterId: number | undefined): Promise<void>;

	/**
	 * Streams one run's events to the sink `open` opens: from after `afterId` (its first event
	 * without one) to its end, wherever it runs.
	 */
	streamRun(open: OpenStreamSink, run: RunPosition, afterId: number | undefined): Promise<void>;

	/**
	 * Follows the session's events after `cursor` for a stream that speaks another protocol (the
	 * A2A facade's task streams): each event goes to `follower`, which writes what it makes of it
	 * to `sink` (open already: the follower writes to it before and after); paced by the sink like
	 * the port's own streams; the log first, then live, wherever the session runs. Resolves to what
	 * stops it (the sink's close must call it too).
	 */
	follow(sink: StreamSink, cursor: number, follower: EventFollower): Promise<() => void>;
}

/** Re-exported for implementers. */
export type { SessionError };
