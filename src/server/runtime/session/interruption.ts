/**
 * What happens to one session whose run died with its process, once a live process holds the
 * session: a restarted server for each run the last process left active, or (in a cluster) the
 * replica that took over a session from a lost one. {@link resumeInterruptedSession} settles the
 * dead run on the session's stream, with the next event ids, so a client watching the session or
 * resuming with `Last-Event-ID` learns everything from the stream alone, then applies the
 * session's `onInterrupt` policy:
 *
 * 1. `approval_resolved` `{kind: "interrupted"}` for each approval that was waiting (its stored
 *    interaction is resolved; the tool did not run). A waiting client-side tool call is resolved
 *    too (its `tool_execution_end` follows), and `elicitation_resolved` `{kind: "interrupted"}` goes
 *    out for each question an MCP server was asking (its request died with the process: the
 *    answer can no longer reach it, so answering it is refused, and its tool call is never run again).
 * 2. For each tool call of the last assistant message without a result: with `"continue"`, a call
 *    of an idempotent tool (`isIdempotentTool`) that had not been waiting for a human or a client
 *    is run again, its result recorded as the loop records one (`tool_execution_end`,
 *    `message_start`, `message_end`); every other call gets an error result saying its result was
 *    not recorded and it may or may not have taken effect (a call that waited for approval: that
 *    it did not run and may be called again, which asks for approval again).
 * 3. `run_interrupted` `{runId, reason, interruptedAt, willContinue, message}`: the dead run is
 *    over, no `agent_end` of it follows; a message that was streaming was not kept.
 * 4. With `"continue"`: a new run continues from the last stored message, as `POST /continue`
 *    does; its `agent_start` follows `run_interrupted` at once and it ends with `agent_end` (and
 *    its `run.completed` / `run.failed` webhook) as any run. With `"stop"`, or when the session
 *    cannot be continued (its last message is a complete answer with nothing queued, a budget is
 *    spent, the server is stopping), the session stays `interrupted` until a client continues it;
 *    `willContinue: false` says so.
 */
import type { AgentEvent, AgentMessage, AgentTool } from "../../../agent/types.js";
import type { ToolCall, ToolResultMessage } from "../../../ai/types.js";
import { validateToolArguments } from "../../../ai/validation.js";
import type { SessionRecord, SessionStore } from "../../../store/types.js";
import { INTERRUPTED_RESOLUTION, isIdempotentTool, type StoredPending } from "../../../tools/index.js";
import {
	type ApprovalResolvedEvent,
	type ElicitationResolvedEvent,
	encodeWireData,
	type RunInterruptedEvent,
} from "../../../wire/events.js";
import { SessionError } from "./errors.js";
import { type InterruptionReason, interruptedToolResult, unansweredToolCalls } from "./interrupted-results.js";
import type { SessionManager } from "./manager.js";

export type { InterruptionReason };

/** What {@link resumeInterruptedSession} needs of the server: its sessions, and the tools' approval policy. */
export interface ResumeContext {
	sessions: SessionManager;
	/** The server's approval rules (the config's `tools.approval`), which a resumed run applies again. */
	toolApprovalPolicy?: (toolName: string, sessionRules: Record<string, "always" | "never">) => "always" | "never";
}

/** What {@link resumeInterruptedSession} did. */
export type ResumeOutcome =
	/** A new run continues the session. */
	| { kind: "continued"; sessionId: string; interruptedRunId: string | null; runId: string }
	/** The interruption is recorded; the session waits for a client (`why` says why). */
	| { kind: "stopped"; sessionId: string; interruptedRunId: string | null; why: string }
	/** Nothing to do: the session does not exist, or it is not interrupted (a client went on with it first). */
	| { kind: "skipped"; sessionId: string; why: string };

/** How much of the transcript's end is read to find the last assistant message and its results. */
const TAIL = 1000;

/**
 * How long a tool run again may take. The server does not listen while it runs (at startup), so a
 * tool that never returns must not hold it; the tool's signal is aborted then, and the call gets an
 * error result.
 */
export const RERUN_TIMEOUT_MS = 120_000;

/**
 * Settles the interrupted run of session `sessionId` on its stream and applies its `onInterrupt`
 * policy (see the file comment). Call it once per interrupted run, in the process that now holds
 * the session, after the app is ready (tools registered, MCP servers connected):
 *
 * - on one node, at startup for each session `SessionStore.recoverInterrupted` returned, before
 *   the server listens (`resumeAfterRestart` in recovery.ts does this);
 * - in a cluster, by the replica that claimed the session of a lost one. A session the store
 *   still has `running` is marked interrupted first (`recoverInterrupted` for this session only,
 *   with its `run.interrupted` webhook). The session must not be in this process's memory with
 *   a transcript older than the store's.
 *
 * With `stopBecause` the run is not continued and no tool is run again, whatever the policy (an
 * abort of it was posted while its replica was dying); `run_interrupted` says why.
 *
 * A second call for the same interruption does nothing (`skipped`). Durable when it resolves (the
 * store is flushed): the events, the results, the continued run's start. The continued run goes
 * on in the background. A tool run again delays it (at most {@link RERUN_TIMEOUT_MS}). Never rejects for the session's state (a
 * value says what happened); rejects only when the store does.
 */
export async function resumeInterruptedSession(
	ctx: ResumeContext,
	sessionId: string,
	reason: InterruptionReason,
	at: number = Date.now(),
	stopBecause?: string,
): Promise<ResumeOutcome> {
	const { sessions } = ctx;
	const store = sessions.store;
	if ([...sessions.liveSessions()].some((s) => s.id === sessionId && s.isBusy)) {
		return { kind: "skipped", sessionId, why: "a run of this process is active" };
	}
	let record = await store.getSession(sessionId);
	if (record?.status === "running") {
		// A dead replica's run: this process took the session over.
		await store.recoverInterrupted(at, undefined, [sessionId]);
		record = await store.getSession(sessionId);
	}
	if (!record) return { kind: "skipped", sessionId, why: "no such session" };
	if (record.status !== "interrupted") return { kind: "skipped", sessionId, why: `the session is ${record.status}` };
	const interruptedAt = record.interruptedAt ?? at;
	const runId = record.currentRunId;
	const policy = stopBecause === undefined ? (record.onInterrupt ?? "continue") : "stop";

	// The stored interactions are settled before the session is loaded: the tools extension reads
	// them when it loads the session, and must find none waiting.
	if (!(await store.openSession(sessionId))) return { kind: "skipped", sessionId, why: "no such session" };
	if (await alreadyAnnounced(store, sessionId, runId)) {
		return { kind: "skipped", sessionId, why: "its interruption was settled already; it waits for a client" };
	}
	const pending = await store.listPending(sessionId, { includeResolved: true });
	const waiting = pending.filter((p) => p.resolvedAt === null);
	for (const interaction of waiting) {
		await store.resolvePending(sessionId, interaction.toolCallId, INTERRUPTED_RESOLUTION, at);
	}
	const approvalsWaiting = waiting.filter((p) => p.kind === "approval");
	for (const interaction of approvalsWaiting) {
		const payload = JSON.parse(interaction.payload) as { toolName?: string };
		const resolved: Omit<ApprovalResolvedEvent, "type"> = {
			toolCallId: interaction.toolCallId,
			toolName: payload.toolName ?? "",
			outcome: { kind: "interrupted" },
		};
		appendServerEvent(store, sessionId, "approval_resolved", resolved, at);
	}
	const elicitedCalls = new Set<string>();
	for (const interaction of waiting.filter((p) => p.kind === "elicitation")) {
		const payload = JSON.parse(interaction.payload) as { toolName?: string; args?: { toolCallId?: string } };
		const toolCallId = payload.args?.toolCallId ?? "";
		elicitedCalls.add(toolCallId);
		const resolved: Omit<ElicitationResolvedEvent, "type"> = {
			elicitationId: interaction.toolCallId,
			toolCallId,
			toolName: payload.toolName ?? "",
			outcome: { kind: "interrupted" },
		};
		appendServerEvent(store, sessionId, "elicitation_resolved", resolved, at);
	}

	// The calls cut short get their results: run again, or an error.
	const total = (await store.countMessages(sessionId)) ?? 0;
	const tail =
		(await store.listMessages(sessionId, { offset: Math.max(0, total - TAIL), limit: TAIL }))?.messages ?? [];
	const unanswered = unansweredToolCalls(tail);
	const waitedForApproval = new Set(approvalsWaiting.map((p) => p.toolCallId));
	const waitedForClient = new Set(waiting.filter((p) => p.kind !== "approval").map((p) => p.toolCallId));
	for (const call of unanswered) {
		const tool = policy === "continue" ? sessions.tools.get(call.name) : undefined;
		const rerun =
			tool &&
			isIdempotentTool(tool) &&
			!waitedForApproval.has(call.id) &&
			!waitedForClient.has(call.id) &&
			!elicitedCalls.has(call.id) &&
			mayRunWithoutAsking(ctx, record, call, pending);
		const result = rerun
			? await runAgain(tool, call)
			: interruptedToolResult(call, reason, waitedForApproval.has(call.id) ? "approval" : "running");
		store.appendMessages(sessionId, [result]);
		const events: AgentEvent[] = [
			{
				type: "tool_execution_end",
				toolCallId: result.toolCallId,
				toolName: result.toolName,
				result: { content: result.content, details: result.details ?? {} },
				isError: result.isError,
			},
			{ type: "message_start", message: result as AgentMessage },
			{ type: "message_end", message: result as AgentMessage },
		];
		for (const event of events) store.appendEvent(sessionId, event.type, encodeWireData(event), at);
	}
	await store.flush();

	// The session in memory, with the transcript as it is now.
	const session = await sessions.load(sessionId, null);
	const interrupted = (willContinue: boolean, why: string): Omit<RunInterruptedEvent, "type"> => ({
		runId,
		reason,
		interruptedAt,
		willContinue,
		message: `${reason === "server_restart" ? "The server stopped" : "The server replica running this session was lost"} during this run; ${why}`,
	});
	let why = `${stopBecause ?? "its onInterrupt policy is stop."} POST /v1/sessions/:id/continue resumes the session.`;
	if (policy === "continue") {
		try {
			const run = await session.continue({
				attach: (started) => {
					session.publish(
						"run_interrupted",
						interrupted(true, `a new run (${started.id}) continues from the last stored message.`),
					);
					session.notifyRunEnd(runId, "interrupted");
				},
			});
			await store.flush();
			return { kind: "continued", sessionId, interruptedRunId: runId, runId: run.id };
		} catch (err) {
			if (!(err instanceof SessionError)) throw err;
			why = `it could not continue by itself (${err.message}). POST /v1/sessions/:id/continue resumes the session.`;
		}
	}
	session.publish("run_interrupted", interrupted(false, why));
	session.notifyRunEnd(runId, "interrupted");
	await store.flush();
	return { kind: "stopped", sessionId, interruptedRunId: runId, why };
}

/** Whether the session's last event is the `run_interrupted` of run `runId` (a second call changes nothing). */
async function alreadyAnnounced(store: SessionStore, sessionId: string, runId: string | null): Promise<boolean> {
	const last = store.lastEventId(sessionId) ?? 0;
	if (last === 0) return false;
	const [event] = await store.readEvents(sessionId, last - 1, 1);
	if (event?.id !== last || event.type !== "run_interrupted") return false;
	return (JSON.parse(event.data) as { runId?: unknown }).runId === runId;
}

function appendServerEvent(store: SessionStore, sessionId: string, type: string, payload: object, at: number): void {
	store.appendEvent(sessionId, type, JSON.stringify({ ...payload, type }), at);
}

/**
 * Whether `call` may run without a human's decision now: its tool needs none for this session,
 * or a human approved this very call before the process died.
 */
function mayRunWithoutAsking(
	ctx: ResumeContext,
	record: SessionRecord,
	call: ToolCall,
	pending: StoredPending[],
): boolean {
	if ((ctx.toolApprovalPolicy?.(call.name, record.toolApprovals) ?? "never") === "never") return true;
	const decided = pending.find((p) => p.kind === "approval" && p.toolCallId === call.id && p.resolution !== null);
	if (!decided?.resolution) return false;
	return (JSON.parse(decided.resolution) as { approve?: unknown }).approve === true;
}

/**
 * Runs `call` of an idempotent tool again: its result, or an error result as the loop makes one
 * (also when it takes longer than {@link RERUN_TIMEOUT_MS}).
 */
async function runAgain(tool: AgentTool<any>, call: ToolCall): Promise<ToolResultMessage> {
	const controller = new AbortController();
	let timer: NodeJS.Timeout | undefined;
	const timeout = new Promise<never>((_, reject) => {
		timer = setTimeout(() => {
			const error = new Error(
				`The tool call was interrupted before its result was recorded; running it again did not finish within ${RERUN_TIMEOUT_MS / 1000} s.`,
			);
			controller.abort(error);
			reject(error);
		}, RERUN_TIMEOUT_MS);
	});
	try {
		const prepared = tool.prepareArguments ? { ...call, arguments: tool.prepareArguments(call.arguments) } : call;
		const args = validateToolArguments(tool, prepared);
		const result = await Promise.race([tool.execute(call.id, args, controller.signal), timeout]);
		return {
			role: "toolResult",
			toolCallId: call.id,
			toolName: call.name,
			content: result.content,
			details: result.details,
			isError: false,
			timestamp: Date.now(),
		};
	} catch (err) {
		return {
			role: "toolResult",
			toolCallId: call.id,
			toolName: call.name,
			content: [{ type: "text", text: err instanceof Error ? err.message : String(err) }],
			details: {},
			isError: true,
			timestamp: Date.now(),
		};
	} finally {
		clearTimeout(timer);
	}
}
