/**
 * Client-side tools and human approval for sessions (issue 6): the session extension that gives
 * each session its declared client tools, its approval hook and its pending interactions, and
 * the operations the `tool-results` and `approvals` routes call.
 *
 * Events on the session stream: `approval_requested` (toolCallId, toolName, args, expiresAt)
 * when a call waits for a decision, `approval_resolved` (toolCallId, toolName, outcome) when the
 * wait ends. A client tool call is announced by the loop's own `tool_execution_start`. Pending
 * approvals and client tool calls are in the session state (`pendingApprovals`,
 * `pendingClientToolCalls`), so `GET /v1/sessions/:id` and every new subscriber's
 * `session_snapshot` show them; resuming with `Last-Event-ID` replays the events themselves.
 */
import { Type } from "@sinclair/typebox";
import type { AgentEvent } from "../agent/types.js";
import type { SessionStore } from "../store/types.js";
import {
	type ApprovalDecision,
	ApprovalPolicySchema,
	type ApprovalRules,
	type BeforeToolCallHook,
	type ClientAgentTool,
	type ClientToolResult,
	type ClientToolSpec,
	ClientToolSpecSchema,
	createApprovalHook,
	createClientTool,
	PendingInteractions,
	type PendingRequest,
	type ResolveOutcome,
	type ServerTools,
	validateClientToolSpecs,
} from "../tools/index.js";
import { apiError } from "./errors.js";
import type { LiveSession, SessionExtension } from "./live-session.js";

/** Fields of `POST /v1/sessions` for client-side tools and per-session approval policies. */
export const CreateSessionToolFields = {
	clientTools: Type.Optional(
		Type.Array(ClientToolSpecSchema, {
			maxItems: 128,
			description:
				"Tools the client executes: a call shows as tool_execution_start and waits for POST .../tool-results/:toolCallId",
		}),
	),
	toolApprovals: Type.Optional(
		Type.Record(Type.String(), ApprovalPolicySchema, {
			description:
				'Approval policy per tool name (or `prefix*`) for this session; wins over the server config. "always" waits for POST .../approvals/:toolCallId',
		}),
	),
};

const PendingView = Type.Object({
	toolCallId: Type.String(),
	toolName: Type.String(),
	args: Type.Unknown(),
	createdAt: Type.Number(),
	expiresAt: Type.Number({ description: "When the wait times out (epoch ms)" }),
	orphaned: Type.Optional(
		Type.Boolean({ description: "Left by a previous server process; can no longer be answered" }),
	),
});

/** Fields the extension adds to the session state (`GET /v1/sessions/:id`, `session_snapshot`). */
export const SessionToolStateFields = {
	pendingApprovals: Type.Optional(Type.Array(PendingView, { description: "Tool calls waiting for approval" })),
	pendingClientToolCalls: Type.Optional(
		Type.Array(PendingView, { description: "Client tool calls waiting for a result" }),
	),
	clientTools: Type.Optional(Type.Array(ClientToolSpecSchema)),
	toolApprovals: Type.Optional(Type.Record(Type.String(), ApprovalPolicySchema)),
};

/** What `POST /v1/sessions` may declare for tools (besides `tools`). */
export interface ToolDeclarations {
	clientTools?: ClientToolSpec[];
	/** Per-session approval policies; they win over the server's. */
	toolApprovals?: ApprovalRules;
}

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
	specs: ClientToolSpec[];
	clientTools: ClientAgentTool[];
	rules: ApprovalRules;
	hook: BeforeToolCallHook;
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
	private readonly entries = new Map<string, SessionEntry>();

	constructor(private readonly options: ToolInteractionsOptions) {}

	/** Throws 400 (naming the field) for bad declarations; call before the session is created. */
	beforeCreate(input: ToolDeclarations): void {
		const problems = validateClientToolSpecs(input.clientTools ?? [], this.options.serverToolNames());
		if (problems.length > 0) throw apiError("VALIDATION_FAILED", `body.${problems[0]}`, { problems });
	}

	/** Gives a new session its declared client tools and approval policies. */
	onCreate(session: LiveSession, input: ToolDeclarations): void {
		this.redeclare(session, { clientTools: input.clientTools ?? [], toolApprovals: input.toolApprovals ?? {} });
	}

	/**
	 * Replaces the session's client tools and/or approval policies (fields left out stay as they
	 * are); e.g. after a server restart, which keeps neither. Validate first with `beforeCreate`.
	 * Applies from the session's next model call.
	 */
	redeclare(session: LiveSession, input: ToolDeclarations): void {
		const entry = this.entry(session);
		if (input.clientTools) entry.specs = input.clientTools;
		if (input.toolApprovals) entry.rules = input.toolApprovals;
		entry.clientTools = entry.specs.map((spec) =>
			createClientTool(spec, { pending: entry.pending, timeoutMs: this.options.clientToolTimeoutMs }),
		);
		session.refreshTools();
	}

	/** Delivers a client tool's result. */
	resolveToolResult(session: LiveSession, toolCallId: string, result: ClientToolResult): ResolveOutcome {
		return this.entry(session).pending.resolve("client_tool", toolCallId, result);
	}

	/** Delivers an approval decision. */
	resolveApproval(session: LiveSession, toolCallId: string, decision: ApprovalDecision): ResolveOutcome {
		return this.entry(session).pending.resolve("approval", toolCallId, decision);
	}

	/** The pending interactions of a session. */
	pending(session: LiveSession): PendingRequest[] {
		return this.entry(session).pending.list();
	}

	// --- SessionExtension -------------------------------------------------------------------

	tools(session: LiveSession): ClientAgentTool[] {
		return this.entry(session).clientTools;
	}

	beforeToolCall: NonNullable<SessionExtension["beforeToolCall"]> = (session, context, signal) =>
		this.entry(session).hook(context, signal);

	state(session: LiveSession): Record<string, unknown> {
		const entry = this.entry(session);
		return {
			pendingApprovals: entry.pending.list("approval").map(publicRequest),
			pendingClientToolCalls: entry.pending.list("client_tool").map(publicRequest),
			clientTools: entry.specs,
			toolApprovals: entry.rules,
		};
	}

	onEvent(session: LiveSession, event: AgentEvent): void {
		// A new run: whatever a previous process left waiting can never be answered now.
		if (event.type === "agent_start") this.entries.get(session.id)?.pending.clearOrphaned();
	}

	onDelete(session: LiveSession): void {
		this.entries.get(session.id)?.pending.abortAll(new Error("session deleted"));
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
			specs: [],
			clientTools: [],
			rules: {},
			hook: createApprovalHook({
				pending,
				timeoutMs: this.options.approvalTimeoutMs,
				policy: (toolName) => {
					const clientRules: ApprovalRules = {};
					for (const spec of created.specs) if (spec.approval) clientRules[spec.name] = spec.approval;
					return this.options.serverTools.approvalPolicy(toolName, { ...clientRules, ...created.rules });
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
