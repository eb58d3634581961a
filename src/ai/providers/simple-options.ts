/**
 * Shared handling of `SimpleStreamOptions` (the options `streamSimple` takes) for every provider:
 * defaults for `maxTokens`, and `reasoning` levels mapped to token budgets or effort strings.
 */
import type { Api, Model, SimpleStreamOptions, StreamOptions, ThinkingBudgets, ThinkingLevel } from "../types.js";

/** Default thinking-token budgets per level (for APIs with a budget knob: Anthropic, Gemini 2.5). */
export const DEFAULT_THINKING_BUDGETS: Required<ThinkingBudgets> = {
	minimal: 1024,
	low: 2048,
	medium: 8192,
	high: 16384,
};

/** Output tokens left for the answer when a thinking budget has to shrink to fit `maxTokens`. */
const MIN_ANSWER_TOKENS = 1024;
/** Default `maxTokens` when neither the caller nor a small model limit says otherwise. */
const DEFAULT_MAX_TOKENS_CAP = 32_000;

/** The base `StreamOptions` from simple options: `maxTokens` defaults to min(model.maxTokens, 32000). */
export function buildBaseOptions(model: Model<Api>, options: SimpleStreamOptions = {}): StreamOptions {
	const { reasoning: _reasoning, thinkingBudgets: _budgets, ...base } = options;
	return {
		...base,
		maxTokens:
			options.maxTokens ?? (model.maxTokens > 0 ? Math.min(model.maxTokens, DEFAULT_MAX_TOKENS_CAP) : undefined),
	};
}

/** `xhigh` where an API has no such level. */
export function clampReasoning(level: ThinkingLevel | undefined): Exclude<ThinkingLevel, "xhigh"> | undefined {
	return level === "xhigh" ? "high" : level;
}

/**
 * The effort string an API gets for `level`: the model's `thinkingLevelMap` wins (a `null` entry
 * means "this level is not supported": undefined), else the level itself, `xhigh` clamped to
 * `high` unless the map lists it.
 */
export function reasoningEffortFor(model: Model<Api>, level: ThinkingLevel | undefined): string | undefined {
	if (!level) return undefined;
	const mapped = model.thinkingLevelMap?.[level];
	if (mapped === null) return undefined;
	if (typeof mapped === "string") return mapped;
	return clampReasoning(level);
}

/** Thinking budget for `level` with `thinkingBudgets` overrides. */
export function thinkingBudgetFor(level: ThinkingLevel, budgets?: ThinkingBudgets): number {
	const merged = { ...DEFAULT_THINKING_BUDGETS, ...budgets };
	return merged[clampReasoning(level)!];
}

/**
 * For budget APIs, where thinking counts against `max_tokens`: raises `maxTokens` by the budget
 * (up to the model's limit) and, when the limit leaves too little room, shrinks the budget so at
 * least {@link MIN_ANSWER_TOKENS} remain for the answer.
 */
export function adjustMaxTokensForThinking(
	baseMaxTokens: number,
	modelMaxTokens: number,
	level: ThinkingLevel,
	budgets?: ThinkingBudgets,
): { maxTokens: number; thinkingBudget: number } {
	let thinkingBudget = thinkingBudgetFor(level, budgets);
	const limit = modelMaxTokens > 0 ? modelMaxTokens : baseMaxTokens + thinkingBudget;
	const maxTokens = Math.min(baseMaxTokens + thinkingBudget, limit);
	if (maxTokens - thinkingBudget < MIN_ANSWER_TOKENS) thinkingBudget = Math.max(0, maxTokens - MIN_ANSWER_TOKENS);
	return { maxTokens, thinkingBudget };
}
