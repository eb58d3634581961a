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

import { type BudgetPeriod, checkBudgetEntry, type KeyBudget } from "../../config/budget-entry.js";
import { ConfigError } from "../../config/config.js";
import { ownerIdOf } from "../owner-id.js";

export type { BudgetPeriod, KeyBudget };

/** The checked section: budgets by owner id (the hash auth gives a key), and the `"*"` default. */
export interface KeyBudgetConfig {
	byOwner: Map<string, KeyBudget>;
	fallback: KeyBudget | undefined;
}

/** Names a key in a message without printing it. */
function keyName(key: string): string {
	return key === "*" ? `"*"` : `"${key.slice(0, 4)}…"`;
}

const KEY_BUDGET_FIELDS = ["maxTokens", "maxCostUsd", "maxTurnsPerRun", "period"] as const;

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
		const budget = checkBudgetEntry(field, entry, KEY_BUDGET_FIELDS);
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
