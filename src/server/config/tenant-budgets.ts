/**
 * `auth.tenantBudgets` of the config file: spending limits per tenant, beside the per-key
 * `keyBudgets`, checked at startup.
 *
 * ```json
 * "auth": {
 *   "tenantBudgets": {
 *     "org-a": { "maxTokens": 5000000, "maxCostUsd": 100, "period": "month" },
 *     "*": { "maxCostUsd": 20, "period": "day" }
 *   }
 * }
 * ```
 *
 * An entry is named by the tenant (the JWT's tenant claim, or an `auth.keyTenants` value); `"*"`
 * applies to every tenant without an entry of its own. Callers without a tenant have no tenant
 * budget. Limits are per calendar period in UTC, as `keyBudgets` (`"day"` or `"month"`, default
 * `"month"`). A tenant's spending is every owner's usage rows of that tenant.
 */

import { checkBudgetEntry, type KeyBudget } from "./budget-entry.js";
import { ConfigError } from "./config-error.js";

/** The checked section: budgets by tenant, and the `"*"` default. */
export interface TenantBudgetConfig {
	byTenant: Map<string, KeyBudget>;
	fallback: KeyBudget | undefined;
}

/** `maxTurnsPerRun` is the key's: a run belongs to one caller, not to its tenant. */
const TENANT_BUDGET_FIELDS = ["maxTokens", "maxCostUsd", "period"] as const;

/** No tenant budgets. */
export function noTenantBudgets(): TenantBudgetConfig {
	return { byTenant: new Map(), fallback: undefined };
}

/**
 * Checks the section at `field` (`auth.tenantBudgets`); a {@link ConfigError} names the bad field
 * (`auth.tenantBudgets["org-a"].maxCostUsd`).
 */
export function tenantBudgetsFrom(raw: unknown, field: string): TenantBudgetConfig {
	const config = noTenantBudgets();
	if (raw === undefined) return config;
	if (typeof raw !== "object" || raw === null || Array.isArray(raw)) {
		throw new ConfigError(field, `must be an object of budgets by tenant ({ "<tenant>": { "maxCostUsd": 5 } })`);
	}
	for (const [tenant, entry] of Object.entries(raw)) {
		const name = `${field}[${JSON.stringify(tenant)}]`;
		if (tenant.trim() === "") throw new ConfigError(name, 'names no tenant; name a tenant, or "*" for every tenant');
		const budget = checkBudgetEntry(name, entry, TENANT_BUDGET_FIELDS);
		if (tenant === "*") config.fallback = budget;
		else config.byTenant.set(tenant, budget);
	}
	return config;
}
