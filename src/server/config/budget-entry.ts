/**
 * One budget entry of the config file (`keyBudgets["<key>"]`, `auth.tenantBudgets["<tenant>"]`):
 * its limits per calendar period, checked at startup.
 */
import { ConfigError } from "./config-error.js";

export type BudgetPeriod = "day" | "month";

/** One key's (or tenant's) limits; a field left out is no limit. */
export interface KeyBudget {
	maxTokens?: number;
	maxCostUsd?: number;
	maxTurnsPerRun?: number;
	period: BudgetPeriod;
}

type BudgetField = "maxTokens" | "maxCostUsd" | "maxTurnsPerRun" | "period";

/**
 * Checks the entry at `field` (`raw`), allowing the fields of `allowed`; a {@link ConfigError}
 * names the bad field. `period` defaults to `"month"`.
 */
export function checkBudgetEntry(field: string, raw: unknown, allowed: readonly BudgetField[]): KeyBudget {
	if (typeof raw !== "object" || raw === null || Array.isArray(raw)) {
		throw new ConfigError(field, `must be an object such as { "maxCostUsd": 5, "period": "month" }`);
	}
	const entry = raw as Record<string, unknown>;
	for (const name of Object.keys(entry)) {
		if (!(allowed as readonly string[]).includes(name)) {
			throw new ConfigError(`${field}.${name}`, `is not a budget field; use ${allowed.join(", ")}`);
		}
	}
	const budget: KeyBudget = { period: "month" };
	for (const name of ["maxTokens", "maxTurnsPerRun"] as const) {
		const value = entry[name];
		if (value === undefined) continue;
		if (!Number.isInteger(value) || (value as number) < 1) {
			throw new ConfigError(`${field}.${name}`, `must be a whole number of at least 1; got ${JSON.stringify(value)}`);
		}
		budget[name] = value as number;
	}
	if (entry.maxCostUsd !== undefined) {
		const value = entry.maxCostUsd;
		if (typeof value !== "number" || !Number.isFinite(value) || value <= 0) {
			throw new ConfigError(`${field}.maxCostUsd`, `must be a positive number of USD; got ${JSON.stringify(value)}`);
		}
		budget.maxCostUsd = value;
	}
	if (entry.period !== undefined) {
		if (entry.period !== "day" && entry.period !== "month") {
			throw new ConfigError(`${field}.period`, `must be "day" or "month" (UTC); got ${JSON.stringify(entry.period)}`);
		}
		budget.period = entry.period;
	}
	return budget;
}
