/**
 * Per-tenant budgets at run time (`auth.tenantBudgets`): what all callers of a tenant have spent
 * in the current period, and which limit the tenant has reached.
 *
 * The spending is read from the store's usage rows of the tenant (every owner's, written by every
 * replica) before each run starts (`refresh`), so a tenant spent through another replica is
 * refused here too. Between two reads, the usage of this process's model calls is added as they
 * end (`add`), so a run that crosses the limit stops before its next model call without a read per
 * call. The tallies are a cache of the store: dropping them loses nothing.
 */
import type { Usage } from "../../../ai/types.js";
import type { UsageStore } from "../../../store/types.js";
import type { KeyBudget } from "../../config/budget-entry.js";
import type { TenantBudgetConfig } from "../../config/tenant-budgets.js";
import type { LimitReached } from "../compaction/budget.js";
import { spentLimit, Tallies } from "./tallies.js";

const TENANT_WORDS = { title: "Tenant", noun: "tenant", config: "auth.tenantBudgets" };

export class TenantBudgets {
	private readonly tallies: Tallies<string>;

	constructor(
		private readonly config: TenantBudgetConfig,
		private readonly store: Pick<UsageStore, "sumUsage">,
		now: () => number = Date.now,
	) {
		this.tallies = new Tallies(now);
	}

	/** True when some tenant has a budget. */
	get enabled(): boolean {
		return this.config.byTenant.size > 0 || this.config.fallback !== undefined;
	}

	/** The budget of `tenant` (null: none, so no budget). */
	budgetOf(tenant: string | null): KeyBudget | undefined {
		if (tenant === null) return undefined;
		return this.config.byTenant.get(tenant) ?? this.config.fallback;
	}

	/**
	 * Reads the tenant's spending of its current period from the store; undefined (nothing to wait
	 * for) when the tenant has no budget. Rejects when the store cannot be read.
	 */
	refresh(tenant: string | null): Promise<void> | undefined {
		const budget = this.budgetOf(tenant);
		if (!budget || tenant === null) return undefined;
		// Set before the read: the usage this process adds while it is under way is not in what it
		// returns (a read sees the writes called before it), so the read's sums are added to it.
		const tally = this.tallies.restart(tenant, budget);
		const query = { ownerId: null, tenant, fromDay: tally.periodStart, toDay: this.tallies.today() };
		return this.store.sumUsage(query).then((sum) => {
			tally.tokens += sum.totalTokens;
			tally.costUsd += sum.costUsd;
		});
	}

	/** Counts the usage of one model call spent for `tenant`. */
	add(tenant: string | null, usage: Usage): void {
		const budget = this.budgetOf(tenant);
		if (budget && tenant !== null) this.tallies.add(tenant, budget, usage);
	}

	/** The limit the tenant has reached, as last read and added to, if any. */
	limit(tenant: string | null): LimitReached | undefined {
		const budget = this.budgetOf(tenant);
		if (!budget || tenant === null) return undefined;
		return spentLimit(budget, this.tallies.current(tenant, budget), TENANT_WORDS);
	}

	/** The tenant's budget and what is left of it, as last read (null without a budget). */
	state(tenant: string | null) {
		const budget = this.budgetOf(tenant);
		if (!budget || tenant === null) return null;
		const tally = this.tallies.current(tenant, budget);
		const maxTokens = budget.maxTokens ?? null;
		const maxCostUsd = budget.maxCostUsd ?? null;
		return {
			tenant,
			period: budget.period,
			periodStart: tally.periodStart,
			maxTokens,
			maxCostUsd,
			usedTokens: tally.tokens,
			usedCostUsd: tally.costUsd,
			remainingTokens: maxTokens === null ? null : Math.max(0, maxTokens - tally.tokens),
			remainingCostUsd: maxCostUsd === null ? null : Math.max(0, maxCostUsd - tally.costUsd),
			exhausted: (this.limit(tenant)?.limit as "maxTokens" | "maxCostUsd" | undefined) ?? null,
		};
	}
}
