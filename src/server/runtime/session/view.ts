/**
 * The state of a session as clients see it: the JSON of `GET /v1/sessions/:id`, and the
 * `session_snapshot` frame a new subscriber (or one whose resume point was trimmed) starts with.
 */
import type { AgentMessage, AgentState } from "../../../agent/types.js";
import type { Usage } from "../../../ai/types.js";
import { addUsage, zeroUsage } from "../../../ai/usage.js";
import type {
	OnInterruptPolicy,
	PendingInteraction,
	QueuedMessage,
	QueueKind,
	SessionRecord,
	SessionVisibility,
} from "../../../store/types.js";
import type { SseEventName } from "../../../wire/events.js";
import { formatFrame } from "../../../wire/sse-frames.js";
import type { QueueEntryView, SessionQueues } from "./queues.js";

/** The JSON shape of a session's state. */
export interface SessionView {
	id: string;
	createdAt: number;
	updatedAt: number;
	model: string;
	systemPrompt: string;
	thinkingLevel: string;
	tools: string[];
	activeTools: string[];
	toolExecution: string;
	steeringMode: string;
	followUpMode: string;
	onInterrupt: OnInterruptPolicy;
	metadata: Record<string, string>;
	/** Who sees it besides its owner (store/visibility.ts). */
	visibility: SessionVisibility;
	/** Its owner's tenant at creation; null without one. */
	tenant: string | null;
	status: "idle" | "running" | "interrupted";
	interruptedAt: number | null;
	runId: string | null;
	isStreaming: boolean;
	pendingToolCalls: string[];
	errorMessage: string | null;
	queue: {
		steering: QueueEntryView[];
		followUp: QueueEntryView[];
		steeringCount: number;
		followUpCount: number;
	};
	messageCount: number;
	lastEventId: number;
	usage: Usage;
	[extra: string]: unknown;
}

/** What the view is built from. */
export interface ViewParts {
	/** The stored record (config, status, usage of ended runs). */
	record: SessionRecord;
	agent: Pick<AgentState, "isStreaming" | "pendingToolCalls" | "errorMessage"> & { tools: readonly { name: string }[] };
	/** Messages in the whole transcript (the Agent holds only its window). */
	messageCount: number;
	busy: boolean;
	/** The active run: its id and the usage it has so far (added to the stored usage). */
	activeRun: { id: string; usage: Usage } | undefined;
	queues: Pick<SessionQueues, "view" | "counts">;
	lastEventId: number;
	/** Fields the session's extensions add. */
	extra: Record<string, unknown>;
}

/** Session state as `GET /v1/sessions/:id` returns it. */
export function sessionView(parts: ViewParts): SessionView {
	const { record: r, agent: state, activeRun, busy } = parts;
	const usage = zeroUsage();
	addUsage(usage, r.usage);
	if (activeRun) addUsage(usage, activeRun.usage);
	return {
		id: r.id,
		createdAt: r.createdAt,
		updatedAt: r.updatedAt,
		model: r.model,
		systemPrompt: r.systemPrompt,
		thinkingLevel: r.thinkingLevel,
		tools: r.tools,
		activeTools: state.tools.map((t) => t.name),
		toolExecution: r.toolExecution,
		steeringMode: r.steeringMode,
		followUpMode: r.followUpMode,
		onInterrupt: r.onInterrupt,
		metadata: r.metadata,
		visibility: r.visibility,
		tenant: r.tenant,
		// A run the store has as running without a run here runs on another replica (cluster mode).
		status: busy || r.status === "running" ? "running" : r.status === "interrupted" ? "interrupted" : "idle",
		interruptedAt: busy ? null : r.interruptedAt,
		runId: activeRun?.id ?? (r.status === "running" ? r.currentRunId : null),
		isStreaming: state.isStreaming,
		pendingToolCalls: [...state.pendingToolCalls],
		errorMessage: state.errorMessage ?? null,
		queue: {
			steering: parts.queues.view("steer"),
			followUp: parts.queues.view("followUp"),
			...parts.queues.counts(),
		},
		messageCount: parts.messageCount,
		lastEventId: parts.lastEventId,
		usage,
		...parts.extra,
	};
}

/** What the store holds of a session, read in one round trip (`SessionManager.open`). */
export interface StoredSession {
	record: SessionRecord;
	queued: QueuedMessage[];
	/** Its waiting calls, the resolved ones too. */
	pending: PendingInteraction[];
}

/**
 * The state of a session that is not in memory here, from what the store holds: as
 * {@link sessionView} gives it for the session loaded with no run here (no partial message, no
 * tool call executing, the stored usage), without loading it. `activeTools`: the names its tools
 * resolve to; `extra`: the fields the extensions give from the store.
 */
export function storedView(
	stored: StoredSession,
	activeTools: readonly string[],
	extra: Record<string, unknown>,
): SessionView {
	const { record, queued } = stored;
	const entries = (kind: QueueKind): QueueEntryView[] =>
		queued.filter((e) => e.kind === kind).map((e) => ({ id: e.id, message: e.message, createdAt: e.createdAt }));
	return sessionView({
		record,
		agent: { tools: activeTools.map((name) => ({ name })), isStreaming: false, pendingToolCalls: new Set() },
		messageCount: record.messageCount,
		busy: false,
		activeRun: undefined,
		queues: {
			view: entries,
			counts: () => {
				const steeringCount = queued.filter((e) => e.kind === "steer").length;
				return { steeringCount, followUpCount: queued.length - steeringCount };
			},
		},
		lastEventId: record.lastEventId,
		extra,
	});
}

/** What a snapshot is taken of (a live session). */
export interface Snapshottable {
	readonly lastEventId: number;
	view(): SessionView;
	/** The in-flight partial message, if one is streaming. */
	readonly streamingMessage: AgentMessage | undefined;
}

/** The `session_snapshot` frame: the session state now, with the in-flight partial message. */
export function snapshotFrame(session: Snapshottable, reset: boolean): { id: number; frame: string } {
	const id = session.lastEventId;
	const data = JSON.stringify({
		type: "session_snapshot",
		...(reset ? { reset: true } : {}),
		lastEventId: id,
		state: session.view(),
		...(session.streamingMessage ? { streamingMessage: session.streamingMessage } : {}),
	});
	// The snapshot carries the id of the last event it reflects: resuming from it is exact.
	return { id, frame: formatFrame({ id, event: "session_snapshot" satisfies SseEventName, data }) };
}
