/**
 * Human approval of tool calls, as a `beforeToolCall` hook.
 *
 * For a tool whose policy is `"always"`, the hook registers a pending approval, tells the server
 * (`onRequested`, which emits the `approval_requested` event) and waits for
 * `PendingInteractions.resolve("approval", toolCallId, { approve, reason })`, the timeout, or the
 * run's abort. Denial, timeout and abort return `{ block: true, reason }`: the loop then emits an
 * error tool result with that reason, which is what the model sees.
 *
 * Rules fail closed: an entry that names no tool and matches none ({@link approvalRuleProblems})
 * is refused where it is written — a startup error for the config, 400 for a session — because a
 * misspelt `"calculte": "always"` would otherwise leave `calculate` running without asking.
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

/** What approval rules may name, for {@link approvalRuleProblems}. */
export interface ApprovalTargets {
	/** The tool names known now (server tools, MCP tools listed so far, the session's client tools). */
	names: Iterable<string>;
	/**
	 * Prefixes of names not known yet: `server__` of each MCP server whose tools are not listed
	 * (not connected). An entry under one is accepted now; if the server then lists no tool of that
	 * name, its tools ask for approval (see `ServerTools.approvalPolicy`).
	 */
	unlistedPrefixes?: Iterable<string>;
}

/** One rule entry that names no tool and matches none, with the message that says so. */
export interface ApprovalRuleProblem {
	entry: string;
	message: string;
}

/**
 * The entries of `rules` that name no tool of `targets` and match none: an exact entry must be a
 * known name (or lie under an unlisted prefix); a `prefix*` pattern must match a known name (or
 * overlap an unlisted prefix). Each message names the entry and the tools it could have meant.
 */
export function approvalRuleProblems(
	rules: Readonly<Record<string, unknown>>,
	targets: ApprovalTargets,
): ApprovalRuleProblem[] {
	const names = [...new Set(targets.names)];
	const unlisted = [...(targets.unlistedPrefixes ?? [])];
	const problems: ApprovalRuleProblem[] = [];
	for (const entry of Object.keys(rules)) {
		if (entry.endsWith("*")) {
			const prefix = entry.slice(0, -1);
			if (names.some((name) => name.startsWith(prefix))) continue;
			if (unlisted.some((p) => p.startsWith(prefix) || prefix.startsWith(p))) continue;
		} else {
			if (names.includes(entry)) continue;
			if (unlisted.some((p) => entry.startsWith(p))) continue;
		}
		problems.push({ entry, message: unmatchedMessage(entry, names) });
	}
	return problems;
}

/** The names closest to `entry` (by edit distance, close enough to be a slip), nearest first. */
export function closestNames(entry: string, names: readonly string[], max = 3): string[] {
	const target = entry.endsWith("*") ? entry.slice(0, -1) : entry;
	const limit = Math.max(2, Math.floor(target.length / 3));
	return names
		.map((name) => ({
			name,
			distance: editDistance(target, entry.endsWith("*") ? name.slice(0, target.length) : name),
		}))
		.filter((c) => c.distance <= limit)
		.sort((a, b) => a.distance - b.distance || a.name.localeCompare(b.name))
		.slice(0, max)
		.map((c) => c.name);
}

function unmatchedMessage(entry: string, names: readonly string[]): string {
	const what = entry.endsWith("*") ? "matches no tool" : "names no tool";
	const close = closestNames(entry, names);
	const meant = close.length > 0 ? `; did you mean ${close.map((n) => `"${n}"`).join(" or ")}?` : "";
	const shown = names.slice(0, 30).join(", ");
	const known = names.length === 0 ? "none" : names.length > 30 ? `${shown}, ...` : shown;
	return `"${entry}" ${what}${meant} (the tools: ${known}). A rule that matches nothing would leave the tool it meant running without approval`;
}

/** Levenshtein distance of `a` and `b`. */
function editDistance(a: string, b: string): number {
	let previous = Array.from({ length: b.length + 1 }, (_, j) => j);
	for (let i = 1; i <= a.length; i++) {
		const current = [i];
		for (let j = 1; j <= b.length; j++) {
			const substitution = previous[j - 1]! + (a[i - 1] === b[j - 1] ? 0 : 1);
			current.push(Math.min(previous[j]! + 1, current[j - 1]! + 1, substitution));
		}
		previous = current;
	}
	return previous[b.length]!;
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
