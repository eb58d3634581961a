/**
 * The refusals of a spent budget, one shape for every path that starts a run or a call: 429
 * `KEY_BUDGET_EXHAUSTED` for an API key's, 429 `TENANT_BUDGET_EXHAUSTED` for a tenant's, with the
 * limit in `details`. And the check admission makes before a run waits for a slot, so that a run
 * that could not start is refused now rather than queued.
 */

import type { LimitReached } from "../compaction/budget.js";
import { type SessionError, sessionError } from "../session/errors.js";
import type { KeyBudgets } from "./key-budgets.js";
import type { TenantBudgets } from "./tenant-budgets.js";

export function keyBudgetError(reached: LimitReached): SessionError {
	return sessionError("KEY_BUDGET_EXHAUSTED", reached.message, {
		limit: reached.limit,
		max: reached.max,
		used: reached.used,
	});
}

export function tenantBudgetError(tenant: string | null, reached: LimitReached): SessionError {
	return sessionError("TENANT_BUDGET_EXHAUSTED", reached.message, {
		tenant,
		limit: reached.limit,
		max: reached.max,
		used: reached.used,
	});
}

/**
 * Rejects with the refusal of the first spent budget of `ownerId` or `tenant` (the tenant's read
 * from the store now); resolves when neither is spent.
 */
export function spentBudgetCheck(keyBudgets: KeyBudgets, tenantBudgets: TenantBudgets) {
	return async (ownerId: string | null, tenant: string | null): Promise<void> => {
		await keyBudgets.load(ownerId);
		const key = keyBudgets.keyLimit(ownerId);
		if (key) throw keyBudgetError(key);
		await tenantBudgets.refresh(tenant);
		const spent = tenantBudgets.limit(tenant);
		if (spent) throw tenantBudgetError(tenant, spent);
	};
}
