/**
 * Client-side tools and human approval for sessions: the session extension that gives
 * each session its declared client tools, its approval hook and its pending interactions, and
 * the operations the `tool-results` and `approvals` routes call.
 *
 * Events on the session stream: `approval_requested` (toolCallId, toolName, args, expiresAt)
 * when a call waits for a decision, `approval_resolved` (toolCallId, toolName, outcome) when the
 * wait ends; `tool_result_requested` (toolCallId, toolName, args, expiresAt) when a client tool's
 * call waits for its result (after the loop's `tool_execution_start`, and after the approval when
 * the tool asks for one), ended by the call's own `tool_execution_end` whatever ended it. Each
 * is published after the wait's store write was called, so the commit barrier makes the wait
 * durable before the event reaches any client or replica. Pending approvals and client tool
 * calls are in the session state (`pendingApprovals`, `pendingClientToolCalls`), so
 * `GET /v1/sessions/:id` and every new subscriber's `session_snapshot` show them; resuming with
 * `Last-Event-ID` replays the events themselves. When the process dies while a call waits,
 * startup recovery (recovery.ts) ends the wait in the store and on the stream (`approval_resolved`
 * with outcome `interrupted`; a client tool's call its `tool_execution_end`); answering it then
 * gets a 409 that names the restart.
 *
 * An MCP server that asks for input during one of the session's tool calls (elicitation,
 * elicitations.ts) makes a pending interaction of kind `elicitation`: `elicitation_requested`
 * (elicitationId, server, toolCallId, toolName, message, requestedSchema, expiresAt) on the
 * stream, `pendingElicitations` in the state, and `elicitation_resolved` (outcome `accepted` with
 * the content, `declined`, `cancelled`, `timeout`, `aborted`, or `interrupted` from startup
 * recovery) when it ends. The answer goes back to the MCP server; the tool call goes on. After a
 * restart the MCP request is gone with the process, so an interrupted elicitation cannot be
 * answered (409 `ELICITATION_INTERRUPTED`).
 *
 * A session's declarations (`clientTools`, `toolApprovals`) are part of its stored config: `POST`,
 * `PATCH` and `PUT .../tool-declarations` write them to the store, and this extension reads them
 * from the session's record, so they survive eviction and restarts.
 */
import { randomUUID } from "node:crypto";
import { Type } from "@sinclair/typebox";
import type { AgentEvent } from "../../../agent/types.js";
import type { SessionStore } from "../../../store/types.js";
import {
	type ApprovalDecision,
	ApprovalPolicyEnum,
	type ApprovalRules,
	approvalRuleProblems,
	type BeforeToolCallHook,
	type ClientAgentTool,
	type ClientToolResult,
	type ClientToolSpec,
	ClientToolSpecSchema,
	createApprovalHook,
	createClientTool,
	type ElicitationAnswer,
	INTERRUPTED_RESOLUTION,
	type McpElicitation,
	type McpElicitationResult,
	PendingInteractions,
	type PendingKind,
	type PendingRequest,
	type ResolveOutcome,
	type ServerTools,
	storedRequest,
	validateClientToolSpecs,
} from "../../../tools/index.js";
import { type ElicitationArgs, PendingElicitationView, publicElicitation } from "./elicitations.js";
import { sessionError } from "./errors.js";
import type { LiveSession, SessionExtension } from "./live-session.js";
import type { StoredSession } from "./view.js";

/** Fields of `POST /v1/sessions` for client-side tools and per-session approval policies. */
export const CreateSessionToolFields = {
	clientTools: Type.Optional(
		Type.Array(ClientToolSpecSchema, {
			maxItems: 128,
			description:
				"Tools the client executes: a call waits (tool_result_requested) for POST .../tool-results/:toolCallId",
		}),
	),
	toolApprovals: Type.Optional(
		Type.Record(Type.String(), ApprovalPolicyEnum, {
			description:
				'Approval policy per tool name (or `prefix*`) for this session; wins over the server config. "always" waits for POST .../approvals/:toolCallId',
		}),
	),
};

const PendingView = Type.Object(
	{
		toolCallId: Type.String(),
		toolName: Type.String(),
		args: Type.Unknown(),
		createdAt: Type.Number(),
		expiresAt: Type.Number({ description: "When the wait times out (epoch ms)" }),
		orphaned: Type.Optional(
			Type.Boolean({ description: "Left by a previous server process; can no longer be answered" }),
		),
	},
	{ title: "PendingToolCall" },
);

/** Fields the extension adds to the session state (`GET /v1/sessions/:id`, `session_snapshot`). */
export const SessionToolStateFields = {
	pendingApprovals: Type.Optional(Type.Array(PendingView, { description: "Tool calls waiting for approval" })),
	pendingClientToolCalls: Type.Optional(
		Type.Array(PendingView, { description: "Client tool calls waiting for a result" }),
	),
	pendingElicitations: Type.Optional(
		Type.Array(PendingElicitationView, {
			description: "Questions MCP servers ask during the session's tool calls, waiting for an answer",
		}),
	),
	clientTools: Type.Optional(Type.Array(ClientToolSpecSchema)),
	toolApprovals: Type.Optional(Type.Record(Type.String(), ApprovalPolicyEnum)),
};

/** What `POST /v1/sessions` and `PATCH` may declare for tools (besides `tools`). */
export interface ToolDeclarations {
	clientTools?: ClientToolSpec[];
	/** Per-session approval policies; they win over the server's. */
	toolApprovals?: ApprovalRules;
}

/** Fields of `PUT /v1/sessions/:id/tool-declarations` (the same as in `PATCH`; a field left out stays as it is). */
export const ToolDeclarationsBody = Type.Object(CreateSessionToolFields, {
	additionalProperties: false,
	description: "Fields to change; a field left out stays as it is.",
});

export interface ToolInteractionsOptions {
	serverTools: ServerTools;
	store: SessionStore;
	approvalTimeoutMs: number;
	clientToolTimeoutMs: number;
	/** Names of the server's tools (client tools may not shadow them). */
	serverToolNames: () => Iterable<string>;
}

interface SessionEntry {
	/** The live object of the session (a session evicted from memory and reloaded is a new object). */
	session: LiveSession;
	pending: PendingInteractions;
	/** The declarations `clientTools` was built from (the record's array; a new one after each config change). */
	builtFrom: ClientToolSpec[] | undefined;
	clientTools: ClientAgentTool[];
	hook: BeforeToolCallHook;
	/** The live object for which what the store holds (a previous process's waits) was taken in. */
	adopted: LiveSession | undefined;
}

const publicRequest = (r: PendingRequest) => ({
	toolCallId: r.toolCallId,
	toolName: r.toolName,
	args: r.args,
	createdAt: r.createdAt,
	expiresAt: r.expiresAt,
	...(r.orphaned ? { orphaned: true } : {}),
});

export class ToolInteractions implements SessionExtension {
	readonly name = "tool-interactions";
	readonly events = ["agent_start", "tool_execution_start", "tool_execution_end", "agent_end"] as const;
	private readonly entries = new Map<string, SessionEntry>();
	/** The sessions whose tool call of this id runs now (an MCP server's elicitation names only the call). */
	private readonly runningCalls = new Map<string, Set<LiveSession>>();

	constructor(private readonly options: ToolInteractionsOptions) {}

	/**
	 * Throws 400 `VALIDATION_FAILED` (naming the field) for bad declarations: a bad client tool, or
	 * an approval rule that names no tool and matches none — checked against the server's tools,
	 * the session's client tools (`clientTools`: those it will have), and the prefixes of MCP
	 * servers not connected now (whose tools are not known yet).
	 */
	validate(input: ToolDeclarations, clientTools: ClientToolSpec[] = input.clientTools ?? []): void {
		if (input.clientTools && input.clientTools.length > 0) {
			const problems = validateClientToolSpecs(input.clientTools, this.options.serverToolNames());
			if (problems.length > 0) throw sessionError("VALIDATION_FAILED", `body.${problems[0]}`, { problems });
		}
		if (!input.toolApprovals) return;
		const names = [...this.options.serverToolNames(), ...clientTools.map((spec) => spec.name)];
		const unmatched = approvalRuleProblems(input.toolApprovals, this.options.serverTools.approvalTargets(names));
		if (unmatched.length > 0) {
			const fields = unmatched.map((p) => `body.toolApprovals.${p.entry}: ${p.message}`);
			throw sessionError("VALIDATION_FAILED", fields[0]!, { problems: fields });
		}
	}

	beforeCreate(input: ToolDeclarations): void {
		this.validate(input);
	}

	beforeUpdate(session: LiveSession, patch: ToolDeclarations): void {
		this.validate(patch, patch.clientTools ?? session.config.clientTools);
	}

	/** Delivers a client tool's result. */
	resolveToolResult(session: LiveSession, toolCallId: string, result: ClientToolResult): ResolveOutcome {
		return this.entry(session).pending.resolve("client_tool", toolCallId, result);
	}

	/** Delivers an approval decision. */
	resolveApproval(session: LiveSession, toolCallId: string, decision: ApprovalDecision): ResolveOutcome {
		return this.entry(session).pending.resolve("approval", toolCallId, decision);
	}

	/** Delivers the answer to an MCP server's elicitation (checked against its schema by the port). */
	resolveElicitation(session: LiveSession, elicitationId: string, answer: ElicitationAnswer): ResolveOutcome {
		return this.entry(session).pending.resolve("elicitation", elicitationId, answer);
	}

	/**
	 * An MCP server asks for input during tool call `toolCallId`: a pending interaction of the
	 * session running that call, until the client answers, the wait times out (the approval
	 * timeout; the server gets `cancel`), or the call ends. A call no session of this process runs,
	 * or one whose id two sessions run, is answered `cancel`. Never rejects.
	 */
	async elicit(elicitation: McpElicitation): Promise<McpElicitationResult> {
		const sessions = this.runningCalls.get(elicitation.toolCallId);
		const session = sessions?.size === 1 ? [...sessions][0]! : undefined;
		if (!session) return { action: "cancel" };
		const entry = this.entry(session);
		const elicitationId = `eli_${randomUUID().replaceAll("-", "")}`;
		const args: ElicitationArgs = {
			server: elicitation.server,
			toolCallId: elicitation.toolCallId,
			message: elicitation.message,
			requestedSchema: elicitation.requestedSchema,
		};
		const waiting = entry.pending.wait({
			kind: "elicitation",
			toolCallId: elicitationId,
			toolName: elicitation.toolName,
			args,
			timeoutMs: this.options.approvalTimeoutMs,
			signal: elicitation.signal,
		});
		const request = entry.pending.get("elicitation", elicitationId);
		if (request) session.publish("elicitation_requested", publicElicitation(request));
		const outcome = await waiting;
		const resolved = (result: Record<string, unknown>) =>
			session.publish("elicitation_resolved", {
				elicitationId,
				toolCallId: elicitation.toolCallId,
				toolName: elicitation.toolName,
				outcome: result,
			});
		if (outcome.kind === "resolved") {
			const { action, content } = outcome.value;
			if (action === "accept") {
				resolved({ kind: "accepted", content: content ?? {} });
				return { action, content: content ?? {} };
			}
			resolved({ kind: action === "decline" ? "declined" : "cancelled" });
			return { action };
		}
		resolved(outcome.kind === "timeout" ? { kind: "timeout", timeoutMs: outcome.timeoutMs } : { kind: "aborted" });
		return { action: "cancel" };
	}

	/** The pending interactions of a session. */
	pending(session: LiveSession): PendingRequest[] {
		return this.entry(session).pending.list();
	}

	// --- SessionExtension -------------------------------------------------------------------

	/**
	 * The session's client tools, built from its stored declarations. A declaration whose name a
	 * server tool took since it was validated (e.g. an MCP server listed a new tool) is left out:
	 * the server tool wins, and the model never sees two tools of one name.
	 */
	tools(session: LiveSession): ClientAgentTool[] {
		const specs = session.config.clientTools;
		// Nothing declared (most sessions): no entry is made for it.
		if (specs.length === 0) return [];
		const entry = this.entry(session);
		if (entry.builtFrom !== specs) {
			entry.clientTools = this.usable(specs).map((spec) =>
				createClientTool(spec, {
					pending: entry.pending,
					timeoutMs: this.options.clientToolTimeoutMs,
					// `entry.session`: a session evicted and loaded again is a new object.
					onRequested: (request) => entry.session.publish("tool_result_requested", publicRequest(request)),
				}),
			);
			entry.builtFrom = specs;
		}
		return entry.clientTools;
	}

	storedToolNames({ record }: StoredSession): string[] {
		return this.usable(record.clientTools).map((spec) => spec.name);
	}

	/** The declarations whose names no server tool took. */
	private usable<T extends { name: string }>(specs: readonly T[]): T[] {
		if (specs.length === 0) return [];
		const server = new Set(this.options.serverToolNames());
		return specs.filter((spec) => !server.has(spec.name));
	}

	/**
	 * A session loaded into memory: the waits a previous process left in the store are taken in,
	 * once per load (in a cluster a session without a run here is loaded again per request, and the
	 * waits of the replica running it change meanwhile). A session just created has none, and one
	 * with none stored gets its entry when something needs it.
	 */
	async load(session: LiveSession, origin: "created" | "stored"): Promise<void> {
		if (origin === "created" && !this.entries.has(session.id)) return;
		const existing = this.entries.get(session.id);
		if (existing?.session === session && existing.adopted === session) return;
		const stored = await this.options.store.listPending(session.id, { includeResolved: true });
		if (stored.length === 0 && !this.entries.has(session.id)) return;
		const entry = this.entry(session);
		if (entry.adopted === session) return;
		entry.adopted = session;
		entry.pending.adopt(stored);
	}

	beforeToolCall: NonNullable<SessionExtension["beforeToolCall"]> = (session, context, signal) =>
		this.entry(session).hook(context, signal);

	state(session: LiveSession): Record<string, unknown> {
		const pending = this.entries.has(session.id) ? this.entry(session).pending : undefined;
		return {
			pendingApprovals: pending?.list("approval").map(publicRequest) ?? [],
			pendingClientToolCalls: pending?.list("client_tool").map(publicRequest) ?? [],
			pendingElicitations: pending?.list("elicitation").map(publicElicitation) ?? [],
			clientTools: session.config.clientTools,
			toolApprovals: session.config.toolApprovals,
		};
	}

	/**
	 * The same fields from the store: the calls that wait unanswered (by the replica running the
	 * session; without a run, a previous process's, which can no longer be answered: orphaned).
	 */
	storedState({ record, pending }: StoredSession): Record<string, unknown> {
		const orphaned = record.status !== "running";
		const waiting = (kind: PendingKind) =>
			pending
				.filter((p) => p.kind === kind && p.resolvedAt === null && p.resolution !== INTERRUPTED_RESOLUTION)
				.sort((a, b) => a.createdAt - b.createdAt)
				.map((p) => storedRequest(p, orphaned));
		return {
			pendingApprovals: waiting("approval").map(publicRequest),
			pendingClientToolCalls: waiting("client_tool").map(publicRequest),
			pendingElicitations: waiting("elicitation").map(publicElicitation),
			clientTools: record.clientTools,
			toolApprovals: record.toolApprovals,
		};
	}

	onEvent(session: LiveSession, event: AgentEvent): void {
		switch (event.type) {
			case "agent_start":
				// A new run: whatever a previous process left waiting can never be answered now.
				this.entries.get(session.id)?.pending.clearOrphaned();
				return;
			case "tool_execution_start": {
				const sessions = this.runningCalls.get(event.toolCallId) ?? new Set<LiveSession>();
				sessions.add(session);
				this.runningCalls.set(event.toolCallId, sessions);
				return;
			}
			case "tool_execution_end":
				this.forgetCall(event.toolCallId, session);
				return;
			case "agent_end":
				this.forgetCalls(session);
				return;
		}
	}

	/** Forgets every running call of `session` (its run ended, or it was deleted). */
	private forgetCalls(session: LiveSession): void {
		for (const [toolCallId, sessions] of this.runningCalls) {
			if (sessions.has(session)) this.forgetCall(toolCallId, session);
		}
	}

	private forgetCall(toolCallId: string, session: LiveSession): void {
		const sessions = this.runningCalls.get(toolCallId);
		if (!sessions) return;
		sessions.delete(session);
		if (sessions.size === 0) this.runningCalls.delete(toolCallId);
	}

	onDelete(session: LiveSession): void {
		this.entries.get(session.id)?.pending.abortAll(new Error("session deleted"));
		this.forgetCalls(session);
		this.entries.delete(session.id);
	}

	/**
	 * An idle session left memory: its entry (which holds the session) goes too, unless a wait of
	 * this process is still live. Loaded again, the session's entry adopts what the store holds,
	 * as after a restart.
	 */
	onEvict(session: LiveSession): void {
		const entry = this.entries.get(session.id);
		if (!entry || entry.session !== session) return;
		if (entry.pending.list().some((request) => !request.orphaned)) return;
		this.entries.delete(session.id);
	}

	private entry(session: LiveSession): SessionEntry {
		const entry = this.entries.get(session.id);
		if (entry) {
			entry.session = session;
			return entry;
		}
		const pending = new PendingInteractions(session.id, { store: this.options.store });
		const created: SessionEntry = {
			session,
			pending,
			builtFrom: undefined,
			clientTools: [],
			adopted: undefined,
			hook: createApprovalHook({
				pending,
				timeoutMs: this.options.approvalTimeoutMs,
				// Read at each call: a PATCH of the policies applies from the next tool call.
				policy: (toolName) => {
					const { clientTools, toolApprovals } = created.session.config;
					const clientRules: ApprovalRules = {};
					for (const spec of clientTools) if (spec.approval) clientRules[spec.name] = spec.approval;
					return this.options.serverTools.approvalPolicy(toolName, { ...clientRules, ...toolApprovals });
				},
				onRequested: (request) => {
					created.session.publish("approval_requested", publicRequest(request));
				},
				onResolved: (request, outcome) => {
					created.session.publish("approval_resolved", {
						toolCallId: request.toolCallId,
						toolName: request.toolName,
						outcome,
					});
				},
			}),
		};
		this.entries.set(session.id, created);
		return created;
	}
}
