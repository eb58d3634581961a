/**
 * Every way the MCP facade reaches a session, in one place: finding or making the session of a
 * tool call, running the agent on it, remembering which run a call started, and aborting a run
 * wherever it runs. Nothing else in the facade touches a session, the session manager or the
 * cluster, so that pointing the facade at another way of reaching sessions is a change here only.
 *
 * A call's run is started by the process that serves the call, so its events are this process's
 * own. What a later request needs — which run an MCP request id started, for its cancellation,
 * which may reach another replica — is a facade record of the session (`mcp.call`), found by
 * any process that shares the store.
 */
import type { Context as TraceContext } from "@opentelemetry/api";
import type { FastifyInstance } from "fastify";
import type { AgentEvent } from "../../../agent/types.js";
import type { AssistantMessage, Usage, UserMessage } from "../../../ai/types.js";
import { addUsage, zeroUsage } from "../../../ai/usage.js";
import type { RunRecord } from "../../../store/types.js";
import { type AgentProfile, profileSettings } from "../../runtime/profiles.js";
import { startAdmitted } from "../../runtime/session/admission.js";
import { unlessNotFound } from "../../runtime/session/errors.js";
import type { LiveSession } from "../../runtime/session/live-session.js";
import type { PromptOutcome, Resolution, SessionPort } from "../../runtime/session/port.js";
import { pollUntil } from "../poll.js";
import { textOf } from "../text.js";

/** The facade record kind of a tool call's run, keyed by the MCP session id and request id. */
const CALL_RECORD = "mcp.call";
/** The facade record kind of an MCP task (a task-augmented call), keyed by its run id, the task id. */
const TASK_RECORD = "mcp.task";
const POLL_MS = 100;
/** The session events that announce a wait for a human, and what each waits for. */
const WAIT_EVENTS: ReadonlyMap<string, PendingCall["kind"]> = new Map([
	["approval_requested", "approval"],
	["tool_result_requested", "client_tool"],
]);
/** How close to an interrupted run's recovery the run that continues it starts. */
const CONTINUATION_MS = 60_000;

/** What the facade stores of an MCP task when its run starts. */
export interface McpTaskRecord {
	/** The transcript's length before the run's prompt. */
	offset: number;
	createdAt: number;
	ttl: number | null;
}

/** An MCP task as the store has it now. */
export interface McpTaskState {
	status: "working" | "input_required" | "completed" | "failed" | "cancelled";
	statusMessage?: string;
	lastUpdatedAt: number;
}

/** A call that waits for a human: an approval, or the result of a client tool. */
export interface PendingCall {
	kind: "approval" | "client_tool";
	toolCallId: string;
	toolName: string;
	args: unknown;
}

/** How the agent's run came out, for the tool result. */
export interface AgentRunResult {
	sessionId: string;
	runId: string;
	/** All the text of the run's assistant messages. */
	text: string;
	usage: Usage;
	status: "completed" | "aborted" | "error" | "input_required";
	errorMessage?: string;
	/** What the run waits for (status `input_required`). */
	pending: PendingCall[];
}

export interface RunHooks {
	/** A text delta of the answer. Contract: must not throw. */
	delta(text: string): void;
	/**
	 * Asks the client's user for an approval or a client tool's result (elicitation): the call then
	 * waits for the run instead of ending with the pending call. Absent: the call ends with it.
	 * Contract: must not throw.
	 */
	ask?(pending: PendingCall, sessionId: string): void;
	/** The run started (before any of its events): record it for cancellation. */
	started(runId: string, sessionId: string): Promise<void>;
	trace?: TraceContext;
	/** The client cancelled the call: the run is aborted. */
	signal: AbortSignal;
}

type Json = Record<string, any>;

export class McpSessionAccess {
	constructor(private readonly app: FastifyInstance) {}

	private get ctx() {
		return this.app.wheelhouse;
	}

	/** `prompt` through admission: past a run limit under `admission: "queue"` it waits for a slot first. */
	private admitted(
		session: LiveSession,
		signal: AbortSignal | undefined,
		prompt: () => Promise<PromptOutcome>,
	): Promise<PromptOutcome> {
		return startAdmitted(
			this.ctx.admission,
			{ sessionId: session.id, ownerId: session.ownerId, running: session.runId !== undefined },
			prompt,
			(outcome) => (outcome.kind === "started" ? outcome.run : undefined),
			signal ? { signal } : {},
		);
	}

	get profiles(): ReadonlyMap<string, AgentProfile> {
		return this.ctx.profiles;
	}

	get defaultModel(): string {
		return this.ctx.sessions.defaultModel;
	}

	/**
	 * The session a call runs on: `sessionId`'s (undefined when this owner has no such session),
	 * or a new one from `profile` (or the server's defaults).
	 */
	async session(
		ownerId: string | null,
		sessionId: string | undefined,
		profile: { name: string; profile: AgentProfile } | undefined,
	): Promise<LiveSession | undefined> {
		if (sessionId !== undefined) return unlessNotFound(this.ctx.sessions.load(sessionId, ownerId));
		const settings = profile ? profileSettings(profile.name, profile.profile) : {};
		return this.ctx.sessions.create(ownerId, { ...settings, metadata: { ...settings.metadata, facade: "mcp" } });
	}

	/**
	 * Runs the agent on `session` with `message` until the run ends or waits for an approval or a
	 * client tool's result (`approval_requested`, `tool_result_requested`; the run then stays
	 * waiting, as `/v1` leaves it). Refused (`AGENT_BUSY`, a budget, a run limit)
	 * as `/v1` refuses a prompt.
	 */
	async run(session: LiveSession, message: UserMessage, hooks: RunHooks): Promise<AgentRunResult> {
		const usage = zeroUsage();
		let text = "";
		let last: AssistantMessage | undefined;
		const pending: PendingCall[] = [];
		let waiting!: () => void;
		const waits = new Promise<void>((resolve) => {
			waiting = resolve;
		});
		const listener = (event: AgentEvent) => {
			if (event.type === "message_update") {
				const update = event.assistantMessageEvent;
				if (update.type === "text_delta" && update.delta !== "") {
					text += update.delta;
					hooks.delta(update.delta);
				}
			} else if (event.type === "message_end" && event.message.role === "assistant") {
				last = event.message as AssistantMessage;
				if (last.usage) addUsage(usage, last.usage);
			}
		};
		const waitsFor = (call: PendingCall) => {
			if (hooks.ask) {
				hooks.ask(call, session.id);
				return;
			}
			pending.push(call);
			waiting();
		};
		const unsubscribe = session.observe({
			event: (event) => {
				if (event.agent) listener(event.agent);
				// Both are published once the wait's store write was called (the barrier makes it durable
				// before the call ends or the client is asked), so an answer can reach any replica.
				const kind = WAIT_EVENTS.get(event.type);
				if (!kind) return;
				const data = JSON.parse(event.data) as Json;
				waitsFor({ kind, toolCallId: data.toolCallId, toolName: data.toolName, args: data.args });
			},
			unlogged: listener,
			close() {},
		});
		const onAbort = () => session.abort();
		try {
			// Past a run limit under `admission: "queue"` the call waits for a slot (bounded).
			const result = await this.admitted(session, hooks.signal, () =>
				session.prompt([message], "reject", hooks.trace ? { trace: hooks.trace } : {}),
			);
			if (result.kind !== "started") throw new Error("the prompt was queued, not started");
			const run = result.run;
			await hooks.started(run.id, session.id);
			if (hooks.signal.aborted) onAbort();
			else hooks.signal.addEventListener("abort", onAbort, { once: true });
			await Promise.race([run.done, waits]);
			const status =
				pending.length > 0 && session.runId === run.id
					? "input_required"
					: last?.stopReason === "aborted"
						? "aborted"
						: last?.stopReason === "error" || !last
							? "error"
							: "completed";
			return {
				sessionId: session.id,
				runId: run.id,
				text,
				usage,
				status,
				...(status === "error" ? { errorMessage: last?.errorMessage ?? "The run ended without an answer." } : {}),
				pending: status === "input_required" ? pending : [],
			};
		} finally {
			hooks.signal.removeEventListener("abort", onAbort);
			unsubscribe();
		}
	}

	/**
	 * Starts a run for an MCP task and stores the task's record (durably when this resolves); the
	 * run goes on after the request that started it.
	 */
	async startTask(
		session: LiveSession,
		message: UserMessage,
		ttl: number | null,
		trace?: TraceContext,
	): Promise<{ runId: string; record: McpTaskRecord }> {
		const offset = session.messageCount;
		const result = await this.admitted(session, undefined, () =>
			session.prompt([message], "reject", trace ? { trace } : {}),
		);
		if (result.kind !== "started") throw new Error("the prompt was queued, not started");
		const record: McpTaskRecord = { offset, createdAt: Date.now(), ttl };
		await this.ctx.sessions.store.putFacadeRecords(
			session.id,
			[{ kind: TASK_RECORD, key: result.run.id, data: JSON.stringify(record) }],
			Date.now(),
		);
		return { runId: result.run.id, record };
	}

	/** The MCP task `taskId` of this owner (another owner's is not found). */
	async findTask(
		ownerId: string | null,
		taskId: string,
	): Promise<{ session: SessionPort; record: McpTaskRecord } | undefined> {
		const [found] = await this.ctx.sessions.store.findFacadeRecords(TASK_RECORD, taskId, ownerId, 1);
		if (!found) return undefined;
		try {
			// Through the port: a task whose run is on another replica is read (and cancelled) from the store.
			const session = await this.ctx.sessions.open(found.sessionId, ownerId);
			return { session, record: JSON.parse(found.data) as McpTaskRecord };
		} catch {
			return undefined;
		}
	}

	/**
	 * The run that carries task `runId` now: the run itself, or — when its process died and the
	 * session went on from where it stopped (`onInterrupt: "continue"`, on the restarted server or
	 * the replica that took it over) — the run that continued it.
	 */
	private async carrier(session: { id: string }, runId: string): Promise<RunRecord | undefined> {
		const runs = await this.ctx.sessions.store.listRuns(session.id, 1000);
		let index = runs.findIndex((r) => r.id === runId);
		while (index >= 0 && runs[index]?.status === "interrupted") {
			const next = runs[index + 1];
			const recoveredAt = runs[index]?.endedAt ?? 0;
			if (!next || next.startedAt < recoveredAt - CONTINUATION_MS || next.startedAt > recoveredAt + CONTINUATION_MS)
				break;
			index++;
		}
		return runs[index];
	}

	/** The task's state: the record of the run that carries it, and what that run waits for. */
	async taskState(session: { id: string }, runId: string, record: McpTaskRecord): Promise<McpTaskState> {
		const store = this.ctx.sessions.store;
		const run = await this.carrier(session, runId);
		const lastUpdatedAt = run?.endedAt ?? run?.startedAt ?? record.createdAt;
		switch (run?.status) {
			case undefined:
			case "running": {
				const pending = run ? await store.listPending(session.id) : [];
				return pending.length > 0
					? {
							status: "input_required",
							statusMessage: `The run waits for ${pending.map((p) => waitingFor(session.id, p)).join(", ")}.`,
							lastUpdatedAt,
						}
					: { status: "working", lastUpdatedAt };
			}
			case "completed":
				return { status: "completed", lastUpdatedAt };
			case "aborted":
				return { status: "cancelled", lastUpdatedAt };
			default:
				return {
					status: "failed",
					statusMessage: run?.errorMessage ?? "The run was interrupted (its process died).",
					lastUpdatedAt,
				};
		}
	}

	/** The answer of an ended task's run: its assistant text and usage. */
	async taskAnswer(
		session: { id: string },
		runId: string,
		record: McpTaskRecord,
	): Promise<{ text: string; usage: Usage }> {
		const store = this.ctx.sessions.store;
		const run = await this.carrier(session, runId);
		const page = await store.listMessages(session.id, { offset: record.offset, limit: 1000 });
		const endedAt = run?.endedAt ?? Number.POSITIVE_INFINITY;
		let text = "";
		for (const [i, message] of (page?.messages ?? []).entries()) {
			const m = message as { role?: string; timestamp?: number; content?: unknown };
			// A run started after this one (over /v1) begins with a message made after it ended.
			if (i > 0 && (m.timestamp ?? 0) > endedAt) break;
			if (m.role !== "assistant" || !Array.isArray(m.content)) continue;
			text += textOf(m.content);
		}
		return { text, usage: run?.usage ?? zeroUsage() };
	}

	/** Aborts the run that carries task `taskId` wherever it runs; resolves once the store has it ended. */
	async abortTask(session: SessionPort, taskId: string): Promise<void> {
		const run = await this.carrier(session, taskId);
		if (run) await this.abortRun(session, run.id);
	}

	/** Aborts run `runId` wherever it runs; resolves once the store has it ended (or after `waitMs`). */
	async abortRun(port: SessionPort, runId: string, waitMs = 10_000): Promise<void> {
		if (port.record.status === "running" && port.record.currentRunId === runId) await port.abort();
		await this.waitUntil(waitMs, async () => {
			const record = await this.ctx.sessions.store.getSession(port.id);
			return record?.status !== "running" || record.currentRunId !== runId;
		});
	}

	/** Polls `done` until it holds, `waitMs` passed or `signal` fired. */
	async waitUntil(waitMs: number, done: () => Promise<boolean>, signal?: AbortSignal): Promise<void> {
		await pollUntil(waitMs, POLL_MS, done, signal);
	}

	/** Remembers that MCP request `key` started run `runId` (durably when this resolves). */
	async recordCall(sessionId: string, key: string, runId: string): Promise<void> {
		await this.ctx.sessions.store.putFacadeRecords(
			sessionId,
			[{ kind: CALL_RECORD, key, data: JSON.stringify({ runId }) }],
			Date.now(),
		);
	}

	/**
	 * Answers what a call of one of this owner's sessions waits for (an approval, a client tool's
	 * result), wherever its run runs. False when there is no such session.
	 */
	async answer(ownerId: string | null, sessionId: string, resolution: Resolution): Promise<boolean> {
		let session: SessionPort;
		try {
			session = await this.ctx.sessions.open(sessionId, ownerId);
		} catch {
			return false;
		}
		await session.resolve(resolution);
		return true;
	}

	/**
	 * Aborts the run MCP request `key` started, wherever it runs (a cancellation may reach any
	 * replica). False when this owner has no such call.
	 */
	async cancelCall(ownerId: string | null, key: string): Promise<boolean> {
		const [found] = await this.ctx.sessions.store.findFacadeRecords(CALL_RECORD, key, ownerId, 1);
		if (!found) return false;
		const { runId } = JSON.parse(found.data) as { runId: string };
		let session: SessionPort;
		try {
			session = await this.ctx.sessions.open(found.sessionId, ownerId);
		} catch {
			return false;
		}
		if (session.record.status === "running" && session.record.currentRunId === runId) await session.abort();
		return true;
	}
}

/** What one pending interaction waits for, and the `/v1` route that answers it. */
function waitingFor(sessionId: string, p: { kind: string; toolCallId: string }): string {
	const base = `/v1/sessions/${sessionId}`;
	switch (p.kind) {
		case "approval":
			return `approval of call ${p.toolCallId} (POST ${base}/approvals/${p.toolCallId})`;
		case "elicitation":
			return `an answer to MCP server question ${p.toolCallId} (POST ${base}/elicitations/${p.toolCallId})`;
		default:
			return `the result of client tool call ${p.toolCallId} (POST ${base}/tool-results/${p.toolCallId})`;
	}
}
