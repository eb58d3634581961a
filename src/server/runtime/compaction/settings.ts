/**
 * A session's compaction settings and budget: the request fields (`POST /v1/sessions`, `PATCH`),
 * the server's defaults, and the values in force for a given model.
 */
import { Type } from "@sinclair/typebox";
import type { Model } from "../../../ai/types.js";
import type { SessionConfig } from "../../../store/types.js";

const Tokens = (description: string) => Type.Integer({ minimum: 0, maximum: 100_000_000, description });

export const CompactionSettingsSchema = Type.Object(
	{
		enabled: Type.Optional(
			Type.Boolean({ description: "Compact automatically (at the threshold and on a context-overflow error)." }),
		),
		reserveTokens: Type.Optional(
			Tokens(
				"Compact before a model call when the context passes the model's context window minus this (at most half the window counts).",
			),
		),
		keepRecentTokens: Type.Optional(
			Tokens(
				"About how many tokens of the most recent messages are kept verbatim (at most half the threshold counts).",
			),
		),
	},
	{
		additionalProperties: false,
		title: "CompactionSettings",
		description:
			"Context compaction of this session. The object replaces the session's previous one; a field left out takes the server's default (WHEELHOUSE_COMPACTION*).",
	},
);

export const BudgetSchema = Type.Object(
	{
		maxTokens: Type.Optional(
			Type.Integer({ minimum: 1, description: "Tokens the session may use in all (input, output and cache)." }),
		),
		maxCostUsd: Type.Optional(
			Type.Number({ exclusiveMinimum: 0, description: "US dollars the session may spend, at the model's prices." }),
		),
		maxTurnsPerRun: Type.Optional(
			Type.Integer({ minimum: 1, maximum: 1_000_000, description: "Model calls one run may make." }),
		),
	},
	{
		additionalProperties: false,
		title: "SessionBudget",
		description:
			"Spending limits of this session, checked before each model call: a run that reaches one ends (its last message names the limit), and a prompt on a spent budget is refused (409 BUDGET_EXHAUSTED). The object replaces the previous one; a field left out is no limit.",
	},
);

/** The fields `POST /v1/sessions` and `PATCH /v1/sessions/:id` take. */
export const CompactionSessionFields = {
	compaction: Type.Optional(CompactionSettingsSchema),
	budget: Type.Optional(BudgetSchema),
};

/** The server-wide defaults (config: `WHEELHOUSE_COMPACTION`, `..._RESERVE_TOKENS`, `..._KEEP_RECENT_TOKENS`). */
export interface CompactionDefaults {
	enabled: boolean;
	reserveTokens: number;
	keepRecentTokens: number;
}

/** The settings in force for one model call. */
export interface CompactionInForce {
	enabled: boolean;
	reserveTokens: number;
	keepRecentTokens: number;
	contextWindow: number;
	/** Compact when the context has more tokens than this (0: the model's window is unknown; never). */
	thresholdTokens: number;
	/** Tokens of recent messages to keep (`keepRecentTokens`, at most half the threshold). */
	keepTokens: number;
}

/**
 * The session's settings over the defaults, for `model`. A reserve of more than half the window
 * counts as half, and a kept part of more than half the threshold as half: otherwise a small
 * window would compact before every call, or keep so much that compacting frees nothing.
 */
export function settingsInForce(
	config: SessionConfig,
	defaults: CompactionDefaults,
	model: Model<any>,
): CompactionInForce {
	const own = config.compaction ?? {};
	const reserveTokens = own.reserveTokens ?? defaults.reserveTokens;
	const keepRecentTokens = own.keepRecentTokens ?? defaults.keepRecentTokens;
	const contextWindow = Math.max(model.contextWindow, 0);
	const thresholdTokens = contextWindow - Math.min(reserveTokens, Math.floor(contextWindow / 2));
	return {
		enabled: own.enabled ?? defaults.enabled,
		reserveTokens,
		keepRecentTokens,
		contextWindow,
		thresholdTokens,
		keepTokens: Math.min(keepRecentTokens, Math.floor(thresholdTokens / 2)),
	};
}

const Nullable = <T extends ReturnType<typeof Type.Number>>(schema: T) => Type.Union([schema, Type.Null()]);

/** A budget's limits (null: none), what was spent and what is left: the session's and the API key's state alike. */
export const BudgetSpendFields = {
	maxTokens: Nullable(Type.Number()),
	maxCostUsd: Nullable(Type.Number()),
	maxTurnsPerRun: Nullable(Type.Number()),
	usedTokens: Type.Number(),
	usedCostUsd: Type.Number(),
	remainingTokens: Nullable(Type.Number({ description: "null: no limit" })),
	remainingCostUsd: Nullable(Type.Number({ description: "null: no limit" })),
};

const CompactionReasonSchema = Type.Union([
	Type.Literal("threshold"),
	Type.Literal("overflow"),
	Type.Literal("manual"),
]);

/** The fields compaction adds to the session state (`GET /v1/sessions/:id`, `session_snapshot`). */
export const CompactionStateFields = {
	compaction: Type.Optional(
		Type.Object(
			{
				enabled: Type.Boolean(),
				reserveTokens: Type.Integer(),
				keepRecentTokens: Type.Integer(),
				contextWindow: Type.Integer({ description: "The model's context window." }),
				thresholdTokens: Type.Integer({ description: "A model call with a context above this compacts first." }),
				contextTokens: Type.Integer({
					description:
						"The context the next model call would send, in tokens: the last answer's reported usage plus an estimate of what came after it.",
				}),
				status: Type.Union([Type.Literal("idle"), Type.Literal("compacting")]),
				last: Type.Union([
					Type.Object({
						at: Type.Number(),
						reason: CompactionReasonSchema,
						tokensBefore: Type.Integer(),
						tokensAfter: Type.Integer(),
						firstKeptIndex: Type.Integer(),
					}),
					Type.Null(),
				]),
				lastError: Type.Union([
					Type.Object({ at: Type.Number(), reason: CompactionReasonSchema, message: Type.String() }),
					Type.Null(),
				]),
			},
			{
				title: "CompactionState",
				description: "Context compaction: the settings in force, the context's size, the latest compaction.",
			},
		),
	),
	budget: Type.Optional(
		Type.Object(
			{
				...BudgetSpendFields,
				turnsThisRun: Nullable(Type.Number({ description: "Model calls of the active run; null when idle." })),
				exhausted: Type.Union([Type.Literal("maxTokens"), Type.Literal("maxCostUsd"), Type.Null()], {
					description: "The limit reached: prompts are refused (409 BUDGET_EXHAUSTED) until it is raised.",
				}),
			},
			{ title: "SessionBudgetState", description: "The session's budget and what is left of it." },
		),
	),
};
