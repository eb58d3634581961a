/**
 * The built-in tools the default server ships, and their parts.
 */
import type { AgentTool } from "../../agent/types.js";
import { createCalculateTool } from "./calculate.js";
import { createGetCurrentTimeTool } from "./get-current-time.js";

export { ArithmeticError, evaluateArithmetic, formatNumber } from "./arithmetic.js";
export { type CalculateDetails, createCalculateTool } from "./calculate.js";
export { type CurrentTimeDetails, createGetCurrentTimeTool, describeTime } from "./get-current-time.js";

/** The harmless built-in tools the default server ships: `get_current_time` and `calculate`. */
export function builtinTools(): AgentTool<any>[] {
	return [createGetCurrentTimeTool(), createCalculateTool()];
}
