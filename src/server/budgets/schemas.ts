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

/** The fields per-key budgets add to the session state. */
export const KeyBudgetStateFields = {
	keyBudget: Type.Optional(Type.Union([KeyBudgetState, Type.Null()])),
};

export const UsageQuerystring = Type.Object(
	{
		from: Type.Optional(
			Type.String({ description: "First day, YYYY-MM-DD (UTC). Default: the 1st of the month of `to`." }),
		),
		to: Type.Optional(Type.String({ description: "Last day, YYYY-MM-DD (UTC), inclusive. Default: today." })),
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
		from: Type.String(),
		to: Type.String(),
		total: Type.Object(Totals),
		byDay: Type.Array(Type.Object({ day: Type.String(), ...Totals })),
		byModel: Type.Array(Type.Object({ provider: Type.String(), model: Type.String(), ...Totals })),
		rows: Type.Array(Type.Object({ day: Type.String(), provider: Type.String(), model: Type.String(), ...Totals }), {
			description: "One row per day and model.",
		}),
		budget: Type.Union([KeyBudgetState, Type.Null()]),
	},
	{ title: "UsageReport", description: "The caller's usage by day and by model, from the messages that spent it." },
);
