/**
 * Per-API-key budgets at run time: what each key has spent in its current period, and which limit
 * it has reached. The spending starts from the store's usage rows (read once per key and period)
 * and grows with the usage of each model call of this process, so a check before a model call is
 * synchronous and never reads the transcript. All sessions of a key share one tally.
 */
import type { Usage } from "../../../ai/types.js";
import type { SessionStore } from "../../../store/types.js";
import type { LimitReached } from "../compaction/budget.js";
import type { KeyBudget, KeyBudgetConfig } from "./config.js";
import { spentLimit, Tallies } from "./tallies.js";

const KEY_WORDS = { title: "API key", noun: "key", config: "keyBudgets" };

export class KeyBudgets {
	private readonly tallies: Tallies<string | null>;

	constructor(
		private readonly config: KeyBudgetConfig,
		private readonly store: SessionStore,
		now: () => number = Date.now,
	) {
		this.tallies = new Tallies(now);
	}

	/** The budget of `ownerId` (null: auth off), if any. */
	budgetOf(ownerId: string | null): KeyBudget | undefined {
		return (ownerId === null ? undefined : this.config.byOwner.get(ownerId)) ?? this.config.fallback;
	}

	/** Reads the key's spending of its current period from the store, unless known. */
	async load(ownerId: string | null): Promise<void> {
		const budget = this.budgetOf(ownerId);
		if (!budget || this.tallies.known(ownerId, budget)) return;
		// Set before the read: usage counted while it is under way is not in what it returns (a read
		// sees the writes called before it), so the read's sums are added to it.
		const tally = this.tallies.restart(ownerId, budget);
		const rows = await this.store.readUsage({ ownerId, fromDay: tally.periodStart, toDay: this.tallies.today() });
		tally.tokens += rows.reduce((sum, r) => sum + r.totalTokens, 0);
		tally.costUsd += rows.reduce((sum, r) => sum + r.costUsd, 0);
	}

	/** Counts the usage of one model call of a session of `ownerId`. */
	add(ownerId: string | null, usage: Usage): void {
		const budget = this.budgetOf(ownerId);
		if (budget) this.tallies.add(ownerId, budget, usage);
	}

	/** The key-wide limit the key has reached, if any (a prompt is refused then). */
	keyLimit(ownerId: string | null): LimitReached | undefined {
		const budget = this.budgetOf(ownerId);
		return budget && spentLimit(budget, this.tallies.current(ownerId, budget), KEY_WORDS);
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
		if (!budget) return null;
		const tally = this.tallies.current(ownerId, budget);
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
