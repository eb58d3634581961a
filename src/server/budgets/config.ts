/**
 * The `keyBudgets` section of the config file: spending limits per API key, checked at startup.
 *
 * ```json
 * "keyBudgets": {
 *   "<an API key of apiKeys>": { "maxTokens": 2000000, "maxCostUsd": 25, "maxTurnsPerRun": 40, "period": "month" },
 *   "*": { "maxCostUsd": 5 }
 * }
 * ```
 *
 * An entry is named by the API key itself (the config already holds the keys); `"*"` applies to
 * every key without an entry of its own, and to all requests together when auth is off. Limits
 * are per calendar period in UTC (`"day"` or `"month"`, default `"month"`): usage starts again at
 * 00:00 UTC of the next day or the 1st of the next month.
 */
import { ownerIdOf } from "../auth.js";
import { ConfigError } from "../config.js";

export type BudgetPeriod = "day" | "month";

/** One key's limits; a field left out is no limit. */
export interface KeyBudget {
	maxTokens?: number;
	maxCostUsd?: number;
	maxTurnsPerRun?: number;
	period: BudgetPeriod;
}

/** The checked section: budgets by owner id (the hash auth gives a key), and the `"*"` default. */
export interface KeyBudgetConfig {
	byOwner: Map<string, KeyBudget>;
	fallback: KeyBudget | undefined;
}

/** Names a key in a message without printing it. */
function keyName(key: string): string {
	return key === "*" ? `"*"` : `"${key.slice(0, 4)}…"`;
}

function checkEntry(field: string, raw: unknown): KeyBudget {
	if (typeof raw !== "object" || raw === null || Array.isArray(raw)) {
		throw new ConfigError(field, `must be an object such as { "maxCostUsd": 5, "period": "month" }`);
	}
	const entry = raw as Record<string, unknown>;
	const allowed = ["maxTokens", "maxCostUsd", "maxTurnsPerRun", "period"];
	for (const name of Object.keys(entry)) {
		if (!allowed.includes(name)) {
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

/**
 * Checks the section against the configured API keys; a {@link ConfigError} names the field
 * (`keyBudgets["abcd…"].maxCostUsd`). A key that is not in `apiKeys` is an error (a typo would
 * otherwise leave that key without its limit).
 */
export function keyBudgetsFrom(raw: unknown, apiKeys: readonly string[]): KeyBudgetConfig {
	const config: KeyBudgetConfig = { byOwner: new Map(), fallback: undefined };
	if (raw === undefined) return config;
	if (typeof raw !== "object" || raw === null || Array.isArray(raw)) {
		throw new ConfigError("keyBudgets", `must be an object of budgets by API key ({ "<key>": { "maxCostUsd": 5 } })`);
	}
	for (const [key, entry] of Object.entries(raw)) {
		const field = `keyBudgets[${keyName(key)}]`;
		const budget = checkEntry(field, entry);
		if (key === "*") {
			config.fallback = budget;
			continue;
		}
		if (!apiKeys.includes(key)) {
			throw new ConfigError(field, 'names a key that is not in apiKeys; name each key exactly as configured, or "*"');
		}
		config.byOwner.set(ownerIdOf(key), budget);
	}
	return config;
}
