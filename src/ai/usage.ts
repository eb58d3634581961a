/**
 * Token and cost arithmetic on {@link Usage}: the zero value and the running sum, one copy each
 * for every layer that totals the usage of several messages (a run, a facade's answer).
 */
import type { Model, Usage } from "./types.js";

/** A fresh zero usage (a new object each call: callers add into it). */
export function zeroUsage(): Usage {
	return {
		input: 0,
		output: 0,
		cacheRead: 0,
		cacheWrite: 0,
		totalTokens: 0,
		cost: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0, total: 0 },
	};
}

/** Adds `add`'s tokens and cost into `into` (mutates `into`). */
export function addUsage(into: Usage, add: Usage): void {
	into.input += add.input;
	into.output += add.output;
	into.cacheRead += add.cacheRead;
	into.cacheWrite += add.cacheWrite;
	into.totalTokens += add.totalTokens;
	into.cost.input += add.cost.input;
	into.cost.output += add.cost.output;
	into.cost.cacheRead += add.cost.cacheRead;
	into.cost.cacheWrite += add.cost.cacheWrite;
	into.cost.total += add.cost.total;
}

/** Fills `usage.cost` from the model's prices (USD per million tokens). Returns `usage` for chaining. */
export function calculateCost(model: Model<any>, usage: Usage): Usage {
	const price = model.cost ?? { input: 0, output: 0, cacheRead: 0, cacheWrite: 0 };
	const cost = usage.cost;
	cost.input = (usage.input * (price.input ?? 0)) / 1_000_000;
	cost.output = (usage.output * (price.output ?? 0)) / 1_000_000;
	cost.cacheRead = (usage.cacheRead * (price.cacheRead ?? 0)) / 1_000_000;
	cost.cacheWrite = (usage.cacheWrite * (price.cacheWrite ?? 0)) / 1_000_000;
	cost.total = cost.input + cost.output + cost.cacheRead + cost.cacheWrite;
	return usage;
}
