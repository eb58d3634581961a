/**
 * A session's budget: which limit its usage has reached, what is left, and the message that ends
 * a run at a limit.
 *
 * Limits are checked before each model call (and before a prompt is accepted): the call that
 * crosses `maxTokens` or `maxCostUsd` completes, since what a call costs is known only after it.
 */
import type { Usage } from "../../../ai/types.js";
import type { SessionConfig } from "../../../store/types.js";

export type BudgetLimits = NonNullable<SessionConfig["budget"]>;

/** A limit reached: which one, and the sentence that says so (stored as the run's last message). */
export interface LimitReached {
	limit: "maxTokens" | "maxCostUsd" | "maxTurnsPerRun";
	max: number;
	used: number;
	message: string;
}

/** `n` dollars as a message shows them: `$0.5`, `$1.25`, `$3`. */
export const dollars = (n: number) => `$${n.toFixed(4).replace(/0+$/, "").replace(/\.$/, "")}`;

/** The session-wide limit `usage` has reached, if any (these refuse new prompts too). */
export function sessionLimitReached(budget: BudgetLimits | undefined, usage: Usage): LimitReached | undefined {
	if (budget?.maxTokens !== undefined && usage.totalTokens >= budget.maxTokens) {
		return {
			limit: "maxTokens",
			max: budget.maxTokens,
			used: usage.totalTokens,
			message: `Budget reached: maxTokens is ${budget.maxTokens} and this session has used ${usage.totalTokens} tokens. Raise budget.maxTokens (PATCH /v1/sessions/:id) to go on.`,
		};
	}
	if (budget?.maxCostUsd !== undefined && usage.cost.total >= budget.maxCostUsd) {
		return {
			limit: "maxCostUsd",
			max: budget.maxCostUsd,
			used: usage.cost.total,
			message: `Budget reached: maxCostUsd is ${dollars(budget.maxCostUsd)} and this session has spent ${dollars(usage.cost.total)}. Raise budget.maxCostUsd (PATCH /v1/sessions/:id) to go on.`,
		};
	}
	return undefined;
}

/** The limit the next model call of a run would pass, if any. `turns`: model calls the run made so far. */
export function callLimitReached(
	budget: BudgetLimits | undefined,
	usage: Usage,
	turns: number,
): LimitReached | undefined {
	const session = sessionLimitReached(budget, usage);
	if (session) return session;
	if (budget?.maxTurnsPerRun !== undefined && turns >= budget.maxTurnsPerRun) {
		return {
			limit: "maxTurnsPerRun",
			max: budget.maxTurnsPerRun,
			used: turns,
			message: `Budget reached: maxTurnsPerRun is ${budget.maxTurnsPerRun} and this run made ${turns} model calls. The run ends here; a prompt or continue starts a new run.`,
		};
	}
	return undefined;
}

/** The `budget` field of the session state. `turns` is null when no run is active. */
export function budgetState(budget: BudgetLimits | undefined, usage: Usage, turns: number | null) {
	const maxTokens = budget?.maxTokens ?? null;
	const maxCostUsd = budget?.maxCostUsd ?? null;
	return {
		maxTokens,
		maxCostUsd,
		maxTurnsPerRun: budget?.maxTurnsPerRun ?? null,
		usedTokens: usage.totalTokens,
		usedCostUsd: usage.cost.total,
		remainingTokens: maxTokens === null ? null : Math.max(0, maxTokens - usage.totalTokens),
		remainingCostUsd: maxCostUsd === null ? null : Math.max(0, maxCostUsd - usage.cost.total),
		turnsThisRun: turns,
		exhausted: sessionLimitReached(budget, usage)?.limit ?? null,
	};
}
