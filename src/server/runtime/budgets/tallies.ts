/**
 * What a budget holder (an API key or a tenant) has spent in its current period, and which of its
 * token and cost limits that reaches: the part the key and tenant budgets share.
 */
import type { Usage } from "../../../ai/types.js";
import { utcDay } from "../../../store/usage.js";
import type { BudgetPeriod, KeyBudget } from "../../config/budget-entry.js";
import { dollars, type LimitReached } from "../compaction/budget.js";

export interface Tally {
	periodStart: string;
	tokens: number;
	costUsd: number;
}

/** First day (`YYYY-MM-DD`, UTC) of the period that holds `at`. */
export function periodStart(period: BudgetPeriod, at: number): string {
	const day = utcDay(at);
	return period === "day" ? day : `${day.slice(0, 7)}-01`;
}

/** One tally per holder, each for the period of the holder's budget. */
export class Tallies<K> {
	private readonly byHolder = new Map<K, Tally>();

	constructor(private readonly now: () => number) {}

	/** First day of `budget`'s current period. */
	periodStart(budget: KeyBudget): string {
		return periodStart(budget.period, this.now());
	}

	/** Today (`YYYY-MM-DD`, UTC): the last day a read of the current period covers. */
	today(): string {
		return utcDay(this.now());
	}

	/** The holder's tally if it is of `budget`'s current period. */
	known(holder: K, budget: KeyBudget): Tally | undefined {
		const tally = this.byHolder.get(holder);
		return tally && tally.periodStart === this.periodStart(budget) ? tally : undefined;
	}

	/** A tally of the current period at zero, in place of the holder's: a store read adds its sums to it. */
	restart(holder: K, budget: KeyBudget): Tally {
		const tally: Tally = { periodStart: this.periodStart(budget), tokens: 0, costUsd: 0 };
		this.byHolder.set(holder, tally);
		return tally;
	}

	/** The holder's tally of the current period; one not read yet, or a new period, counts from zero. */
	current(holder: K, budget: KeyBudget): Tally {
		const tally = this.byHolder.get(holder);
		return tally && tally.periodStart >= this.periodStart(budget) ? tally : this.restart(holder, budget);
	}

	/** Counts the usage of one model call. */
	add(holder: K, budget: KeyBudget, usage: Usage): void {
		const tally = this.current(holder, budget);
		tally.tokens += usage.totalTokens;
		tally.costUsd += usage.cost.total;
	}
}

/** How a limit's message names the holder: `API key`/`key`/`keyBudgets`, `Tenant`/`tenant`/`auth.tenantBudgets`. */
export interface HolderWords {
	title: string;
	noun: string;
	config: string;
}

/** The token or cost limit of `budget` that `tally` has reached, if any. */
export function spentLimit(budget: KeyBudget, tally: Tally, words: HolderWords): LimitReached | undefined {
	const { title, noun, config } = words;
	const until = `it resets at the start of the next UTC ${budget.period}, or raise ${config} in the server config.`;
	if (budget.maxTokens !== undefined && tally.tokens >= budget.maxTokens) {
		return {
			limit: "maxTokens",
			max: budget.maxTokens,
			used: tally.tokens,
			message: `${title} budget reached: maxTokens is ${budget.maxTokens} per ${budget.period} and this ${noun} has used ${tally.tokens} tokens since ${tally.periodStart}; ${until}`,
		};
	}
	if (budget.maxCostUsd !== undefined && tally.costUsd >= budget.maxCostUsd) {
		return {
			limit: "maxCostUsd",
			max: budget.maxCostUsd,
			used: tally.costUsd,
			message: `${title} budget reached: maxCostUsd is ${dollars(budget.maxCostUsd)} per ${budget.period} and this ${noun} has spent ${dollars(tally.costUsd)} since ${tally.periodStart}; ${until}`,
		};
	}
	return undefined;
}
