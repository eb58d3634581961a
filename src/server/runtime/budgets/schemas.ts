/**
 * The wire shapes of per-key budgets and usage: the `keyBudget` field of the session state and the
 * `GET /v1/usage` query and answer.
 */
import { Type } from "@sinclair/typebox";
import { BudgetSpendFields } from "../compaction/settings.js";

/** The API key's budget and what is left of it in its current period. */
export const KeyBudgetState = Type.Object(
	{
		period: Type.Union([Type.Literal("day"), Type.Literal("month")], { description: "Calendar period, UTC." }),
		periodStart: Type.String({ description: "First day of the current period (YYYY-MM-DD, UTC)." }),
		...BudgetSpendFields,
		exhausted: Type.Union([Type.Literal("maxTokens"), Type.Literal("maxCostUsd"), Type.Null()], {
			description: "The limit reached: prompts are refused (429 KEY_BUDGET_EXHAUSTED) until the period ends.",
		}),
	},
	{
		title: "KeyBudgetState",
		description: "The API key's budget (config `keyBudgets`) and what is left of it; null when the key has none.",
	},
);

/** The tenant's budget and what is left of it in its current period. */
export const TenantBudgetState = Type.Object(
	{
		tenant: Type.String(),
		period: Type.Union([Type.Literal("day"), Type.Literal("month")], { description: "Calendar period, UTC." }),
		periodStart: Type.String({ description: "First day of the current period (YYYY-MM-DD, UTC)." }),
		maxTokens: Type.Union([Type.Number(), Type.Null()]),
		maxCostUsd: Type.Union([Type.Number(), Type.Null()]),
		usedTokens: Type.Number({ description: "Every caller's of the tenant, as last read from the store." }),
		usedCostUsd: Type.Number(),
		remainingTokens: Type.Union([Type.Number(), Type.Null()]),
		remainingCostUsd: Type.Union([Type.Number(), Type.Null()]),
		exhausted: Type.Union([Type.Literal("maxTokens"), Type.Literal("maxCostUsd"), Type.Null()], {
			description: "The limit reached: runs are refused (429 TENANT_BUDGET_EXHAUSTED) until the period ends.",
		}),
	},
	{
		title: "TenantBudgetState",
		description:
			"The tenant's budget (config `auth.tenantBudgets`) and what is left of it; null when the tenant has none (or the caller has no tenant).",
	},
);

/** The fields per-key and per-tenant budgets add to the session state. */
export const KeyBudgetStateFields = {
	keyBudget: Type.Optional(Type.Union([KeyBudgetState, Type.Null()])),
	tenantBudget: Type.Optional(Type.Union([TenantBudgetState, Type.Null()])),
};

export const UsageQuerystring = Type.Object(
	{
		from: Type.Optional(
			Type.String({ description: "First day, YYYY-MM-DD (UTC). Default: the 1st of the month of `to`." }),
		),
		to: Type.Optional(Type.String({ description: "Last day, YYYY-MM-DD (UTC), inclusive. Default: today." })),
		scope: Type.Optional(
			Type.Union([Type.Literal("own"), Type.Literal("tenant")], {
				description:
					"`own` (default): the caller's own usage. `tenant`: every caller's of the caller's tenant (by owner too); needs a JWT with the scope `auth.usageAdminScope` (default `usage:tenant`) or an API key of `auth.usageAdminKeys`, else 403 USAGE_SCOPE_REQUIRED.",
			}),
		),
	},
	{ additionalProperties: false },
);

const Totals = {
	input: Type.Number(),
	output: Type.Number(),
	cacheRead: Type.Number(),
	cacheWrite: Type.Number(),
	totalTokens: Type.Number(),
	costUsd: Type.Number({ description: "USD, from the model's prices." }),
	turns: Type.Number({ description: "Model calls of runs (a compaction's summary call adds usage, not a turn)." }),
};

export const UsageReport = Type.Object(
	{
		ownerId: Type.Union([Type.String(), Type.Null()], {
			description: "The caller's key (its owner id, never the key); null with auth off.",
		}),
		scope: Type.Union([Type.Literal("own"), Type.Literal("tenant")], {
			description: "Whose usage: the caller's own, or its whole tenant's.",
		}),
		tenant: Type.Union([Type.String(), Type.Null()], { description: "The caller's tenant; null without one." }),
		from: Type.String(),
		to: Type.String(),
		total: Type.Object(Totals),
		byDay: Type.Array(Type.Object({ day: Type.String(), ...Totals })),
		byModel: Type.Array(Type.Object({ provider: Type.String(), model: Type.String(), ...Totals })),
		byOwner: Type.Optional(
			Type.Array(Type.Object({ ownerId: Type.String(), ...Totals }), {
				description: "`scope=tenant` only: each owner id of the tenant (never a credential), most spent first.",
			}),
		),
		rows: Type.Array(Type.Object({ day: Type.String(), provider: Type.String(), model: Type.String(), ...Totals }), {
			description: "One row per day and model.",
		}),
		budget: Type.Union([KeyBudgetState, Type.Null()]),
		tenantBudget: Type.Union([TenantBudgetState, Type.Null()]),
	},
	{
		title: "UsageReport",
		description:
			"The caller's usage (or its tenant's) by day and by model, from the messages that spent it, and the budgets of the caller's key and tenant.",
	},
);
