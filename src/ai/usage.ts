/**
 * Token and cost arithmetic on {@link Usage}: the zero value and the running sum, one copy each
 * for every layer that totals the usage of several messages (a run, a facade's answer).
 */
import type { Usage } from "./types.js";

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
