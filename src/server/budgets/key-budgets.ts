/**
 * Per-API-key budgets at run time: what each key has spent in its current period, and which limit
 * it has reached. The spending starts from the store's usage rows (read once per key and period)
 * and grows with the usage of each model call of this process, so a check before a model call is
 * synchronous and never reads the transcript. All sessions of a key share one tally.
 */
import type { Usage } from "../../ai/types.js";
import type { SessionStore } from "../../store/types.js";
import { utcDay } from "../../store/usage.js";
import type { LimitReached } from "../compaction/budget.js";
import type { BudgetPeriod, KeyBudget, KeyBudgetConfig } from "./config.js";

interface Tally {
	periodStart: string;
	tokens: number;
	costUsd: number;
}

/** First day (`YYYY-MM-DD`, UTC) of the period that holds `at`. */
export function periodStart(period: BudgetPeriod, at: number): string {
	const day = utcDay(at);
	return period === "day" ? day : `${day.slice(0, 7)}-01`;
}

const dollars = (n: number) => `$${n.toFixed(4).replace(/0+$/, "").replace(/\.$/, "")}`;

export class KeyBudgets {
	private readonly tallies = new Map<string | null, Tally>();

	constructor(
		private readonly config: KeyBudgetConfig,
		private readonly store: SessionStore,
		private readonly now: () => number = Date.now,
	) {}

	/** The budget of `ownerId` (null: auth off), if any. */
	budgetOf(ownerId: string | null): KeyBudget | undefined {
		return (ownerId === null ? undefined : this.config.byOwner.get(ownerId)) ?? this.config.fallback;
	}

	/** Reads the key's spending of its current period from the store, unless known. */
	async load(ownerId: string | null): Promise<void> {
		const budget = this.budgetOf(ownerId);
		if (!budget) return;
		const start = periodStart(budget.period, this.now());
		const known = this.tallies.get(ownerId);
		if (known && known.periodStart === start) return;
		// Set before the read: usage counted while it is under way is not in what it returns (a read
		// sees the writes called before it), so the read's sums are added to it.
		const tally: Tally = { periodStart: start, tokens: 0, costUsd: 0 };
		this.tallies.set(ownerId, tally);
		const rows = await this.store.readUsage({ ownerId, fromDay: start, toDay: utcDay(this.now()) });
		tally.tokens += rows.reduce((sum, r) => sum + r.totalTokens, 0);
		tally.costUsd += rows.reduce((sum, r) => sum + r.costUsd, 0);
	}

	/** Counts the usage of one model call of a session of `ownerId`. */
	add(ownerId: string | null, usage: Usage): void {
		const tally = this.current(ownerId);
		if (!tally) return;
		tally.tokens += usage.totalTokens;
		tally.costUsd += usage.cost.total;
	}

	/** The tally of the key's current period (a new period starts at zero); undefined without a budget. */
	private current(ownerId: string | null): Tally | undefined {
		const budget = this.budgetOf(ownerId);
		if (!budget) return undefined;
		const start = periodStart(budget.period, this.now());
		let tally = this.tallies.get(ownerId);
		if (!tally || tally.periodStart < start) {
			// Not loaded yet (a run started before `load` finished) or a new period: counts from here.
			tally = { periodStart: start, tokens: 0, costUsd: 0 };
			this.tallies.set(ownerId, tally);
		}
		return tally;
	}

	/** The key-wide limit the key has reached, if any (a prompt is refused then). */
	keyLimit(ownerId: string | null): LimitReached | undefined {
		const budget = this.budgetOf(ownerId);
		const tally = this.current(ownerId);
		if (!budget || !tally) return undefined;
		const until = `resets at the start of the next UTC ${budget.period}`;
		if (budget.maxTokens !== undefined && tally.tokens >= budget.maxTokens) {
			return {
				limit: "maxTokens",
				max: budget.maxTokens,
				used: tally.tokens,
				message: `API key budget reached: maxTokens is ${budget.maxTokens} per ${budget.period} and this key has used ${tally.tokens} tokens since ${tally.periodStart}; it ${until}, or raise keyBudgets in the server config.`,
			};
		}
		if (budget.maxCostUsd !== undefined && tally.costUsd >= budget.maxCostUsd) {
			return {
				limit: "maxCostUsd",
				max: budget.maxCostUsd,
				used: tally.costUsd,
				message: `API key budget reached: maxCostUsd is ${dollars(budget.maxCostUsd)} per ${budget.period} and this key has spent ${dollars(tally.costUsd)} since ${tally.periodStart}; it ${until}, or raise keyBudgets in the server config.`,
			};
		}
		return undefined;
	}

	/** The limit the next model call of a run of `ownerId` would pass; `turns`: calls the run made. */
	callLimit(ownerId: string | null, turns: number): LimitReached | undefined {
		const reached = this.keyLimit(ownerId);
		if (reached) return reached;
		const max = this.budgetOf(ownerId)?.maxTurnsPerRun;
		if (max !== undefined && turns >= max) {
			return {
				limit: "maxTurnsPerRun",
				max,
				used: turns,
				message: `API key budget reached: maxTurnsPerRun is ${max} for this key and this run made ${turns} model calls. The run ends here; a prompt or continue starts a new run.`,
			};
		}
		return undefined;
	}

	/** The key's budget and what is left of it (null without a budget). */
	state(ownerId: string | null) {
		const budget = this.budgetOf(ownerId);
		const tally = this.current(ownerId);
		if (!budget || !tally) return null;
		const maxTokens = budget.maxTokens ?? null;
		const maxCostUsd = budget.maxCostUsd ?? null;
		return {
			period: budget.period,
			periodStart: tally.periodStart,
			maxTokens,
			maxCostUsd,
			maxTurnsPerRun: budget.maxTurnsPerRun ?? null,
			usedTokens: tally.tokens,
			usedCostUsd: tally.costUsd,
			remainingTokens: maxTokens === null ? null : Math.max(0, maxTokens - tally.tokens),
			remainingCostUsd: maxCostUsd === null ? null : Math.max(0, maxCostUsd - tally.costUsd),
			exhausted: this.keyLimit(ownerId)?.limit ?? null,
		};
	}
}
