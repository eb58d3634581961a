/**
 * Human approval of tool calls, as a `beforeToolCall` hook.
 *
 * For a tool whose policy is `"always"`, the hook registers a pending approval, tells the server
 * (`onRequested`, which emits the `approval_requested` event) and waits for
 * `PendingInteractions.resolve("approval", toolCallId, { approve, reason })`, the timeout, or the
 * run's abort. Denial, timeout and abort return `{ block: true, reason }`: the loop then emits an
 * error tool result with that reason, which is what the model sees.
 */
import type { AgentLoopConfig, BeforeToolCallContext, BeforeToolCallResult } from "../agent/types.js";
import type { ApprovalPolicy } from "./config.js";
import { type ApprovalDecision, formatDuration, type PendingInteractions, type PendingRequest } from "./pending.js";

export type BeforeToolCallHook = NonNullable<AgentLoopConfig["beforeToolCall"]>;

/** A set of approval rules: tool name (or `prefix*`) → policy. */
export type ApprovalRules = Record<string, ApprovalPolicy>;

/**
 * The policy of `toolName` under several rule sets, later sets winning (e.g. config, then the
 * session's). Within one set an exact name beats a `prefix*` pattern, a longer prefix beats a
 * shorter one. Default `"never"`.
 */
export function resolveApprovalPolicy(toolName: string, ...ruleSets: (ApprovalRules | undefined)[]): ApprovalPolicy {
	let policy: ApprovalPolicy = "never";
	for (const rules of ruleSets) {
		if (!rules) continue;
		if (Object.hasOwn(rules, toolName)) {
			policy = rules[toolName]!;
			continue;
		}
		let best = -1;
		for (const [pattern, value] of Object.entries(rules)) {
			if (pattern.endsWith("*") && toolName.startsWith(pattern.slice(0, -1)) && pattern.length > best) {
				best = pattern.length;
				policy = value;
			}
		}
	}
	return policy;
}

/** How an approval wait ended (for the `approval_resolved` event and logs). */
export type ApprovalOutcome =
	| { kind: "approved"; reason?: string }
	| { kind: "denied"; reason?: string }
	| { kind: "timeout"; timeoutMs: number }
	| { kind: "aborted" };

export interface ApprovalHookOptions {
	pending: PendingInteractions;
	/** The policy for a tool name (read at each call, so session changes apply to the next call). */
	policy: (toolName: string) => ApprovalPolicy;
	timeoutMs: number;
	/** Called once the approval is registered; the server emits `approval_requested`. Must not throw. */
	onRequested?: (request: PendingRequest) => void;
	/** Called when the wait ends. Must not throw. */
	onResolved?: (request: PendingRequest, outcome: ApprovalOutcome) => void;
	/** An existing hook, run after approval (or directly for tools that need none). */
	next?: BeforeToolCallHook;
}

/** The error text the model sees for a blocked call. */
export function blockedReason(toolName: string, outcome: ApprovalOutcome): string {
	switch (outcome.kind) {
		case "denied":
			return outcome.reason
				? `The user denied the call to ${toolName}: ${outcome.reason}`
				: `The user denied the call to ${toolName}`;
		case "timeout":
			return `No approval for ${toolName} within ${formatDuration(outcome.timeoutMs)}; the tool was not run`;
		default:
			return `The run was aborted while ${toolName} waited for approval`;
	}
}

export function createApprovalHook(options: ApprovalHookOptions): BeforeToolCallHook {
	return async function approveToolCall(
		context: BeforeToolCallContext,
		signal?: AbortSignal,
	): Promise<BeforeToolCallResult | undefined> {
		const { toolCall } = context;
		if (options.policy(toolCall.name) !== "always") return options.next?.(context, signal);

		const waiting = options.pending.wait({
			kind: "approval",
			toolCallId: toolCall.id,
			toolName: toolCall.name,
			args: context.args,
			timeoutMs: options.timeoutMs,
			signal,
		});
		const request = options.pending.get("approval", toolCall.id);
		if (request) options.onRequested?.(request);
		const result = await waiting;

		let outcome: ApprovalOutcome;
		if (result.kind === "resolved") {
			const decision: ApprovalDecision = result.value;
			outcome = decision.approve
				? { kind: "approved", ...(decision.reason ? { reason: decision.reason } : {}) }
				: { kind: "denied", ...(decision.reason ? { reason: decision.reason } : {}) };
		} else if (result.kind === "timeout") {
			outcome = { kind: "timeout", timeoutMs: result.timeoutMs };
		} else {
			outcome = { kind: "aborted" };
		}
		if (request) options.onResolved?.(request, outcome);
		if (outcome.kind === "approved") return options.next?.(context, signal);
		return { block: true, reason: blockedReason(toolCall.name, outcome) };
	};
}
